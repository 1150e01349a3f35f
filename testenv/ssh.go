package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// SSHAccess says how to reach a target over SSH from this machine.
type SSHAccess struct {
	// Host is the container's address on Docker's bridge network.
	Host string
	// KeyFile is the private key authorised for root and for every user passed to
	// AuthorizeSSH. One key serves every target of the test process.
	KeyFile string
}

// HostVars are the inventory variables that reach the target as root over SSH with this
// access (host key checks off: targets are new on every run).
//
// SSH compression is off: Ansible's default ssh_args carry -C and Mitogen compresses
// unless told not to, and over Docker's bridge on the same machine that only costs CPU
// (zlib in ssh and sshd took about 3 % of the CPU perf sampled over three minutes of a
// make test). ansible_ssh_args is Ansible's default without -C.
func (a SSHAccess) HostVars() map[string]any {
	return map[string]any{
		"ansible_connection":           "ssh",
		"ansible_host":                 a.Host,
		"ansible_user":                 "root",
		"ansible_ssh_private_key_file": a.KeyFile,
		"ansible_ssh_args":             "-o ControlMaster=auto -o ControlPersist=60s",
		"ansible_ssh_common_args":      "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
		"mitogen_ssh_compression":      false,
	}
}

// clientKey makes the process's SSH key pair once, in its own temporary directory.
var clientKey = sync.OnceValues(func() (string, error) {
	dir, err := newBuildDir("ssh")
	if err != nil {
		return "", fmt.Errorf("ssh key: %w", err)
	}
	key := filepath.Join(dir, "id_ed25519")
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "richt-testenv", "-f", key).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ssh-keygen (openssh-client, installed by .ci/setup-host): %w\n%s", err, out)
	}
	return key, nil
})

// SSH starts the target's SSH server (masked in the image so that targets that do not need
// it boot faster), authorises the process's key for root, and returns how to connect. It is
// idempotent.
func (t *Target) SSH(ctx context.Context) (SSHAccess, error) {
	t.mu.Lock()
	if t.ssh != nil {
		a := *t.ssh
		t.mu.Unlock()
		return a, nil
	}
	t.mu.Unlock()
	key, err := clientKey()
	if err != nil {
		return SSHAccess{}, err
	}
	if err := t.AuthorizeSSH(ctx, "root"); err != nil {
		return SSHAccess{}, err
	}
	// One host key, ed25519, which every client here speaks: ssh-keygen -A would make an
	// RSA key too, 0.4 to 0.9 s of CPU per target (its search for primes), for a key
	// nobody checks.
	start := `set -e
[ -e /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
mkdir -p /etc/ssh/sshd_config.d && echo 'HostKey /etc/ssh/ssh_host_ed25519_key' >/etc/ssh/sshd_config.d/richt-testenv-hostkey.conf
rm -f /etc/systemd/system/ssh.service /etc/systemd/system/ssh.socket
systemctl daemon-reload
systemctl start ssh.service`
	if res, err := t.Exec(ctx, "sh", "-c", start); err != nil || res.ExitCode != 0 {
		return SSHAccess{}, fmt.Errorf("start sshd in %s: %v %s%s", t.ID()[:12], err, res.Stdout, res.Stderr)
	}
	ip, err := t.container.ContainerIP(ctx)
	if err != nil || ip == "" {
		return SSHAccess{}, fmt.Errorf("address of %s: %v", t.ID()[:12], err)
	}
	a := SSHAccess{Host: ip, KeyFile: key}
	t.mu.Lock()
	t.ssh = &a
	t.mu.Unlock()
	return a, nil
}

// AuthorizeSSH lets the process's SSH key log in as user (who must exist in the target).
func (t *Target) AuthorizeSSH(ctx context.Context, user string) error {
	key, err := clientKey()
	if err != nil {
		return err
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return fmt.Errorf("read public key: %w", err)
	}
	script := `set -e
home=$(getent passwd "$1" | cut -d: -f6)
[ -n "$home" ] || { echo "no user $1" >&2; exit 1; }
install -d -m 700 -o "$1" "$home/.ssh"
printf '%s\n' "$2" >"$home/.ssh/authorized_keys"
chown "$1" "$home/.ssh/authorized_keys"
chmod 600 "$home/.ssh/authorized_keys"`
	res, err := t.Exec(ctx, "sh", "-c", script, "sh", user, strings.TrimSpace(string(pub)))
	if err != nil || res.ExitCode != 0 {
		return fmt.Errorf("authorise ssh key for %s in %s: %v %s", user, t.ID()[:12], err, res.Stderr)
	}
	return nil
}
