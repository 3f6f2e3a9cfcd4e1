package serve

import (
	"context"
	"encoding/json"
	"os"
	"strings"
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
