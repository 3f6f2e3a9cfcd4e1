package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tooljail mcp started as nohup starts it (SIGHUP ignored) and in a
// script's background job (SIGINT ignored): its tools' commands start
// with neither ignored, as with serve (keepIgnoringByHandler, and SIGINT
// taken over), and a SIGHUP leaves it serving.
func TestMCPStartedIgnoringSIGHUP(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		file := filepath.Join(u.dir(t), "status.toml")
		tools := "[tools.status]\ndescription = \"The command's /proc status.\"\ncommand = [\"cat\", \"/proc/self/status\"]\n"
		if err := os.WriteFile(file, []byte(tools), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd, rc := u.mcpCommand(t, []string{"mcp", "--tools", file, "--workdir", w, "--audit-log", filepath.Join(u.dir(t), "audit.log")})
		cmd.Args = append([]string{helperBin, "_ignore", "1,2"}, cmd.Args...)
		cmd.Path = helperBin
		cs := mcpConnect(t, cmd, rc)
		ignored := func() uint64 {
			t.Helper()
			r := mcpCall(t, cs, "status", nil)
			if r.isError {
				t.Fatalf("status: %s", r.text)
			}
			return sigIgn(t, r.text)
		}
		if got := ignored() & (1<<(1-1) | 1<<(2-1)); got != 0 {
			t.Errorf("a tool's command of an mcp started ignoring SIGHUP and SIGINT: ignored %#x of them, want neither", got)
		}
		cmd.Process.Signal(syscall.SIGHUP)
		ignored() // still serving; the cleanup closes it and checks its exit
	})
}
