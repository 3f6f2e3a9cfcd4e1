package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/tools"
)

// What a tool call's jail left on the host goes to stderr on the warning
// line run prints for its own (TestFinishCleanupWarning), with the tool's
// name: warn's line, byte for byte.
func TestToolsCallerWarning(t *testing.T) {
	var stderr bytes.Buffer
	f := callerFlags{workdir: scalar{value: t.TempDir(), set: true}}
	c, closeCaller, ok := f.caller([]string{"../../tools/testdata/tools.toml"}, &stderr)
	if !ok {
		t.Fatalf("caller: %s", stderr.String())
	}
	defer closeCaller()
	left := fmt.Errorf("tool grep_repo: %w", &jail.CleanupError{Err: errors.New("remove cgroup /sys/fs/cgroup/x: device or resource busy")})
	c.Warn(left)
	const want = "tooljail: warning: tool grep_repo: the run ended, but its jail was not all removed: remove cgroup /sys/fs/cgroup/x: device or resource busy\n"
	var direct bytes.Buffer
	warn(&direct, left)
	if stderr.String() != want || direct.String() != want {
		t.Errorf("the caller's warning %q, warn's %q; want both %q", stderr.String(), direct.String(), want)
	}
}

func TestToolsCheck(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", "../../tools/testdata/tools.toml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"grep_repo\n  description: Search the repository",
		"  command: grep -rnI --max-count {max_count} -e {pattern} -- {path}\n",
		`  param path: path, default ".", beneath ["."]`,
		`  param max_count: integer, default 100, min 1, max 1000`,
		"  profile: default (the default: the tool names no profile)\n  workdir: read-only; network: none; stdin: no; output: text\n",
		"run_python\n", "  profile: strict\n  workdir: read-write; network: none; stdin: yes",
		// The tool's limits over the profile's: strict's memory, the tool's timeout.
		"memory 256M, net_bytes 0, net_connections 128, nofile 256, output_limit 1M, pids 64, timeout 30s\n  rate: per_minute 10, per_hour 200, concurrency 2, queue 10s\n",
		// The server-wide default's timeout and queue for a tool that sets none.
		"pids 256, timeout 10s\n  rate: per_minute 30, per_hour unlimited, concurrency 4, queue 10s\n",
		// A tool's own queue.
		"  rate: per_minute 4, per_hour unlimited, concurrency 1, queue 5m0s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tools check lacks %q:\n%s", want, out)
		}
	}
}

// A tool whose profile binds the workdir read-only (filesystem.
// workdir_readonly) shows so, as one under the server-wide default does:
// the example file's run_tests, under python-tests.toml.
func TestToolsCheckProfileReadOnly(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", "../../examples/tools.toml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := "  profile: ../../examples/profiles/python-tests.toml\n  workdir: read-only; network: none"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("tools check lacks %q:\n%s", want, stdout.String())
	}
}

func TestToolsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"x\", \"--n={n}\"]\nbogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingProfile := filepath.Join(dir, "mp.toml")
	if err := os.WriteFile(missingProfile, []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"x\"]\nprofile = \"nope/p.toml\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	one, two := filepath.Join(dir, "one.toml"), filepath.Join(dir, "two.toml")
	for _, f := range []string{one, two} {
		if err := os.WriteFile(f, []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"true\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		args []string
		want []string // on stderr
	}{
		"listen network":  {[]string{"mcp", "--tools", one, "--listen", "0.0.0.0:8765"}, []string{"0.0.0.0 is not a loopback address"}},
		"no sub":          {[]string{"tools"}, []string{"want 'check FILE' or 'call FILE NAME'"}},
		"unknown sub":     {[]string{"tools", "run"}, []string{`unknown command "run"`}},
		"check no file":   {[]string{"tools", "check"}, []string{"want a FILE (or several"}},
		"check missing":   {[]string{"tools", "check", filepath.Join(dir, "none.toml")}, []string{"no such file"}},
		"check bad":       {[]string{"tools", "check", bad}, []string{"bad.toml:4:1: tools.t.bogus: unknown key"}},
		"check profile":   {[]string{"tools", "check", missingProfile}, []string{"tool t: profile", "nope/p.toml"}},
		"call one arg":    {[]string{"tools", "call", bad}, []string{"want FILE NAME (got 1 arguments)"}},
		"call bad arg":    {[]string{"tools", "call", bad, "t", "--arg", "novalue"}, []string{"want K=V"}},
		"call arg twice":  {[]string{"tools", "call", bad, "t", "--arg", "a=1", "--arg", "a=2"}, []string{"a given twice"}},
		"call bad layer":  {[]string{"tools", "call", "--allow-degraded", "apparmor", bad, "t"}, []string{"unknown layer"}},
		"call bad file":   {[]string{"tools", "call", bad, "t"}, []string{"unknown key"}},
		"mcp no tools":    {[]string{"mcp"}, []string{"--tools FILE is required"}},
		"mcp args":        {[]string{"mcp", "--tools", bad, "extra"}, []string{"mcp takes no arguments"}},
		"mcp bad file":    {[]string{"mcp", "--tools", bad}, []string{"unknown key"}},
		"mcp twice":       {[]string{"mcp", "--tools", one, "--tools", two}, []string{"tool t is declared in " + one + " and again in " + two}},
		"check twice":     {[]string{"tools", "check", one, two}, []string{"tool t is declared in " + one + " and again in " + two}},
		"serve twice":     {[]string{"serve", "--socket", filepath.Join(dir, "s", "sock"), "--tools", one, "--tools", two}, []string{"tool t is declared in " + one + " and again in " + two}},
		"mcp bad profile": {[]string{"mcp", "--tools", missingProfile}, []string{"tool t: profile", "nope/p.toml"}},
		"mcp bad log":     {[]string{"mcp", "--tools", missingProfile, "--audit-log", filepath.Join(dir, "no", "a.log")}, []string{"audit log"}},
		"audit no sub":    {[]string{"audit"}, []string{"want 'show FILE'"}},
		"audit bad stat":  {[]string{"audit", "show", "--status", "fine", "f"}, []string{"unknown status (known: exited"}},
		"audit bad since": {[]string{"audit", "show", "--since", "yesterday", "f"}, []string{"want a duration"}},
		"audit no file":   {[]string{"audit", "show"}, []string{"want one FILE"}},
		"audit missing":   {[]string{"audit", "show", filepath.Join(dir, "none.log")}, []string{"no such file"}},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(tc.args, &stdout, &stderr)
		if code != 125 {
			t.Errorf("%s: exit %d, want 125 (stderr %q)", name, code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q lacks %q", name, stderr.String(), w)
			}
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: stdout %q", name, stdout.String())
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		kv   [][2]string
	}{
		{[]string{"f", "t"}, []string{"f", "t"}, nil},
		{[]string{"f", "t", "--arg", "a=1"}, []string{"f", "t"}, [][2]string{{"a", "1"}}},
		{[]string{"--arg", "a=1", "f", "--arg", "b=-x", "t"}, []string{"f", "t"}, [][2]string{{"a", "1"}, {"b", "-x"}}},
		// After "--" nothing is a flag.
		{[]string{"f", "--", "--arg", "t"}, []string{"f", "--arg", "t"}, nil},
		{[]string{"--", "-f"}, []string{"-f"}, nil},
	} {
		var f toolsCallFlags
		pos, err := parseInterspersed(newToolsCallFlagSet(&f), tc.args)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || !reflect.DeepEqual(f.args, tc.kv) {
			t.Errorf("%q: %q %q %v, want %q %q", tc.args, pos, f.args, err, tc.pos, tc.kv)
		}
	}
	var f toolsCallFlags
	if _, err := parseInterspersed(newToolsCallFlagSet(&f), []string{"f", "--nope"}); err == nil || err == flag.ErrHelp {
		t.Errorf("an unknown flag after a positional: %v", err)
	}
}

func TestArgValue(t *testing.T) {
	f, err := tools.Parse("f.toml", []byte(`[tools.t]
description = "d"
command = ["p", "{i}", "{n}", "{b}", "{s}"]
params.i = { type = "integer" }
params.n = { type = "number" }
params.b = { type = "boolean" }
params.s = { type = "string" }
`))
	if err != nil {
		t.Fatal(err)
	}
	tool := f.Tools[0]
	for _, tc := range []struct {
		name, v string
		want    any
	}{
		{"i", "42", json.Number("42")},
		{"i", "-1e3", json.Number("-1e3")},
		{"i", " 4", " 4"},
		{"i", "four", "four"},
		{"n", "0.5", json.Number("0.5")},
		{"b", "true", true},
		{"b", "false", false},
		{"b", "1", "1"},
		{"b", "TRUE", "TRUE"},
		{"s", "42", "42"},
		{"undeclared", "42", "42"},
	} {
		if got := argValue(tool, tc.name, tc.v); got != tc.want {
			t.Errorf("argValue(%s, %q) = %#v, want %#v", tc.name, tc.v, got, tc.want)
		}
	}
	// A value that is not of its type reaches the checks, which refuse it.
	args := callArgs(tool, [][2]string{{"i", "four"}, {"n", "1"}, {"b", "true"}, {"s", "x"}})
	if _, err := tool.Check(args); err == nil || !strings.Contains(err.Error(), `parameter i = "four": refused by rule type integer`) {
		t.Errorf("check: %v", err)
	}
}

// auditLog writes lines to a log in a temporary directory.
func auditLog(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	runLine     = `{"time":"2026-01-01T10:00:00Z","id":"r1","uid":0,"command":["ls","-l","a b"],"workdir":"/w","profile":"default","status":"exited","exit_code":0,"duration_ms":12,"violations":0}` + "\n"
	callLine    = `{"time":"2026-01-01T10:01:00Z","id":"r2","uid":0,"command":["grep","x"],"workdir":"/w","status":"exited","exit_code":1,"duration_ms":30,"violations":0,"peer":{"uid":1000,"gid":1000,"pid":42},"call_id":"c1","tool":"grep_repo","arguments":{"pattern":"x","path":"."},"decision":"admitted","output_bytes":0}` + "\n"
	refusedLine = `{"time":"2026-01-01T10:02:00Z","id":"","uid":0,"command":[],"workdir":"","status":"refused","exit_code":125,"duration_ms":0,"violations":0,"reason":"tool grep_repo: rate limit per_minute = 1 reached; retry after 58s","peer":{"uid":1000,"gid":1000,"pid":42},"call_id":"c2","tool":"grep_repo","arguments":{"pattern":"\u001b[31mred","big":{"truncated":true,"head":"aaa","bytes":5000,"sha256":"0123456789abcdef0123"}},"decision":"refused: rate per_minute"}` + "\n"
)

func TestAuditShow(t *testing.T) {
	log := auditLog(t, runLine, callLine, refusedLine, `{"time":"2026-01-01T10:03:00Z","id":"r3","uid":0,"comm`)
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"audit", "show", log}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	want := []string{
		auditHeader,
		`2026-01-01T10:00:00Z  exited       0     12       uid 0           ls -l "a b"`,
		`2026-01-01T10:01:00Z  exited       1     30       uid 1000 pid 42 tool grep_repo path=. pattern=x`,
		// The escape sequence from the log is shown escaped, never sent to the terminal.
		`2026-01-01T10:02:00Z  refused      125   -        uid 1000 pid 42 tool grep_repo big=<5000 bytes, sha256 0123456789ab…> pattern="\x1b[31mred" | tool grep_repo: rate limit per_minute = 1 reached; retry after 58s`,
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("table:\n%s\nwant:\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr.String(), "the last line is incomplete (") {
		t.Errorf("stderr %q: no note of the incomplete last line", stderr.String())
	}

	for _, tc := range []struct {
		args []string
		want []string // lines, JSON
	}{
		{[]string{"--tool", "grep_repo"}, []string{callLine, refusedLine}},
		{[]string{"--status", "refused"}, []string{refusedLine}},
		{[]string{"--status", "exited", "--tool", "grep_repo"}, []string{callLine}},
		{[]string{"--since", "2026-01-01T10:01:00Z"}, []string{callLine, refusedLine}},
		{[]string{"--since", "1h"}, nil}, // long ago
	} {
		stdout.Reset()
		stderr.Reset()
		args := append(append([]string{"audit", "show", "--json"}, tc.args...), log)
		if code := dispatch(args, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit %d %s", tc.args, code, stderr.String())
		}
		if got := stdout.String(); got != strings.Join(tc.want, "") {
			t.Errorf("%v: got\n%s\nwant\n%s", tc.args, got, strings.Join(tc.want, ""))
		}
	}

	// A line in the middle that is not an audit line is named, skipped,
	// and the exit code says so.
	stdout.Reset()
	stderr.Reset()
	code = dispatch([]string{"audit", "show", "--json", auditLog(t, runLine, "garbage\n", callLine)}, &stdout, &stderr)
	if code != 1 || stdout.String() != runLine+callLine || !strings.Contains(stderr.String(), "line 2: not an audit line") {
		t.Errorf("a bad line: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestAuditFollow(t *testing.T) {
	log := auditLog(t, runLine)
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out := &syncBuffer{}
	s := &auditShow{path: log, json: true, out: out, errw: io.Discard}
	stop := make(chan struct{})
	done := make(chan int)
	go func() { done <- s.follow(f, time.Millisecond, stop) }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for out.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("follow printed %q, want %q", out.String(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(runLine)
	// Half a line: nothing until its newline comes, then the whole line once.
	w.WriteString(callLine[:40])
	time.Sleep(20 * time.Millisecond)
	if out.String() != runLine {
		t.Errorf("a half line was printed: %q", out.String())
	}
	w.WriteString(callLine[40:])
	waitFor(runLine + callLine)
	// Truncated under it: read again from the start.
	if err := w.Truncate(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	w.WriteString(refusedLine)
	waitFor(runLine + callLine + refusedLine)
	close(stop)
	if code := <-done; code != 0 {
		t.Errorf("follow exit %d", code)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text é": "plain text é",
		"a\tb":         `a\tb`,
		"\x1b[2J":      `\x1b[2J`,
		"cr\rlf\n":     `cr\rlf\n`,
		"\u202e":       `\u202e`,
		"bad\xffutf":   `bad\ufffdutf`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// syncBuffer is a bytes.Buffer for one writer and one reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The shipped example loads, and every tool's profile and limits resolve.
func TestExampleToolsCheck(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", "../../examples/tools.toml"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := tools.Load("../../examples/tools.toml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range f.Tools {
		names = append(names, tool.Name)
		if !strings.Contains(stdout.String(), tool.Name+"\n  description: ") {
			t.Errorf("tools check does not show %s", tool.Name)
		}
	}
	for _, want := range []string{"run_python", "run_tests", "grep_repo", "fetch_url", "git_status"} {
		if f.Lookup(want) == nil {
			t.Errorf("examples/tools.toml has no %s (has %q)", want, names)
		}
	}
	// fetch_url reaches the network only through the allow mode of its
	// profile, and binds no workdir.
	if i := strings.Index(stdout.String(), "fetch_url\n"); i < 0 || !strings.Contains(stdout.String()[i:], "workdir: none; network: allow;") {
		t.Error("fetch_url does not run in the network allow mode without a workdir")
	}
}

func TestToolsCheckRunCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rc.toml")
	if err := os.WriteFile(file, []byte("[run_command]\nprofile = \"strict\"\nlimits.timeout = \"20s\"\nrate.per_minute = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"run_command\n  description: Run a command: argv is the program",
		"  command: the call's argv, as given (at most 256 elements; no shell); the call may shorten the timeout\n",
		"  profile: strict\n", "timeout 20s\n", "rate: per_minute 3,",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tools check lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestToolsCheckSeveralFiles: several files are checked together, each
// tool's profile file found next to its own tool file.
func TestToolsCheckSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	one, two := filepath.Join(dir, "one.toml"), filepath.Join(sub, "two.toml")
	if err := os.WriteFile(one, []byte("[tools.a]\ndescription = \"d\"\ncommand = [\"true\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "p.toml"), []byte("extends = \"default\"\n[limits]\nmemory = \"100M\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, []byte("[tools.b]\ndescription = \"d\"\ncommand = [\"true\"]\nprofile = \"p.toml\"\n\n[run_command]\nprofile = \"strict\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", one, two}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"a\n", "\nb\n", "  profile: " + filepath.Join(sub, "p.toml") + "\n", "\nrun_command\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "memory 100M") {
		t.Errorf("b's profile's memory:\n%s", out)
	}
}

// A tool's change mode shows in tools check; one on a read-only workdir,
// where it could record nothing, is an error before any call.
func TestToolsCheckChanges(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("[tools.fmt]\ndescription = \"d\"\ncommand = [\"true\"]\nprofile = \"default\"\nchanges = \"review\"\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"tools", "check", good}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "  workdir: read-write; network: none; stdin: no; output: text; changes: review\n") {
		t.Errorf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[tools.fmt]\ndescription = \"d\"\ncommand = [\"true\"]\nchanges = \"review\"\n"), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := dispatch([]string{"tools", "check", bad}, &stdout, &stderr); code != 125 || !strings.Contains(stderr.String(), `tool fmt: changes = "review": the tool's workdir is read-only (the server-wide default for a tool that names no profile)`) {
		t.Errorf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
}
