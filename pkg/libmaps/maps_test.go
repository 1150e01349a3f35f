package libmaps

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/richt/services/pkg/runner"
)

// recorded is /proc/PID/maps of a daemon after its library was upgraded, with the kinds
// of mapping a scan must tell apart (taken from a trixie target, addresses shortened).
const recorded = `55d0c0a00000-55d0c0a02000 r--p 00000000 00:2b 1049                       /usr/bin/python3.13
55d0c0a02000-55d0c0b00000 r-xp 00002000 00:2b 1049                       /usr/bin/python3.13
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]
7f1c2a000000-7f1c2a002000 r--p 00000000 00:2b 2201                       /usr/lib/richt/libfix.so.1 (deleted)
7f1c2a002000-7f1c2a010000 r-xp 00002000 00:2b 2201                       /usr/lib/richt/libfix.so.1 (deleted)
7f1c2b000000-7f1c2b001000 rw-s 00000000 00:01 1024                       /memfd:pulseaudio (deleted)
7f1c2c000000-7f1c2c100000 rw-s 00000000 00:01 32770                      /SYSV0000162e (deleted)
7f1c2d000000-7f1c2d001000 rw-s 00000000 00:05 5                          /dev/zero (deleted)
7f1c2e000000-7f1c2e001000 r--s 00000000 00:1a 77                         /dev/shm/sem.lock
7f1c2f000000-7f1c2f002000 r--p 00000000 00:2b 3301                       /opt/my app/lib/libspace.so
7f1c30000000-7f1c30002000 r--p 00000000 00:2b 3302                       /opt/odd (deleted)/libx.so (deleted)
7f1c31000000-7f1c31001000 rw-p 00000000 00:00 0                          
7f1c32000000-7f1c32001000 rw-p 00000000 00:00 0                          [stack]
7fff1000-7fff3000 r-xp 00000000 00:00 0                                  [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
7f1c33000000-7f1c33001000 r--p 00000000 103:02 4096                      /usr/lib/x86_64-linux-gnu/libc.so.6
`

func TestParseMapsRecorded(t *testing.T) {
	got, err := ParseMaps(strings.NewReader(recorded))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Path: "/usr/bin/python3.13", Major: 0, Minor: 0x2b, Inode: 1049},
		{Path: "/usr/lib/richt/libfix.so.1", Major: 0, Minor: 0x2b, Inode: 2201, Deleted: true},
		{Path: "/opt/my app/lib/libspace.so", Major: 0, Minor: 0x2b, Inode: 3301},
		{Path: "/opt/odd (deleted)/libx.so", Major: 0, Minor: 0x2b, Inode: 3302, Deleted: true},
		{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", Major: 0x103, Minor: 2, Inode: 4096},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseMapsRefusesWhatIsNotMaps(t *testing.T) {
	for name, text := range map[string]string{
		"too few fields":  "7f1c2a000000-7f1c2a002000 r--p 00000000 00:2b\n",
		"bad device":      "7f1c2a000000-7f1c2a002000 r--p 00000000 0x2b 12 /x\n",
		"bad inode":       "7f1c2a000000-7f1c2a002000 r--p 00000000 00:2b x12 /x\n",
		"bad offset":      "7f1c2a000000-7f1c2a002000 r--p zz 00:2b 12 /x\n",
		"not an address":  "key=value r--p 00000000 00:2b 12 /x\n",
		"a status file":   "Name:\tpython3\n",
		"bad permissions": "7f1c2a000000-7f1c2a002000 r--pp 00000000 00:2b 12 /x\n",
	} {
		if _, err := ParseMaps(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: got %v, want an error naming line 1", name, err)
		}
	}
}

// fakeProc makes a procfs under dir with one process whose root is root and whose maps
// is maps.
func fakeProc(t *testing.T, dir string, pid int, comm, maps string) string {
	t.Helper()
	p := filepath.Join(dir, strconv.Itoa(pid))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(p, "root")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(p, "maps"), maps)
	write(t, filepath.Join(p, "comm"), comm+"\n")
	return p
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func line(path string, ino uint64, suffix string) string {
	return "7f0000000000-7f0000001000 r--p 00000000 fd:01 " + strconv.FormatUint(ino, 10) + "   " + path + suffix + "\n"
}

// TestStaleDecides: a deleted mapping, a path that now names another inode and a path that
// is gone are stale; the same inode is not, whatever device maps shows (overlayfs); a
// directory or FIFO at the path is not a regular file.
func TestStaleDecides(t *testing.T) {
	files := t.TempDir()
	same, replaced, fifo := filepath.Join(files, "same.so"), filepath.Join(files, "re placed.so"), filepath.Join(files, "fifo")
	write(t, same, "a")
	write(t, replaced, "old")
	oldIno := inode(t, replaced)
	// rpm's way: a new file renamed over the old one.
	write(t, replaced+".new", "new")
	hold, _ := os.Open(replaced) // keep the old inode from being reused
	defer hold.Close()
	if err := os.Rename(replaced+".new", replaced); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	maps := line(same, inode(t, same), "") + line(replaced, oldIno, "") + line(filepath.Join(files, "gone.so"), 77, "") +
		line(filepath.Join(files, "del.so"), 78, " (deleted)") + line(files, inode(t, files), "") + line(fifo, inode(t, fifo), "") +
		line("/memfd:x", 79, " (deleted)") + line("/SYSV0000162e", 80, " (deleted)")
	proc := t.TempDir()
	fakeProc(t, proc, 42, "daemon", maps)
	got, err := Scanner{Proc: proc}.Stale(42)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(files, "del.so"), filepath.Join(files, "gone.so"), replaced}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, err := (Scanner{Proc: proc}).Stale(43); err != nil || got != nil {
		t.Errorf("a process that is gone: got %q, %v; want none", got, err)
	}
	// A process that ends between reading its maps and deciding them: its maps were read,
	// but its root no longer resolves, so every path looks deleted. It maps nothing.
	ended := fakeProc(t, proc, 44, "sleep", maps)
	if err := os.Remove(filepath.Join(ended, "root")); err != nil {
		t.Fatal(err)
	}
	if got, err := (Scanner{Proc: proc}).Stale(44); err != nil || got != nil {
		t.Errorf("a process that ended while it was scanned: got %q, %v; want none", got, err)
	}
}

// TestPIDsWalksSubgroups: a unit's processes are its group's and its sub-groups' (a
// daemon's delegated workers), sorted and each once; a hybrid host's unified/ is found;
// a group that does not exist has none.
func TestPIDsWalksSubgroups(t *testing.T) {
	for _, sub := range []string{"", "unified"} {
		root := t.TempDir()
		g := filepath.Join(root, sub, "system.slice", "web.service")
		write(t, filepath.Join(g, "cgroup.procs"), "30\n10\n")
		write(t, filepath.Join(g, "worker", "cgroup.procs"), "20\n10\n")
		got, err := Scanner{Cgroup: root}.PIDs("/system.slice/web.service")
		if err != nil || !reflect.DeepEqual(got, []int{10, 20, 30}) {
			t.Errorf("%q: got %v, %v", sub, got, err)
		}
		if got, err := (Scanner{Cgroup: root}).PIDs("/system.slice/none.service"); err != nil || got != nil {
			t.Errorf("missing group: got %v, %v", got, err)
		}
		write(t, filepath.Join(g, "bad", "cgroup.procs"), "x\n")
		if _, err := (Scanner{Cgroup: root}).PIDs("/system.slice/web.service"); err == nil {
			t.Errorf("a bad cgroup.procs was not refused")
		}
	}
}

func TestScanAndReport(t *testing.T) {
	proc := t.TempDir()
	var many strings.Builder
	for i := 0; i < MaxFiles+3; i++ {
		many.WriteString(line("/nowhere/lib"+strconv.Itoa(100+i)+".so", uint64(i+1), " (deleted)"))
	}
	fakeProc(t, proc, 7, "worker", many.String())
	fakeProc(t, proc, 5, "master", line("/nowhere/libfix.so.1", 9, " (deleted)"))
	fakeProc(t, proc, 6, "clean", "")
	procs, err := Scanner{Proc: proc}.Scan([]int{5, 6, 7})
	if err != nil {
		t.Fatal(err)
	}
	r := Capped(procs)
	if len(r.Processes) != 2 || r.Processes[0].PID != 5 || r.Processes[1].PID != 7 || r.Processes[1].MoreFiles != 3 || len(r.Processes[1].Files) != MaxFiles {
		t.Fatalf("report %+v", r)
	}
	r = r.WithPackages(map[string]string{"/nowhere/libfix.so.1": "libfix"})
	if s := r.Summary(); !strings.HasPrefix(s, "5 (master): /nowhere/libfix.so.1 (libfix); 7 (worker): /nowhere/lib100.so, ") || !strings.HasSuffix(s, ", 3 more") {
		t.Errorf("summary %q", s)
	}
	var lots []Process
	for i := 0; i < MaxProcesses+2; i++ {
		lots = append(lots, Process{PID: i + 1})
	}
	if r := Capped(lots); len(r.Processes) != MaxProcesses || r.MoreProcesses != 2 {
		t.Errorf("capped %d processes, %d more", len(r.Processes), r.MoreProcesses)
	}
}

// script is a runner that answers each expected argv once, in order.
type script struct {
	t     *testing.T
	calls []call
}

type call struct {
	argv []string
	res  runner.Result
}

func (s *script) Run(_ context.Context, argv ...string) (runner.Result, error) {
	if len(s.calls) == 0 {
		s.t.Fatalf("unexpected call %q", argv)
	}
	c := s.calls[0]
	s.calls = s.calls[1:]
	if !reflect.DeepEqual(argv, c.argv) {
		s.t.Fatalf("call %q, want %q", argv, c.argv)
	}
	return c.res, nil
}

func TestOwners(t *testing.T) {
	s := &script{t: t, calls: []call{
		{[]string{"rpm", "-qf", "--qf", "%{NAME}\n", "--", "/usr/lib/a.so"}, runner.Result{Stdout: "liba\n"}},
		{[]string{"rpm", "-qf", "--qf", "%{NAME}\n", "--", "/usr/lib/b.so"}, runner.Result{ExitCode: 1, Stdout: "file /usr/lib/b.so is not owned by any package\n"}},
		{[]string{"rpm", "-qf", "--qf", "%{NAME}\n", "--", "/usr/lib/c.so"}, runner.Result{Stdout: "z\nc\nz\n"}},
	}}
	got, err := Owners(context.Background(), s, []string{"/usr/lib/a.so", "/usr/lib/b.so", "/usr/lib/c.so"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"/usr/lib/a.so": "liba", "/usr/lib/c.so": "c,z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(s.calls) > 0 {
		t.Errorf("calls left: %v", s.calls)
	}
}

func TestServicesUnderTheSystemSlice(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"system.slice", "system.slice/a.service", "system.slice/a.service/worker", "system.slice/x.slice/b.service", "system.slice/c.mount", "user.slice/d.service"} {
		write(t, filepath.Join(root, "unified", d, "cgroup.procs"), "")
	}
	got, err := Scanner{Cgroup: root, Proc: t.TempDir()}.Services()
	if want := []string{"/system.slice/a.service", "/system.slice/x.slice/b.service"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	// A manager in a container that shares the host's cgroup namespace.
	proc := t.TempDir()
	write(t, filepath.Join(proc, "1", "cgroup"), "0::/docker/abc/init.scope\n")
	write(t, filepath.Join(root, "docker/abc/system.slice/e.service/cgroup.procs"), "")
	got, err = Scanner{Cgroup: root, Proc: proc}.Services()
	if want := []string{"/docker/abc/system.slice/e.service"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("in a container: got %q, %v; want %q", got, err, want)
	}
}
