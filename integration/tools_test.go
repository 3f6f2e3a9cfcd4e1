package integration

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exampleTools copies examples/tools.toml where every user can read it.
func exampleTools(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(base, "examples")
	p := filepath.Join(dir, "tools.toml")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	// The profiles it names by relative path first (every example
	// profile), the tool file last: once it is there, the copy is whole.
	profs, _ := filepath.Glob(filepath.Join("..", "examples", "profiles", "*.toml"))
	var rels []string
	for _, p := range profs {
		rels = append(rels, filepath.Join("profiles", filepath.Base(p)))
	}
	for _, rel := range append(rels, "tools.toml") {
		b, err := os.ReadFile(filepath.Join("..", "examples", rel))
		if errors.Is(err, fs.ErrNotExist) {
			// The VM guests run the suite's binary without the tree.
			t.Skipf("examples/%s is not here (no source tree beside the suite): %v", rel, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := dst + "." + marker("tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// toolRepo makes a git repository owned by u, holding a.txt, a test
// file, and a symlink that leads out of it.
func (u *user) toolRepo(t *testing.T) string {
	t.Helper()
	d := u.dir(t)
	files := map[string]string{
		"a.txt":          "hello " + marker("grep") + "\nsecond line\n",
		"test_sample.py": "def test_ok():\n    assert 1 + 1 == 2\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(d, "etc")); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "init", "-q", d)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	chownTree(t, d, u.dirUID, u.dirGID)
	// A root-owned workdir is read by an identity that owns nothing
	// (jail.DefaultHostUser): as a repository usually is, 0755.
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func chownTree(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toolCall runs `tooljail tools call` of the example file in dir as u.
func (u *user) toolCall(t *testing.T, dir, audit string, stdin string, tool string, args ...string) *outcome {
	t.Helper()
	a := []string{"tools", "call", "--workdir", dir, "--audit-log", audit}
	for _, l := range u.degraded {
		a = append(a, "--allow-degraded", l)
	}
	a = append(a, exampleTools(t), tool)
	for _, kv := range args {
		a = append(a, "--arg", kv)
	}
	r := run{args: a}
	if stdin != "" {
		f, err := os.CreateTemp(base, "stdin-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if _, err := f.WriteString(stdin); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		r.stdin = f
	}
	return u.exec(t, r)
}

// TestToolsCallExamples calls the example tools for real, as each user,
// and finds every call in the audit log.
func TestToolsCallExamples(t *testing.T) {
	needPrograms(t, "python3", "git", "curl", "grep")
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.toolRepo(t)
		logDir := u.dir(t)
		audit := filepath.Join(logDir, "audit.log")

		o := u.exec(t, run{args: []string{"tools", "check", exampleTools(t)}})
		if o.code != 0 || !strings.Contains(o.stdout, "git_status\n") {
			t.Fatalf("tools check: %s", o)
		}
		calls := 0
		expect := func(o *outcome, code int, stdout, stderr string) {
			t.Helper()
			calls++
			if o.code != code || !strings.Contains(o.stdout, stdout) || !strings.Contains(o.stderr, stderr) {
				t.Errorf("want exit %d, stdout with %q, stderr with %q:\n%s", code, stdout, stderr, o)
			}
		}
		mark := strings.Fields(readFile(t, filepath.Join(repo, "a.txt")))[1]
		expect(u.toolCall(t, repo, audit, "", "grep_repo", "pattern="+mark), 0, "./a.txt:1:hello "+mark, "")
		expect(u.toolCall(t, repo, audit, "", "grep_repo", "pattern=hello", "path=a.txt", "max_count=1"), 0, "1:hello", "")
		expect(u.toolCall(t, repo, audit, "", "read_file", "path=a.txt"), 0, "second line", "")
		expect(u.toolCall(t, repo, audit, "print(6 * 7)\n", "run_python"), 0, "42\n", "")
		// No network inside: the connection fails.
		expect(u.toolCall(t, repo, audit, "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=5)\n", "run_python"), 1, "", "Network is unreachable")
		// The workdir is read-only for a tool that names no profile.
		expect(u.toolCall(t, repo, audit, "open('made.txt', 'w')\n", "run_python"), 1, "", "Read-only file system")
		if _, err := os.Lstat(filepath.Join(repo, "made.txt")); err == nil {
			t.Error("run_python wrote the read-only workdir")
		}
		expect(u.toolCall(t, repo, audit, "", "git_status"), 0, "Untracked files", "")
		// A value a shell would expand is a file name, written as given.
		expect(u.toolCall(t, repo, audit, "fixed\n", "write_file", "path=$(id) b.txt"), 0, "", "")
		if got := readFile(t, filepath.Join(repo, "$(id) b.txt")); got != "fixed\n" {
			t.Errorf("write_file wrote %q", got)
		}
		// pytest may be missing here: the call is admitted and runs either way.
		pytest := u.toolCall(t, repo, audit, "", "run_tests", "path=test_sample.py")
		calls++
		if !strings.Contains(pytest.stdout, "1 passed") && !strings.Contains(pytest.stderr, "No module named pytest") {
			t.Errorf("run_tests: %s", pytest)
		}
		// Through the allow mode's proxy, which cannot resolve go.dev on
		// this machine (no network beyond it): curl gets the proxy's 502.
		expect(u.toolCall(t, repo, audit, "", "fetch_url", "url=https://go.dev/doc/"), 22, "", "502")

		// Refusals: nothing runs, and each is one audit line.
		expect(u.toolCall(t, repo, audit, "", "fetch_url", "url=http://169.254.169.254/"), 125, "", `refused by rule pattern`)
		expect(u.toolCall(t, repo, audit, "", "read_file", "path=../"+filepath.Base(logDir)+"/audit.log"), 125, "", `leads out of the working directory through ".."`)
		expect(u.toolCall(t, repo, audit, "", "read_file", "path=/etc/passwd"), 125, "", "an absolute path")
		expect(u.toolCall(t, repo, audit, "", "read_file", "path=etc/passwd"), 125, "", "leads out of its directory")
		expect(u.toolCall(t, repo, audit, "", "grep_repo", "pattern=x", "max_count=0"), 125, "", "refused by rule min 1")
		expect(u.toolCall(t, repo, audit, "", "grep_repo", "pattern=x", "exec=rm"), 125, "", `parameter "exec": refused by rule undeclared`)
		expect(u.toolCall(t, repo, audit, "", "git_status", "untracked=--output=/tmp/x"), 125, "", "refused by rule values")
		// No git hook a later git on the host would run.
		expect(u.toolCall(t, repo, audit, "#!/bin/sh\n", "write_file", "path=.git/hooks/pre-commit"), 125, "", "refused by rule pattern")

		// The audit log, read back: every call, in order, with its decision.
		o = u.exec(t, run{args: []string{"audit", "show", "--json", audit}})
		if o.code != 0 {
			t.Fatalf("audit show: %s", o)
		}
		lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
		if len(lines) != calls {
			t.Fatalf("%d audit lines, want %d:\n%s", len(lines), calls, o.stdout)
		}
		refused := 0
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if m["tool"] == "" || m["call_id"] == "" || (m["decision"] != "admitted") != (m["status"] == "refused") {
				t.Errorf("audit line %s", l)
			}
			if m["status"] == "refused" {
				refused++
			}
			if p, _ := m["peer"].(map[string]any); p == nil || p["uid"] != float64(u.uid) {
				t.Errorf("audit line's peer is not the caller (uid %d): %s", u.uid, l)
			}
		}
		if refused != 8 {
			t.Errorf("%d refused lines, want 8", refused)
		}
		o = u.exec(t, run{args: []string{"audit", "show", "--tool", "read_file", "--status", "refused", audit}})
		if n := strings.Count(o.stdout, "\n"); o.code != 0 || n != 4 || !strings.Contains(o.stdout, "tool read_file path=/etc/passwd") {
			t.Errorf("audit show --tool read_file --status refused: %d lines\n%s", n, o)
		}
	})
}

// needPrograms skips a test whose tools are not installed (the VM guests
// have a busybox only). The jail binds the host's /usr, so what the test
// finds here the jailed command finds too.
func needPrograms(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed here: %v", n, err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeTools: `tooljail serve --tools` serves tool calls on its
// socket, to each user, through the same checks, and records them.
func TestServeTools(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		dir := u.serverDir(t)
		profile := ""
		if len(u.degraded) > 0 {
			// A server takes no --allow-degraded: the tool's profile does.
			q := make([]string, len(u.degraded))
			for i, d := range u.degraded {
				q[i] = strconv.Quote(d)
			}
			p := filepath.Join(dir, "tool-profile.toml")
			if err := os.WriteFile(p, []byte("extends = \"default\"\nallow_degraded = ["+strings.Join(q, ", ")+"]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			profile = "profile = " + strconv.Quote(p) + "\n"
		}
		toolFile := filepath.Join(dir, "tools.toml")
		text := "[tools.show]\ndescription = \"Print the word.\"\n" + profile + "command = [\"printf\", \"%s\\n\", \"{word}\"]\nparams.word = { type = \"string\", pattern = \"[a-z]+\" }\n" +
			"[tools.list]\ndescription = \"List a directory.\"\n" + profile + "command = [\"ls\", \"--\", \"{dir}\"]\nparams.dir = { type = \"path\" }\n"
		if err := os.WriteFile(toolFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{toolFile, filepath.Join(dir, "tool-profile.toml")} {
			os.Chown(p, u.uid, u.gid)
		}
		s := u.startServer(t, dir, "--tools", toolFile)
		wd := u.dir(t)
		if err := os.Chmod(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", filepath.Join(wd, "etc")); err != nil {
			t.Fatal(err)
		}
		toolReq := func(line string) map[string]any {
			t.Helper()
			c, err := dialAs(u, s.sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Minute * slow))
			if _, err := c.Write([]byte(line + "\n")); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("reply %q: %v\nserver log:\n%s", b, err, s.log())
			}
			return m
		}
		m := toolReq(`{"id": "tool-1", "tool": "show", "arguments": {"word": "hello"}, "workdir": "` + wd + `"}`)
		rep, _ := m["report"].(map[string]any)
		if m["decision"] != "admitted" || rep == nil || rep["stdout"].(map[string]any)["text"] != "hello\n" {
			t.Errorf("show: %v\nserver log:\n%s", m, s.log())
		}
		for line, want := range map[string]string{
			`{"tool": "show", "arguments": {"word": "$(id)"}, "workdir": "` + wd + `"}`: `refused by rule pattern`,
			`{"tool": "list", "arguments": {"dir": "etc"}, "workdir": "` + wd + `"}`:    "leads out of its directory",
			`{"tool": "show", "argv": ["sh"], "workdir": "` + wd + `"}`:                 "argv: not taken with tool",
		} {
			e, _ := toolReq(line)["error"].(map[string]any)
			if e == nil || e["code"] != 125.0 || !strings.Contains(e["message"].(string), want) {
				t.Errorf("%s: %v, want an error line with %q", line, e, want)
			}
		}
		b, err := os.ReadFile(s.audit)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var calls []map[string]any
		for _, l := range lines {
			var a map[string]any
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatal(err)
			}
			if a["call_id"] != nil {
				calls = append(calls, a)
			}
		}
		decisions := map[string]bool{}
		for _, c := range calls[1:] {
			decisions[c["decision"].(string)] = true
		}
		if len(calls) != 3 || calls[0]["request_id"] != "tool-1" || !decisions[`refused: pattern "[a-z]+"`] || !decisions["refused: beneath"] {
			t.Fatalf("tool call lines: %v", calls)
		}
		if p, _ := calls[0]["peer"].(map[string]any); p["uid"] != float64(u.uid) {
			t.Errorf("peer %v, want uid %d", calls[0]["peer"], u.uid)
		}
	})
}
