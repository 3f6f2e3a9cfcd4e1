package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
)

func startSessionReq(t testing.TB, c *Client, workdir string, detach bool) (SessionInfo, func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := Request{Workdir: workdir, SessionOp: &SessionOp{Action: "start", Detach: detach}}
	raw, closer, err := c.SessionOp(ctx, req)
	if err != nil {
		t.Fatalf("session start: %v", err)
	}
	var info SessionInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if closer == nil {
		return info, func() error { return nil }
	}
	return info, closer.Close
}

func listSessions(t *testing.T, c *Client) []SessionInfo {
	t.Helper()
	raw, _, err := c.SessionOp(context.Background(), Request{SessionOp: &SessionOp{Action: "list"}})
	if err != nil {
		t.Fatal(err)
	}
	var list []SessionInfo
	json.Unmarshal(raw, &list)
	return list
}

// Two calls in a session: a background HTTP server on the session's
// loopback, kept by call 1, answers call 2; /tmp persists; the env and
// cwd of one call do not reach the next; another uid cannot use or stop
// it; an attached session ends with its connection, a detached one
// stays until stopped; its final report goes to the audit log.
func TestSessionServed(t *testing.T) {
	ts := start(t)
	c := ts.client()
	w := t.TempDir()
	os.Chmod(w, 0o777)
	info, closeIt := startSessionReq(t, c, w, false)
	if !jail.ValidSessionID(info.ID) || info.Detached {
		t.Fatalf("start: %+v", info)
	}
	r1 := run(t, c, Request{Session: info.ID, KeepRunning: true, Env: map[string]string{"CALL_ONE": "1"},
		Argv: []string{"/bin/sh", "-c", `echo hi > /tmp/f; cd /tmp; python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & echo started`}})
	if r1.ExitCode != 0 || r1.Session == nil || !r1.Session.KeepRunning {
		t.Fatalf("call 1: %+v", r1)
	}
	r2 := run(t, c, Request{Session: info.ID, Argv: []string{"/bin/sh", "-c",
		`cat /tmp/f; pwd; echo "one=$CALL_ONE"; for i in $(seq 100); do python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8765/f').read().decode())" 2>/dev/null && break; sleep 0.1; done`}})
	out := text(r2.Stdout)
	for _, want := range []string{"hi\n", w + "\n", "one=\n", "hi\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("call 2's output %q lacks %q", out, want)
		}
	}
	if strings.Count(out, "hi\n") != 2 {
		t.Errorf("call 2 did not reach call 1's server: %q", out)
	}
	r3 := run(t, c, Request{Session: info.ID, Cwd: "/tmp", Argv: []string{"pwd"}})
	if text(r3.Stdout) != "/tmp\n" {
		t.Errorf("cwd /tmp: %q", text(r3.Stdout))
	}
	// Another uid: not found, in the words of a session that is not there.
	if _, e := ts.Server.stopSession(info.ID, 4242); e == nil || !strings.Contains(e.Message, "no such session") {
		t.Errorf("uid 4242 stops another's session: %v", e)
	}
	if _, e := ts.Server.sessionCall(&Request{Session: info.ID, Argv: []string{"true"}}, &report.Peer{UID: 4242}); e == nil {
		t.Error("uid 4242 runs a call in another's session")
	}
	if n := len(listSessions(t, c)); n != 1 {
		t.Errorf("%d sessions listed, want 1", n)
	}
	// Attached: the connection's end is the session's.
	closeIt()
	deadline := time.Now().Add(30 * time.Second)
	for len(listSessions(t, c)) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(listSessions(t, c)); n != 0 {
		t.Fatalf("an attached session outlived its connection (%d listed)", n)
	}
	if _, err := c.Run(context.Background(), Request{Session: info.ID, Argv: []string{"true"}}); err == nil {
		t.Error("a call in a stopped session ran")
	}
	// Detached: it stays until stopped.
	d, _ := startSessionReq(t, c, w, true)
	if n := len(listSessions(t, c)); n != 1 {
		t.Fatalf("a detached session: %d listed", n)
	}
	raw, _, err := c.SessionOp(context.Background(), Request{SessionOp: &SessionOp{Action: "stop", ID: d.ID}})
	if err != nil {
		t.Fatal(err)
	}
	var res jail.SessionResult
	json.Unmarshal(raw, &res)
	if res.ID != d.ID || res.StoppedFor != jail.StopAsked {
		t.Errorf("stop: %s", raw)
	}
	b, _ := os.ReadFile(ts.audit)
	audit := string(b)
	if strings.Count(audit, `"session":{"id":"`) != 2 {
		t.Errorf("the audit log has not both sessions' lines:\n%s", audit)
	}
}

// A session whose stop has begun takes no more calls, and is not listed
// (docs/serve.md), though the stop has not finished: neither while a
// session_op stop waits for its jail to go nor while its idle limit
// stops it (which the server learns of only at the end). The session's
// init is held stopped (SIGSTOP) so that the stop cannot finish while
// the list is asked (the jail gives a stopped init 10 s before killing
// it); SIGCONT then lets it finish.
func TestSessionStoppingNotListed(t *testing.T) {
	for _, how := range []string{"stop", "idle"} {
		t.Run(how, func(t *testing.T) {
			ts := start(t)
			c := ts.client()
			w := t.TempDir()
			os.Chmod(w, 0o777)
			before := childrenNamed(os.Getpid(), "tooljail-init")
			op := &SessionOp{Action: "start", Detach: true}
			if how == "idle" {
				op.Idle = "1s"
			}
			raw, _, err := c.SessionOp(context.Background(), Request{Workdir: w, SessionOp: op})
			if err != nil {
				t.Fatalf("session start: %v", err)
			}
			var info SessionInfo
			json.Unmarshal(raw, &info)
			var inits []int
			for _, pid := range childrenNamed(os.Getpid(), "tooljail-init") {
				if !slices.Contains(before, pid) {
					inits = append(inits, pid)
				}
			}
			if len(inits) != 1 {
				t.Fatalf("the session's init: %d new children named tooljail-init (%v)", len(inits), inits)
			}
			if err := syscall.Kill(inits[0], syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			cont := func() { syscall.Kill(inits[0], syscall.SIGCONT) }
			defer cont()
			if n := len(listSessions(t, c)); n != 1 {
				t.Fatalf("before its stop: %d sessions listed, want 1", n)
			}
			stopped := make(chan json.RawMessage, 1)
			if how == "stop" {
				go func() {
					raw, _, err := c.SessionOp(context.Background(), Request{SessionOp: &SessionOp{Action: "stop", ID: info.ID}})
					if err != nil {
						t.Errorf("stop: %v", err)
					}
					stopped <- raw
				}()
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(listSessions(t, c)) != 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			ts.mu.Lock()
			_, kept := ts.sessions[info.ID]
			ts.mu.Unlock()
			if !kept {
				t.Fatal("the session's stop finished with its init stopped: the test proves nothing")
			}
			if list := listSessions(t, c); len(list) != 0 {
				t.Errorf("a stopping session (%s) is listed: %+v", how, list)
			}
			// It takes no call meanwhile, and is answered as one that stopped.
			if r, err := c.Run(context.Background(), Request{Session: info.ID, Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "no such session") {
				t.Errorf("a call in a stopping session: %v %+v", err, r)
			}
			cont()
			if how == "stop" {
				var res jail.SessionResult
				json.Unmarshal(<-stopped, &res)
				if res.ID != info.ID || res.StoppedFor != jail.StopAsked {
					t.Errorf("stop: %+v", res)
				}
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				ts.mu.Lock()
				_, kept = ts.sessions[info.ID]
				ts.mu.Unlock()
				if !kept {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the session did not end after its init went on")
				}
			}
		})
	}
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

// BenchmarkServedSessionCall is one call of /bin/true in a live session
// through the server and the Go client: with jail's BenchmarkSessionCall
// (the same call embedded), what the server and the protocol add.
func BenchmarkServedSessionCall(b *testing.B) {
	ts := start(b)
	c := ts.client()
	w := b.TempDir()
	os.Chmod(w, 0o777)
	info, closeIt := startSessionReq(b, c, w, false)
	defer closeIt()
	req := Request{Session: info.ID, Argv: []string{"/bin/true"}}
	b.ResetTimer()
	for range b.N {
		r, err := c.Run(context.Background(), req)
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
	}
}
