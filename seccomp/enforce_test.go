package seccomp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A probe makes one call with harmless arguments: if the filter let it
// through, the kernel would fail it with a different errno (ENOENT,
// EFAULT, EINVAL...) or succeed without effect.
type probeCall struct {
	name     string     // test name
	reported string     // syscall name the monitor must record ("" = not reported)
	want     unix.Errno // errno under the filter (0 = must succeed)
	call     func() unix.Errno
}

func sys(nr uintptr, a ...uintptr) func() unix.Errno {
	var args [6]uintptr
	copy(args[:], a)
	return func() unix.Errno {
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		if e == 0 && (nr == unix.SYS_SOCKET || nr == unix.SYS_FSOPEN) {
			unix.Close(int(r))
		}
		return e
	}
}

func str(s string) uintptr {
	b := append([]byte(s), 0)
	return uintptr(unsafe.Pointer(&b[0]))
}

const noPath = "/nonexistent-tooljail-test"

// probeDirEnv names a directory, writable by the child, where the setuid
// and setgid probes create files; the child makes probeDir/f in it first.
const probeDirEnv = "TOOLJAIL_SECCOMP_PROBE_DIR"

var (
	probeDir   = os.Getenv(probeDirEnv)
	probePaths [][]byte
)

// sysClose is sys for calls that return a descriptor: closed on success.
func sysClose(nr uintptr, a ...uintptr) func() unix.Errno {
	var args [6]uintptr
	copy(args[:], a)
	return func() unix.Errno {
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		if e == 0 {
			unix.Close(int(r))
		}
		return e
	}
}

// nsys is sysClose by name, for calls some architectures lack (arm64 has
// no open, creat, chmod, mkdir or mknod); nil where there is no such call.
func nsys(name string, a ...uintptr) func() unix.Errno {
	nr, ok := nativeNr(name)
	if !ok {
		return nil
	}
	return sysClose(uintptr(nr), a...)
}

// setIDProbes try to create setuid and setgid files every way the filter
// knows (EPERM, reported by name), with controls that create the same
// without those bits (which must work). Paths are under probeDir.
func setIDProbes() []probeCall {
	// The paths stay referenced (probePaths) until the calls are made.
	at := func(name string) uintptr {
		b := append([]byte(filepath.Join(probeDir, name)), 0)
		probePaths = append(probePaths, b)
		return uintptr(unsafe.Pointer(&b[0]))
	}
	f := at("f")
	const atFDCWD = ^uintptr(99) // AT_FDCWD (-100)
	const (
		suid   = unix.S_ISUID
		sgid   = unix.S_ISGID
		create = unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC
		high   = uintptr(1) << 32
	)
	all := []probeCall{
		{"chmod-setuid", "chmod", unix.EPERM, nsys("chmod", f, suid|0o755)},
		{"chmod-0755", "", 0, nsys("chmod", f, 0o755)},
		{"fchmod-setgid", "fchmod", unix.EPERM, func() unix.Errno {
			fd, err := unix.Open(filepath.Join(probeDir, "f"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err.(unix.Errno)
			}
			defer unix.Close(fd)
			return sys(unix.SYS_FCHMOD, uintptr(fd), sgid|0o755)()
		}},
		{"fchmodat-setuid", "fchmodat", unix.EPERM, sys(unix.SYS_FCHMODAT, atFDCWD, f, suid|0o755)},
		{"fchmodat-0700", "", 0, sys(unix.SYS_FCHMODAT, atFDCWD, f, 0o700)},
		{"fchmodat2-setgid", "fchmodat2", unix.EPERM, sys(unix.SYS_FCHMODAT2, atFDCWD, f, sgid, 0)},
		{"creat-setuid", "creat", unix.EPERM, nsys("creat", at("c1"), suid|0o755)},
		{"creat-0755", "", 0, nsys("creat", at("c2"), 0o755)},
		{"open-creat-setgid", "open", unix.EPERM, nsys("open", at("o1"), create, sgid|0o755)},
		{"open-creat-0755", "", 0, nsys("open", at("o2"), create, 0o755)},
		{"openat-creat-setuid", "openat", unix.EPERM, sysClose(unix.SYS_OPENAT, atFDCWD, at("a1"), create, suid|0o755)},
		{"openat-creat-setgid-highbits", "openat", unix.EPERM, sysClose(unix.SYS_OPENAT, atFDCWD, at("a2"), create, high|sgid|0o755)},
		{"openat-creat-0755", "", 0, sysClose(unix.SYS_OPENAT, atFDCWD, at("a3"), create, 0o755)},
		{"openat-tmpfile-setgid", "openat", unix.EPERM, sysClose(unix.SYS_OPENAT, atFDCWD, at(""), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, sgid|0o700)},
		{"openat-tmpfile-0600", "", 0, sysClose(unix.SYS_OPENAT, atFDCWD, at(""), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)},
		// Without O_CREAT the mode is ignored by the kernel, and by the filter.
		{"openat-rdonly-setuid-mode", "", 0, sysClose(unix.SYS_OPENAT, atFDCWD, f, unix.O_RDONLY|unix.O_CLOEXEC, suid|0o755)},
		{"mkdir-setgid", "mkdir", unix.EPERM, nsys("mkdir", at("d1"), sgid|0o755)},
		{"mkdir-0755", "", 0, nsys("mkdir", at("d2"), 0o755)},
		{"mkdirat-setgid", "mkdirat", unix.EPERM, sys(unix.SYS_MKDIRAT, atFDCWD, at("d3"), sgid|0o755)},
		{"mkdirat-0755", "", 0, sys(unix.SYS_MKDIRAT, atFDCWD, at("d4"), 0o755)},
		{"mknod-setuid", "mknod", unix.EPERM, nsys("mknod", at("n1"), unix.S_IFREG|suid|0o755, 0)},
		{"mknod-0755", "", 0, nsys("mknod", at("n2"), unix.S_IFREG|0o755, 0)},
		{"mknodat-setgid", "mknodat", unix.EPERM, sys(unix.SYS_MKNODAT, atFDCWD, at("n3"), unix.S_IFREG|sgid|0o755, 0)},
		{"mknodat-0755", "", 0, sys(unix.SYS_MKNODAT, atFDCWD, at("n4"), unix.S_IFREG|0o755, 0)},
		// Its mode is in memory the filter cannot read: ENOSYS, so that
		// callers fall back to openat; not a violation.
		{"openat2", "", unix.ENOSYS, func() unix.Errno {
			how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}
			r, _, e := unix.Syscall6(unix.SYS_OPENAT2, atFDCWD, f, uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
			if e == 0 {
				unix.Close(int(r))
			}
			return e
		}},
	}
	var out []probeCall
	for _, p := range all {
		if p.call != nil {
			out = append(out, p)
		}
	}
	return out
}

// The same list runs in the child (calls) and the test (expectations).
func probes() []probeCall {
	var c byte
	tiocstiHigh := uintptr(0xffffffff00000000 | unix.TIOCSTI)
	p := []probeCall{
		{"unshare-newuser", "unshare", unix.EPERM, sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)},
		{"unshare-none", "", 0, sys(unix.SYS_UNSHARE, 0)},
		{"setns", "setns", unix.EPERM, sys(unix.SYS_SETNS, ^uintptr(0), 0)},
		// CLONE_THREAD without CLONE_SIGHAND: EINVAL if it ever got through.
		{"clone-newnet", "clone", unix.EPERM, sys(unix.SYS_CLONE, unix.CLONE_NEWNET|unix.CLONE_THREAD)},
		{"clone3", "", unix.ENOSYS, sys(unix.SYS_CLONE3, 0, 0)},
		{"mount", "mount", unix.EPERM, sys(unix.SYS_MOUNT, str(noPath), str(noPath), str("tmpfs"), 0, 0)},
		{"umount2", "umount2", unix.EPERM, sys(unix.SYS_UMOUNT2, str(noPath), 0)},
		{"fsopen", "fsopen", unix.EPERM, sys(unix.SYS_FSOPEN, str("nonexistentfs"), 0)},
		{"open_tree", "open_tree", unix.EPERM, sys(unix.SYS_OPEN_TREE, ^uintptr(0), str(noPath), 0)},
		{"pivot_root", "pivot_root", unix.EPERM, sys(unix.SYS_PIVOT_ROOT, str(noPath), str(noPath))},
		{"chroot", "chroot", unix.EPERM, sys(unix.SYS_CHROOT, str(noPath))},
		{"ptrace", "ptrace", unix.EPERM, sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME)},
		{"process_vm_readv", "process_vm_readv", unix.EPERM, sys(unix.SYS_PROCESS_VM_READV, 1, 0, 0, 0, 0, 0)},
		{"bpf", "bpf", unix.EPERM, sys(unix.SYS_BPF, 0, 0, 0)},
		{"perf_event_open", "perf_event_open", unix.EPERM, sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0)},
		// KEYCTL_GET_KEYRING_ID of a keyring that does not exist.
		{"keyctl", "keyctl", unix.EPERM, sys(unix.SYS_KEYCTL, 0, 12345, 0)},
		{"add_key", "add_key", unix.EPERM, sys(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0)},
		{"userfaultfd", "userfaultfd", unix.EPERM, sys(unix.SYS_USERFAULTFD, 0xffff)},
		{"io_uring_setup", "io_uring_setup", unix.EPERM, sys(unix.SYS_IO_URING_SETUP, 0, 0)},
		{"init_module", "init_module", unix.EPERM, sys(unix.SYS_INIT_MODULE, 0, 0, 0)},
		{"delete_module", "delete_module", unix.EPERM, sys(unix.SYS_DELETE_MODULE, str("tooljail_nonexistent"), 0)},
		{"kexec_load", "kexec_load", unix.EPERM, sys(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0xffff)},
		{"reboot", "reboot", unix.EPERM, sys(unix.SYS_REBOOT, 0, 0, 0, 0)},
		{"swapon", "swapon", unix.EPERM, sys(unix.SYS_SWAPON, str(noPath), 0)},
		{"acct", "acct", unix.EPERM, sys(unix.SYS_ACCT, str(noPath))},
		{"clock_settime", "clock_settime", unix.EPERM, sys(unix.SYS_CLOCK_SETTIME, 0, 0)},
		{"adjtimex", "adjtimex", unix.EPERM, sys(unix.SYS_ADJTIMEX, 0)},
		{"open_by_handle_at", "open_by_handle_at", unix.EPERM, sys(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0)},
		{"personality-bsd", "personality", unix.EPERM, sys(unix.SYS_PERSONALITY, 0x0006)},
		{"personality-query", "", 0, sys(unix.SYS_PERSONALITY, 0xffffffff)},
		{"ioctl-tiocsti", "ioctl", unix.EPERM, sys(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))},
		{"ioctl-tiocsti-highbits", "ioctl", unix.EPERM, sys(unix.SYS_IOCTL, 0, tiocstiHigh, uintptr(unsafe.Pointer(&c)))},
		{"ioctl-tioclinux", "ioctl", unix.EPERM, sys(unix.SYS_IOCTL, 0, unix.TIOCLINUX, uintptr(unsafe.Pointer(&c)))},
		// FIONREAD on fd 1 (a pipe to the test): allowed.
		{"ioctl-fionread", "", 0, func() unix.Errno {
			var n int32
			_, _, e := unix.Syscall(unix.SYS_IOCTL, 1, unix.TIOCINQ, uintptr(unsafe.Pointer(&n)))
			return e
		}},
		{"socket-packet", "socket", unix.EPERM, sys(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0)},
		{"socket-vsock", "socket", unix.EPERM, sys(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0)},
		{"socket-netlink-audit", "socket", unix.EPERM, sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT)},
		{"socket-mptcp", "socket", unix.EPERM, sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 262)},
		{"socket-mptcp-highbits", "socket", unix.EPERM, sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, 1<<32|262)},
		{"socket-inet-tcp", "", 0, sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)},
		{"socket-unix", "", 0, sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{"socket-netlink-route", "", 0, sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)},
		// Above every number libseccomp knows: treated as a syscall newer
		// than the list, ENOSYS and not reported.
		{"newer-than-list", "", unix.ENOSYS, sys(1000)},
		// Numbers with the x32 bit that are no x32 entry point: ENOSYS, as
		// from the kernel, not an arch violation (syscall(-1) is one).
		{"minus-1", "", unix.ENOSYS, sys(^uintptr(0))},
		{"x32-bit-no-entry", "", unix.ENOSYS, sys(x32Bit | 0x1000)},
		{"x32-and-bit31", "", unix.ENOSYS, sys(0xc0000000 | unix.SYS_GETPID)},
		// A hole in the x86_64 table (335-423 were never assigned): the
		// monitor has no name for it and answers ENOSYS like the kernel
		// would (EPERM without notify). Checked for amd64 only.
		{"unassigned-400", "syscall#400", unix.ENOSYS, sys(400)},
	}
	return append(p, setIDProbes()...)
}

// childProbe runs every probe (keyctl three times, to check counting)
// and prints name -> errno as JSON.
func childProbe() int {
	if probeDir != "" {
		if err := os.WriteFile(filepath.Join(probeDir, "f"), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	}
	res := make(map[string]int)
	for _, p := range probes() {
		res[p.name] = int(p.call())
		if p.name == "keyctl" {
			p.call()
			p.call()
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

func TestDeniedCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		notify bool
		uid    int
	}{
		{"notify", true, 0},
		{"notify-uid65534", true, 65534},
		{"errno", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.notify {
				requireNotify(t)
			}
			if tc.uid != 0 {
				requireRoot(t)
			}
			prog, err := (&Compiler{}).Compile(Policy{}, tc.notify)
			if err != nil {
				t.Fatal(err)
			}
			dir := probeDirFor(t)
			j := startJailed(t, prog, "probe", childOpts{action: ActionDeny, uid: tc.uid, env: []string{probeDirEnv + "=" + dir}})
			st, vs := j.wait(t)
			if !st.Success() {
				t.Fatalf("child: %v; stderr: %s", st, j.stderr.String())
			}
			var got map[string]int
			if err := json.Unmarshal(j.stdout.Bytes(), &got); err != nil {
				t.Fatalf("child output %q: %v", j.stdout.String(), err)
			}
			wantReported := map[string]int{}
			for _, p := range probes() {
				if p.name == "unassigned-400" {
					if runtime.GOARCH != "amd64" {
						continue
					}
					if !tc.notify {
						p.want, p.reported = unix.EPERM, ""
					}
				}
				if e := unix.Errno(got[p.name]); e != p.want {
					t.Errorf("%s: errno %v (%d), want %v (%d)", p.name, e, int(e), p.want, int(p.want))
				}
				if p.reported != "" {
					wantReported[p.reported]++
				}
			}
			noSetID(t, dir)
			if !tc.notify {
				if len(vs) != 0 {
					t.Errorf("violations without notify: %v", vs)
				}
				return
			}
			wantReported["keyctl"] += 2
			byName := violationsByName(vs)
			for name, n := range wantReported {
				v, ok := byName[name]
				if !ok {
					t.Errorf("no violation recorded for %s; got %s", name, describe(vs))
					continue
				}
				if v.Count != n || v.Kind != "syscall" || v.Action != "denied" {
					t.Errorf("%s: %+v, want count %d kind syscall action denied", name, v, n)
				}
				if v.Pid <= 0 || v.JailPid <= 0 || len(v.Args) != 6 {
					t.Errorf("%s: pid %d, jail pid %d, args %v", name, v.Pid, v.JailPid, v.Args)
				}
			}
			if len(byName) != len(wantReported) {
				t.Errorf("unexpected violations: got %s", describe(vs))
			}
			if v := byName["ioctl"]; len(v.Args) > 1 && v.Args[1] != fmt.Sprintf("%#x", unix.TIOCSTI) {
				t.Errorf("ioctl first args %v, want request %#x", v.Args, unix.TIOCSTI)
			}
		})
	}
}

// probeDirFor makes a directory for the setuid probes that the child can
// write whatever its uid.
func probeDirFor(t *testing.T) string {
	dir, err := os.MkdirTemp("", "tooljail-seccomp-probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// noSetID checks that nothing in dir got a setuid or setgid bit, whatever
// the errnos said.
func noSetID(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Errorf("the probes created %d files in %s: did they run?", len(entries), dir)
	}
	for _, e := range entries {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			t.Errorf("%s has mode %#o: a setuid/setgid bit got through", e.Name(), st.Mode)
		}
	}
}

func TestKillAction(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var kills atomic.Int32
	j := startJailed(t, prog, "probe", childOpts{action: ActionKill, onKill: func(c *exec.Cmd) {
		kills.Add(1)
		c.Process.Kill()
	}})
	st, vs := j.wait(t)
	if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Fatalf("child: %v, want killed; stdout %q", st, j.stdout.String())
	}
	if n := kills.Load(); n != 1 {
		t.Errorf("onKill called %d times, want 1", n)
	}
	if len(vs) == 0 || vs[0].Syscall != "unshare" || vs[0].Action != "killed" {
		t.Errorf("violations %s, want the first probe (unshare) killed", describe(vs))
	}
}

// TestStopWhileRunning: Stop returns at once although the jail is alive.
func TestStopWhileRunning(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := startJailed(t, prog, "hang", childOpts{action: ActionDeny})
	defer func() { j.cmd.Process.Kill(); j.cmd.Wait() }()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	done := make(chan []Violation)
	go func() { done <- j.monitor.Stop() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return within 5s while the jail was running")
	}
	t.Logf("Stop with a live jail took %v", time.Since(t0))
}

// childFlood makes 100000 denied calls and prints how long they took.
func childFlood() int {
	const n = 100000
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, _, e := unix.Syscall(unix.SYS_KEYCTL, 0, 12345, 0); e != unix.EPERM {
			fmt.Println("errno", e)
			return 1
		}
	}
	fmt.Println(time.Since(t0).Nanoseconds())
	return 0
}

func TestFlood(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := startJailed(t, prog, "flood", childOpts{action: ActionDeny})
	st, vs := j.wait(t)
	if !st.Success() {
		t.Fatalf("child: %v %s %s", st, j.stdout.String(), j.stderr.String())
	}
	var ns int64
	fmt.Sscan(strings.TrimSpace(j.stdout.String()), &ns)
	if len(vs) != 1 || vs[0].Syscall != "keyctl" || vs[0].Count != 100000 {
		t.Fatalf("violations %s, want keyctl x100000", describe(vs))
	}
	d := time.Duration(ns)
	t.Logf("100000 denied calls answered in %v: %.0f calls/s, %v per call", d, 1e5/d.Seconds(), d/100000)
}
