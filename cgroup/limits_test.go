package cgroup

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const mib = 1 << 20

func TestMemoryCapOOMKillsWholeGroup(t *testing.T) {
	requireCaps(t, Memory)
	g := newGroup(t, "oom-"+strconv.Itoa(int(time.Now().UnixNano()%1e6)), Resources{Memory: 64 * mib})
	c := startIn(t, g, "oom", "256")
	sibling, err := strconv.Atoi(c.line(t))
	if err != nil {
		t.Fatalf("child did not report its sibling: %v", err)
	}
	err = c.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child touching 256 MiB under a 64 MiB cap: want SIGKILL, got %v", err)
	}
	// The whole group dies, not only the victim (v2 oom.group, v1 watcher).
	if !waitFor(func() bool { return !alive(sibling) }) {
		waitFor(func() bool { return !alive(sibling) })
	}
	if alive(sibling) {
		t.Fatalf("sibling %d survived the OOM kill of its group", sibling)
	}
	st := g.Stats()
	if st.OOMKills == nil || *st.OOMKills < 1 {
		t.Fatalf("OOMKills = %v, want >= 1", fmtp(st.OOMKills))
	}
	if st.MemoryLimit == nil || *st.MemoryLimit != 64*mib {
		t.Errorf("MemoryLimit = %v, want %d", fmtp(st.MemoryLimit), 64*mib)
	}
	// The kernel may overshoot by a page or so: charges it must not fail
	// (page tables, kernel memory) go over the cap.
	if st.MemoryPeak == nil || *st.MemoryPeak < 60*mib || *st.MemoryPeak > 65*mib {
		t.Errorf("MemoryPeak = %v, want close to the 64 MiB cap", fmtp(st.MemoryPeak))
	}
	t.Logf("mode %s: oom_kills=%d peak=%d limit=%d", g.Mode(), *st.OOMKills, *st.MemoryPeak, *st.MemoryLimit)
}

func TestMemoryPeakAccuracy(t *testing.T) {
	requireCaps(t, Memory)
	g := newGroup(t, "peak", Resources{Memory: 512 * mib})
	c := startIn(t, g, "touch", "100")
	if l := c.line(t); l != "touched" {
		t.Fatalf("child said %q", l)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child touching 100 MiB under 512 MiB: %v", err)
	}
	st := g.Stats()
	if st.MemoryPeak == nil {
		t.Fatalf("MemoryPeak is nil in mode %s (kernel without memory.peak?)", g.Mode())
	}
	peak := *st.MemoryPeak
	t.Logf("mode %s: touched 100 MiB, peak %d bytes (%.1f%% above)", g.Mode(), peak, float64(peak-100*mib)*100/(100*mib))
	if peak < 100*mib || peak > 110*mib {
		t.Fatalf("peak %d bytes, want within 10%% above 100 MiB", peak)
	}
	if st.OOMKills == nil || *st.OOMKills != 0 {
		t.Errorf("OOMKills = %v, want 0", fmtp(st.OOMKills))
	}
}

func TestPidsCapRefusesForks(t *testing.T) {
	requireCaps(t, Pids)
	g := newGroup(t, "pids", Resources{Pids: 32})
	c := startIn(t, g, "forkloop")
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() < 100 {
		t.Fatalf("fork loop under pids 32: want exit 100+forks (EAGAIN), got %v", err)
	}
	forks := ee.ExitCode() - 100
	st := g.Stats()
	t.Logf("mode %s: %d forks before EAGAIN, pids_peak=%s limit_hits=%s", g.Mode(), forks, fmtp(st.PidsPeak), fmtp(st.PidsLimitHits))
	if forks >= 32 {
		t.Fatalf("%d forks succeeded under pids.max 32", forks)
	}
	if st.PidsLimitHits == nil || *st.PidsLimitHits < 1 {
		t.Fatalf("PidsLimitHits = %s, want >= 1", fmtp(st.PidsLimitHits))
	}
	if st.PidsPeak != nil && *st.PidsPeak != 32 {
		t.Errorf("PidsPeak = %d, want 32", *st.PidsPeak)
	}
	// The paused children outlive their parent; Kill must get them all.
	if p, _ := procs(g); len(p) == 0 {
		t.Fatalf("forked children vanished before Kill")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if p, err := procs(g); err != nil || len(p) != 0 {
		t.Fatalf("after Kill: procs %v, err %v", p, err)
	}
}

func TestCPUQuota(t *testing.T) {
	requireCaps(t, CPU)
	g := newGroup(t, "cpu", Resources{CPUs: 0.5})
	// Two spinning threads want 2 CPUs, so the 0.5 cap binds even when
	// the host is busy with other work.
	start := time.Now()
	c := startIn(t, g, "busy", "2s", "2")
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	st := g.Stats()
	if st.CPUUserUsec == nil || st.CPUSystemUsec == nil {
		t.Fatalf("CPU times missing: user %s system %s", fmtp(st.CPUUserUsec), fmtp(st.CPUSystemUsec))
	}
	used := time.Duration(*st.CPUUserUsec+*st.CPUSystemUsec) * time.Microsecond
	t.Logf("mode %s: 2s busy under 0.5 CPU used %v in %v (user %dus sys %dus), throttled %sus", g.Mode(), used, wall, *st.CPUUserUsec, *st.CPUSystemUsec, fmtp(st.CPUThrottledUs))
	if v1, ok := g.b.(*v1Group); ok {
		// The figures are the scheduler's exact run time, not ticks.
		v, err := readString(v1.dirs["cpuacct"], "cpuacct.usage")
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		// Each part is truncated to µs, so the sum may fall short by 2 µs.
		if d := time.Duration(ns) - used; d < 0 || d >= 2*time.Microsecond {
			t.Errorf("user+sys = %v, cpuacct.usage %d ns", used, ns)
		}
	}
	// Unthrottled the two threads would take up to two CPUs for the whole
	// time; the machine is shared, so the floor is low. The cap may run
	// over by what a CPU runs before the quota is checked, not by 30 %.
	if used < 400*time.Millisecond || used > wall*65/100 {
		t.Fatalf("CPU used %v in %v, want about half of it", used, wall)
	}
	if st.CPUThrottledUs == nil {
		t.Fatal("CPUThrottledUs missing")
	}
	if *st.CPUThrottledUs <= 0 {
		// Throttling needs the group to reach its quota in some 100 ms
		// period; on a host too busy to give it half a CPU it never does.
		if used < 900*time.Millisecond && quotaWritten(t, g) {
			t.Skipf("host too busy: the group got %v of CPU in 2s and never reached its 0.5 CPU cap (which is set)", used)
		}
		t.Fatalf("CPUThrottledUs = 0 after %v of CPU in 2s under a 0.5 CPU cap, want > 0", used)
	}
}

func fmtp(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

// quotaWritten says whether g's CPU quota is the 0.5 CPU the test set, as
// the kernel shows it.
func quotaWritten(t *testing.T, g *Group) bool {
	t.Helper()
	want := strconv.FormatInt(cpuQuota(0.5), 10)
	switch b := g.b.(type) {
	case *v2Group:
		v, err := readString(b.dir, "cpu.max")
		return err == nil && strings.HasPrefix(v, want+" ")
	case *v1Group:
		v, err := readString(b.dirs[CPU], "cpu.cfs_quota_us")
		return err == nil && v == want
	}
	return false
}
