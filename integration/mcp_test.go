package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession starts `tooljail mcp --tools file` as u in workdir, and
// connects the MCP SDK's own client to it over stdio, as a host does.
func (u *user) mcpSession(t *testing.T, file, workdir, audit string) *mcp.ClientSession {
	t.Helper()
	return u.mcpSessionFiles(t, []string{file}, workdir, audit)
}

// mcpCommand is `tooljail args...` as u over stdio, with the suite's
// degradations, stderr to the test log, started in a run cgroup of its own
// (the caller releases it if the start fails).
func (u *user) mcpCommand(t *testing.T, args []string) (*exec.Cmd, runCgroup) {
	t.Helper()
	for _, l := range u.degraded {
		args = append(args, "--allow-degraded", l)
	}
	cmd := exec.Command(tooljailBin, args...)
	cmd.Dir = base
	cmd.Env = u.environ(nil)
	cmd.Stderr = &prefixWriter{t: t}
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	return cmd, rc
}

// mcpSessionFiles is mcpSession with several tool files (--tools each).
func (u *user) mcpSessionFiles(t *testing.T, files []string, workdir, audit string) *mcp.ClientSession {
	t.Helper()
	var args []string
	for _, f := range files {
		args = append(args, "--tools", f)
	}
	args = append([]string{"mcp"}, append(args, "--workdir", workdir, "--audit-log", audit)...)
	cmd, rc := u.mcpCommand(t, args)
	return mcpConnect(t, cmd, rc)
}

// mcpConnect connects the MCP SDK's client to cmd (mcpCommand's, maybe
// rewrapped) over stdio; at the test's end it closes the session, which
// ends the server, and requires a clean exit with nothing left behind.
func mcpConnect(t *testing.T, cmd *exec.Cmd, rc runCgroup) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tooljail-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		rc.release()
		t.Fatalf("connect to %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() {
		// Closing stdin ends the server; what it ran must be gone.
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("tooljail mcp ended with %v", cmd.ProcessState)
		}
		rc.check(t, cmd.Process.Pid)
	})
	return cs
}

// prefixWriter logs a server's stderr in the test's log.
type prefixWriter struct{ t *testing.T }

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.t.Logf("tooljail mcp stderr: %s", p)
	return len(p), nil
}

// mcpResult is a call's result, its text joined and its structured
// content decoded.
type mcpResult struct {
	isError    bool
	text       string
	structured map[string]any
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) mcpResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var texts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	out := mcpResult{isError: r.IsError, text: strings.Join(texts, "\n")}
	b, _ := json.Marshal(r.StructuredContent)
	json.Unmarshal(b, &out.structured)
	return out
}

// auditCalls reads the audit log back through `tooljail audit show`.
func (u *user) auditCalls(t *testing.T, audit string) []map[string]any {
	t.Helper()
	o := u.exec(t, run{args: []string{"audit", "show", "--json", audit}})
	if o.code != 0 {
		t.Fatalf("audit show: %s", o)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestMCPExamples drives `tooljail mcp` of the example tools with the
// SDK's client: it lists the tools, calls each, gets refusals for a bad
// argument and for the rate limit, and finds every call in the audit log.
func TestMCPExamples(t *testing.T) {
	needPrograms(t, "python3", "git", "curl", "grep")
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.toolRepo(t)
		audit := filepath.Join(u.dir(t), "audit.log")
		cs := u.mcpSession(t, exampleTools(t), repo, audit)

		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		schemas := map[string]string{}
		for _, tool := range list.Tools {
			b, _ := json.Marshal(tool.InputSchema)
			schemas[tool.Name] = string(b)
		}
		for _, name := range []string{"read_file", "write_file", "run_python", "run_tests", "grep_repo", "fetch_url", "git_status"} {
			if schemas[name] == "" {
				t.Errorf("tool %s not listed: %v", name, schemas)
			}
		}
		for _, want := range []string{`"required":["pattern"]`, `"minimum":1`, `"maximum":1000`, `"maxLength":200`, `"additionalProperties":false`} {
			if !strings.Contains(schemas["grep_repo"], want) {
				t.Errorf("grep_repo's schema lacks %s: %s", want, schemas["grep_repo"])
			}
		}
		if !strings.Contains(schemas["git_status"], `"enum":["--untracked-files=no","--untracked-files=normal","--untracked-files=all"]`) ||
			!strings.Contains(schemas["run_python"], `"stdin":{`) {
			t.Errorf("schemas: %s\n%s", schemas["git_status"], schemas["run_python"])
		}

		calls := 0
		expect := func(name string, args map[string]any, isError bool, text string) mcpResult {
			t.Helper()
			calls++
			r := mcpCall(t, cs, name, args)
			if r.isError != isError || !strings.Contains(r.text, text) || r.structured["call_id"] == "" {
				t.Errorf("%s %v: isError %v, text %q; want %v and %q", name, args, r.isError, r.text, isError, text)
			}
			return r
		}
		mark := strings.Fields(readFile(t, filepath.Join(repo, "a.txt")))[1]
		r := expect("grep_repo", map[string]any{"pattern": mark}, false, "./a.txt:1:hello "+mark)
		if rep, _ := r.structured["report"].(map[string]any); rep["status"] != "exited" || rep["profile"] != "default" {
			t.Errorf("the report as structured content: %v", r.structured)
		}
		expect("read_file", map[string]any{"path": "a.txt"}, false, "second line")
		expect("run_python", map[string]any{"stdin": "import os\nprint(sorted(os.listdir('.')))\n"}, false, "'a.txt'")
		expect("git_status", map[string]any{"untracked": "--untracked-files=all"}, false, "test_sample.py")
		expect("write_file", map[string]any{"path": "notes.txt", "stdin": "written\n"}, false, "")
		if got := readFile(t, filepath.Join(repo, "notes.txt")); got != "written\n" {
			t.Errorf("write_file wrote %q", got)
		}
		expect("fetch_url", map[string]any{"url": "https://go.dev/"}, true, "502")

		// Refused: a bad argument, a path out through a symlink, an
		// argument that tries to choose the profile.
		expect("grep_repo", map[string]any{"pattern": "x", "max_count": 5000}, true, "refused by rule max 1000")
		expect("read_file", map[string]any{"path": "etc/shadow"}, true, "leads out of its directory")
		expect("run_python", map[string]any{"stdin": "1", "profile": "unconfined"}, true, `parameter "profile": refused by rule undeclared`)
		// The rate: run_tests allows 4 calls a minute; the fifth is refused.
		for i := 0; i < 4; i++ {
			calls++
			if r := mcpCall(t, cs, "run_tests", nil); r.structured["decision"] != "admitted" {
				t.Fatalf("run_tests call %d: %v", i+1, r)
			}
		}
		r = expect("run_tests", nil, true, "rate limit per_minute = 4 reached; retry after")
		if r.structured["decision"] != "refused: rate per_minute" {
			t.Errorf("decision %v", r.structured["decision"])
		}

		lines := u.auditCalls(t, audit)
		if len(lines) != calls {
			t.Fatalf("%d audit lines, want %d", len(lines), calls)
		}
		for _, l := range lines {
			if l["call_id"] == "" || l["tool"] == "" || l["decision"] == "" {
				t.Errorf("audit line %v", l)
			}
		}
		if l := lines[len(lines)-1]; l["decision"] != "refused: rate per_minute" || l["status"] != "refused" {
			t.Errorf("the rate refusal's line: %v", l)
		}
	})
}

// agentToolFile writes agentTools to a file of u's and returns its path.
func (u *user) agentToolFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(u.dir(t), "agent.toml")
	if err := os.WriteFile(f, []byte(agentTools), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// agentTools are the tools of a scripted coding agent: its tests run with
// unittest, which every Python has.
const agentTools = `
[tools.read_file]
description = "Print a file."
command = ["cat", "--", "{path}"]
params.path = { type = "path" }

[tools.write_file]
description = "Write stdin to a file."
profile = "default"
command = ["sh", "-c", 'cat > "$1"', "write_file", "{path}"]
params.path = { type = "path" }
stdin = true

[tools.run_tests]
description = "Run the unit tests."
command = ["python3", "-B", "-m", "unittest", "-q"]
rate = { per_minute = 10 }

[tools.git_status]
description = "git status, short."
command = ["git", "--no-optional-locks", "-c", "safe.directory=*", "status", "--short"]
`

// TestMCPAgentLoop is what a coding agent does, without a model: read a
// file, run the tests, fix the file, run the tests again, look at the
// working tree, all through MCP in a git repository.
func TestMCPAgentLoop(t *testing.T) {
	needPrograms(t, "python3", "git")
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		files := map[string]string{
			"calc.py":      "def add(a, b):\n    return a - b\n",
			"test_calc.py": "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"}} {
			git := exec.Command("git", append([]string{"-C", repo, "-c", "safe.directory=*"}, args...)...)
			if out, err := git.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		chownTree(t, repo, u.dirUID, u.dirGID)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		toolFile := u.agentToolFile(t)
		audit := filepath.Join(u.dir(t), "audit.log")
		cs := u.mcpSession(t, toolFile, repo, audit)

		src := mcpCall(t, cs, "read_file", map[string]any{"path": "calc.py"})
		if src.isError || !strings.Contains(src.text, "return a - b") {
			t.Fatalf("read: %+v", src)
		}
		if r := mcpCall(t, cs, "run_tests", nil); !r.isError || !strings.Contains(r.text, "FAILED (failures=1)") {
			t.Fatalf("the tests before the fix: %+v", r)
		}
		fixed := strings.Replace(src.text, "a - b", "a + b", 1)
		if r := mcpCall(t, cs, "write_file", map[string]any{"path": "calc.py", "stdin": fixed}); r.isError {
			t.Fatalf("write: %+v", r)
		}
		if r := mcpCall(t, cs, "run_tests", nil); r.isError || !strings.Contains(r.text, "OK") {
			t.Fatalf("the tests after the fix: %+v", r)
		}
		if r := mcpCall(t, cs, "git_status", nil); r.isError || strings.TrimSpace(r.text) != "M calc.py" {
			t.Errorf("git status: %+v", r)
		}
		if got := readFile(t, filepath.Join(repo, "calc.py")); !strings.Contains(got, "a + b") {
			t.Errorf("calc.py on the host: %q", got)
		}
		lines := u.auditCalls(t, audit)
		var seq []string
		for _, l := range lines {
			seq = append(seq, l["tool"].(string)+":"+l["status"].(string))
		}
		if got := strings.Join(seq, " "); got != "read_file:exited run_tests:exited write_file:exited run_tests:exited git_status:exited" {
			t.Errorf("audit: %s", got)
		}
	})
}

// TestMCPAuditFailsClosed: once the audit log is gone, no call runs, and
// the model is told why.
func TestMCPAuditFailsClosed(t *testing.T) {
	needPrograms(t, "python3", "git")
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		toolFile := u.agentToolFile(t)
		audit := filepath.Join(u.dir(t), "audit.log")
		cs := u.mcpSession(t, toolFile, repo, audit)
		if r := mcpCall(t, cs, "write_file", map[string]any{"path": "first.txt", "stdin": "1"}); r.isError {
			t.Fatalf("first call: %+v", r)
		}
		if err := os.Remove(audit); err != nil {
			t.Fatal(err)
		}
		r := mcpCall(t, cs, "write_file", map[string]any{"path": "second.txt", "stdin": "2"})
		if !r.isError || !strings.Contains(r.text, "the audit log cannot be written: no call is admitted until it can (fail closed)") {
			t.Errorf("a call with the audit log deleted: %+v", r)
		}
		if _, err := os.Lstat(filepath.Join(repo, "second.txt")); err == nil {
			t.Error("a call ran with no audit log")
		}
		if _, err := os.Lstat(filepath.Join(repo, "first.txt")); err != nil {
			t.Errorf("the first call: %v", err)
		}
	})
}
