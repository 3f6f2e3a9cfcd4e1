package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// exec_event: the exec line comes once the command runs, before it ends
// (the command waits for a file that only the client's OnExec makes: a
// line sent at the end would leave it to its timeout), streamed or not;
// none, and no reason chunk, for a command that never ran.
func TestExecEvent(t *testing.T) {
	ts := start(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	for _, stream := range []bool{false, true} {
		c := ts.client()
		var chunks []string
		if stream {
			c.OnStream = func(name string, data []byte) { chunks = append(chunks, name+":"+string(data)) }
		}
		execs := 0
		c.OnExec = func() {
			execs++
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o666); err != nil {
				t.Error(err)
			}
		}
		r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.01; done; echo out"},
			Workdir: dir, Limits: map[string]string{"timeout": "60s"}})
		if r.Status != jail.StatusExited || r.ExitCode != 0 || execs != 1 {
			t.Errorf("stream %v: %s, exit %d, %d exec lines; want exited 0 after one exec line", stream, r.Status, r.ExitCode, execs)
		}
		if stream && strings.Join(chunks, "") != "stdout:out\n" {
			t.Errorf("streamed chunks %q", chunks)
		}
		os.Remove(filepath.Join(dir, "go"))
		chunks, execs = nil, 0
		r = run(t, c, Request{Argv: []string{"no-such-command-here"}})
		if r.ExitCode != jail.ExitNotFound || execs != 0 || len(chunks) != 0 {
			t.Errorf("stream %v, not found: exit %d, %d exec lines, chunks %q; want 127 and neither", stream, r.ExitCode, execs, chunks)
		}
	}
}

// exec_event goes only with a run: not with a tool call, a change set's
// action or a session's start, as stream.
func TestExecEventRefused(t *testing.T) {
	for name, e := range map[string]*Error{
		"tool":          checkToolRequest(&Request{Tool: "t", ExecEvent: true}),
		"changes_op":    checkChangesOp(&Request{ChangesOp: &ChangesOp{Action: "apply", ID: "x"}, ExecEvent: true}),
		"session start": checkSessionOp(&Request{SessionOp: &SessionOp{Action: "start"}, ExecEvent: true}),
	} {
		if e == nil || !strings.HasPrefix(e.Message, "exec_event: not taken with") {
			t.Errorf("%s with exec_event: %v", name, e)
		}
	}
}
