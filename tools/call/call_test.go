package call

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
)

func TestMain(m *testing.M) {
	jail.Init()
	os.Exit(m.Run())
}

// testFile declares the tools the tests call.
const testFile = `
[tools.show]
description = "Print each argument in brackets."
command = ["printf", "[%s]\n", "{text}"]
params.text = { type = "string" }

[tools.cat]
description = "Print stdin."
command = ["cat"]
stdin = true

[tools.touch]
description = "Create a file in the working directory (no profile: read-only workdir)."
command = ["touch", "--", "{name}"]
params.name = { type = "path" }

[tools.touch_rw]
description = "Create a file in the working directory (the default profile: a read-write workdir)."
command = ["touch", "--", "{name}"]
profile = "default"
params.name = { type = "path" }
rate = { per_minute = 1 }

[tools.touch_rw2]
description = "As touch_rw, without its rate."
command = ["touch", "--", "{name}"]
profile = "default"
params.name = { type = "path" }

[tools.list]
description = "List a directory beneath src."
command = ["ls", "-a", "--", "{dir}"]
params.dir = { type = "path", beneath = ["src"] }

[tools.json_ok]
description = "Print JSON."
command = ["printf", '{"n": %s, "s": "x"}', "{n}"]
params.n = { type = "integer", min = 0, max = 9 }
output = "json"

[tools.json_bad]
description = "Print something that is not JSON."
command = ["printf", "not json"]
output = "json"

[tools.burst]
description = "Rate-limited."
command = ["true"]
rate = { per_minute = 5, concurrency = 0 }

[tools.queued]
description = "One at a time; a second waits a moment."
command = ["true"]
rate = { per_minute = 0, concurrency = 1, queue = "1ms" }

[tools.limits]
description = "Show the limits (the default's timeout, the tool's memory)."
command = ["true"]
limits = { memory = "128M" }
`

// setup makes a Caller over testFile in a fresh workdir (0755, so that a
// root-started jail's unprivileged host user can read it) with an audit
// log outside it.
func setup(t *testing.T) (*Caller, string) {
	t.Helper()
	f, err := tools.Parse("tools.toml", []byte(testFile))
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("/tmp", "tjcall-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	wd := filepath.Join(root, "work")
	for _, d := range []string{root, wd, filepath.Join(wd, "src"), filepath.Join(root, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(root, "audit.log")
	log, err := OpenLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	c := &Caller{File: f, Defaults: tools.ServerDefaults, Workdir: wd, Log: log}
	if os.Geteuid() != 0 {
		// A user on this host's cgroup v1 has no delegated hierarchy.
		c.AllowDegraded = []string{"cgroup"}
	}
	return c, logPath
}

func call(t *testing.T, c *Caller, tool string, args map[string]any) *Outcome {
	t.Helper()
	o, err := c.Call(context.Background(), Request{Tool: tool, Args: args, Client: report.Peer{UID: 7, GID: 8, PID: 9}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return o
}

// logLines reads the audit log back.
func logLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestAdmittedCall(t *testing.T) {
	c, logPath := setup(t)
	// Everything a shell or a splitter would read is one argv element.
	val := "a b; $(touch /tmp/x) `id` *\n-rf --help '\""
	o := call(t, c, "show", map[string]any{"text": val})
	if o.Decision != "admitted" || o.Error != "" || o.ExitCode != 0 || o.Failed() {
		t.Fatalf("outcome %+v", o)
	}
	if got := text(o.Report.Stdout.Text); got != "["+val+"]\n" {
		t.Errorf("stdout %q", got)
	}
	if want := []string{"printf", "[%s]\n", val}; strings.Join(o.Report.Command, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("command %q, want %q", o.Report.Command, want)
	}
	lines := logLines(t, logPath)
	if len(lines) != 1 {
		t.Fatalf("%d audit lines, want 1", len(lines))
	}
	l := lines[0]
	for k, want := range map[string]any{
		"call_id": o.CallID, "tool": "show", "decision": "admitted", "status": "exited",
		"exit_code": 0.0, "violations": 0.0, "id": o.Report.ID, "output_bytes": float64(len(val) + 3),
	} {
		if l[k] != want {
			t.Errorf("audit %s = %v, want %v", k, l[k], want)
		}
	}
	if args, _ := l["arguments"].(map[string]any); args["text"] != val {
		t.Errorf("audit arguments %v", l["arguments"])
	}
	if p, _ := l["peer"].(map[string]any); p["uid"] != 7.0 || p["pid"] != 9.0 {
		t.Errorf("audit peer %v", l["peer"])
	}
	if _, ok := l["duration_ms"].(float64); !ok {
		t.Errorf("audit duration_ms %v", l["duration_ms"])
	}
	if _, err := time.Parse(time.RFC3339Nano, l["time"].(string)); err != nil {
		t.Errorf("audit time: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	c, logPath := setup(t)
	wd := c.Workdir
	if err := os.Symlink("../../outside", filepath.Join(wd, "src", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(wd, "src", "etc")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		stdin []byte
		rule  string
		msg   string
	}{
		{"nope", nil, nil, "unknown tool", `no tool "nope" in tools.toml; declared: show, cat`},
		{"show", map[string]any{"text": "x", "extra": 1.0}, nil, "undeclared", `parameter "extra": refused by rule undeclared`},
		{"show", nil, nil, "required", "parameter text: refused by rule required"},
		{"show", map[string]any{"text": 5.0}, nil, "type string", "want a string, got a number"},
		{"show", map[string]any{"text": "a\x00b"}, nil, "no NUL", "NUL"},
		{"show", map[string]any{"text": "x"}, []byte("in"), "stdin", "takes no stdin"},
		{"list", map[string]any{"dir": "../outside"}, nil, `beneath ["src"]`, `through ".."`},
		{"list", map[string]any{"dir": "src/../.."}, nil, `beneath ["src"]`, `through ".."`},
		{"list", map[string]any{"dir": "/etc"}, nil, `beneath ["src"]`, "an absolute path"},
		{"list", map[string]any{"dir": "."}, nil, `beneath ["src"]`, "not at or below"},
		{"list", map[string]any{"dir": "src/out"}, nil, "beneath", "leads out of its directory"},
		{"list", map[string]any{"dir": "src/out/x"}, nil, "beneath", "leads out of its directory"},
		{"list", map[string]any{"dir": "src/etc"}, nil, "beneath", "leads out of its directory"},
		{"json_ok", map[string]any{"n": 10.0}, nil, "max 9", "above the maximum"},
	} {
		o, err := c.Call(context.Background(), Request{Tool: tc.tool, Args: tc.args, Stdin: tc.stdin})
		if err != nil {
			t.Fatal(err)
		}
		if o.Decision != "refused: "+tc.rule || !strings.Contains(o.Error, tc.msg) || o.ExitCode != jail.ExitSetup || o.Report != nil || !o.Failed() {
			t.Errorf("%s %v: decision %q error %q exit %d, want rule %q and %q", tc.tool, tc.args, o.Decision, o.Error, o.ExitCode, tc.rule, tc.msg)
		}
	}
	lines := logLines(t, logPath)
	if len(lines) != 14 {
		t.Fatalf("%d audit lines, want one per call", len(lines))
	}
	for _, l := range lines {
		if l["status"] != "refused" || l["exit_code"] != 125.0 || !strings.HasPrefix(l["decision"].(string), "refused: ") || l["reason"] == "" || l["output_bytes"] != nil {
			t.Errorf("audit line %v", l)
		}
	}
	// Symlinks that stay beneath are followed, not refused.
	if err := os.Symlink(".", filepath.Join(wd, "src", "self")); err != nil {
		t.Fatal(err)
	}
	if o := call(t, c, "list", map[string]any{"dir": "src/self"}); o.Decision != "admitted" || o.Failed() {
		t.Errorf("src/self: %+v %s", o, text(o.Report.Stderr.Text))
	}
}

func TestReadOnlyWorkdirByDefault(t *testing.T) {
	c, _ := setup(t)
	o := call(t, c, "touch", map[string]any{"name": "made"})
	if o.Decision != "admitted" || o.ExitCode == 0 {
		t.Errorf("touch in the default's read-only workdir: %+v", o)
	}
	if _, err := os.Lstat(filepath.Join(c.Workdir, "made")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command wrote the read-only workdir: %v", err)
	}
	// A value that starts with "-" is a path, not an option.
	o = call(t, c, "touch_rw", map[string]any{"name": "-rf"})
	if o.Failed() || o.Report.Command[2] != "./-rf" {
		t.Fatalf("touch_rw: %+v %s", o, text(o.Report.Stderr.Text))
	}
	if _, err := os.Lstat(filepath.Join(c.Workdir, "-rf")); err != nil {
		t.Errorf("a tool with a profile takes its read-write workdir: %v", err)
	}
	// per_minute = 1: the second call is refused and never runs.
	o = call(t, c, "touch_rw", map[string]any{"name": "second"})
	if o.Decision != "refused: rate per_minute" || !strings.Contains(o.Error, "retry after") {
		t.Errorf("second call: %+v", o)
	}
	if _, err := os.Lstat(filepath.Join(c.Workdir, "second")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rate-limited call ran: %v", err)
	}
}

func TestDefaultsAndOverrides(t *testing.T) {
	c, _ := setup(t)
	o := call(t, c, "limits", nil)
	if o.Failed() {
		t.Fatalf("%+v", o)
	}
	l := o.Report.Limits
	if l.TimeoutMs != 10000 || l.MemoryBytes != 128<<20 {
		t.Errorf("limits %+v: want the default's 10 s timeout and the tool's 128M", l)
	}
	if !o.Report.Enforcement.Namespaces.Net {
		t.Error("a tool that names no profile got the host's network")
	}
	if o.Report.Profile != "default" {
		t.Errorf("profile %q", o.Report.Profile)
	}
}

func TestStdinAndJSON(t *testing.T) {
	c, logPath := setup(t)
	in := []byte(strings.Repeat("x", 3000))
	o, err := c.Call(context.Background(), Request{Tool: "cat", Stdin: in})
	if err != nil || o.Failed() || text(o.Report.Stdout.Text) != string(in) {
		t.Fatalf("cat: %v %+v", err, o)
	}
	o = call(t, c, "json_ok", map[string]any{"n": 3.0})
	if o.Failed() {
		t.Fatalf("json_ok: %+v", o)
	}
	if m, ok := o.Structured.(map[string]any); !ok || m["n"] != json.Number("3") || m["s"] != "x" {
		t.Errorf("structured %#v", o.Structured)
	}
	o = call(t, c, "json_bad", nil)
	if o.Decision != "admitted" || !o.Failed() || o.ExitCode != jail.ExitSetup || !strings.Contains(o.Error, "stdout is not JSON") || o.Structured != nil {
		t.Errorf("json_bad: %+v", o)
	}
	lines := logLines(t, logPath)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	sum := sha256.Sum256(in)
	st, _ := lines[0]["stdin"].(map[string]any)
	if st["truncated"] != true || st["bytes"] != 3000.0 || st["sha256"] != hex.EncodeToString(sum[:]) || len(st["head"].(string)) != MaxLogged {
		t.Errorf("stdin in the log: %v", lines[0]["stdin"])
	}
	if r, _ := lines[2]["reason"].(string); !strings.Contains(r, "stdout is not JSON") {
		t.Errorf("json_bad's line: %v", lines[2])
	}
}

func TestLongArgumentsClipped(t *testing.T) {
	c, logPath := setup(t)
	long := strings.Repeat("é", 1000) // 2000 bytes
	o := call(t, c, "show", map[string]any{"text": long})
	if o.Failed() {
		t.Fatal(o)
	}
	// Refused calls are logged the same way, whatever the value's type.
	call(t, c, "show", map[string]any{"text": []any{strings.Repeat("y", 2000)}})
	lines := logLines(t, logPath)
	sum := sha256.Sum256([]byte(long))
	a, _ := lines[0]["arguments"].(map[string]any)["text"].(map[string]any)
	if a["sha256"] != hex.EncodeToString(sum[:]) || a["bytes"] != 2000.0 || a["head"] != strings.Repeat("é", 512) {
		t.Errorf("clipped %v", a)
	}
	b, _ := lines[1]["arguments"].(map[string]any)["text"].(map[string]any)
	if b["truncated"] != true || !strings.HasPrefix(b["head"].(string), `["yyy`) {
		t.Errorf("an array argument: %v", b)
	}
}

func TestBurstAdmitsExactly(t *testing.T) {
	c, logPath := setup(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := c.Call(context.Background(), Request{Tool: "burst"})
			if err != nil {
				t.Error(err)
				return
			}
			if o.Decision == "admitted" {
				mu.Lock()
				admitted++
				mu.Unlock()
			} else if o.Decision != "refused: rate per_minute" {
				t.Errorf("decision %q", o.Decision)
			}
		}()
	}
	wg.Wait()
	if admitted != 5 {
		t.Errorf("%d admitted, want exactly 5", admitted)
	}
	if n := len(logLines(t, logPath)); n != 20 {
		t.Errorf("%d audit lines, want 20", n)
	}
}

// A call over the concurrency waits in line and runs when a slot frees
// (queued_ms in its outcome and line); one that waits out rate.queue is
// refused by the concurrency limit; one whose client goes away while in
// line is refused as cancelled. Each has its audit line.
func TestQueuedCalls(t *testing.T) {
	c, logPath := setup(t)
	// The one slot is held here, as by a running call.
	hold, _, err := c.limiter().Acquire(context.Background(), "queued", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	o := call(t, c, "queued", nil)
	if o.Decision != "refused: rate concurrency" || !strings.Contains(o.Error, "none ended within the 1ms this call waited (rate.queue)") {
		t.Errorf("after the queue time: %+v", o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, err = c.Call(ctx, Request{Tool: "queued"})
	if err != nil || o.Decision != "refused: cancelled" || !strings.Contains(o.Error, "it never ran") || o.ExitCode != jail.ExitSetup {
		t.Errorf("cancelled in line: %+v %v", o, err)
	}
	c.Limiter = tools.NewLimiter(map[string]tools.Rate{"queued": {Concurrency: 1, Queue: time.Hour}})
	hold, _, err = c.limiter().Acquire(context.Background(), "queued", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Outcome)
	go func() { done <- call(t, c, "queued", nil) }()
	for c.Limiter.Waiting("queued") == 0 {
		time.Sleep(time.Millisecond)
	}
	hold()
	if o := <-done; o.Decision != "admitted" || o.Failed() || o.QueuedMS < 1 {
		t.Errorf("the queued call: %+v", o)
	}
	lines := logLines(t, logPath)
	var got []string
	for _, l := range lines {
		got = append(got, l["decision"].(string))
	}
	if strings.Join(got, ", ") != "refused: rate concurrency, refused: cancelled, admitted" {
		t.Errorf("decisions %q", got)
	}
	if lines[2]["queued_ms"] == nil {
		t.Errorf("the line of the call that waited: %v", lines[2])
	}
}

func TestLogFailsClosed(t *testing.T) {
	c, logPath := setup(t)
	call(t, c, "show", map[string]any{"text": "one"})
	// A log that was deleted takes lines no one can read.
	if err := os.Remove(logPath); err != nil {
		t.Fatal(err)
	}
	o, err := c.Call(context.Background(), Request{Tool: "touch_rw", Args: map[string]any{"name": "ran"}})
	if !errors.Is(err, ErrLogBroken) || o != nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("call with the log deleted: %v %+v", err, o)
	}
	if _, err := os.Lstat(filepath.Join(c.Workdir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a call ran with no audit log")
	}

	// A write that fails (here: a descriptor without O_APPEND) breaks it
	// for every later call.
	c2, log2 := setup(t)
	ro, err := os.Open(log2)
	if err != nil {
		t.Fatal(err)
	}
	c2.Log.f.Close()
	c2.Log.f = ro
	o, err = c2.Call(context.Background(), Request{Tool: "show", Args: map[string]any{"text": "x"}})
	if !errors.Is(err, ErrLogBroken) || o == nil || o.Decision != "admitted" {
		t.Fatalf("the failed line: %v %+v", err, o)
	}
	o, err = c2.Call(context.Background(), Request{Tool: "touch_rw", Args: map[string]any{"name": "ran"}})
	if !errors.Is(err, ErrLogBroken) || o != nil {
		t.Fatalf("after a failed line: %v %+v", err, o)
	}
	if _, err := os.Lstat(filepath.Join(c2.Workdir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a call ran after the audit log failed")
	}
}

func TestOpenLogRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rel.log", filepath.Join(dir, "link"), filepath.Join(dir, "sub"), filepath.Join(dir, "missing", "x.log")} {
		if l, err := OpenLog(p); err == nil {
			l.Close()
			t.Errorf("OpenLog(%s) opened it", p)
		}
	}
	l, err := OpenLog(filepath.Join(dir, "new.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := os.Stat(filepath.Join(dir, "new.log"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new log: %v %v", err, st.Mode())
	}
}

// A jail that root starts in a read-only workdir runs as the workdir's
// owner, who can read it even when nobody else can.
func TestReadOnlyWorkdirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a jail that root starts")
	}
	c, _ := setup(t)
	if err := os.WriteFile(filepath.Join(c.Workdir, "src", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.Workdir, filepath.Join(c.Workdir, "src"), filepath.Join(c.Workdir, "src", "f")} {
		if err := os.Chown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(c.Workdir, 0o700); err != nil {
		t.Fatal(err)
	}
	o := call(t, c, "list", map[string]any{"dir": "src"})
	if o.Failed() || !strings.Contains(text(o.Report.Stdout.Text), "f\n") {
		t.Errorf("list in a 0700 workdir of uid 4242: %+v %s", o, text(o.Report.Stderr.Text))
	}
	if h := o.Report.Enforcement.HostUID; h == nil || *h != 4242 {
		t.Errorf("host uid %v, want the owner's", h)
	}
	// Still read-only.
	o = call(t, c, "touch", map[string]any{"name": "src/g"})
	if !o.Failed() {
		t.Error("touch in the read-only workdir succeeded")
	}
}

func TestLogBounds(t *testing.T) {
	c, logPath := setup(t)
	long := strings.Repeat("x", 5000)
	if o := call(t, c, "show", map[string]any{"text": long}); o.Failed() {
		t.Fatal(o)
	}
	many := map[string]any{}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", 2000)
	}
	call(t, c, "show", many)
	lines := logLines(t, logPath)
	cmd := lines[0]["command"].([]any)
	sum := sha256.Sum256([]byte(long))
	if got := cmd[2].(string); !strings.HasPrefix(got, strings.Repeat("x", MaxLogged)+"… (5000 bytes, sha256 "+hex.EncodeToString(sum[:])+")") || len(got) > MaxLogged+100 {
		t.Errorf("the command's long element in the log: %.80q… (%d bytes)", got, len(got))
	}
	if args := lines[1]["arguments"].(map[string]any); len(args) != MaxLoggedArgs || lines[1]["arguments_omitted"] != 36.0 || args["k000"] == nil {
		t.Errorf("a call with 100 arguments: %d logged, %v omitted", len(args), lines[1]["arguments_omitted"])
	}
	for i, l := range lines {
		b, _ := json.Marshal(l)
		if len(b) > 200<<10 {
			t.Errorf("line %d: %d bytes", i, len(b))
		}
	}
}

func TestParseJSON(t *testing.T) {
	for _, tc := range []struct {
		stdout string
		ok     bool
	}{
		{`{"a": 1}`, true},
		{"[1, 2]\n", true},
		{`"s"`, true},
		{"  3  \n", true},
		{"", false},
		{`{"a": 1} trailing`, false},
		{`{"a": 1} {"b": 2}`, false},
		{`{"a": 1}}`, false},
		{`{"a": `, false},
	} {
		s := tc.stdout
		_, err := parseJSON(&jail.Result{Status: jail.StatusExited, Stdout: jail.Stream{Text: &s}})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.stdout, err)
		}
	}
	s := "{}"
	if _, err := parseJSON(&jail.Result{Status: jail.StatusExited, Stdout: jail.Stream{Text: &s, Truncated: true}}); err == nil {
		t.Error("a cut stdout passed as JSON")
	}
	if v, err := parseJSON(&jail.Result{Status: jail.StatusExited, ExitCode: 1, Stdout: jail.Stream{Text: &s}}); v != nil || err != nil {
		t.Error("a failed command's stdout was parsed")
	}
}

// The audit log and the tool file inside a read-write workdir are shown
// read-only to the command: a call cannot rewrite the record or the next
// call's tools.
func TestTrustedFilesInWorkdir(t *testing.T) {
	c, _ := setup(t)
	logPath := filepath.Join(c.Workdir, "audit.log")
	log, err := OpenLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	c.Log = log
	toolFile := filepath.Join(c.Workdir, "tools.toml")
	if err := os.WriteFile(toolFile, []byte(testFile), 0o644); err != nil {
		t.Fatal(err)
	}
	obj, err := hostpath.Open(toolFile, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	c.Trusted = []*hostpath.Object{obj}
	for _, name := range []string{"audit.log", "tools.toml"} {
		o := call(t, c, "touch_rw2", map[string]any{"name": name})
		if !o.Failed() || !strings.Contains(text(o.Report.Stderr.Text), "Read-only file system") {
			t.Errorf("touch %s: %+v %s", name, o, text(o.Report.Stderr.Text))
		}
	}
	if b, _ := os.ReadFile(toolFile); string(b) != testFile {
		t.Error("the tool file changed")
	}
	if o := call(t, c, "touch_rw2", map[string]any{"name": "other"}); o.Failed() {
		t.Errorf("the workdir is not read-write: %+v", o)
	}
}

// A run that ended but left part of its jail keeps its answer, and the
// leftover is told to Warn with the tool's name; other errors stay the
// call's, untold.
func TestKeepAnswer(t *testing.T) {
	left := &jail.CleanupError{Err: errors.New("remove cgroup x: busy")}
	setup := &jail.SetupError{Code: jail.ExitSetup, Err: errors.New("no such profile")}
	for _, tc := range []struct {
		name     string
		err      error
		warn     bool
		wantErr  error
		wantWarn string
	}{
		{"none", nil, true, nil, ""},
		{"leftover", left, true, nil, "tool t: the run ended, but its jail was not all removed: remove cgroup x: busy"},
		{"leftover wrapped", fmt.Errorf("run: %w", left), true, nil, "tool t: the run ended, but its jail was not all removed: remove cgroup x: busy"},
		{"leftover, no warn", left, false, nil, ""},
		{"setup", setup, true, setup, ""},
	} {
		var told []string
		var warn func(error)
		if tc.warn {
			warn = func(err error) { told = append(told, err.Error()) }
		}
		err := keepAnswer("t", tc.err, warn)
		if err != tc.wantErr {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
		}
		if got := strings.Join(told, "|"); got != tc.wantWarn {
			t.Errorf("%s: told %q, want %q", tc.name, got, tc.wantWarn)
		}
	}
}
