package seccomp

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func sumCounts(vs []Violation) uint64 {
	var n uint64
	for _, v := range vs {
		n += uint64(v.Count)
	}
	return n
}

// TestMonitorLimit: past MaxViolations denied calls, OnLimit is called
// once, on the call that exceeds the bound and before it is answered;
// every call, that one and later ones, still fails with EPERM (the child
// checks). Total is the sum of the counts.
func TestMonitorLimit(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		threads, per int
		limit        uint64
	}{
		{"one-thread", 1, 300, 100},
		{"four-threads", 4, 250, 100},
		{"at-limit", 2, 50, 100},   // exactly the limit: not exceeded
		{"no-limit", 2, 500, 0},    // 0: no bound
		{"limit-1", 1, 10, 1},      // the second call exceeds
		{"beyond", 3, 40, 1 << 40}, // never reached
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := uint64(c.threads * c.per)
			var (
				fired     atomic.Int32
				atFire    atomic.Uint64
				afterWait atomic.Uint64
			)
			var m *Monitor
			made := make(chan struct{}) // m is set
			j := startJailed(t, prog, "deny", childOpts{env: []string{"DENY_N=" + strconv.Itoa(c.per), "DENY_THREADS=" + strconv.Itoa(c.threads)},
				newMonitor: func(l *os.File, _ *exec.Cmd) *Monitor {
					m = NewMonitor(l, MonitorOptions{Action: ActionDeny, MaxViolations: c.limit, OnLimit: func() {
						<-made
						fired.Add(1)
						atFire.Store(m.Total())
						// Synchronous: no call is answered meanwhile.
						time.Sleep(20 * time.Millisecond)
						afterWait.Store(m.Total())
					}})
					close(made)
					return m
				}})
			st, vs := j.wait(t)
			if !st.Success() {
				t.Fatalf("child: %v %s %s", st, j.stdout.String(), j.stderr.String())
			}
			if got := m.Total(); got != calls || sumCounts(vs) != calls {
				t.Errorf("Total %d, counts %s, want %d calls", got, describe(vs), calls)
			}
			want := int32(0)
			if c.limit > 0 && calls > c.limit {
				want = 1
			}
			if n := fired.Load(); n != want {
				t.Fatalf("OnLimit called %d times, want %d", n, want)
			}
			if want == 1 && (atFire.Load() != c.limit+1 || afterWait.Load() != c.limit+1) {
				t.Errorf("OnLimit saw Total %d, %d after 20 ms; want %d both times", atFire.Load(), afterWait.Load(), c.limit+1)
			}
		})
	}
}

// TestMonitorLimitKills: OnLimit kills the run, as the jail's does: the
// flood ends a few calls past the bound.
func TestMonitorLimitKills(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1000
	var fired atomic.Int32
	j := startJailed(t, prog, "deny", childOpts{env: []string{"DENY_N=100000", "DENY_THREADS=3"}, newMonitor: func(l *os.File, cmd *exec.Cmd) *Monitor {
		return NewMonitor(l, MonitorOptions{MaxViolations: limit, OnLimit: func() {
			fired.Add(1)
			cmd.Process.Kill()
		}})
	}})
	st, vs := j.wait(t)
	if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Fatalf("child: %v, want killed; stdout %q", st, j.stdout.String())
	}
	if n := fired.Load(); n != 1 {
		t.Errorf("OnLimit called %d times, want 1", n)
	}
	// The threads blocked in a call when the kill came may still be
	// received (the kernel answers ENOENT to a dead caller's SEND).
	if n := j.monitor.Total(); n < limit+1 || n > limit+4 || sumCounts(vs) != n {
		t.Errorf("Total %d, counts %s; want %d to %d", n, describe(vs), limit+1, limit+4)
	}
}

// TestMonitorTotalLive: Total may be read while the monitor serves.
func TestMonitorTotalLive(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := startJailed(t, prog, "deny", childOpts{action: ActionDeny, env: []string{"DENY_N=20000", "DENY_THREADS=2"}})
	stop := make(chan struct{})
	go func() {
		var last uint64
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := j.monitor.Total()
			if n < last {
				t.Errorf("Total went back from %d to %d", last, n)
				return
			}
			last = n
			runtime.Gosched()
		}
	}()
	st, vs := j.wait(t)
	close(stop)
	if !st.Success() {
		t.Fatalf("child: %v %s %s", st, j.stdout.String(), j.stderr.String())
	}
	if n := j.monitor.Total(); n != 40000 || sumCounts(vs) != 40000 {
		t.Errorf("Total %d, counts %s; want 40000", n, describe(vs))
	}
}
