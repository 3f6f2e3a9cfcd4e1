package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestKillAndDeleteLeaveNothing(t *testing.T) {
	requireCaps(t, Memory, CPU, Pids)
	g := newGroup(t, "kill", Resources{Memory: 128 * mib, CPUs: 1, Pids: 64})
	for c, on := range joined(t, g) {
		if !on {
			t.Errorf("controller %s not joined", c)
		}
	}
	c := startIn(t, g, "spawn", "5")
	var pids []int
	for _, f := range strings.Fields(c.line(t)) {
		p, _ := strconv.Atoi(f)
		pids = append(pids, p)
	}
	in, err := procs(g)
	if err != nil || len(in) != 6 {
		t.Fatalf("Procs = %v, %v; want the child and its 5 sleepers", in, err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	for _, p := range append(pids, c.cmd.Process.Pid) {
		if alive(p) {
			t.Errorf("pid %d alive after Kill", p)
		}
	}
	dirs := groupDirs(g)
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("%s still exists after Delete", d)
		}
	}
	if g.DirFD() != -1 {
		t.Errorf("DirFD still open after Delete")
	}
	if err := g.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	t.Logf("mode %s: removed %v", g.Mode(), dirs)
}

// TestCleanupStale: a supervisor that dies by SIGKILL leaves a group with a
// process in it; CleanupStale kills the process and removes the group, and
// leaves the groups of live supervisors (another process, and this one) alone.
func TestCleanupStale(t *testing.T) {
	requireCaps(t, Memory, Pids)
	mine := newGroup(t, "mine", Resources{Pids: 16})
	dead, deadPath, deadPid := startSupervisor(t, "dead")
	live, livePath, _ := startSupervisor(t, "live")
	if !exists(deadPath) || !exists(livePath) {
		t.Fatalf("supervisor groups missing: %s %s", deadPath, livePath)
	}
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	if !alive(deadPid) {
		t.Fatalf("the dead supervisor's jailed process %d died with it; the test needs it to outlive", deadPid)
	}
	if err := CleanupStale(); err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	for _, d := range supervisorDirsEverywhere(t, deadPath) {
		if exists(d) {
			t.Errorf("dead supervisor's directory %s survived CleanupStale", d)
		}
	}
	if !waitFor(func() bool { return !alive(deadPid) }) {
		t.Errorf("dead supervisor's jailed process %d survived CleanupStale", deadPid)
	}
	if !exists(livePath) {
		t.Errorf("CleanupStale removed live supervisor's group %s", livePath)
	}
	for _, d := range groupDirs(mine) {
		if !exists(d) {
			t.Errorf("CleanupStale removed this process's group %s", d)
		}
	}
	live.Process.Signal(syscall.SIGKILL)
	live.Wait()
	if err := CleanupStale(); err != nil {
		t.Fatalf("second CleanupStale: %v", err)
	}
	if exists(livePath) {
		t.Errorf("%s survived after its supervisor died", livePath)
	}
}

func startSupervisor(t *testing.T, id string) (*exec.Cmd, string, int) {
	t.Helper()
	cmd := exec.Command("/proc/self/exe", id)
	cmd.Env = append(os.Environ(), "TJCG_CHILD=supervisor")
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] == "ERR" {
		t.Fatalf("supervisor child: %q %v", line, err)
	}
	pid, _ := strconv.Atoi(f[1])
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return cmd, f[0], pid
}

func TestConcurrentNewDelete(t *testing.T) {
	requireCaps(t, Memory, CPU, Pids)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	var mu sync.Mutex
	var all []string
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			g, err := New(fmt.Sprintf("conc-%d", i), Resources{Memory: 64 * mib, CPUs: 0.5, Pids: 16})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			all = append(all, groupDirs(g)...)
			mu.Unlock()
			if err := g.Kill(); err != nil {
				errs <- err
			}
			if err := g.Delete(); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range all {
		if exists(d) {
			t.Errorf("%s left behind", d)
		}
	}
	// The v2 owner directory goes with the last group (it stays only when
	// it holds the supervisor itself); v1 makes none.
	if len(all) > 0 {
		_, h, _ := detect()
		switch h := h.(type) {
		case v2Host:
			owner := filepath.Dir(all[0])
			if exists(owner) && !exists(filepath.Join(owner, supervisorDir)) {
				t.Errorf("owner dir %s left behind", owner)
			}
		case v1Host:
			bases := map[string]bool{}
			for _, b := range h.bases {
				bases[b] = true
			}
			for _, d := range all {
				if !bases[filepath.Dir(d)] {
					t.Errorf("v1 run directory %s is not in a base", d)
				}
			}
		}
	}
	t.Logf("50 groups, %d directories, all removed", len(all))
}

func TestRunIDInUse(t *testing.T) {
	requireCaps(t, Pids)
	newGroup(t, "dup", Resources{Pids: 8})
	if g, err := New("dup", Resources{Pids: 8}); err == nil {
		g.Delete()
		t.Fatal("second New with the same run id succeeded")
	}
}

// supervisorDirsEverywhere is where the supervisor that made the group at
// path has directories in every hierarchy: its v2 owner directory, or its
// v1 run directory in each base.
func supervisorDirsEverywhere(t *testing.T, path string) []string {
	_, h, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	switch h := h.(type) {
	case v2Host:
		l = append(l, filepath.Join(h.base, filepath.Base(filepath.Dir(path))))
	case v1Host:
		for _, b := range h.bases {
			l = append(l, filepath.Join(b, filepath.Base(path)))
		}
	}
	return l
}

// TestCleanupStaleConcurrent runs many cleaners at once while other
// supervisors live and one is dead: live groups stay, the dead one goes.
// A SIGKILLed supervisor that nobody has reaped yet (a zombie: its
// parent, often PID 1, may take seconds) is dead all the same: its groups
// go.
func TestCleanupStaleZombieOwner(t *testing.T) {
	requireCaps(t, Memory, Pids)
	z, zPath, _ := startSupervisor(t, "zombie")
	z.Process.Signal(syscall.SIGKILL)
	// Not reaped until the end: a zombie meanwhile.
	defer z.Wait()
	if !waitFor(func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", z.Process.Pid))
		return err == nil && statZombie(b)
	}) {
		t.Fatalf("the killed supervisor %d did not become a zombie", z.Process.Pid)
	}
	if err := CleanupStale(); err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	for _, d := range supervisorDirsEverywhere(t, zPath) {
		if exists(d) {
			t.Errorf("a zombie supervisor's directory %s survived CleanupStale", d)
		}
	}
}

func TestCleanupStaleConcurrent(t *testing.T) {
	requireCaps(t, Memory, Pids)
	// Runs last: removes the groups of the live supervisors killed at the end.
	t.Cleanup(func() {
		if err := CleanupStale(); err != nil {
			t.Error(err)
		}
	})
	var livePaths []string
	for i := 0; i < 8; i++ {
		_, p, _ := startSupervisor(t, fmt.Sprintf("cc-live-%d", i))
		livePaths = append(livePaths, p)
	}
	dead, deadPath, _ := startSupervisor(t, "cc-dead")
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := CleanupStale(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, p := range livePaths {
		if !exists(p) {
			t.Errorf("live group %s removed by a concurrent CleanupStale", p)
		}
	}
	if exists(deadPath) {
		t.Errorf("dead group %s survived", deadPath)
	}
}

// TestCleanupStaleNestedV1 covers groups an older tooljail left on a v1
// host, when runs sat in a per-supervisor owner directory: CleanupStale
// kills what runs there and removes the run and owner directories.
func TestCleanupStaleNestedV1(t *testing.T) {
	requireCaps(t, Memory, Pids)
	_, dh, err := detect()
	h, v1 := dh.(v1Host)
	if err != nil || !v1 {
		t.Skip("v1 hosts only (v2 keeps the nested layout, covered by TestCleanupStale)")
	}
	own, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dead := ownerName(os.Getpid(), own+1, pidNS()) // our pid, another start: a dead supervisor
	var owners, runs []string
	for _, b := range h.bases {
		o := filepath.Join(b, dead)
		r := filepath.Join(o, runDirName("old"))
		if err := os.MkdirAll(r, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		owners, runs = append(owners, o), append(runs, r)
	}
	t.Cleanup(func() {
		for _, d := range append(runs, owners...) {
			unix.Rmdir(d)
		}
	})
	// A process left in the old group, as after a SIGKILLed supervisor.
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), "TJCG_CHILD=sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	g := &v1Group{dirs: v1Dirs{}}
	for c, b := range h.bases {
		g.dirs[c] = filepath.Join(b, dead, runDirName("old"))
	}
	if err := g.addProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := CleanupStale(); err != nil {
		t.Errorf("CleanupStale: %v", err)
	}
	if !waitFor(func() bool { return !alive(cmd.Process.Pid) }) {
		t.Errorf("the process in the old group survived CleanupStale")
	}
	for _, d := range append(runs, owners...) {
		if exists(d) {
			t.Errorf("%s survived CleanupStale", d)
		}
	}
}

// On v1 the thread that forks an init joins the run's group first; when
// that thread is the thread group leader, /proc/self/cgroup shows the run's
// group. A run whose group is made meanwhile must still make it beside,
// not inside, the first (inside, it was frozen and killed with it, and its
// thread was moved "home" into it).
func TestLeaderJoinDoesNotNest(t *testing.T) {
	if s := requireCaps(t, Pids); s.Mode != ModeV1 {
		t.Skipf("only v1 moves a thread into a run's group (mode %s)", s.Mode)
	}
	c := exec.Command("/proc/self/exe")
	c.Env = append(os.Environ(), "TJCG_CHILD=leaderjoin")
	out, err := c.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("leader joined a run, another run's group made meanwhile: %q, %v", out, err)
	}
}

// TestOwnPIDNamespace: on v1 a group whose processes are one PID namespace
// is not made in the freezer hierarchy (Resources.OwnPIDNamespace), one
// without is; and Kill still leaves nothing of a namespace whose processes
// fork all the while at the pids cap: SIGKILL reaches its init, and the
// kernel takes the namespace down with it.
func TestOwnPIDNamespace(t *testing.T) {
	s := requireCaps(t, Pids)
	if s.Mode != ModeV1 {
		t.Skipf("the freezer is v1's (mode %s)", s.Mode)
	}
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace without a user namespace needs root")
	}
	probe := exec.Command("/proc/self/exe", "-test.run=^$")
	probe.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := probe.Run(); errors.Is(err, syscall.EINVAL) {
		// qemu-user (the arm64 unit run) does not emulate namespace flags.
		t.Skipf("cannot clone a PID namespace here: %v", err)
	}
	_, h, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	_, hasFreezer := h.(v1Host).bases["freezer"]
	inFreezer := func(g *Group) bool {
		for _, d := range groupDirs(g) {
			if strings.HasPrefix(d, h.(v1Host).bases["freezer"]+"/") {
				return true
			}
		}
		return false
	}
	if plain := newGroup(t, "plain", Resources{Pids: 64}); hasFreezer && !inFreezer(plain) {
		t.Errorf("a group of processes in no namespace of their own has no freezer directory: %v", groupDirs(plain))
	}
	g := newGroup(t, "pidns", Resources{Pids: 64, OwnPIDNamespace: true})
	if inFreezer(g) {
		t.Errorf("a group of one PID namespace was made in the freezer: %v", groupDirs(g))
	}
	c := startInWith(t, g, syscall.CLONE_NEWPID, "churn")
	if got := c.line(t); got != "1" {
		t.Fatalf("the child is pid %s in its namespace, want 1", got)
	}
	// At the cap once a fork was refused (pids.events): the cap counts
	// tasks, and how many threads the churning init has (so how many
	// processes fit beside them) depends on its Go runtime and the load.
	atCap := func() bool {
		st := g.Figures(Counters)
		return st.PidsLimitHits != nil && *st.PidsLimitHits > 0
	}
	for i := 0; i < 3000 && !atCap(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	pids, _ := procs(g)
	if !atCap() || len(pids) < 2 {
		t.Fatalf("the namespace did not reach the pids cap of 64 in 30 s (%d processes, no fork refused)", len(pids))
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	if left, err := procs(g); err != nil || len(left) != 0 {
		t.Errorf("after Kill: %v, %v; want an empty group", left, err)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("pid %d alive after Kill", p)
		}
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}
