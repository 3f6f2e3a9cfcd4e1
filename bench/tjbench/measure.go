package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/bench"
)

// summary of one set of wall times, in ms, samples kept for raw.json.
type timing struct {
	bench.Summary
	Samples []float64 `json:"samples_ms"`
	// CPU summarizes the CPU time of each run (cpuTime), when measured.
	CPU *bench.Summary `json:"cpu_ms,omitempty"`
}

func toTiming(ds []time.Duration) timing {
	ms := bench.Millis(ds)
	return timing{Summary: bench.Summarize(ms), Samples: ms}
}

// measureAlternating times runners round-robin (see alternate).
func measureAlternating(runners []runner, n int) ([]timing, error) {
	ds, cpu, err := alternate(runners, n)
	if err != nil {
		return nil, err
	}
	out := make([]timing, len(ds))
	for i, d := range ds {
		out[i] = toTiming(d)
		c := bench.Summarize(bench.Millis(cpu[i]))
		out[i].CPU = &c
	}
	return out, nil
}

// tput is one throughput point.
type tput struct {
	Conc     int       `json:"concurrency"`
	Runs     int       `json:"runs_each"`
	Tooljail float64   `json:"tooljail_per_s"`
	Bwrap    float64   `json:"bwrap_per_s"`
	TBlocks  []float64 `json:"tooljail_blocks_per_s"`
	BBlocks  []float64 `json:"bwrap_blocks_per_s"`
}

// throughput runs tooljail and bwrap in alternating blocks at conc and
// returns runs per second over all blocks (total runs / total wall).
func throughput(tj, bw runner, conc, runs, blocks int) (tput, error) {
	t := tput{Conc: conc, Runs: runs}
	per := (runs + blocks - 1) / blocks
	var tWall, bWall time.Duration
	rs := []runner{tj, bw}
	for b := 0; b < blocks; b++ {
		for k := range rs {
			i := (b + k) % 2
			d, err := parallel(rs[i], conc, per)
			if err != nil {
				return t, err
			}
			rate := float64(per) / d.Seconds()
			if i == 0 {
				tWall += d
				t.TBlocks = append(t.TBlocks, rate)
			} else {
				bWall += d
				t.BBlocks = append(t.BBlocks, rate)
			}
		}
	}
	t.Runs = per * blocks
	t.Tooljail = float64(t.Runs) / tWall.Seconds()
	t.Bwrap = float64(t.Runs) / bWall.Seconds()
	return t, nil
}

// rssResult is the supervisor's memory: VmHWM sampled from
// /proc/<pid>/status during a run, and ru_maxrss from wait4.
type rssResult struct {
	Command string  `json:"command"`
	HWM     []int64 `json:"vmhwm_bytes"`
	MaxRSS  []int64 `json:"ru_maxrss_bytes"`
	Samples []int   `json:"samples_per_run"`
}

// supervisorRSS starts argv (a ~0.5 s run), samples the VmHWM of that pid
// every few milliseconds through a /proc/<pid> directory descriptor (so a
// reused pid can never be read by mistake), and keeps the last sample taken
// before the process exited.
func supervisorRSS(argv []string, wd string, reps int) (rssResult, error) {
	res := rssResult{Command: strings.Join(argv, " ")}
	for r := 0; r < reps; r++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = wd
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
		if err := cmd.Start(); err != nil {
			return res, err
		}
		procDir, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return res, fmt.Errorf("open /proc/%d: %w", cmd.Process.Pid, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var hwm int64 = -1
		n := 0
		tick := time.NewTicker(5 * time.Millisecond)
	poll:
		for {
			if v, ok := readHWM(procDir); ok {
				hwm, n = v, n+1
			}
			select {
			case err = <-done:
				break poll
			case <-tick.C:
			}
		}
		tick.Stop()
		unix.Close(procDir)
		if err != nil {
			return res, fmt.Errorf("%s: %w", res.Command, err)
		}
		if hwm < 0 {
			return res, fmt.Errorf("%s: no VmHWM sample before it exited (run too short?)", res.Command)
		}
		res.HWM = append(res.HWM, hwm)
		res.Samples = append(res.Samples, n)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = append(res.MaxRSS, ru.Maxrss*1024)
		}
	}
	return res, nil
}

// readHWM reads VmHWM (bytes) from the status file below procDir; false
// once the process is gone or a zombie (no mm, no VmHWM line).
func readHWM(procDir int) (int64, bool) {
	fd, err := unix.Openat(procDir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	f := os.NewFile(uintptr(fd), "status")
	defer f.Close()
	var buf [4096]byte
	n, _ := f.Read(buf[:])
	for _, l := range strings.Split(string(buf[:n]), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fs := strings.Fields(rest)
			if len(fs) >= 1 {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				if err == nil {
					return kb * 1024, true
				}
			}
		}
	}
	return 0, false
}

// leakResult compares the host before and after many runs.
type leakResult struct {
	Runs        int      `json:"runs"`
	Conc        int      `json:"concurrency"`
	Seconds     float64  `json:"seconds"`
	Failures    int      `json:"failures"`
	FirstError  string   `json:"first_error,omitempty"`
	TmpDir      string   `json:"tmpdir"` // the runs' TMPDIR, empty before
	Before      snapshot `json:"before"`
	After       snapshot `json:"after"`
	Settled     bool     `json:"settled_resampled"` // After was re-taken 2 s later because something differed
	Supervisors int      `json:"supervisor_pids"`
	// Derived from Before and After.
	OurCgroups []string `json:"our_cgroups"` // new tooljail-* named after a supervisor pid of this pass
	NewMounts  []string `json:"new_mounts"`
	// Creates in /tmp and /var/tmp during the runs, with their creators
	// (fanotify); WatchErr when the kernel could not watch.
	Creates  []tmpCreate `json:"tmp_creates"`
	WatchErr string      `json:"tmp_watch_error,omitempty"`
	NewTmp   []string    `json:"new_tmp"` // in /tmp and /var/tmp after, not before
	// OurTmp: of NewTmp, those created by these runs (fanotify), or, without
	// fanotify, those not named like another program's (othersTmp).
	OurTmp     []string `json:"our_tmp"`
	GoneTmp    int      `json:"gone_tmp"`
	NewPrivTmp []string `json:"new_private_tmp"`
}

// leaks runs `tooljail run -q -- /bin/true` runs times at conc, with
// TMPDIR set to an empty directory of its own, and compares the host
// before and after. Failures are counted, not fatal, so the comparison is
// still made.
func leaks(tooljail, wd, tmpDir string, runs, conc int) leakResult {
	res := leakResult{Runs: runs, Conc: conc, TmpDir: tmpDir}
	env := append(os.Environ(), "TMPDIR="+tmpDir)
	res.Before = takeSnapshot(tmpDir)
	watch, err := watchTmp()
	if err != nil {
		res.WatchErr = err.Error()
	}
	start := time.Now()
	ours := runMany(conc, runs, func() *exec.Cmd {
		cmd := exec.Command(tooljail, "run", "-q", "--", "/bin/true")
		cmd.Dir, cmd.Env = wd, env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
		return cmd
	}, res.record)
	res.Seconds = time.Since(start).Seconds()
	if watch != nil {
		res.Creates = watch.Stop()
	}
	res.Supervisors = len(ours)
	res.settle(ours, func() snapshot { return takeSnapshot(tmpDir) })
	return res
}

// record counts a failed run, keeping the first error.
func (l *leakResult) record(err error) {
	l.Failures++
	if l.FirstError == "" {
		l.FirstError = err.Error()
	}
}

// settle takes the "after" snapshot and derives the findings; if the runs
// seem to have left something, it gives anything asynchronous (a cgroup
// release) 2 s and looks again (the report says that it did).
func (l *leakResult) settle(ours map[int]bool, snap func() snapshot) {
	l.After = snap()
	l.derive(ours)
	if len(l.leaked()) > 0 {
		time.Sleep(2 * time.Second)
		l.After = snap()
		l.Settled = true
		l.derive(ours)
	}
}

// runMany runs runs commands made by mk, conc at a time, and returns the
// set of their pids; fail gets each start or wait error, from this
// goroutine only.
func runMany(conc, runs int, mk func() *exec.Cmd, fail func(error)) map[int]bool {
	ours := map[int]bool{}
	pidCh := make(chan int, 64)
	errCh := make(chan error, 64)
	jobs := make(chan struct{}, runs)
	for i := 0; i < runs; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	doneW := make(chan struct{})
	for w := 0; w < conc; w++ {
		go func() {
			defer func() { doneW <- struct{}{} }()
			for range jobs {
				cmd := mk()
				if err := cmd.Start(); err != nil {
					errCh <- err
					continue
				}
				pidCh <- cmd.Process.Pid
				if err := cmd.Wait(); err != nil {
					errCh <- err
				}
			}
		}()
	}
	for live := conc; live > 0; {
		select {
		case pid := <-pidCh:
			ours[pid] = true
		case err := <-errCh:
			fail(err)
		case <-doneW:
			live--
		}
	}
	// Drain what the last workers sent before they signalled done.
	for drained := false; !drained; {
		select {
		case pid := <-pidCh:
			ours[pid] = true
		case err := <-errCh:
			fail(err)
		default:
			drained = true
		}
	}
	return ours
}

// derive fills the fields computed from Before and After.
func (l *leakResult) derive(ours map[int]bool) {
	l.OurCgroups = nil
	for _, c := range newEntries(l.Before.Cgroups, l.After.Cgroups) {
		if ours[ownerPid(c)] {
			l.OurCgroups = append(l.OurCgroups, c)
		}
	}
	l.NewMounts = newEntries(l.Before.Mounts, l.After.Mounts)
	l.NewTmp = newEntries(l.Before.Tmp, l.After.Tmp)
	l.OurTmp = nil
	if l.WatchErr != "" {
		for _, e := range l.NewTmp {
			if !isOthersTmp(e) {
				l.OurTmp = append(l.OurTmp, e)
			}
		}
	} else {
		still := map[string]bool{}
		for _, e := range l.After.Tmp {
			still[e] = true
		}
		seen := map[string]bool{}
		for _, c := range l.Creates {
			if !c.Ours && !(c.Gone && ours[c.Pid]) {
				continue
			}
			for _, d := range tmpDirs {
				path := d + "/" + c.Name
				if (c.Dir == d || c.Dir == "?") && still[path] && !seen[path] {
					seen[path] = true
					l.OurTmp = append(l.OurTmp, path)
				}
			}
		}
	}
	l.GoneTmp = len(newEntries(l.After.Tmp, l.Before.Tmp))
	l.NewPrivTmp = newEntries(l.Before.PrivTmp, l.After.PrivTmp)
}

// leaked lists what the runs left behind, judged on what can be told
// apart from the other work on this shared machine: cgroups named after
// this pass's supervisors, new host mounts, live descendants of the
// driver, the driver's fds, new temp entries not known to be another
// program's. Empty means nothing.
func (l *leakResult) leaked() []string {
	var out []string
	if n := len(l.OurCgroups); n > 0 {
		out = append(out, fmt.Sprintf("%d cgroups", n))
	}
	if n := len(l.NewMounts); n > 0 {
		out = append(out, fmt.Sprintf("%d mounts", n))
	}
	if n := l.After.Descendants; n > 0 {
		out = append(out, fmt.Sprintf("%d processes", n))
	}
	if d := l.After.FDs - l.Before.FDs; d != 0 {
		out = append(out, fmt.Sprintf("%+d fds", d))
	}
	if n := len(l.OurTmp) + len(l.NewPrivTmp); n > 0 {
		out = append(out, fmt.Sprintf("%d temp entries", n))
	}
	return out
}

// unprivileged prepares a workdir and a seccomp cache owned by uid 65534
// and returns the environment for its runs.
func unprivilegedSetup(work string) (wd string, env []string, err error) {
	wd = filepath.Join(work, "wd-65534")
	cache := filepath.Join(work, "cache-65534")
	for _, d := range []string{wd, cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", nil, err
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			return "", nil, err
		}
	}
	env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/nonexistent",
		"TOOLJAIL_CACHE_DIR=" + cache,
	}
	return wd, env, nil
}
