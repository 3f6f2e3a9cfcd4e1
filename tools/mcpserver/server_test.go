package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
	"github.com/tooljail/tooljail/tools/call"
)

func TestMain(m *testing.M) {
	jail.Init()
	os.Exit(m.Run())
}

const testFile = `
[tools.show]
description = "Print the word."
command = ["printf", "%s\n", "{word}"]
params.word = { type = "string", pattern = "[a-z]+" }

[tools.cat]
description = "Print stdin."
command = ["cat"]
stdin = true

[tools.fail]
description = "Exit 3 after writing to stderr."
command = ["sh", "-c", "echo oops >&2; exit 3"]

[tools.json]
description = "Print JSON."
command = ["printf", '{"n": %s}', "{n}"]
params.n = { type = "integer", default = 1 }
output = "json"

[tools.once]
description = "Once a minute."
command = ["true"]
rate = { per_minute = 1 }
`

// connect serves testFile in memory and returns a client session.
func connect(t *testing.T) (*mcp.ClientSession, string) {
	t.Helper()
	c, logPath := testCaller(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	srv, err := New(c, report.Peer{UID: 1, GID: 2, PID: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, logPath
}

// testCaller is a caller of testFile in a new working directory, and the
// path of its audit log.
func testCaller(t *testing.T) (*call.Caller, string) {
	t.Helper()
	f, err := tools.Parse("tools.toml", []byte(testFile))
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("/tmp", "tjmcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	wd := filepath.Join(root, "work")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(root, "audit.log")
	log, err := call.OpenLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	c := &call.Caller{File: f, Defaults: tools.ServerDefaults, Workdir: wd, Log: log}
	if os.Geteuid() != 0 {
		c.AllowDegraded = []string{"cgroup"}
	}
	return c, logPath
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string, map[string]any) {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var texts []string
	for _, c := range r.Content {
		texts = append(texts, c.(*mcp.TextContent).Text)
	}
	var structured map[string]any
	b, _ := json.Marshal(r.StructuredContent)
	json.Unmarshal(b, &structured)
	return r, strings.Join(texts, "\n---\n"), structured
}

func TestServe(t *testing.T) {
	cs, logPath := connect(t)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "show cat fail json once" && len(names) != 5 {
		t.Errorf("tools %q", names)
	}
	for _, tool := range list.Tools {
		if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v: want read-only, closed world (the default's read-only workdir, no network)", tool.Name, a)
		}
		if tool.Name == "show" {
			s, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(s), `"pattern":"^(?:[a-z]+)$"`) || tool.Description != "Print the word." {
				t.Errorf("show: %s %q", s, tool.Description)
			}
		}
	}

	r, text, st := callTool(t, cs, "show", map[string]any{"word": "hello"})
	if r.IsError || text != "hello\n" || st["decision"] != "admitted" || st["call_id"] == "" {
		t.Errorf("show: %v %q %v", r.IsError, text, st)
	}
	if rep, _ := st["report"].(map[string]any); rep["status"] != "exited" || rep["stdout"].(map[string]any)["text"] != nil {
		t.Errorf("the report as structured content, without the texts: %v", st["report"])
	}
	// The schema is a hint; the checks decide, and record the refusal.
	r, text, st = callTool(t, cs, "show", map[string]any{"word": "Hello; rm -rf /"})
	if !r.IsError || !strings.Contains(text, `refused by rule pattern "[a-z]+"`) || st["decision"] != `refused: pattern "[a-z]+"` {
		t.Errorf("a bad argument: %v %q %v", r.IsError, text, st)
	}
	r, text, _ = callTool(t, cs, "show", map[string]any{"word": "a", "profile": "unconfined"})
	if !r.IsError || !strings.Contains(text, `parameter "profile": refused by rule undeclared`) {
		t.Errorf("an argument that tries to pick the profile: %q", text)
	}
	r, text, _ = callTool(t, cs, "cat", map[string]any{"stdin": "from the model"})
	if r.IsError || text != "from the model" {
		t.Errorf("stdin: %q", text)
	}
	r, text, st = callTool(t, cs, "fail", nil)
	if !r.IsError || !strings.Contains(text, "exit code 3 (exited)") || !strings.Contains(text, "stderr:\noops") || st["exit_code"] != 3.0 {
		t.Errorf("a failing command: %q %v", text, st)
	}
	r, _, st = callTool(t, cs, "json", map[string]any{"n": 7})
	if r.IsError || st["structured"].(map[string]any)["n"] != 7.0 {
		t.Errorf("json: %v", st)
	}
	if r, _, _ := callTool(t, cs, "once", nil); r.IsError {
		t.Error("once: the first call")
	}
	r, text, st = callTool(t, cs, "once", nil)
	if !r.IsError || !strings.Contains(text, "rate limit per_minute = 1 reached; retry after") || st["decision"] != "refused: rate per_minute" {
		t.Errorf("over the rate: %q %v", text, st)
	}
	r, text, st = callTool(t, cs, "rm_rf", map[string]any{"path": "/"})
	if !r.IsError || !strings.Contains(text, `no tool "rm_rf" in tools.toml; declared: show, cat, fail, json, once`) || st["decision"] != "refused: unknown tool" {
		t.Errorf("an undeclared tool: %q %v", text, st)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d audit lines, want 9:\n%s", len(lines), b)
	}
	if !strings.Contains(lines[1], `"decision":"refused: pattern \"[a-z]+\""`) || !strings.Contains(lines[1], `"peer":{"uid":1,"gid":2,"pid":3}`) {
		t.Errorf("the refused line: %s", lines[1])
	}
}

func TestNewRefusesAToolThatCannotRun(t *testing.T) {
	f, err := tools.Parse("/nonexistent/tools.toml", []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"true\"]\nprofile = \"profiles/missing.toml\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(&call.Caller{File: f, Defaults: tools.ServerDefaults, Workdir: "/tmp"}, report.Peer{})
	if err == nil || !strings.Contains(err.Error(), "tool t: profile /nonexistent/profiles/missing.toml") {
		t.Errorf("New: %v", err)
	}
}

// TestRunCommandOverMCP: a file with [run_command] serves it with its
// schema (argv, timeout, stdin; no other property) and the limit in its
// description; a call runs its argv as given, and a longer timeout is
// refused.
func TestRunCommandOverMCP(t *testing.T) {
	c, _ := testCaller(t)
	f, err := tools.Parse("tools.toml", []byte("[run_command]\nprofile = \"default\"\nlimits.timeout = \"15s\"\nmax_args = 8\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.File = f
	ct, st := mcp.NewInMemoryTransports()
	srv, err := New(c, report.Peer{UID: 1, GID: 2, PID: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 {
		t.Fatalf("%v %v", list, err)
	}
	tool := list.Tools[0]
	s, _ := json.Marshal(tool.InputSchema)
	for _, want := range []string{`"argv":{"description":"The program and its arguments`, `"items":{"type":"string"},"maxItems":8,"minItems":1,"type":"array"}`, `"timeout":{"description":"A shorter timeout`, `"stdin":{"description"`, `"required":["argv"]`, `"additionalProperties":false`} {
		if !strings.Contains(string(s), want) {
			t.Errorf("schema lacks %s: %s", want, s)
		}
	}
	if tool.Name != "run_command" || !strings.Contains(tool.Description, "It runs under the profile default; timeout at most 15s.") {
		t.Errorf("%s: %q", tool.Name, tool.Description)
	}
	r, text, _ := callTool(t, cs, "run_command", map[string]any{"argv": []string{"printf", "%s|", "a b", "*"}, "stdin": "ignored"})
	if r.IsError || text != "a b|*|" {
		t.Errorf("argv: %v %q", r.IsError, text)
	}
	r, text, st2 := callTool(t, cs, "run_command", map[string]any{"argv": []string{"true"}, "timeout": "1m"})
	if !r.IsError || st2["decision"] != "refused: timeout" || !strings.Contains(text, "above the limit the tool file sets") {
		t.Errorf("a longer timeout: %q %v", text, st2)
	}
}

// TestArgumentsNotAnObject: arguments that are a string, an array or a
// number are refused, saying what they are, and recorded as refusals.
func TestArgumentsNotAnObject(t *testing.T) {
	cs, logPath := connect(t)
	for _, tc := range []struct {
		args any
		want string
	}{
		{"ls -la", `tool show: arguments must be a JSON object, not a string: "\"ls -la\""`},
		{[]any{"hello"}, `tool show: arguments must be a JSON object, not an array: "[\"hello\"]"`},
		{7, `tool show: arguments must be a JSON object, not a number: "7"`},
	} {
		r, text, st := callTool(t, cs, "show", tc.args)
		if !r.IsError || !strings.Contains(text, tc.want) || st["decision"] != "refused: arguments" {
			t.Errorf("arguments %v: %q %v; want %q", tc.args, text, st, tc.want)
		}
		if strings.Contains(text, "undeclared") {
			t.Errorf("arguments %v: %q", tc.args, text)
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"decision":"refused: arguments"`); n != 3 {
		t.Errorf("%d refusals recorded, want 3:\n%s", n, b)
	}
}

// TestCancelledInQueue: a call waiting for a slot of its tool that the
// client cancels (MCP's notifications/cancelled) leaves the line, and is
// recorded as cancelled; the slot's holder is untouched.
func TestCancelledInQueue(t *testing.T) {
	c, logPath := testCaller(t)
	c.Limiter = tools.NewLimiter(map[string]tools.Rate{"show": {Concurrency: 1, Queue: time.Hour}})
	hold, _, err := c.Limiter.Acquire(context.Background(), "show", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	ct, st := mcp.NewInMemoryTransports()
	srv, err := New(c, report.Peer{UID: 1, GID: 2, PID: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "show", Arguments: map[string]any{"word": "late"}})
		done <- err
	}()
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); c.Limiter.Waiting("show") != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %d calls in line", n)
			}
		}
	}
	waitFor(1)
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error to its client")
	}
	waitFor(0)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), `"decision":"refused: cancelled"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cancelled line in the audit log:\n%s", b)
		}
	}
}
