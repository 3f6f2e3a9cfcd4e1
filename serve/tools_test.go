package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tooljail/tooljail/tools/call"
)

const servedToolFile = `
[tools.show]
description = "Print the word."
command = ["printf", "%s\n", "{word}"]
params.word = { type = "string", pattern = "[a-z]+" }

[tools.cat]
description = "Print stdin."
command = ["cat"]
stdin = true

[tools.once]
description = "Once a minute."
command = ["true"]
rate = { per_minute = 1 }

[tools.long]
description = "A long timeout."
command = ["true"]
limits = { timeout = "7m" }
`

// toolServer serves servedToolFile (as a user without a delegated
// cgroup, from a profile that allows the cgroup layer degraded), with a
// workdir to call the tools in.
func toolServer(t *testing.T) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	text := servedToolFile
	if os.Geteuid() != 0 {
		text = strings.ReplaceAll(text, "[tools.show]\n", "[tools.show]\nprofile = \""+profile(t, "default")+"\"\n")
		text = strings.ReplaceAll(text, "[tools.cat]\n", "[tools.cat]\nprofile = \""+profile(t, "default")+"\"\n")
		text = strings.ReplaceAll(text, "[tools.once]\n", "[tools.once]\nprofile = \""+profile(t, "default")+"\"\n")
		text = strings.ReplaceAll(text, "[tools.long]\n", "[tools.long]\nprofile = \""+profile(t, "default")+"\"\n")
	}
	file := filepath.Join(dir, "tools.toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wd := toolsWorkdir(t)
	return startWith(t, func(s *Server) { s.Tools = []string{file} }), wd
}

func TestToolCalls(t *testing.T) {
	ts, wd := toolServer(t)
	ctx := context.Background()
	c := ts.client()
	raw, err := c.RunRaw(ctx, Request{ID: "t-1", Tool: "show", Arguments: map[string]any{"word": "hello"}, Workdir: wd})
	if err != nil {
		t.Fatal(err)
	}
	var o call.Outcome
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	if o.Decision != "admitted" || o.Report == nil || *o.Report.Stdout.Text != "hello\n" || o.CallID == "" || o.Tool != "show" {
		t.Errorf("outcome: %s", raw)
	}
	if o, err := c.RunRaw(ctx, Request{Tool: "cat", Stdin: []byte("in"), Workdir: wd}); err != nil || !strings.Contains(string(o), `"text":"in"`) {
		t.Errorf("cat: %s %v", o, err)
	}

	// Refusals are error lines, and audit lines with their decision.
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Tool: "show", Arguments: map[string]any{"word": "Hello World"}, Workdir: wd}, `refused by rule pattern "[a-z]+"`},
		{Request{Tool: "show", Arguments: map[string]any{"word": "a", "x": 1}, Workdir: wd}, `parameter "x": refused by rule undeclared`},
		{Request{Tool: "nope", Workdir: wd}, `no tool "nope"`},
		{Request{Tool: "show", Argv: []string{"sh"}, Workdir: wd}, "argv: not taken with tool"},
		{Request{Tool: "show", Limits: map[string]string{"timeout": "1h"}, Workdir: wd}, "limits: not taken with tool"},
		{Request{Tool: "show", Profile: "default", Workdir: wd}, "profile: not taken with tool"},
		{Request{Tool: "show", Arguments: map[string]any{"word": "a"}}, "a tool call needs its working directory"},
	} {
		_, err := c.RunRaw(ctx, tc.req)
		var e *Error
		if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%+v: %v, want an error line with %q", tc.req, err, tc.want)
		}
	}
	if _, err := c.RunRaw(ctx, Request{Tool: "once", Workdir: wd}); err != nil {
		t.Fatal(err)
	}
	_, err = c.RunRaw(ctx, Request{Tool: "once", Workdir: wd})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "rate limit per_minute = 1 reached") {
		t.Errorf("over the rate: %v", err)
	}
	a := ts.auditLines(t)
	if len(a) != 11 {
		t.Fatalf("%d audit lines, want 11: %v", len(a), a)
	}
	if a[0]["request_id"] != "t-1" || a[0]["decision"] != "admitted" || a[0]["tool"] != "show" {
		t.Errorf("first line %v", a[0])
	}
	if p, _ := a[0]["peer"].(map[string]any); p["pid"] != float64(os.Getpid()) {
		t.Errorf("peer %v", a[0]["peer"])
	}
	if a[2]["decision"] != `refused: pattern "[a-z]+"` || a[10]["decision"] != "refused: rate per_minute" {
		t.Errorf("refusals' lines: %v\n%v", a[2], a[10])
	}
	// The grace period covers the tools' timeouts.
	if d := ts.tools.longest; d != 7*time.Minute {
		t.Errorf("the tools' longest timeout %v, want 7m", d)
	}
}

// A tool call whose workdir would show the server's audit log is
// refused as a run's would be.
func TestToolCallHidesTheAuditLog(t *testing.T) {
	ts, _ := toolServer(t)
	o, err := ts.client().RunRaw(context.Background(), Request{Tool: "show", Arguments: map[string]any{"word": "x"}, Workdir: filepath.Dir(ts.audit)})
	if err != nil {
		t.Fatal(err)
	}
	var out call.Outcome
	json.Unmarshal(o, &out)
	if out.Report == nil || out.Report.Status != "setup_error" || !strings.Contains(out.Error, "audit log") {
		t.Errorf("%s", o)
	}
}

func TestNoToolsServed(t *testing.T) {
	ts := start(t)
	_, err := ts.client().RunRaw(context.Background(), Request{Tool: "show", Workdir: "/tmp"})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "serves no tools; start it with --tools FILE") {
		t.Errorf("%v", err)
	}
}

// TestToolCallsSeveralFiles serves two tool files, the second with
// [run_command]: a tool of each is called, run_command's argv taken from
// its arguments as given.
func TestToolCallsSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	prof := "default"
	if os.Geteuid() != 0 {
		prof = profile(t, "default")
	}
	one, two := filepath.Join(dir, "one.toml"), filepath.Join(dir, "two.toml")
	if err := os.WriteFile(one, []byte("[tools.hi]\ndescription = \"d\"\ncommand = [\"echo\", \"hi\"]\nprofile = \""+prof+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, []byte("[run_command]\nprofile = \""+prof+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd := toolsWorkdir(t)
	ts := startWith(t, func(s *Server) { s.Tools = []string{one, two} })
	c := ts.client()
	ctx := context.Background()
	if raw, err := c.RunRaw(ctx, Request{Tool: "hi", Workdir: wd}); err != nil || !strings.Contains(string(raw), `"text":"hi\n"`) {
		t.Errorf("hi: %s %v", raw, err)
	}
	raw, err := c.RunRaw(ctx, Request{Tool: "run_command", Arguments: map[string]any{"argv": []any{"printf", "%s|", "a b", "$x"}}, Workdir: wd})
	if err != nil || !strings.Contains(string(raw), `"text":"a b|$x|"`) {
		t.Errorf("run_command: %s %v", raw, err)
	}
}

// TestToolCallsQueue: served calls over a tool's concurrency wait their
// turn (rate.queue) and run; one whose client goes away while it waits
// leaves the line, recorded as cancelled.
func TestToolCallsQueue(t *testing.T) {
	dir := t.TempDir()
	prof := "default"
	if os.Geteuid() != 0 {
		prof = profile(t, "default")
	}
	file := filepath.Join(dir, "q.toml")
	text := `
[tools.pair]
description = "Two at a time."
profile = "` + prof + `"
command = ["sleep", "0.3"]
rate = { per_minute = 0, concurrency = 2, queue = "2m" }

[tools.gate]
description = "One at a time, until the file go."
profile = "` + prof + `"
command = ["sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.05; done"]
limits = { timeout = "2m" }
rate = { per_minute = 0, concurrency = 1, queue = "2m" }
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wd := toolsWorkdir(t)
	ts := startWith(t, func(s *Server) { s.Tools = []string{file} })
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := ts.client().RunRaw(ctx, Request{Tool: "pair", Workdir: wd})
			var o call.Outcome
			if err != nil || json.Unmarshal(raw, &o) != nil || o.Decision != "admitted" || o.Failed() {
				t.Errorf("call %d: %s %v", i, raw, err)
			}
		}()
	}
	wg.Wait()
	waited := 0
	for _, l := range ts.auditLines(t) {
		if l["queued_ms"] != nil {
			waited++
		}
	}
	if waited < 6 {
		t.Errorf("%d of 8 calls waited in the queue, want at least 6", waited)
	}

	first := make(chan error, 1)
	go func() {
		_, err := ts.client().RunRaw(ctx, Request{Tool: "gate", Workdir: wd})
		first <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(wd, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first gate call never started")
		}
	}
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(`{"id": "gone", "tool": "gate", "workdir": "` + wd + `"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ts.tools.limiter.Waiting("gate") != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %d calls in line", n)
			}
		}
	}
	waiting(1)
	conn.Close()
	waiting(0)
	if err := os.WriteFile(filepath.Join(wd, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var gone map[string]any
	for _, l := range ts.auditLines(t) {
		if l["request_id"] == "gone" {
			gone = l
		}
	}
	if gone["decision"] != "refused: cancelled" || !strings.Contains(fmt.Sprint(gone["reason"]), "cancelled after") {
		t.Errorf("the call whose client went away in line: %v", gone)
	}
}

// toolsWorkdir is a workdir for served tool calls, removed after the test.
func toolsWorkdir(t *testing.T) string {
	t.Helper()
	wd, err := os.MkdirTemp("/tmp", "tjserve-tools-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wd) })
	if err := os.Chmod(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	return wd
}
