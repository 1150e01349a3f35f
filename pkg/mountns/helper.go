package mountns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns the re-executed module into the helper: it never returns then. Any binary
// that imports this package (the module, its tests) can be the helper.
func init() {
	if len(os.Args) > 0 && os.Args[0] == helperName {
		helperMain()
	}
}

// maxSpec bounds what the helper reads from its stdin: configs are small files.
const maxSpec = 64 << 20

// helperMain sets the namespace up and executes the command in its place; on a failure
// it exits setupFailed with the reason on stderr.
func helperMain() {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s%v\n", setupMarker, err)
		os.Exit(setupFailed)
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxSpec))
	if err != nil {
		fail(fmt.Errorf("read the files: %w", err))
	}
	var s spec
	if err := json.Unmarshal(data, &s); err != nil {
		fail(fmt.Errorf("decode the files: %w", err))
	}
	if len(s.Argv) == 0 {
		fail(errors.New("no command"))
	}
	bin, err := exec.LookPath(s.Argv[0])
	if err != nil {
		fail(fmt.Errorf("the validator %q: %w", s.Argv[0], err))
	}
	if err := place(s.Files); err != nil {
		fail(err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		fail(err)
	}
	if err := unix.Dup2(int(null.Fd()), 0); err != nil {
		fail(fmt.Errorf("stdin: %w", err))
	}
	if err := os.Chdir("/"); err != nil {
		fail(err)
	}
	err = syscall.Exec(bin, s.Argv, os.Environ())
	fail(fmt.Errorf("execute %s: %w", bin, err))
}

// stage is where the helper's tmpfs holds the new contents and the overlays' layers,
// below the fresh /tmp that covers it once everything is placed.
const stage = "/tmp/.richt-tree"

// place makes the namespace: every mount private (no mount reaches the host, whatever
// the host's propagation), a tmpfs for the staging, the files at their paths (an overlay
// of the directory of each that does not exist yet, then a bind mount over each that
// does), and a fresh tmpfs on /tmp for the command.
func place(files []File) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	if err := unix.Mount("richt-tree", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("mount the staging tmpfs on /tmp: %w", err)
	}
	if err := os.Mkdir(stage, 0o700); err != nil {
		return err
	}
	// The files whose paths exist are bound over them; the others go in their
	// directory's overlay.
	var binds []File
	missing := map[string][]File{}
	for _, f := range files {
		if err := checkPath(f.Path); err != nil {
			return err
		}
		fi, err := os.Lstat(f.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			missing[path.Dir(f.Path)] = append(missing[path.Dir(f.Path)], f)
		case err != nil:
			return fmt.Errorf("%s: %w", f.Path, err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", f.Path, fi.Mode().Type())
		default:
			binds = append(binds, f)
		}
	}
	// Outer directories first: a nested directory's overlay stacks on its parent's.
	dirs := make([]string, 0, len(missing))
	for d := range missing {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	for i, d := range dirs {
		if err := overlay(fmt.Sprintf("%s/overlay-%d", stage, i), d, missing[d]); err != nil {
			return err
		}
	}
	for i, f := range binds {
		src := fmt.Sprintf("%s/file-%d", stage, i)
		if err := write(src, f); err != nil {
			return err
		}
		if err := unix.Mount(src, f.Path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind the new content over %s: %w", f.Path, err)
		}
	}
	// The command's /tmp: fresh, its writes discarded with the namespace.
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount a fresh tmpfs on /tmp: %w", err)
	}
	return nil
}

// overlay mounts an overlay over dir whose upper layer, in base, holds files (the new
// files of dir that do not exist yet), with dir's own mode and owner.
func overlay(base, dir string, files []File) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("the directory of %s: %w", files[0].Path, err)
	}
	upper, work := base+"/upper", base+"/work"
	for _, d := range []string{base, upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil {
		if err := os.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if err := os.Chmod(upper, fi.Mode().Perm()|fi.Mode()&(os.ModeSetgid|os.ModeSticky)); err != nil {
		return err
	}
	for _, f := range files {
		if err := write(upper+"/"+path.Base(f.Path), f); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dir, upper, work)
	if err := unix.Mount("richt-tree", dir, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay %s for the new %s: %w", dir, files[0].Path, err)
	}
	return nil
}

// write writes f's content at p with f's mode and owner.
func write(p string, f File) error {
	if err := os.WriteFile(p, f.Content, 0o600); err != nil {
		return fmt.Errorf("stage %s: %w", f.Path, err)
	}
	if err := os.Chown(p, f.UID, f.GID); err != nil {
		return fmt.Errorf("stage %s: %w", f.Path, err)
	}
	if err := os.Chmod(p, f.Mode); err != nil {
		return fmt.Errorf("stage %s: %w", f.Path, err)
	}
	return nil
}
