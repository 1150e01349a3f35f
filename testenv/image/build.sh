#!/usr/bin/env bash
# Builds a systemd + DNF 4 target image from Debian packages, offline from any container
# registry. Usage: build.sh SUITE TAG [EXTRA_PACKAGES]. mmdebstrap reads the host's apt sources, so no
# mirror address is written here. The image's content key (its tag) is the hash of this
# file, so any change to the package list or the customisation below builds a new image.
set -euo pipefail
suite=$1 tag=$2 extra=${3:-}
work=$(mktemp -d /tmp/richt-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

case "$suite" in
  trixie) releasever=13 ;;
  bookworm) releasever=12 ;;
  *) releasever=$suite ;;
esac

# Packages: systemd as PID 1 and its bus; libpam-systemd so user managers (user@UID.service,
# lingering) start; DNF 4 and rpm; procps for /bin/kill (ExecReload
# lines use it); sudo for become tests; openssh-server for SSH-connection tests.
mmdebstrap --quiet --variant=essential \
  --include=systemd,systemd-sysv,dbus,libpam-systemd,dnf,rpm,procps,sudo,openssh-server${extra:+,$extra} \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='mkdir -p "$1/etc/yum.repos.d" "$1/etc/dnf/vars" "$1/etc/rpm" "$1/var/lib/rpm"' \
  --customize-hook="echo $releasever > \"\$1/etc/dnf/vars/releasever\"" \
  --customize-hook='echo "%_dbpath /var/lib/rpm" > "$1/etc/rpm/macros.dbpath"' \
  --customize-hook='chroot "$1" rpmdb --initdb' \
  --customize-hook='if [ -e "$1/usr/bin/dnf-3" ]; then ln -sf dnf-3 "$1/usr/bin/yum"; else ln -sf dnf "$1/usr/bin/yum"; fi' \
  --customize-hook='ln -sf /dev/null "$1/etc/systemd/system/systemd-modules-load.service"' \
  --customize-hook='ln -sf /dev/null "$1/etc/systemd/system/ssh.service"; ln -sf /dev/null "$1/etc/systemd/system/ssh.socket"' \
  --customize-hook='rm -f "$1/etc/ssh/ssh_host_"*' \
  --customize-hook='echo richt-target > "$1/etc/hostname"' \
  "$suite" "$work/rootfs.tar"

cat > "$work/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
# systemd re-executes on SIGTERM; SIGRTMIN+3 is its halt signal, so stop takes < 1 s.
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
DOCKERFILE
docker build --quiet --label "org.richt.testenv.suite=$suite" -t "$tag" "$work" >/dev/null
echo "built $tag"
