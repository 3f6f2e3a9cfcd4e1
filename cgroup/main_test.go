package cgroup

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-executes itself as the processes put into groups;
// TJCG_CHILD names what the child does. A child started by startIn first
// waits for a byte on stdin, so it runs nothing before it is in the group.
// The leaderjoin child runs on the main thread, the thread group leader,
// whose groups /proc/self/cgroup shows.
func init() {
	if os.Getenv("TJCG_CHILD") == "leaderjoin" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv("TJCG_CHILD"); mode != "" {
		runChild(mode, os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(mode string, args []string) {
	if os.Getenv("TJCG_WAIT") == "1" {
		var b [1]byte
		if _, err := os.Stdin.Read(b[:]); err != nil {
			os.Exit(3)
		}
	}
	switch mode {
	case "leaderjoin":
		leaderJoin()
	case "sleep":
		time.Sleep(time.Hour)
	case "ownname": // print the owner name it reads of itself, 200 times
		for i := 0; i < 200; i++ {
			start, err := procStartTime(os.Getpid())
			if err != nil {
				os.Exit(5)
			}
			fmt.Println(ownerName(os.Getpid(), start, pidNS()))
		}
		time.Sleep(time.Hour)
	case "touch": // touch args[0] MiB, then exit
		n, _ := strconv.Atoi(args[0])
		touch(n)
		fmt.Println("touched")
	case "oom": // start a sleeping sibling, print its pid, then touch args[0] MiB
		c := exec.Command("/proc/self/exe")
		c.Env = []string{"TJCG_CHILD=sleep"}
		if err := c.Start(); err != nil {
			os.Exit(4)
		}
		fmt.Println(c.Process.Pid)
		n, _ := strconv.Atoi(args[0])
		touch(n)
		fmt.Println("survived")
	case "spawn": // start args[0] sleepers, print their pids, sleep
		n, _ := strconv.Atoi(args[0])
		var pids []string
		for i := 0; i < n; i++ {
			c := exec.Command("/proc/self/exe")
			c.Env = []string{"TJCG_CHILD=sleep"}
			if err := c.Start(); err != nil {
				os.Exit(4)
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		fmt.Println(strings.Join(pids, " "))
		time.Sleep(time.Hour)
	case "forkloop":
		forkLoop()
	case "churn": // as PID 1 of a namespace: say so, then fork without end
		fmt.Println(os.Getpid())
		churn()
	case "busy": // spin args[1] threads for args[0] of wall time
		d, _ := time.ParseDuration(args[0])
		n, _ := strconv.Atoi(args[1])
		end := time.Now().Add(d)
		done := make(chan struct{})
		for i := 0; i < n; i++ {
			go func() {
				for time.Now().Before(end) {
				}
				done <- struct{}{}
			}()
		}
		for i := 0; i < n; i++ {
			<-done
		}
	case "supervisor": // make a group, put a sleeper in it, report, wait to be killed
		g, err := New(args[0], Resources{Pids: 64, Memory: 64 << 20})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(5)
		}
		c := exec.Command("/proc/self/exe")
		c.Env = []string{"TJCG_CHILD=sleep"}
		if err := c.Start(); err != nil {
			os.Exit(4)
		}
		if err := g.AddProc(c.Process.Pid); err != nil {
			fmt.Println("ERR", err)
			os.Exit(6)
		}
		fmt.Println(groupDirs(g)[0], c.Process.Pid)
		time.Sleep(time.Hour)
	case "unpriv":
		s := Probe()
		_, err := New("unpriv", Resources{Memory: 64 << 20, CPUs: 1, Pids: 32})
		out := map[string]any{"probe": s, "uid": os.Getuid()}
		if err != nil {
			out["new_error"] = err.Error()
			out["unavailable"] = errors.Is(err, ErrUnavailable)
		}
		json.NewEncoder(os.Stdout).Encode(out)
	default:
		os.Exit(2)
	}
}

// touch maps n MiB and writes to every page, so all of it is charged.
func touch(n int) {
	b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		os.Exit(7)
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// forkLoop forks (raw clone, the children only pause) until the kernel
// refuses; it exits 100+forks on EAGAIN, 1 if no fork failed. The exit
// code carries the result because after the limit the Go runtime cannot
// start a thread to print.
func forkLoop() {
	runtime.LockOSThread()
	for n := 0; n < 150; n++ {
		r1, _, errno := syscall.RawSyscall(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0)
		if errno != 0 {
			code := 2
			if errno == syscall.EAGAIN {
				code = 100 + n
			}
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(code), 0, 0)
		}
		if r1 == 0 {
			// pause(2) as arm64 has it too: ppoll with no fds and no timeout.
			for {
				syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
			}
		}
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 1, 0, 0)
}

// churn forks (raw clone, the children only pause) for ever, retrying when
// the pids cap refuses: the group gains a process whenever it can.
func churn() {
	runtime.LockOSThread()
	for {
		r1, _, _ := syscall.RawSyscall(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0)
		if r1 == 0 {
			for {
				syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
			}
		}
	}
}

// child is a re-exec'd test process inside a group.
type child struct {
	cmd   *exec.Cmd
	out   *bufio.Reader
	stdin io.WriteCloser
}

// startIn starts a child in g: cloned into it when g has a DirFD (v2),
// else added with AddProc while the child still waits on stdin.
func startIn(t *testing.T, g *Group, mode string, args ...string) *child {
	t.Helper()
	return startInWith(t, g, 0, mode, args...)
}

// startInWith is startIn with clone flags for the child (CLONE_NEWPID).
func startInWith(t *testing.T, g *Group, cloneflags uintptr, mode string, args ...string) *child {
	t.Helper()
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(os.Environ(), "TJCG_CHILD="+mode, "TJCG_WAIT=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: cloneflags}
	if fd := g.DirFD(); fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", mode, err)
	}
	if g.DirFD() < 0 {
		if err := g.AddProc(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("AddProc: %v", err)
		}
	}
	if _, err := in.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: bufio.NewReader(out), stdin: in}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	return c
}

func (c *child) line(t *testing.T) string {
	t.Helper()
	s, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read child output: %v", err)
	}
	return strings.TrimSpace(s)
}

// requireCaps skips unless this user can set caps on ctrls here. With
// TOOLJAIL_CGROUP_REQUIRE=v1 or v2 (the VM harness sets it) a missing mode
// fails instead, so a suite cannot pass by skipping everything.
func requireCaps(t *testing.T, ctrls ...string) Support {
	t.Helper()
	s := Probe()
	want := os.Getenv("TOOLJAIL_CGROUP_REQUIRE")
	if want != "" && string(s.Mode) != want {
		t.Fatalf("TOOLJAIL_CGROUP_REQUIRE=%s but Probe says mode %q (%s)", want, s.Mode, s.Reason)
	}
	for _, c := range ctrls {
		if !s.Controllers[c] {
			if want != "" {
				t.Fatalf("TOOLJAIL_CGROUP_REQUIRE=%s but controller %s is unavailable: %s", want, c, s.Reason)
			}
			t.Skipf("needs a %s cap, which uid %d cannot set here (mode %s): %s", c, os.Getuid(), s.Mode, s.Reason)
		}
	}
	return s
}

func newGroup(t *testing.T, id string, r Resources) *Group {
	t.Helper()
	g, err := New(id, r)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", id, r, err)
	}
	t.Cleanup(func() {
		g.Kill()
		g.Delete()
	})
	return g
}

// groupDirs are every directory of g (one on v2).
func groupDirs(g *Group) []string {
	switch b := g.b.(type) {
	case *v2Group:
		return []string{b.dir}
	case *v1Group:
		return b.dirs.sorted()
	}
	return nil
}

// procs lists the processes in g, as Kill sees them.
func procs(g *Group) ([]int, error) {
	switch b := g.b.(type) {
	case *v2Group:
		return readPids(b.dir)
	case *v1Group:
		return b.dirs.procs()
	}
	return nil, fmt.Errorf("unknown group type %T", g.b)
}

// joined says, for "memory", "cpu" and "pids", whether g is in that
// controller: v2 from the group's cgroup.controllers (what its parent
// enabled for it), v1 from the hierarchies it has a directory in.
func joined(t *testing.T, g *Group) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	switch b := g.b.(type) {
	case *v2Group:
		have, err := readString(b.dir, "cgroup.controllers")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{Memory, CPU, Pids} {
			m[c] = contains(strings.Fields(have), c)
		}
	case *v1Group:
		for _, c := range []string{Memory, CPU, Pids} {
			_, m[c] = b.dirs[c]
		}
	}
	return m
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; it only waits to be reaped.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}

// leaderJoin: the thread group leader joins run a's group (as a v1 fork of
// an init does), and run b's group is made meanwhile. It prints "ok" when
// b sits beside a, "nested" when inside it.
func leaderJoin() {
	r := Resources{Pids: 64}
	a, err := New("leader-a", r)
	if err != nil {
		fmt.Println("new a:", err)
		return
	}
	defer a.Delete()
	leave, err := a.JoinThread()
	if err != nil {
		fmt.Println("join a:", err)
		return
	}
	b, err := New("leader-b", r)
	if lerr := leave(); lerr != nil {
		fmt.Println("leave a:", lerr)
	}
	if err != nil {
		fmt.Println("new b:", err)
		return
	}
	defer b.Delete()
	for _, bd := range groupDirs(b) {
		for _, ad := range groupDirs(a) {
			if strings.HasPrefix(bd, ad+"/") {
				fmt.Println("nested:", bd)
				return
			}
		}
	}
	fmt.Println("ok")
}
