package integration

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A signal cancels a run sent to a server (`tooljail run --server`), and a
// signal `tooljail run` was started with ignored does not, as for a run
// jailed here: `nohup tooljail run --server S -- CMD` survives a hangup,
// and a shell's background job an interrupt.
func TestServeRunSignals(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		// start runs the script through the server from a caller wrapped
		// by wrap, and returns once the script said ready.
		start := func(wrap []string) (*exec.Cmd, *strings.Builder, <-chan []byte) {
			t.Helper()
			args := append(append(append([]string{}, wrap...), tooljailBin), "run", "--server", s.sock, "--no-workdir",
				"--", "/bin/sh", "-c", "echo ready; sleep 3; echo done")
			var stderr strings.Builder
			cmd, r := u.startUntilReady(t, base, &stderr, args...)
			rest := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				rest <- b
			}()
			return cmd, &stderr, rest
		}
		// finish waits for the output's end and tooljail's exit code.
		finish := func(cmd *exec.Cmd, rest <-chan []byte) (int, string) {
			t.Helper()
			var out []byte
			select {
			case out = <-rest:
			case <-time.After(30 * time.Second * slow):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				out = <-rest
				t.Error("tooljail did not end")
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), string(out)
			}
			return 0, string(out)
		}

		// At their default actions (an interactive shell): the hangup
		// cancels the run on the server.
		cmd, stderr, rest := start(startDefault())
		cmd.Process.Signal(syscall.SIGHUP)
		if code, out := finish(cmd, rest); code != 128+1 || out != "" || !strings.Contains(stderr.String(), "SIGHUP: the run was cancelled on the server") {
			t.Errorf("SIGHUP to tooljail run --server: exit %d, stdout %q, stderr %q; want 129, nothing more, the cancel line", code, out, stderr)
		}

		// Started ignoring SIGHUP and SIGINT (nohup, a background job):
		// both stay ignored, and the run goes on to its end.
		cmd, stderr, rest = start([]string{"_ignore", "1,2"})
		cmd.Process.Signal(syscall.SIGHUP)
		cmd.Process.Signal(syscall.SIGINT)
		if code, out := finish(cmd, rest); code != 0 || out != "done\n" {
			t.Errorf("SIGHUP and SIGINT to tooljail run --server started ignoring them: exit %d, stdout %q, stderr %q; want 0 and the command's done", code, out, stderr)
		}
	})
}

// A server started ignoring SIGHUP and SIGINT (nohup in a script's
// background job) goes on ignoring SIGHUP and still drains on SIGINT, and
// its jails' commands inherit neither ignored: it takes SIGINT and SIGTERM
// over however it was started, and ignores SIGHUP by a handler of its own.
func TestServeStartedIgnoringSIGINT(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.launchServerWrapped(t, "", []string{"_ignore", "1,2"})
		s.waitReady(t)
		served := func() uint64 {
			t.Helper()
			o := u.exec(t, run{args: []string{"run", "--server", s.sock, "--no-workdir", "--", "/bin/cat", "/proc/self/status"}})
			if o.code != 0 {
				t.Fatalf("a served run: %s", o)
			}
			return sigIgn(t, o.stdout)
		}
		if ign := served(); ign&(1<<(1-1)|1<<(2-1)) != 0 {
			t.Errorf("a served command of a server started ignoring SIGHUP and SIGINT: ignored %#x, want neither among them", ign)
		}
		s.cmd.Process.Signal(syscall.SIGHUP)
		served() // still serving
		s.cmd.Process.Signal(syscall.SIGINT)
		s.requireExit(t, 0)
	})
}
