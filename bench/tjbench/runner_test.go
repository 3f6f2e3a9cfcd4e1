package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spin burns d of this thread's CPU time, however long that takes on a busy
// machine.
func spin(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t0, t unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
	for {
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t)
		if time.Duration(t.Nano()-t0.Nano()) >= d {
			return
		}
	}
}

// TestAlternateCPU: each run's CPU is charged to its own runner, whether it
// is spent in this process (the jail package's steps) or in a child the run
// reaps (the CLI, bwrap), and a run that only waits costs next to none.
func TestAlternateCPU(t *testing.T) {
	devNull, _ = os.Open(os.DevNull)
	const burn = 30 * time.Millisecond
	child := execRunner("child", []string{"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}, "/", nil, nil)
	runners := []runner{
		{name: "in-process", run: func() error { spin(burn); return nil }},
		{name: "sleep", run: func() error { time.Sleep(burn); return nil }},
		child,
	}
	wall, cpu, err := alternate(runners, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range runners {
		if len(wall[i]) != 3 || len(cpu[i]) != 3 {
			t.Fatalf("%s: %d wall and %d CPU samples, want 3 each", runners[i].name, len(wall[i]), len(cpu[i]))
		}
	}
	for _, c := range cpu[0] {
		if c < burn || c > burn+20*time.Millisecond {
			t.Errorf("in-process run burned %v of CPU, measured %v", burn, c)
		}
	}
	for _, c := range cpu[1] {
		if c > 10*time.Millisecond {
			t.Errorf("a sleeping run measured %v of CPU", c)
		}
	}
	for _, c := range cpu[2] {
		// 200000 rounds of a shell loop: tens of ms in the child alone.
		if c < 10*time.Millisecond {
			t.Errorf("a child's busy loop measured %v of CPU: its reaped time is missing", c)
		}
	}
	ts, err := measureAlternating(runners[:2], 2)
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].CPU == nil || ts[0].CPU.N != 2 || ts[0].CPU.Median < float64(burn.Milliseconds()) {
		t.Errorf("measureAlternating's CPU summary %+v, want 2 runs of at least %v", ts[0].CPU, burn)
	}
}
