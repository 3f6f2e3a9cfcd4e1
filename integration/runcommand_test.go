package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCommand calls the generic tool of a file that enables it, as each
// user: through `tools call` (argv after its name, passed as given: no
// shell) and through MCP over stdio, alone and with a second tool file; a
// timeout above the file's is refused (125) and recorded; a name declared
// twice is an error naming both files; the example file, which does not
// enable it, has no such tool.
func TestRunCommand(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(u.dir(t), "rc.toml")
		if err := os.WriteFile(file, []byte("[run_command]\nprofile = \"default\"\nlimits.timeout = \"20s\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		call := func(tool string, extra ...string) *outcome {
			a := []string{"tools", "call", "--workdir", repo, "--audit-log", audit}
			for _, l := range u.degraded {
				a = append(a, "--allow-degraded", l)
			}
			return u.exec(t, run{args: append(append(a, file, tool), extra...)})
		}
		// A word a shell would expand or split reaches the program as it is.
		o := call("run_command", "--", "printf", "[%s]\n", "$(id -u) *", "a;b")
		if o.code != 0 || o.stdout != "[$(id -u) *]\n[a;b]\n" {
			t.Errorf("argv as given: %s", o)
		}
		// The file names a profile (default): its workdir is read-write.
		o = call("run_command", "--", "sh", "-c", "echo made > made.txt")
		if o.code != 0 || readFile(t, filepath.Join(repo, "made.txt")) != "made\n" {
			t.Errorf("write in the workdir: %s", o)
		}
		o = call("run_command", "--arg", "timeout=1m", "--", "true")
		if o.code != 125 || !strings.Contains(o.stderr, `parameter timeout = "1m0s": refused by rule timeout 20s`) {
			t.Errorf("a longer timeout: %s", o)
		}
		o = call("run_command", "--arg", "timeout=15s", "--", "true") // below the rule's 20s, and room for a slow guest
		if o.code != 0 {
			t.Errorf("a shorter timeout: %s", o)
		}
		lines := u.auditCalls(t, audit)
		if len(lines) != 4 || lines[2]["decision"] != "refused: timeout" || lines[0]["tool"] != "run_command" {
			t.Errorf("audit: %v", lines)
		}

		// Over MCP.
		cs := u.mcpSession(t, file, repo, audit)
		if r := mcpCall(t, cs, "run_command", map[string]any{"argv": []string{"cat"}, "stdin": "via mcp"}); r.isError || r.text != "via mcp" {
			t.Errorf("over MCP: %+v", r)
		}
		if r := mcpCall(t, cs, "run_command", map[string]any{"argv": "ls -l"}); !r.isError || r.structured["decision"] != "refused: type array" {
			t.Errorf("argv as a string over MCP: %+v", r)
		}

		// With a second file: the tools of both.
		agent := u.agentToolFile(t)
		cs2 := u.mcpSessionFiles(t, []string{agent, file}, repo, audit)
		list, err := cs2.ListTools(t.Context(), nil)
		if err != nil || len(list.Tools) != 5 {
			t.Fatalf("two files: %v %v", list, err)
		}
		if r := mcpCall(t, cs2, "read_file", map[string]any{"path": "made.txt"}); r.isError || r.text != "made\n" {
			t.Errorf("read_file of the first file: %+v", r)
		}
		if r := mcpCall(t, cs2, "run_command", map[string]any{"argv": []string{"cat", "made.txt"}}); r.isError || r.text != "made\n" {
			t.Errorf("run_command of the second file: %+v", r)
		}
		// The same file twice declares every name twice.
		o = u.exec(t, run{args: []string{"mcp", "--tools", file, "--tools", agent, "--tools", file}})
		if o.code != 125 || !strings.Contains(o.stderr, "tool run_command is declared in "+file+" and again in "+file) {
			t.Errorf("a file twice: %s", o)
		}

		// Off by default.
		o = u.toolCall(t, repo, audit, "", "run_command")
		if o.code != 125 || !strings.Contains(o.stderr, `no tool "run_command"`) {
			t.Errorf("the example file: %s", o)
		}
	})
}
