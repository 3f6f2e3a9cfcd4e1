package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sessions through the CLI and a real `tooljail serve`, as root and as
// uid 65534: a server on the session's loopback, started and kept by call
// 1, answers call 2; /tmp persists; cwd and env do not leak from one call
// to the next; what a call does not keep is gone when it ends; stop and
// the idle limit leave no process on the host, and the session's final
// report is in the audit log.
func TestSessionCLI(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")
		tj, start := sessionCLI(t, u, s, w)
		fds := func() int {
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
			return len(ents)
		}
		// What the server opens once and keeps (its own executable, an id
		// mapping's user namespace) comes with its first session; a root
		// server's root template of the session's shape (and the mount
		// table it polls), with its third: a shape's second run builds
		// it, and the server's very first run does not count.
		for i := 0; i < 3; i++ {
			tj("session", "stop", start())
		}
		fdsBefore := fds()
		id := start()
		marker := fmt.Sprintf("3%d", time.Now().UnixNano()%1000000)
		port := fmt.Sprintf("127.0.0.1:%d", 20000+time.Now().Nanosecond()%20000)
		o := tj("run", "-q", "--session", id, "--keep-running", "--env", "ONE=1", "--",
			"/bin/sh", "-c", "echo kept > /tmp/f; cd /tmp; "+helper+" serve-tcp "+port+" "+marker+" >/dev/null 2>&1 & sleep 1000"+marker+" >/dev/null 2>&1 & echo started")
		if o.code != 0 || strings.TrimSpace(o.stdout) != "started" {
			t.Fatalf("call 1: %s", o)
		}
		o = tj("run", "-q", "--session", id, "--", "/bin/sh", "-c",
			`cat /tmp/f; pwd; echo "one=$ONE"; sleep 2000`+marker+` & for i in $(seq 50); do r=$(`+helper+` fetch `+port+`); case "$r" in value*) echo "$r"; break;; esac; sleep 0.1; done`)
		lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
		if o.code != 0 || len(lines) < 4 || lines[0] != "kept" || lines[1] != w || lines[2] != "one=" ||
			!strings.HasPrefix(lines[len(lines)-1], `value "hello from `) {
			t.Errorf("call 2: /tmp, cwd, env or call 1's server: %s", o)
		}
		// Call 2's sleep was not kept: gone with it. Call 1's are there.
		if procs := hostProcs("2000" + marker); len(procs) > 0 {
			t.Errorf("call 2 left %v running after it ended", procs)
		}
		if procs := hostProcs("1000" + marker); len(procs) != 1 {
			t.Errorf("call 1's kept sleep: %v, want one", procs)
		}
		o = tj("run", "-q", "--session", id, "--workdir", "/tmp", "--", "pwd")
		if strings.TrimSpace(o.stdout) != "/tmp" {
			t.Errorf("a call's --workdir: %s", o)
		}
		if o = tj("run", "-q", "--session", id, "--memory", "2G", "--", "true"); o.code != 125 || !strings.Contains(o.stderr, "--memory cannot be used with --session") {
			t.Errorf("a call's own memory limit: %s", o)
		}
		if o = tj("session", "list"); !strings.Contains(o.stdout, id) {
			t.Errorf("session list: %s", o)
		}
		if o = tj("session", "stop", id); o.code != 0 || !strings.Contains(o.stdout, "3 calls") {
			t.Errorf("session stop: %s", o)
		}
		requireGone(t, "1000"+marker, marker)
		// The server holds nothing of the session: its socket to the
		// jail, the cgroup's descriptors, the relays' pipes are closed.
		deadline := time.Now().Add(10 * time.Second * slow)
		for fds() > fdsBefore && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := fds(); n > fdsBefore {
			t.Errorf("the server holds %d descriptors after the session stopped, %d before it started", n, fdsBefore)
		}
		if o = tj("run", "-q", "--session", id, "--", "true"); o.code != 125 || !strings.Contains(o.stderr, "no such session") {
			t.Errorf("a call after stop: %s", o)
		}
		// The idle limit.
		idle := start("--idle", "1s")
		tj("run", "-q", "--session", idle, "--keep-running", "--", "/bin/sh", "-c", "sleep 3000"+marker+" >/dev/null 2>&1 &")
		deadline = time.Now().Add(30 * time.Second * slow)
		for strings.Contains(tj("session", "list").stdout, idle) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if strings.Contains(tj("session", "list").stdout, idle) {
			t.Errorf("an idle session did not stop")
		}
		requireGone(t, "3000"+marker)
		audit, _ := os.ReadFile(s.audit)
		// The three before the reference, the one of the calls, the idle one.
		if n := strings.Count(string(audit), `"session":{"id":"`); n != 5 {
			t.Errorf("%d session lines in the audit log, want 5:\n%s", n, audit)
		}
	})
}

// Every call of a session is confined as a run's command is, whichever
// way its stage 2 started: ahead of the call (the session's workdir), or
// for the call (another working directory), and again ahead after that.
// Each has no capability and one seccomp filter, its denied mount is
// refused and in its own report, and /usr stays read-only.
func TestSessionCallsConfined(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		tj, start := sessionCLI(t, u, s, w)
		id := start()
		defer tj("session", "stop", id)
		rep := filepath.Join(u.dir(t), "report.json")
		for i, dir := range []string{"", "/tmp", ""} {
			call := []string{"run", "--session", id, "--report", rep}
			if dir != "" {
				call = append(call, "--workdir", dir)
			}
			o := tj(append(call, "--", filepath.Join(w, "tjhelper"), "caps", ";", "mount-tmpfs", "/tmp", ";", "write", "/usr/tjtest", "1")...)
			lines := o.ok(t, 3)
			var caps map[string]string
			o.value(t, 0, &caps)
			for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if caps[k] != "0000000000000000" {
					t.Errorf("call %d: %s = %q, want all zero", i, k, caps[k])
				}
			}
			if caps["NoNewPrivs"] != "1" || caps["Seccomp"] != "2" || caps["Seccomp_filters"] != "1" {
				t.Errorf("call %d: no_new_privs %q, seccomp %q with %q filters; want 1, 2 (filter) and one", i, caps["NoNewPrivs"], caps["Seccomp"], caps["Seccomp_filters"])
			}
			if lines[1] != "errno EPERM" || !failed(lines[2]) {
				t.Errorf("call %d: mount %s (want EPERM), write /usr %s (want a failure)", i, lines[1], lines[2])
			}
			b, err := os.ReadFile(rep)
			var r struct {
				Violations []struct{ Kind, Syscall string } `json:"violations"`
			}
			if err != nil || json.Unmarshal(b, &r) != nil || len(r.Violations) != 1 || r.Violations[0].Syscall != "mount" {
				t.Errorf("call %d's report: violations %+v (%v), want its mount", i, r.Violations, err)
			}
		}
		if _, err := os.Stat("/usr/tjtest"); err == nil {
			t.Error("a session call wrote /usr/tjtest on the host")
		}
	})
}

// sessionCLI is u's CLI in workdir w against server s (tj), and a session
// start there with the server's profile that returns the session's id.
func sessionCLI(t *testing.T, u *user, s *server, w string) (tj func(args ...string) *outcome, start func(extra ...string) string) {
	tj = func(args ...string) *outcome {
		t.Helper()
		return u.exec(t, run{args: args, dir: w, env: []string{"TOOLJAIL_SERVER=" + s.sock}})
	}
	start = func(extra ...string) string {
		t.Helper()
		args := append([]string{"session", "start", "--workdir", w}, extra...)
		if s.profile != "" {
			args = append(args, "--profile", s.profile)
		}
		o := tj(args...)
		id := strings.TrimSpace(o.stdout)
		if o.code != 0 || len(id) != 32 {
			t.Fatalf("session start: %s", o)
		}
		return id
	}
	return tj, start
}
