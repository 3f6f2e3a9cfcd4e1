package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The behaviour tests re-execute the test binary as a jailed child: it sets
// no_new_privs, loads the program it reads from fd 3 (installAllThreads),
// sends the listener over the socket at fd 4 (as stage 2 does), marks fds
// close-on-exec and then does what childModes[mode] says. The test process
// runs the Monitor.

const childEnv = "TOOLJAIL_SECCOMP_TEST_CHILD"

// apiEnv, when set, is the libseccomp API level the tests compile with,
// instead of the one libseccomp probes from the kernel. `make unit-arm64`
// sets it: under qemu-user there is no seccomp(2) to probe (level 1, no
// KILL_PROCESS, no notify), yet compiling a filter for arm64's syscall table
// needs no kernel. Tests that load a filter still fail there, and are skipped
// by name in the Makefile.
const apiEnv = "TOOLJAIL_TEST_SECCOMP_API"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	if v := os.Getenv(apiEnv); v != "" {
		level, err := strconv.ParseUint(v, 10, 32)
		if err == nil {
			err = libseccomp.SetAPI(uint(level))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%s: %v\n", apiEnv, v, err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if exeCopy.path != "" {
		os.RemoveAll(filepath.Dir(exeCopy.path))
	}
	os.Exit(code)
}

// childModes run after the filter is installed. Their stdout goes to the
// test. Those that run without a filter ("workload-go") are listed in
// unfilteredModes.
var childModes = map[string]func() int{
	"probe":       childProbe,
	"flood":       childFlood,
	"hang":        func() int { time.Sleep(time.Minute); return 0 },
	"exec":        childExec,
	"workload-go": childWorkloadGo,
	"sockets":     childSockets,
}

var unfilteredModes = map[string]bool{"workload-go": true}

func childMain(mode string) int {
	run, ok := childModes[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		return 2
	}
	if unfilteredModes[mode] {
		return run()
	}
	var prog Program
	if err := json.NewDecoder(os.NewFile(3, "prog")).Decode(&prog); err != nil {
		fmt.Fprintln(os.Stderr, "child: read program:", err)
		return 2
	}
	// no_new_privs is a thread's: installAllThreads must run on the
	// thread that set it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "child: no_new_privs:", err)
		return 2
	}
	l, err := installAllThreads(&prog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if l != nil {
		if err := sendListener(4, l); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		l.Close()
	}
	unix.Close(4)
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintln(os.Stderr, "child: close_range:", err)
		return 2
	}
	return run()
}

// installAllThreads loads prog on every thread of the calling process, a
// Go program, with the raw seccomp(2) call; the jail's stage 2 is a single
// thread and loads ThreadArgs' program on itself (jail/internal/initc/stage2.c).
// no_new_privs must already be set. When prog.Notify, it returns the
// notification listener, which the caller hands to the test process
// (sendListener) and closes before running on. From here on everything
// the caller does must be allowed; in notify mode a denied call blocks
// until the test's Monitor answers.
func installAllThreads(prog *Program) (*os.File, error) {
	insns, flags, err := ThreadArgs(prog)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	// Every thread: TSYNC. TSYNC_ESRCH lets TSYNC and NEW_LISTENER share
	// one call: a thread that cannot be synchronised gives ESRCH instead
	// of its tid, which would be ambiguous with the listener fd.
	flags |= unix.SECCOMP_FILTER_FLAG_TSYNC
	if prog.Notify {
		flags |= unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	}
	fprog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(insns)
	switch {
	case errno == unix.ESRCH:
		return nil, errors.New("install: a thread of this process could not be synchronised (it has a different seccomp filter or is exiting)")
	case errno != 0:
		return nil, fmt.Errorf("install (flags %#x): %w", flags, errno)
	case !prog.Notify && r != 0:
		return nil, fmt.Errorf("install: thread %d could not be synchronised to the filter", r)
	case !prog.Notify:
		return nil, nil
	}
	return os.NewFile(r, "seccomp-listener"), nil
}

// sendListener sends the listener over a connected AF_UNIX socket with
// SCM_RIGHTS, under the filter: sendmsg only. The caller still closes its
// own copy of l.
func sendListener(sock int, l *os.File) error {
	rights := unix.UnixRights(int(l.Fd()))
	if err := unix.Sendmsg(sock, []byte{'L'}, rights, nil, 0); err != nil {
		return fmt.Errorf("send listener: %w", err)
	}
	runtime.KeepAlive(l)
	return nil
}

// recvListener receives a listener sent by sendListener, close-on-exec.
func recvListener(sock int) (*os.File, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive listener: %w", err)
	}
	if n != 1 || buf[0] != 'L' {
		return nil, errors.New("receive listener: the child closed the channel or sent something else")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive listener: bad control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receive listener: want one fd: %v", err)
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-listener"), nil
}

// jailed is one child under a filter, seen from the test.
type jailed struct {
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	monitor *Monitor
}

type childOpts struct {
	action Action
	onKill func(*exec.Cmd)
	uid    int // 0: as the test's user
	args   []string
	env    []string
	// newMonitor, when set, makes the monitor (action and onKill unused).
	newMonitor func(*os.File, *exec.Cmd) *Monitor
}

// startJailed starts the test binary in mode under prog.
func startJailed(t testing.TB, prog *Program, mode string, o childOpts) *jailed {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if o.uid != 0 {
		exe = exeCopyFor(t, exe)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(pw).Encode(prog); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	childSock := os.NewFile(uintptr(sp[1]), "child-sock")

	j := &jailed{}
	j.cmd = exec.Command(exe, o.args...)
	j.cmd.Env = append(append(os.Environ(), childEnv+"="+mode), o.env...)
	j.cmd.ExtraFiles = []*os.File{pr, childSock}
	j.cmd.Stdout, j.cmd.Stderr = &j.stdout, &j.stderr
	if o.uid != 0 {
		j.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.uid)}}
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	childSock.Close()
	defer unix.Close(sp[0])
	if prog.Notify {
		l, err := recvListener(sp[0])
		if err != nil {
			j.cmd.Wait()
			t.Fatalf("%v; child stderr: %s", err, j.stderr.String())
		}
		if o.newMonitor != nil {
			j.monitor = o.newMonitor(l, j.cmd)
			return j
		}
		var onKill func()
		if o.onKill != nil {
			onKill = func() { o.onKill(j.cmd) }
		}
		j.monitor = NewMonitor(l, MonitorOptions{Action: o.action, OnKill: onKill})
	}
	return j
}

// wait waits for the child and stops the monitor.
func (j *jailed) wait(t testing.TB) (*os.ProcessState, []Violation) {
	t.Helper()
	err := j.cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	var v []Violation
	if j.monitor != nil {
		v = j.monitor.Stop()
		if err := j.monitor.Err(); err != nil {
			t.Errorf("monitor: %v", err)
		}
	}
	return j.cmd.ProcessState, v
}

var exeCopy struct {
	sync.Mutex
	path string
}

// exeCopyFor puts the test binary where an unprivileged uid can run it
// (go test builds it in a root-only directory).
func exeCopyFor(t testing.TB, exe string) string {
	exeCopy.Lock()
	defer exeCopy.Unlock()
	if exeCopy.path != "" {
		return exeCopy.path
	}
	dir, err := os.MkdirTemp("", "tooljail-seccomp-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "seccomp.test")
	in, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	exeCopy.path = dst
	return dst
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the child as uid 65534")
	}
}

func requireNotify(t *testing.T) {
	if s := Probe(); !s.Notify {
		t.Skipf("no seccomp user notification here: %s", s.Reason)
	}
}

func requireAmd64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 specific")
	}
}

func violationsByName(vs []Violation) map[string]Violation {
	m := make(map[string]Violation)
	for _, v := range vs {
		m[v.Syscall] = v
	}
	return m
}

func describe(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%s:%s x%d (%s); ", v.Kind, v.Syscall, v.Count, v.Action)
	}
	return b.String()
}
