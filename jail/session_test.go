package jail_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

func startSession(t *testing.T, dir string, limits jail.SessionLimits) *jail.Session {
	t.Helper()
	spec := warmSpec(t, dir, nil, "true")
	s, err := jail.StartSession(spec, limits)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// call runs script in the session and returns its report.
func call(t *testing.T, s *jail.Session, keep bool, script string, env ...string) *jail.Result {
	t.Helper()
	sp := s.Spec()
	sp.Args = []string{"/bin/sh", "-c", script}
	sp.Env = append(append([]string(nil), sp.Env...), env...)
	cmd, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	cmd.CaptureOutput = true
	cmd.KeepRunning = keep
	res, err := cmd.Run()
	if err != nil {
		t.Fatalf("call %q: %v", script, err)
	}
	return res
}

func TestSessionCalls(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{})
	r1 := call(t, s, false, `echo one > /tmp/f; echo $$; export X=1; cd /tmp; sleep 1000 & echo started`, "TJ_A=a")
	if r1.ExitCode != 0 || !strings.Contains(*r1.Stdout.Text, "started") {
		t.Fatalf("call 1: %+v %q", r1, *r1.Stdout.Text)
	}
	if r1.Session == nil || r1.Session.Call != 1 || r1.Session.ID != s.ID() {
		t.Errorf("call 1's session: %+v", r1.Session)
	}
	if r1.KilledLeftoverProcesses == nil || *r1.KilledLeftoverProcesses != 1 {
		t.Errorf("call 1 left a sleep, killed after it: %v", r1.KilledLeftoverProcesses)
	}
	r2 := call(t, s, false, `cat /tmp/f; pwd; echo "X=$X A=$TJ_A"; ps -e -o comm= | grep -c sleep`)
	out := *r2.Stdout.Text
	for _, want := range []string{"one\n", dir + "\n", "X= A=\n", "0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("call 2 output %q lacks %q", out, want)
		}
	}
	// Until the kept child has exec'd sleep it is a copy of the shell, and
	// call 4 would count no sleep (seen on a loaded host): wait for it.
	r3 := call(t, s, true, `sleep 1000 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done; echo kept`)
	if r3.ExitCode != 0 || r3.KilledLeftoverProcesses == nil || *r3.KilledLeftoverProcesses != 0 {
		t.Errorf("call 3 (keep): %+v", r3)
	}
	r4 := call(t, s, false, `ps -e -o comm= | grep -c sleep; ps -ef >&2`)
	if got := *r4.Stdout.Text; got != "1\n" {
		t.Logf("stderr %s", *r4.Stderr.Text)
		t.Errorf("call 4 sees %q sleeps, want the one call 3 kept", got)
	}
	r5 := call(t, s, false, `exit 7`)
	if r5.ExitCode != 7 || r5.Status != jail.StatusExited {
		t.Errorf("call 5: %s %d", r5.Status, r5.ExitCode)
	}
	res := s.Stop()
	if res.Calls != 5 || res.StoppedFor != jail.StopAsked {
		t.Errorf("stop: %+v", res)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
}

// The next call's stage 2 waits, started ahead, between calls. A process
// an earlier call kept cannot signal it where Landlock scopes signals (each
// call is a domain of its own), and may kill it elsewhere, as it may kill
// the next call's command there. One that died waiting (here: killed from
// the host) is replaced by the call's own, as is one started in another
// working directory than the call's.
func TestSessionCallStartedAhead(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{})
	r1 := call(t, s, true, `(sleep 0.3; for p in /proc/[0-9]*; do
	    n=${p#/proc/}
	    if [ "$n" != 1 ] && [ "$(cat $p/comm)" = "$(cat /proc/1/comm)" ]; then
	      kill -9 $n 2>/dev/null && echo killed || echo denied
	    fi
	  done > /tmp/kills) & echo kept`)
	if r1.ExitCode != 0 {
		t.Fatalf("call 1: %+v", r1)
	}
	time.Sleep(time.Second)
	r2 := call(t, s, false, `cat /tmp/kills`)
	// Each call is a Landlock domain of its own: with signal scoping
	// (ABI 6+) one cannot signal another's processes.
	scoped := r1.Enforcement.LandlockABI >= 6
	switch got := *r2.Stdout.Text; {
	case r2.ExitCode != 0:
		t.Fatalf("call 2: %s %d %s", r2.Status, r2.ExitCode, r2.Reason)
	case got == "":
		t.Error("the kept process saw no stage 2 waiting for the next call")
	case scoped && got != "denied\n":
		t.Errorf("with Landlock's signal scoping, the kept process could signal the next call's stage 2: %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if n := killInitChildren(t); n != 1 {
		t.Errorf("killed %d stage 2s waiting from the host, want 1", n)
	}
	for i, d := range []string{"", "/tmp", "", "/tmp", ""} {
		sp := s.Spec()
		sp.Args = []string{"/bin/pwd"}
		want := dir
		if d != "" {
			sp.Dir, want = d, d
		}
		cmd, err := s.Command(sp)
		if err != nil {
			t.Fatal(err)
		}
		cmd.CaptureOutput = true
		res, err := cmd.Run()
		if err != nil || res.ExitCode != 0 || *res.Stdout.Text != want+"\n" {
			t.Errorf("call %d in %q: %v %+v, want pwd %s", i, d, err, res, want)
		}
	}
}

// A session's init starts a stage 2 for every call, each on a stack of
// its own in the memory they share: the init gives each back once that
// stage 2 has exec'd or ended, so its memory stays the same however many
// calls run. The calls take every path: started ahead, in another
// working directory (its own stage 2, the parked one dropped), a command
// not found (stage 2 fails and exits), a stage 2 killed while it waits.
func TestSessionInitMemoryStays(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{})
	inits := childrenNamed(os.Getpid(), "tooljail-init")
	if len(inits) != 1 {
		t.Fatalf("%d session inits among this process's children, want 1", len(inits))
	}
	vmSize := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", inits[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmSize:"); ok {
				kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kib
			}
		}
		t.Fatal("no VmSize")
		return 0
	}
	run := func(i int) {
		sp := s.Spec()
		sp.Args = []string{"/bin/true"}
		switch i % 4 {
		case 1:
			sp.Dir = "/tmp"
		case 2:
			sp.Args = []string{"/no/such/command"}
		case 3:
			killInitChildren(t) // the stage 2 parked ahead
		}
		cmd, err := s.Command(sp)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cmd.Run()
		switch {
		case i%4 == 2:
			if res == nil || res.ExitCode != 127 || res.Status != jail.StatusSetupError {
				t.Fatalf("call %d of a command not found: %v %+v", i, err, res)
			}
		case err != nil || res.ExitCode != 0:
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	for i := range 8 {
		run(i)
	}
	before := vmSize()
	const calls = 120
	for i := range calls {
		run(i)
	}
	// A stack is 256 KiB: kept, the calls would add 30 MiB.
	if grew := vmSize() - before; grew > 1024 {
		t.Errorf("the session's init grew by %d KiB over %d calls", grew, calls)
	}
}

// killInitChildren kills the children named tooljail-init of this
// process's children named tooljail-init (a session's init's stage 2s,
// before their execve), and returns how many.
func killInitChildren(t *testing.T) int {
	t.Helper()
	n := 0
	for _, init := range childrenNamed(os.Getpid(), "tooljail-init") {
		for _, st2 := range childrenNamed(init, "tooljail-init") {
			if err := syscall.Kill(st2, syscall.SIGKILL); err != nil {
				t.Errorf("kill %d: %v", st2, err)
			}
			n++
		}
	}
	return n
}

// childrenNamed lists pid's children (of any of its threads) whose name
// is comm.
func childrenNamed(pid int, comm string) []int {
	var found []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(f)
			if name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(name)) == comm {
				found = append(found, c)
			}
		}
	}
	return found
}

// A fork bomb in one call is that call's end (its timeout, the pids cap
// holding it), not the session's: the process an earlier call kept is
// still there for the next call, and the bomb's processes are all gone.
func TestSessionForkBombKillsTheCallOnly(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	spec := warmSpec(t, dir, nil, "true")
	spec.Limits.Pids = 64
	s, err := jail.StartSession(spec, jail.SessionLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	marker := fmt.Sprintf("1%d", time.Now().UnixNano()%1000000)
	// Wait for the kept child's exec, as in TestSessionCalls.
	call(t, s, true, "sleep "+marker+`00 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done; echo kept`)
	sp := s.Spec()
	// The call's own shell forks nothing once the bomb runs: a sleep after
	// the bomb, or the second command of the bomb's first pipeline, could
	// find the cap full, and the shell then ended the call before its
	// timeout (loaded CI runs did, in 0.06 s). The bomb runs in a subshell
	// forked once.
	sp.Args = []string{"/bin/sh", "-c", `sleep 100 & (b() { b | b & }; b) & wait`}
	sp.Limits.Timeout = 2 * time.Second
	cmd, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cmd.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != jail.StatusTimeout || res.KilledLeftoverProcesses == nil || *res.KilledLeftoverProcesses == 0 {
		t.Errorf("the bomb's call: %s (%s), killed after it %v; want timeout and the bomb killed", res.Status, res.Reason, res.KilledLeftoverProcesses)
	}
	// ps alone, then grep: in a pipeline, grep's side may not have exec'd
	// yet when ps reads /proc, and would count as a second shell.
	r := call(t, s, false, `ps -e -o args=,comm= >/tmp/ps; grep -c '^sleep `+marker+`00' /tmp/ps; grep -c ' sh$' /tmp/ps`)
	if got := *r.Stdout.Text; got != "1\n1\n" {
		t.Errorf("after the bomb: kept sleeps and shells %q, want the kept sleep and this call's shell", got)
	}
	if res := s.Stop(); res.PidsLimitHits == nil && os.Geteuid() == 0 {
		t.Errorf("the session's pids cap hits not reported: %+v", res)
	}
	if procs := hostProcsNamed(marker + "00"); len(procs) > 0 {
		t.Errorf("after Stop, the kept process is still on the host: %v", procs)
	}
}

// A session stops by itself when idle, killing what its calls kept.
func TestSessionIdle(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{Idle: 300 * time.Millisecond})
	marker := fmt.Sprintf("2%d", time.Now().UnixNano()%1000000)
	call(t, s, true, "sleep "+marker+"00 &")
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("an idle session did not stop")
	}
	res := s.Stop()
	if res.StoppedFor != jail.StopIdle || res.Calls != 1 {
		t.Errorf("stop: %+v, want idle after 1 call", res)
	}
	if procs := hostProcsNamed(marker + "00"); len(procs) > 0 {
		t.Errorf("an idle stop left %v on the host", procs)
	}
	sp := s.Spec()
	sp.Args = []string{"true"}
	cmd, err := s.Command(sp)
	if err == nil {
		if _, err = cmd.Run(); err == nil {
			t.Error("a stopped session ran a call")
		}
	}
}

// Stop kills a running call, which reports it; one call runs at a time; a
// call gets a terminal when asked; a call's Spec may not change the jail.
func TestSessionStopRunningCall(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{})
	sp := s.Spec()
	sp.Args = []string{"/bin/sh", "-c", "tty"}
	cmd, _ := s.Command(sp)
	cmd.TTY = &jail.TTY{}
	cmd.CaptureOutput = true
	if res, err := cmd.Run(); err != nil || *res.Stdout.Text != "/dev/pts/0\r\n" {
		t.Errorf("a terminal in a session: %v %q", err, *res.Stdout.Text)
	}
	other := s.Spec()
	other.Hostname = "elsewhere"
	other.Args = []string{"true"}
	if _, err := s.Command(other); err == nil {
		t.Error("a call with another host name was taken")
	}
	sp.Args = []string{"sleep", "1000"}
	running, _ := s.Command(sp)
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	second, _ := s.Command(sp)
	if err := second.Start(); err == nil {
		t.Error("a second call started while one runs")
	}
	done := make(chan *jail.Result, 1)
	go func() {
		res, _ := running.Wait()
		done <- res
	}()
	time.Sleep(200 * time.Millisecond)
	stop := s.Stop()
	res := <-done
	if res.Status == jail.StatusExited || !stop.KilledRunning {
		t.Errorf("the running call: %s (%s); session %+v", res.Status, res.Reason, stop)
	}
}

// BenchmarkSessionCall is one call of /bin/true in a live session, from Go
// (the embedded path: no client, no server).
func BenchmarkSessionCall(b *testing.B) {
	dir := b.TempDir()
	os.Chmod(dir, 0o777)
	p, err := profiles.Load("default")
	if err != nil {
		b.Fatal(err)
	}
	if os.Geteuid() != 0 {
		p.AddAllowDegraded("cgroup")
	}
	spec, err := p.Spec(profiles.Request{Args: []string{"/bin/true"}, Cwd: dir})
	if err != nil {
		b.Fatal(err)
	}
	s, err := jail.StartSession(spec, jail.SessionLimits{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	b.ResetTimer()
	for range b.N {
		cmd, err := s.Command(s.Spec())
		if err != nil {
			b.Fatal(err)
		}
		if res, err := cmd.Run(); err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
