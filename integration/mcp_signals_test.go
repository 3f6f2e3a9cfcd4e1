package integration

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "tooljail-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			rc.release()
			t.Fatalf("connect to tooljail mcp under _ignore 1,2: %v", err)
		}
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
		ignored() // still serving
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("tooljail mcp ended with %v", cmd.ProcessState)
		}
		rc.check(t, cmd.Process.Pid)
	})
}
