package jail_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// blockedThreads lists this process's threads that sit in one of the
// given system calls (x86_64 numbers), as /proc/self/task/*/syscall shows
// them.
func blockedThreads(t *testing.T, calls map[int]string) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/syscall")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil && calls[n] != "" {
			out = append(out, calls[n]+" in "+p)
		}
	}
	return out
}

// While a jail's command runs, and between a session's calls, the
// supervisor waits for the jail's records and for denied calls in the Go
// runtime's poller: no thread of it is blocked in recvmsg on the jail's
// socket or in poll on the seccomp listener. Such a thread holds a P in a
// system call, which keeps the runtime's sysmon polling every 20 µs
// (BENCHMARKS.md, issue 31).
func TestSupervisorWaitsInThePoller(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 system call numbers")
	}
	calls := map[int]string{7: "poll", 47: "recvmsg", 271: "ppoll"}
	if l := blockedThreads(t, calls); len(l) > 0 {
		t.Skipf("threads already blocked before the jail: %v", l)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	check := func(what string) {
		t.Helper()
		// The waits start as the records come: give them a moment.
		deadline := time.Now().Add(500 * time.Millisecond)
		for {
			l := blockedThreads(t, calls)
			if len(l) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: supervisor threads blocked in a system call: %v", what, l)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// during starts c, checks while it runs, and waits for its end.
	during := func(c *jail.Cmd, what string) {
		t.Helper()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		check(what)
		if _, err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}

	during(jail.Command(warmSpec(t, dir, nil, "/bin/sleep", "2")), "a running command")

	s := startSession(t, dir, jail.SessionLimits{})
	call(t, s, false, "true")
	check("a session between calls")
	sp := s.Spec()
	sp.Args = []string{"/bin/sleep", "2"}
	c, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	during(c, "a session's running call")
}
