package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Nothing the command starts outlives the run: plain orphans, setsid'ed
// double-forked daemons and stopped children. PID 1 reaps orphans. The
// report counts what was killed.
func TestChildrenKilledAtExit(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		orphan, daemon, stopped := marker("orphan"), marker("daemon"), marker("stopped")
		o := u.jail(t, w, nil,
			"spawn", orphan, ";",
			"daemon", daemon, ";",
			"stopped", stopped, ";",
			"zombies", "4", ";",
			"ps")
		o.ok(t, 5)
		var procs []proc
		o.value(t, 4, &procs)
		// Positive control: all three were alive in the jail (the stopped
		// one stopped) when the command exited.
		for _, m := range []string{orphan, daemon, stopped} {
			found := false
			for _, p := range procs {
				// The children's argv is "tjhelper _hold|_stop MARKER";
				// the command's own argv holds every marker too.
				if strings.HasPrefix(p.Cmdline, "tjhelper _") && strings.Contains(p.Cmdline, m) {
					found = true
					// The stop itself is confirmed by tjhelper (WUNTRACED);
					// by ps time job control may already have resumed it.
				}
			}
			if !found {
				t.Errorf("%s was not running in the jail: %+v", m, procs)
			}
		}
		var z map[string]int
		o.value(t, 3, &z)
		if z["zombies"] != 0 {
			t.Errorf("PID 1 left %d orphans unreaped (zombies)", z["zombies"])
		}
		requireGone(t, orphan, daemon, stopped)
		// The three were killed at the command's end, and counted; the
		// orphans that had ended on their own are not.
		if n := o.notes(t).KilledLeftover; n == nil || *n != 3 {
			t.Errorf("killed_leftover_processes %v, want 3 (orphan, daemon, stopped)\n%s", n, o)
		}
	})
}

func TestTimeout(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		daemon, orphan := marker("tdaemon"), marker("torphan")
		// The command must get to its sleep before the timeout, with the
		// rest of the suite running next to it (on two cores); in the
		// emulated VM guests start-up alone can take seconds.
		tmo := 3 * time.Second
		if slow > 1 {
			tmo = 8 * time.Second
		}
		start := time.Now()
		o := u.jail(t, w, []string{"--timeout", tmo.String()}, "daemon", daemon, ";", "spawn", orphan, ";", "sleep", "30s")
		took := time.Since(start)
		if o.code != 124 || o.noReport || o.report.Status != "timeout" || o.report.ExitCode != 124 {
			t.Fatalf("want exit 124 and status timeout\n%s", o)
		}
		if took > 10*tmo || took < tmo {
			t.Errorf("the run took %s with a %s timeout", took, tmo)
		}
		if !strings.Contains(o.report.Reason, tmo.String()) {
			t.Errorf("reason %q does not name the limit", o.report.Reason)
		}
		if !strings.Contains(o.stderr, "timeout") {
			t.Errorf("no summary line on stderr: %q", o.stderr)
		}
		if got := o.lines(); len(got) != 2 {
			t.Errorf("want the two results before the sleep, got %q", got)
		}
		requireGone(t, daemon, orphan)
	})
}

// What is over the output limit is counted and dropped; --json keeps the
// head and the tail.
func TestOutputLimit(t *testing.T) {
	const pat = "abcdefghijklmnopqrstuvwxyz"
	pattern := func(n int) string { return strings.Repeat(pat, n/len(pat)+1)[:n] }
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--output-limit", "1000"}, "output", "100000")
		if o.code != 0 {
			t.Fatalf("want exit 0\n%s", o)
		}
		if o.stdout != pattern(1000) {
			t.Errorf("relayed %d bytes, want exactly the first 1000", len(o.stdout))
		}
		r := o.report
		if r.Stdout.Bytes != 100000 || !r.Stdout.Truncated || r.Limits.OutputLimitBytes != 1000 {
			t.Errorf("report stdout %+v limit %d, want 100000 bytes counted, truncated", r.Stdout, r.Limits.OutputLimitBytes)
		}
		if r.Stdout.Text != nil {
			t.Errorf("text in the report without --json")
		}
		if !strings.Contains(o.stderr, "output") {
			t.Errorf("no summary line about the dropped output: %q", o.stderr)
		}

		// The limit is shared by stdout and stderr.
		o = u.jail(t, w, []string{"--output-limit", "1000", "-q"}, "output", "700", ";", "stderr", "700")
		if len(o.stdout)+len(o.stderr) != 1000 || o.report.Stdout.Bytes != 700 || o.report.Stderr.Bytes != 700 ||
			!(o.report.Stdout.Truncated || o.report.Stderr.Truncated) {
			t.Errorf("shared limit: relayed %d+%d bytes, report %+v %+v", len(o.stdout), len(o.stderr), o.report.Stdout, o.report.Stderr)
		}

		// Under the limit: everything, not truncated.
		o = u.jail(t, w, []string{"--output-limit", "1000"}, "output", "999")
		if o.stdout != pattern(999) || o.report.Stdout.Truncated || o.report.Stdout.Bytes != 999 {
			t.Errorf("under the limit: %d bytes relayed, report %+v", len(o.stdout), o.report.Stdout)
		}

		// --json: stdout is only the report; the text keeps head and tail.
		o = u.jail(t, w, []string{"--output-limit", "1000", "--json"}, "output", "100000")
		var rep report
		if err := json.Unmarshal([]byte(o.stdout), &rep); err != nil {
			t.Fatalf("--json stdout is not the report: %v\n%s", err, o)
		}
		if rep.Stdout.Text == nil {
			t.Fatalf("--json report has no stdout text\n%s", o)
		}
		text := *rep.Stdout.Text
		full := pattern(100000)
		if !strings.HasPrefix(text, full[:500]) || !strings.HasSuffix(text, full[len(full)-100:]) {
			t.Errorf("--json text should keep the head and the tail: %q", trunc(text))
		}
		// The head is what was relayed (the limit); the tail a few KiB.
		if len(text) > 1000+8192 || !strings.Contains(text, "dropped") || !rep.Stdout.Truncated || rep.Stdout.Bytes != 100000 {
			t.Errorf("--json text %d bytes (limit 1000), stream %+v", len(text), rep.Stdout)
		}
	})
}

func TestExitCodes(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		os.WriteFile(filepath.Join(w, "notexec"), []byte("#!/bin/sh\nexit 0\n"), 0o644)
		os.Mkdir(filepath.Join(w, "adir"), 0o755)
		ro := u.dir(t)
		os.Chmod(ro, 0o755)
		if err := copyFile(helperBin, filepath.Join(ro, "tjhelper")); err != nil {
			t.Fatal(err)
		}
		helper := filepath.Join(w, "tjhelper")
		cases := []struct {
			name    string
			flags   []string
			command []string
			code    int
			status  string
			signal  string
		}{
			{"zero", nil, []string{helper, "exit", "0"}, 0, "exited", ""},
			{"three", nil, []string{helper, "exit", "3"}, 3, "exited", ""},
			{"two-hundred", nil, []string{helper, "exit", "200"}, 200, "exited", ""},
			{"sigterm", nil, []string{helper, "kill-self", "TERM"}, 128 + 15, "signaled", "SIGTERM"},
			{"sigusr1", nil, []string{helper, "kill-self", "USR1"}, 128 + 10, "signaled", "SIGUSR1"},
			{"sigkill", nil, []string{helper, "kill-self", "KILL"}, 128 + 9, "signaled", "SIGKILL"},
			{"timeout", []string{"--timeout", "200ms"}, []string{helper, "sleep", "20s"}, 124, "timeout", ""},
			{"bad-flag", []string{"--no-such-flag"}, []string{helper, "exit", "0"}, 125, "", ""},
			{"not-executable", nil, []string{filepath.Join(w, "notexec")}, 126, "setup_error", ""},
			{"directory", nil, []string{filepath.Join(w, "adir")}, 126, "setup_error", ""},
			{"no-exec-on-ro-bind", []string{"--ro", ro + ":/robin"}, []string{"/robin/tjhelper", "exit", "0"}, 126, "setup_error", ""},
			{"missing-path", nil, []string{"/nonexistent/command"}, 127, "setup_error", ""},
			{"missing-name", nil, []string{"no-such-command-tj"}, 127, "setup_error", ""},
		}
		for _, c := range cases {
			o := u.jailRun(t, w, run{args: c.flags}, c.command...)
			if o.code != c.code {
				t.Errorf("%s: exit %d, want %d\n%s", c.name, o.code, c.code, o)
				continue
			}
			if c.status == "" {
				continue // tooljail refused the flags: no report
			}
			if o.noReport || o.report.Status != c.status || o.report.ExitCode != c.code || o.report.Signal != c.signal {
				t.Errorf("%s: report status/exit_code/signal wrong, want %s/%d/%q\n%s", c.name, c.status, c.code, c.signal, o)
			}
			if c.code >= 126 && c.code <= 127 && (o.report.Reason == "" || !strings.Contains(o.stderr, "tooljail: ")) {
				t.Errorf("%s: no reason in the report or on stderr\n%s", c.name, o)
			}
		}
	})
}

// tooljail's threads run with a timer slack of 1 ms (internal/
// timerslack); the command gets the one tooljail was started with,
// below that or above, through the CLI and a server.
func TestTimerSlack(t *testing.T) {
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", unix.Gettid()))
	if err != nil {
		t.Skipf("no timer slack to read: %v", err)
	}
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, ns := range []string{"123456", "5000000"} {
			o := u.jailRun(t, w, run{wrap: []string{"_timerslack", ns}}, "/bin/sh", "-c", "cat /proc/self/timerslack_ns")
			if o.code != 0 || strings.TrimSpace(o.stdout) != ns {
				t.Errorf("a caller's timer slack of %s ns: the command's is %q\n%s", ns, strings.TrimSpace(o.stdout), o)
			}
		}
		s := u.startServer(t, "")
		r := s.call(t, req{Argv: []string{"/bin/sh", "-c", "cat /proc/self/timerslack_ns"}, Workdir: w})
		if got := strings.TrimSpace(r.stdout()); got != strings.TrimSpace(string(own)) {
			t.Errorf("a served command's timer slack %q, want the server's caller's %s\n%s", got, own, r)
		}
		if u.uid != 0 {
			return // another process's timer slack takes CAP_SYS_NICE to read
		}
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + task.Name() + "/timerslack_ns")
			if err != nil {
				continue // the thread ended since
			}
			read++
			if strings.TrimSpace(string(b)) != "1000000" {
				t.Errorf("the server's thread %s: timer slack %s, want 1000000", task.Name(), b)
			}
		}
		if read == 0 {
			t.Errorf("no thread of the server (pid %d) had a timer slack to read", s.cmd.Process.Pid)
		}
	})
}

func TestRlimits(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--nofile", "64"}, "rlimits", ";", "openmany", "200")
		o.ok(t, 2)
		var lim map[string][2]string
		o.value(t, 0, &lim)
		if lim["NOFILE"] != [2]string{"64", "64"} || lim["CORE"] != [2]string{"0", "0"} {
			t.Errorf("rlimits inside: %v, want NOFILE 64/64 and CORE 0/0", lim)
		}
		var many struct {
			Opened int    `json:"opened"`
			Error  string `json:"error"`
		}
		o.value(t, 1, &many)
		if many.Error != "EMFILE" || many.Opened > 64 || many.Opened < 50 {
			t.Errorf("opening 200 files with nofile 64: %+v", many)
		}
		if o.report.Limits.NoFile != 64 || o.report.Limits.CoreBytes == nil || *o.report.Limits.CoreBytes != 0 {
			t.Errorf("report limits: %+v", o.report.Limits)
		}

		// Without a nofile limit the command gets the soft limit tooljail
		// was started with, not the one its Go runtime raised to the hard
		// limit (tjhelper is Go and would raise its own: ask a shell).
		var hard unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &hard)
		if hard.Max > 200 {
			o = u.jailRun(t, w, run{args: []string{"--nofile", "unlimited"}, wrap: []string{"_nofile", "100"}}, "/bin/sh", "-c", "ulimit -Sn")
			if o.code != 0 || strings.TrimSpace(o.stdout) != "100" {
				t.Errorf("nofile unlimited under a caller's soft limit of 100: the command's soft NOFILE %q, want 100\n%s", o.stdout, o)
			}
		}

		// A nofile limit above the caller's hard limit cannot be set: the
		// run fails before the command, and the error names the limit.
		if hard.Max < 1<<30 {
			want := fmt.Sprintf("set nofile limit to %d", hard.Max+1)
			o = u.jail(t, w, []string{"--nofile", strconv.FormatUint(hard.Max+1, 10)}, "exit", "0")
			if o.code != 125 || o.report.Status != "setup_error" || !strings.Contains(o.report.Reason, want) {
				t.Errorf("--nofile above the hard limit: want exit 125 and a reason with %q\n%s", want, o)
			}
		}

		// --fsize: writing past it ends with SIGXFSZ; the file stops at the limit.
		o = u.jail(t, w, []string{"--fsize", "4K"}, "write", filepath.Join(w, "small"), "4096", ";", "write", filepath.Join(w, "big"), "100000")
		if o.code != 128+25 || o.report.Signal != "SIGXFSZ" || o.report.Status != "signaled" {
			t.Errorf("writing past --fsize: want exit 153 and SIGXFSZ\n%s", o)
		}
		if got := o.lines(); len(got) != 1 || got[0] != "ok" {
			t.Errorf("a write up to the limit should succeed: %q", got)
		}
		if st, err := os.Stat(filepath.Join(w, "big")); err != nil || st.Size() > 4096 {
			t.Errorf("file written past --fsize: %v %v", st, err)
		}
		if !strings.Contains(o.report.Reason, "file size") {
			t.Errorf("reason %q does not name the file size limit", o.report.Reason)
		}

		// --cpu-time: a busy loop ends with SIGXCPU (or SIGKILL at the hard
		// limit), before its own end, with about a second of CPU. Not timed
		// by the clock: a starved guest may take many seconds to give it
		// that second (its loop and timeout are scaled for that).
		o = u.jail(t, w, []string{"--cpu-time", "1s", "--timeout", (20 * time.Second * slow).String()}, "busy", (15 * time.Second * slow).String())
		if (o.code != 128+24 && o.code != 128+9) || o.report.Status != "signaled" {
			t.Errorf("busy loop with --cpu-time 1s: want SIGXCPU or SIGKILL\n%s", o)
		}
		if o.report.CPUUserMs == nil || o.report.CPUSystemMs == nil {
			t.Errorf("the report has no CPU times\n%s", o)
		} else if cpu := *o.report.CPUUserMs + *o.report.CPUSystemMs; cpu < 700 || cpu > 3000 {
			// The lower bound says the loop was not ended early by something
			// else; the kernel's rusage has read 837 ms for the rlimit's
			// second on this VM at a load of 40 (steal), so it is loose.
			t.Errorf("the busy loop used %d ms of CPU with --cpu-time 1s, want about 1000", cpu)
		}
		if o.report.Limits.CPUTimeMs != 1000 {
			t.Errorf("report cpu_time_ms = %d", o.report.Limits.CPUTimeMs)
		}
	})
}

// Signals sent to tooljail reach the command: the supervisor passes
// SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT and
// SIGALRM to the init, which sends them to the command's process group. A second SIGINT kills the whole run.
func TestSignalsForwarded(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if _, err := os.Stat("/bin/sh"); err != nil {
			t.Skip("no /bin/sh here")
		}
		w := u.workdir(t)
		// start runs script in the jail and returns once it printed ready.
		start := func(script string) (*exec.Cmd, *bufio.Reader) {
			t.Helper()
			args := []string{"run", "-q", "--workdir", w}
			for _, d := range u.degraded {
				args = append(args, "--allow-degraded", d)
			}
			// From a caller with the signals at their default actions,
			// as at an interactive shell, whatever this test process
			// inherited: tooljail relays none it was started ignoring.
			return u.startUntilReady(t, w, nil, append(append(startDefault(), tooljailBin), append(args, "--", "/bin/sh", "-c", script)...)...)
		}
		wait := func(cmd *exec.Cmd) int {
			t.Helper()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode()
				}
				return 0
			case <-time.After(30 * time.Second * slow):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Error("tooljail did not end after the signal")
			}
			return -1
		}

		// Those an agent runtime sends too (Python's patch_subprocess: send_signal).
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGALRM} {
			cmd, r := start(`trap 'echo got; exit 7' TERM INT HUP USR1 USR2 WINCH ALRM; echo ready; while :; do sleep 0.05; done`)
			out := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				out <- b
			}()
			cmd.Process.Signal(sig)
			// All of the output first: Wait closes the pipe.
			var rest []byte
			select {
			case rest = <-out:
			case <-time.After(30 * time.Second * slow):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				rest = <-out
			}
			if code := wait(cmd); code != 7 || string(rest) != "got\n" {
				t.Errorf("%v to tooljail: exit %d and output %q, want the command's trap (exit 7, got)", sig, code, rest)
			}
		}

		// The command survives SIGINT: the first one reaches it and changes
		// nothing else, the second kills the run. The second is sent once the
		// command said it got the first: two SIGINTs that reach tooljail
		// before its runtime hands the first on are one signal (a loaded
		// guest once took longer than the 100 ms this test used to wait).
		cmd, r := start(`trap 'echo int' INT; echo ready; while :; do sleep 0.05; done`)
		cmd.Process.Signal(syscall.SIGINT)
		if l, err := r.ReadString('\n'); l != "int\n" {
			t.Fatalf("the first SIGINT did not reach the command: %q %v", l, err)
		}
		go io.Copy(io.Discard, r)
		cmd.Process.Signal(syscall.SIGINT)
		if code := wait(cmd); code != 128+9 {
			t.Errorf("two SIGINTs to tooljail: exit %d, want 137 (the run killed)", code)
		}
	})
}

// A signal that comes once the command is gone, while tooljail writes the
// report, takes its default action in tooljail, as if it had never
// relayed one: SIGTERM and SIGINT end it by the signal, SIGWINCH changes
// nothing and the report comes whole. It is neither sent to a command
// that is gone nor swallowed. The report of a run that printed 2 MB goes
// to a pipe this test reads only after the signal, so tooljail is blocked
// writing it, past the end of the run, when the signal comes.
func TestSignalAfterTheCommandEnds(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, c := range []struct {
			sig    syscall.Signal
			killed bool
		}{{syscall.SIGTERM, true}, {syscall.SIGINT, true}, {syscall.SIGWINCH, false}} {
			args := append(startDefault(), tooljailBin, "run", "--json", "--workdir", w)
			for _, d := range u.degraded {
				args = append(args, "--allow-degraded", d)
			}
			cmd, out := u.startInGroup(t, w, nil, append(args, "--", "/bin/sh", "-c", "head -c 2000000 /dev/zero")...)
			deadline := time.Now().Add(30 * time.Second * slow)
			for !writingStdout(cmd.Process.Pid) {
				if time.Now().After(deadline) {
					t.Fatalf("%v: tooljail never blocked writing its report", c.sig)
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(c.sig)
			n, _ := io.Copy(io.Discard, out)
			err := cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			switch {
			case c.killed && !(ws.Signaled() && ws.Signal() == c.sig):
				t.Errorf("%v while tooljail wrote its report: %v, want tooljail ended by the signal", c.sig, err)
			case !c.killed && (err != nil || n < 2000000):
				t.Errorf("%v while tooljail wrote its report: %v after %d bytes, want the whole report and exit 0", c.sig, err, n)
			}
		}
	})
}

// writingStdout says whether a thread of process pid is in a write to its
// fd 1 (/proc/PID/task/TID/syscall: the number, then the arguments).
func writingStdout(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
		if strings.HasPrefix(string(b), fmt.Sprintf("%d 0x1 ", unix.SYS_WRITE)) {
			return true
		}
	}
	return false
}

// startUntilReady starts tjhelper with args as u in dir, in a process
// group and a run cgroup of its own (killed and checked at the test's
// end), and returns once its stdout said "ready". stderr may be nil.
func (u *user) startUntilReady(t *testing.T, dir string, stderr io.Writer, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd, out := u.startInGroup(t, dir, stderr, args...)
	r := bufio.NewReader(out)
	if l, err := r.ReadString('\n'); l != "ready\n" {
		t.Fatalf("the command did not start: %q %v", l, err)
	}
	return cmd, r
}

// startInGroup starts tjhelper with args as u in dir, in a process group
// and a run cgroup of its own (killed and checked at the test's end), and
// returns its stdout.
func (u *user) startInGroup(t *testing.T, dir string, stderr io.Writer, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.release)
	cmd := exec.Command(helperBin, args...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, u.environ(nil), stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, out
}

// sigIgn is the SigIgn mask of a /proc/PID/status text.
func sigIgn(t *testing.T, status string) uint64 {
	t.Helper()
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no SigIgn in the command's status\n%s", status)
	return 0
}

// startDefault is the tjhelper wrapper that execs its command with the
// signals tooljail relays and a shell may leave ignored (SIGHUP, SIGINT,
// SIGQUIT, SIGPIPE, SIGTERM) at their default actions, for the tests that
// send them.
func startDefault() []string { return []string{"_default", "1,2,3,13,15"} }

// A signal tooljail was started with ignored stays ignored, as across an
// execve: nohup's SIGHUP, a background job's SIGINT and SIGQUIT, a shell's
// `trap "" TERM PIPE`. The oracle is the same command started directly under the
// same wrapper: the jailed command's ignored signals are the same, all of
// them (the Go runtime keeps only SIGHUP and SIGINT ignored; the rest come
// from what tooljail read before it started: jail.StartIgnored). And a
// SIGTERM tooljail was started ignoring neither ends it nor reaches the
// command. From a caller with the signals at their defaults, none is.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	const ignored = "1,2,3,13,15"
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		direct := exec.Command(helperBin, "_ignore", ignored, "/bin/cat", "/proc/self/status")
		direct.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
		out, err := direct.Output()
		if err != nil {
			t.Fatal(err)
		}
		want := sigIgn(t, string(out))
		o := u.jailRun(t, w, run{wrap: []string{"_ignore", ignored}}, "/bin/cat", "/proc/self/status")
		if got := sigIgn(t, o.stdout); o.code != 0 || got != want {
			t.Errorf("the command's ignored signals %#x, want %#x (the same command started directly)\n%s", got, want, o)
		}
		o = u.jailRun(t, w, run{wrap: startDefault()}, "/bin/cat", "/proc/self/status")
		if got := sigIgn(t, o.stdout) & 0x4007; o.code != 0 || got != 0 {
			t.Errorf("from a caller with them at their default: exit %d, SIGHUP, SIGINT, SIGQUIT, SIGTERM ignored %#x, want none\n%s", o.code, got, o)
		}

		args := []string{"_ignore", "15", tooljailBin, "run", "-q", "--workdir", w}
		for _, d := range u.degraded {
			args = append(args, "--allow-degraded", d)
		}
		cmd, r := u.startUntilReady(t, w, nil, append(args, "--", "/bin/sh", "-c", "echo ready; sleep 1; echo done")...)
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		if err != nil || string(rest) != "done\n" {
			t.Errorf("SIGTERM to tooljail run started ignoring it: %v, the rest of the output %q; want the command's end (done)", err, rest)
		}
	})
}

// `tools call` started ignoring SIGQUIT and SIGTERM ignores them too, and
// the tool's command inherits them ignored (from the jail's init), as
// docs/cli.md says; from a caller with them at their default, it does not.
func TestToolsCallKeepsIgnoredSignals(t *testing.T) {
	const quitTerm = 1<<(3-1) | 1<<(15-1)
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		file := filepath.Join(u.dir(t), "rc.toml")
		if err := os.WriteFile(file, []byte("[run_command]\nprofile = \"default\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		call := func(wrap []string) uint64 {
			t.Helper()
			a := []string{"tools", "call", "--workdir", w, "--audit-log", filepath.Join(u.dir(t), "audit.log")}
			for _, l := range u.degraded {
				a = append(a, "--allow-degraded", l)
			}
			o := u.exec(t, run{wrap: wrap, args: append(a, file, "run_command", "--", "cat", "/proc/self/status")})
			if o.code != 0 {
				t.Fatalf("tools call: %s", o)
			}
			return sigIgn(t, o.stdout)
		}
		if got := call([]string{"_ignore", "3,15"}) & quitTerm; got != quitTerm {
			t.Errorf("the tool's command under a caller ignoring SIGQUIT and SIGTERM: ignored %#x of them, want both", got)
		}
		if got := call(startDefault()) & quitTerm; got != 0 {
			t.Errorf("the tool's command under a caller at the defaults: ignored %#x of SIGQUIT and SIGTERM, want none", got)
		}
	})
}
