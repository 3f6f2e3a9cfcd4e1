package jail_test

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// statusMask is the hex mask of the line key (SigIgn, SigCgt) of a
// /proc/PID/status text.
func statusMask(t *testing.T, status, key string) uint64 {
	t.Helper()
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return m
		}
	}
	t.Fatalf("no %s in %q", key, status)
	return 0
}

// commandStatus runs cmd, a cat of /proc/self/status, and returns what it
// printed and this process's own status right after.
func commandStatus(t *testing.T, cmd *jail.Cmd) (status, own string) {
	t.Helper()
	cmd.CaptureOutput = true
	res, err := cmd.Run()
	if err != nil || res.ExitCode != 0 || res.Stdout.Text == nil {
		t.Fatalf("run: %v %+v", err, res)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	return *res.Stdout.Text, string(b)
}

// TestCommandSignalActions: the command starts with no signal handler of
// the embedding Go process (the init puts back the defaults), and the
// signals that process ignores stay ignored, as across an execve, but
// SIGCHLD (the init reaps). The oracle is this process's own SigIgn: it
// ignores SIGUSR1 and SIGUSR2 for the test, and may have inherited more
// (Go keeps an inherited SIG_IGN of the signals it has no handler for).
func TestCommandSignalActions(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	signal.Ignore(syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Reset(syscall.SIGUSR1, syscall.SIGUSR2)
	status, own := commandStatus(t, jail.Command(warmSpec(t, dir, nil, "/bin/cat", "/proc/self/status")))
	bit := func(s syscall.Signal) uint64 { return 1 << (uint(s) - 1) }
	ignored := statusMask(t, own, "SigIgn")
	if usr := bit(syscall.SIGUSR1) | bit(syscall.SIGUSR2); ignored&usr != usr {
		t.Fatalf("this process's ignored signals %#x lack SIGUSR1 and SIGUSR2 after signal.Ignore", ignored)
	}
	if got, want := statusMask(t, status, "SigIgn"), ignored&^bit(syscall.SIGCHLD); got != want {
		t.Errorf("the command's ignored signals %#x, want %#x (this process's, SIGCHLD aside)", got, want)
	}
	if got := statusMask(t, status, "SigCgt"); got != 0 {
		t.Errorf("the command's caught signals %#x, want none", got)
	}
}

// Cmd.IgnoredSignals: the command starts with them ignored besides what
// this process ignores, SIGCHLD too (as across an execve), and only the
// command: the init still reaps (the run ends). Signals that cannot be
// ignored are refused before anything runs.
func TestCommandIgnoredSignals(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	bit := func(s syscall.Signal) uint64 { return 1 << (uint(s) - 1) }
	give := []os.Signal{syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE, syscall.SIGCHLD, syscall.Signal(40)}
	cmd := jail.Command(warmSpec(t, dir, nil, "/bin/cat", "/proc/self/status"))
	cmd.IgnoredSignals = give
	status, own := commandStatus(t, cmd)
	want := statusMask(t, own, "SigIgn") &^ bit(syscall.SIGCHLD)
	for _, s := range give {
		want |= bit(s.(syscall.Signal))
	}
	if got := statusMask(t, status, "SigIgn"); got != want {
		t.Errorf("the command's ignored signals %#x, want %#x", got, want)
	}

	for _, bad := range [][]os.Signal{{syscall.SIGKILL}, {syscall.SIGSTOP}, {syscall.Signal(0)}, {syscall.Signal(65)}} {
		cmd := jail.Command(warmSpec(t, dir, nil, "/bin/true"))
		cmd.IgnoredSignals = bad
		if _, err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "IgnoredSignals") {
			t.Errorf("IgnoredSignals %v: %v, want a refusal", bad, err)
		}
	}
}
