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

// TestCommandSignalActions: the command starts with no signal handler of
// the embedding Go process (the init puts back the defaults), and a signal
// that process ignores stays ignored, as across an execve.
func TestCommandSignalActions(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	signal.Ignore(syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Reset(syscall.SIGUSR1, syscall.SIGUSR2)
	cmd := jail.Command(warmSpec(t, dir, nil, "/bin/cat", "/proc/self/status"))
	cmd.CaptureOutput = true
	res, err := cmd.Run()
	if err != nil || res.ExitCode != 0 || res.Stdout.Text == nil {
		t.Fatalf("run: %v %+v", err, res)
	}
	status := *res.Stdout.Text
	bit := func(s syscall.Signal) uint64 { return 1 << (uint(s) - 1) }
	if got, want := statusMask(t, status, "SigIgn"), bit(syscall.SIGUSR1)|bit(syscall.SIGUSR2); got != want {
		t.Errorf("the command's ignored signals %#x, want %#x (SIGUSR1 and SIGUSR2, as the caller)", got, want)
	}
	if got := statusMask(t, status, "SigCgt"); got != 0 {
		t.Errorf("the command's caught signals %#x, want none", got)
	}
}
