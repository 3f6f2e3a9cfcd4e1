package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The cgroup side of the harness: where tooljail's cgroups go, and the
// check, after every run, that it left none behind.

// vmCgroup is the delegated cgroup a VM guest gives the suite (TJ_VM_CGROUP):
// every tooljail process then starts in a fresh cgroup of its own below it,
// the way an agent runtime would start it with
// `systemd-run --user --scope -p Delegate=yes`. Empty elsewhere: tooljail
// starts in the test's own cgroup.
var vmCgroup = os.Getenv("TJ_VM_CGROUP")

// runCgroup is where one tooljail process starts.
type runCgroup struct {
	dir string // the fresh delegated cgroup (VM), "" when none
	fd  int    // O_PATH fd of dir for CLONE_INTO_CGROUP, -1 when none
}

// newRunCgroup makes the run's own delegated cgroup where the host hands
// them out (the VM guests), owned by u as systemd's Delegate=yes would
// make it: the directory and its cgroup.procs, cgroup.subtree_control and
// cgroup.threads, never its resource files.
func (u *user) newRunCgroup() (runCgroup, error) {
	if vmCgroup == "" {
		return runCgroup{fd: -1}, nil
	}
	dir, err := os.MkdirTemp(vmCgroup, "run-")
	if err != nil {
		return runCgroup{fd: -1}, fmt.Errorf("make a cgroup for the run: %v", err)
	}
	if os.Geteuid() == 0 && u.uid != 0 {
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(dir, f), u.uid, u.gid); err != nil {
				unix.Rmdir(dir)
				return runCgroup{fd: -1}, fmt.Errorf("delegate %s to %s: %v", dir, u.name, err)
			}
		}
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Rmdir(dir)
		return runCgroup{fd: -1}, fmt.Errorf("open %s: %v", dir, err)
	}
	return runCgroup{dir: dir, fd: fd}, nil
}

// leftovers lists what the tooljail process pid left in the cgroup
// hierarchies after it exited: its directories (tooljail-<pid>-...)
// next to the test in every hierarchy, and in the VM anything at all in
// its run cgroup, whose subtree_control must be as it was found (empty).
func (rc runCgroup) leftovers(pid int) []string {
	left := ownerDirs(testCgroupDirs(), pid)
	if rc.dir == "" {
		return left
	}
	ents, _ := os.ReadDir(rc.dir)
	for _, e := range ents {
		if e.IsDir() {
			left = append(left, filepath.Join(rc.dir, e.Name()))
		}
	}
	if sc, _ := os.ReadFile(filepath.Join(rc.dir, "cgroup.subtree_control")); len(bytes.TrimSpace(sc)) > 0 {
		left = append(left, fmt.Sprintf("%s/cgroup.subtree_control: %s (was empty)", rc.dir, bytes.TrimSpace(sc)))
	}
	if p, _ := os.ReadFile(filepath.Join(rc.dir, "cgroup.procs")); len(bytes.TrimSpace(p)) > 0 {
		left = append(left, fmt.Sprintf("%s/cgroup.procs: %s", rc.dir, strings.Fields(string(p))))
	}
	return left
}

// ownerDirs lists the directories of the supervisor pid (tooljail-<pid>-...:
// its v2 owner directory, its v1 run directories) in the cgroup
// directories bases.
func ownerDirs(bases []string, pid int) []string {
	var l []string
	for _, b := range bases {
		m, _ := filepath.Glob(filepath.Join(b, fmt.Sprintf("tooljail-%d-*", pid)))
		l = append(l, m...)
	}
	return l
}

// release removes the run cgroup (and, after a failed check, whatever
// is still below it, so that later tests start clean). It forgets both, so
// a second release does nothing: with a value receiver a server's cleanup
// closed its fd twice, the second time closing whatever this process had
// opened under that number since (a 6.12 guest's suite hung for minutes on
// a pipe read whose descriptor was closed under it, so no wake-up came).
func (rc *runCgroup) release() {
	if rc.fd >= 0 {
		unix.Close(rc.fd)
		rc.fd = -1
	}
	if rc.dir != "" {
		removeCgroupTree(rc.dir)
		rc.dir = ""
	}
}

// check fails the test when tooljail (pid) left a cgroup, then removes it
// all (release).
func (rc *runCgroup) check(t *testing.T, pid int) {
	t.Helper()
	if left := rc.leftovers(pid); len(left) > 0 {
		var what []string
		for _, d := range left {
			what = append(what, describeCgroup(d, "  ")...)
		}
		t.Errorf("tooljail (pid %d) left cgroups behind:\n%s", pid, strings.Join(what, "\n"))
		for _, d := range left {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				removeCgroupTree(d)
			}
		}
	}
	rc.release()
}

// describeCgroup is what a leftover cgroup holds, for the failure message:
// the directory (or line as leftovers gives it), then each directory below
// it with its processes, its populated flag and its subtree_control, so
// that the message says which step of tooljail's removal did not happen.
func describeCgroup(d, indent string) []string {
	fi, err := os.Stat(d)
	if err != nil || !fi.IsDir() {
		return []string{d}
	}
	procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	events, _ := os.ReadFile(filepath.Join(d, "cgroup.events"))
	sc, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
	populated := "?"
	for _, l := range strings.Split(string(events), "\n") {
		if v, ok := strings.CutPrefix(l, "populated "); ok {
			populated = v
		}
	}
	l := []string{fmt.Sprintf("%s%s (procs %v, populated %s, subtree_control %q)", indent, d,
		strings.Fields(string(procs)), populated, strings.TrimSpace(string(sc)))}
	ents, _ := os.ReadDir(d)
	for _, e := range ents {
		if e.IsDir() {
			l = append(l, describeCgroup(filepath.Join(d, e.Name()), indent+"  ")...)
		}
	}
	return l
}

// removeCgroupTree kills everything in dir's subtree and removes it, deepest
// first.
func removeCgroupTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	for i := 0; i < 200; i++ {
		if err := unix.Rmdir(dir); err == nil || err == unix.ENOENT {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testCgroupDirs are the directories of the test's own cgroup in every
// mounted hierarchy: where tooljail, started from here, makes its groups
// (v1: memory, cpu, pids...; v2: the unified one).
func testCgroupDirs() []string {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	type mnt struct{ point, root, opts string }
	var v1 []mnt
	var v2 *mnt
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			pre, post, ok := strings.Cut(s.Text(), " - ")
			fp, fq := strings.Fields(pre), strings.Fields(post)
			if !ok || len(fp) < 5 || len(fq) < 3 {
				continue
			}
			m := mnt{point: fp[4], root: fp[3], opts: "," + fq[2] + ","}
			switch fq[0] {
			case "cgroup":
				v1 = append(v1, m)
			case "cgroup2":
				if v2 == nil {
					v2 = &m
				}
			}
		}
		f.Close()
	}
	join := func(m mnt, p string) string {
		if m.root != "/" {
			p = strings.TrimPrefix(p, m.root)
		}
		return filepath.Join(m.point, p)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			if v2 != nil {
				dirs = append(dirs, join(*v2, parts[2]))
			}
			continue
		}
		first := strings.Split(parts[1], ",")[0]
		for _, m := range v1 {
			if strings.Contains(m.opts, ","+first+",") {
				dirs = append(dirs, join(m, parts[2]))
				break
			}
		}
	}
	return dirs
}

// forEachUserSerially runs f for every user, one after the other, while
// no parallel test runs.
func forEachUserSerially(t *testing.T, f func(t *testing.T, u *user)) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) { f(t, u) })
	}
}

// needCgroup skips the test for a user who cannot have cgroup caps on this
// host (uid 65534 on a v1/hybrid host: v1 has no delegation); the VM
// suites prove the same for unprivileged users on cgroup v2.
func (u *user) needCgroup(t *testing.T) {
	t.Helper()
	if u.cgroupDegraded() {
		t.Skipf("%s cannot have cgroup caps on this host (tooljail check); covered by the cgroup v2 VM suites", u.name)
	}
}

type resources struct {
	CPUUserMs       *int64 `json:"cpu_user_ms"`
	CPUSystemMs     *int64 `json:"cpu_system_ms"`
	MemoryPeakBytes *int64 `json:"memory_peak_bytes"`
	OOMKills        *int64 `json:"oom_kills"`
	PidsPeak        *int64 `json:"pids_peak"`
	PidsLimitHits   *int64 `json:"pids_limit_hits"`
	CPUThrottledMs  *int64 `json:"cpu_throttled_ms"`
}

func (o *outcome) resources(t *testing.T) resources {
	t.Helper()
	var r resources
	if err := json.Unmarshal(o.reportRaw, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return r
}

func val(p *int64) string {
	if p == nil {
		return "absent"
	}
	return strconv.FormatInt(*p, 10)
}

const mib = 1 << 20

// A memory bomb is killed with the whole jail and reported as memory_limit;
// pages of the jail's tmpfs mounts and of /dev/shm count against the cap.
func TestCgroupMemoryBomb(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		decoy := marker("oomdecoy")
		startHostDecoy(t, decoy)
		w := u.workdir(t)
		for _, c := range []struct {
			name    string
			limit   int64
			flags   []string
			actions []string
		}{
			{"anonymous", 64 * mib, nil, []string{"spawn", "tjmark-oomchild", ";", "alloc", "1073741824"}},
			{"tmpfs", 64 * mib, []string{"--tmpfs", "/big:1G"}, []string{"write", "/big/f", "536870912"}},
			{"dev-shm", 32 * mib, nil, []string{"write", "/dev/shm/f", "62914560"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				flags := append([]string{"--memory", strconv.FormatInt(c.limit, 10)}, c.flags...)
				o := u.jail(t, w, flags, c.actions...)
				r := o.resources(t)
				if o.code != 137 || o.report.Status != "memory_limit" || o.report.ExitCode != 137 {
					t.Fatalf("want exit 137 and status memory_limit\n%s", o)
				}
				if r.OOMKills == nil || *r.OOMKills < 1 {
					t.Errorf("oom_kills %s, want at least 1", val(r.OOMKills))
				}
				// The kernel may overshoot by a page or so (charges it must not
				// fail, e.g. page tables).
				if r.MemoryPeakBytes == nil || *r.MemoryPeakBytes > c.limit+mib || *r.MemoryPeakBytes < c.limit*3/4 {
					t.Errorf("memory_peak_bytes %s, want close to the %d limit", val(r.MemoryPeakBytes), c.limit)
				}
				// The whole jail goes: also the child that only held.
				requireGone(t, "tjmark-oomchild")
				// The reason names the limit, the peak and the kills.
				for _, want := range []string{fmt.Sprintf("%d MiB", c.limit/mib), "peak", "killed"} {
					if !strings.Contains(o.report.Reason, want) {
						t.Errorf("reason %q does not say %q", o.report.Reason, want)
					}
				}
			})
		}
		// The host is unaffected: the decoy outside lives on.
		if len(hostProcs(decoy)) != 1 {
			t.Errorf("the host process next to the jail did not survive the memory bombs")
		}
	})
}

// A fork bomb under --pids is contained: forks fail, the refusals are
// counted, and the run ends when the command does.
func TestCgroupForkBomb(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--pids", "32", "--timeout", (20 * time.Second * slow).String()}, "forkbomb")
		var got struct {
			Started int    `json:"started"`
			Error   string `json:"error"`
		}
		o.ok(t, 1)
		o.value(t, 0, &got)
		r := o.resources(t)
		if got.Started >= 32 || got.Error != "EAGAIN" {
			t.Errorf("fork bomb started %d children and stopped on %q; want fewer than 32 and EAGAIN", got.Started, got.Error)
		}
		if r.PidsLimitHits == nil || *r.PidsLimitHits < 1 {
			t.Errorf("pids_limit_hits %s, want at least 1\n%s", val(r.PidsLimitHits), o)
		}
		if r.PidsPeak != nil && (*r.PidsPeak > 32 || *r.PidsPeak < int64(got.Started)) {
			t.Errorf("pids_peak %d, want between %d and 32", *r.PidsPeak, got.Started)
		}
		// The children's argv is "tjhelper _hold forkbomb" (the command
		// lines of other runs hold "forkbomb" too).
		requireGone(t, "tjhelper\x00_hold\x00forkbomb")
	})
}

// --cpus 0.5: a busy loop for 2 s of wall time gets about 1 s of CPU, and
// the group reports being throttled. A correctness check with a wide
// margin, not a timing benchmark. In the VM guests only the throttling is
// checked: under software emulation on a busy host the guest's timers fire
// late, the quota overruns and its CPU clock disagrees with its wall clock
// (more CPU than wall time was seen: BENCHMARKS.md), so amounts mean
// nothing there.
func TestCgroupCPU(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--cpus", "0.5"}, "busy", "2s")
		o.ok(t, 1)
		r := o.resources(t)
		if r.CPUUserMs == nil || r.CPUSystemMs == nil || r.CPUThrottledMs == nil {
			t.Fatalf("cpu_user_ms %s cpu_system_ms %s cpu_throttled_ms %s, want all three",
				val(r.CPUUserMs), val(r.CPUSystemMs), val(r.CPUThrottledMs))
		}
		cpu := *r.CPUUserMs + *r.CPUSystemMs
		if slow > 1 {
			// As on the host (below): a loop that got no more than the
			// quota's 1000 ms may never have used a whole period's
			// share. In a guest its CPU clock also runs apart from the
			// wall clock, so the bound is wider: beside a CPU hog a guest
			// reported 967, 988 and 1129 ms with no throttling. A loop
			// without the quota gets the idle guest's whole vCPU, about
			// 2000 ms, and still fails below.
			if *r.CPUThrottledMs <= 0 && cpu < 1200 {
				t.Skipf("the loop got only %d ms of CPU in 2 s: the guest is too busy to show the quota", cpu)
			}
			if *r.CPUThrottledMs <= 0 {
				t.Errorf("cpu_throttled_ms %d after a 2 s busy loop under --cpus 0.5 (%d ms of CPU): the quota was not applied", *r.CPUThrottledMs, cpu)
			}
			return
		}
		if cpu > 1500 {
			t.Errorf("2 s busy under --cpus 0.5 used %d ms of CPU, want about 1000: the cap is not applied", cpu)
		}
		if *r.CPUThrottledMs <= 0 {
			// The quota is 1000 ms in 2 s. A loop that got less than
			// that (863 ms beside two CPU hogs, once) may never have
			// used a whole period's share: no throttling is due.
			if cpu < 950 {
				t.Skipf("the loop got only %d ms of CPU in 2 s: the host is too busy to reach the quota", cpu)
			}
			t.Errorf("cpu_throttled_ms %d with %d ms of CPU in 2 s under --cpus 0.5", *r.CPUThrottledMs, cpu)
		}
		if cpu < 500 {
			t.Skipf("the loop got only %d ms of CPU in 2 s: the host is too busy to check the amount", cpu)
		}
	})
}

// A helper that touches 100 MiB under a 512 MiB cap reports a peak within
// 10 % above 100 MiB. It runs alone, before the parallel tests: on the 6.1
// guest, with the whole suite running next to it (memory bombs included),
// 112 MiB was seen in two runs out of two, and within the bound when it
// ran alone.
func TestCgroupMemoryPeak(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	forEachUserSerially(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		w := u.workdir(t)
		// A first run charges the page cache of the pages of tooljail and
		// the helper that nothing has read before (several MiB on a freshly
		// booted guest): warm it, then measure.
		warm := u.jail(t, w, nil, "exit", "0").resources(t)
		t.Logf("a run of `tjhelper exit 0`: memory_peak_bytes %s", val(warm.MemoryPeakBytes))
		o := u.jail(t, w, []string{"--memory", "512M"}, "alloc", strconv.Itoa(100*mib))
		o.ok(t, 1)
		r := o.resources(t)
		if r.MemoryPeakBytes == nil || *r.MemoryPeakBytes < 100*mib || *r.MemoryPeakBytes > 110*mib {
			thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
			t.Errorf("memory_peak_bytes %s, want 100 MiB to 110 MiB (transparent huge pages: %s)\n%s",
				val(r.MemoryPeakBytes), bytes.TrimSpace(thp), o.reportRaw)
		}
		if r.OOMKills == nil || *r.OOMKills != 0 {
			t.Errorf("oom_kills %s, want 0", val(r.OOMKills))
		}
	})
}

// 200 runs at once: every one succeeds and none leaves a cgroup behind
// (each run's check in exec). The users take turns, to bound the load. In
// the VM guests (software emulation: every run costs many times the CPU
// it does here) it is 50 at once unless TJ_CONCURRENT_RUNS says otherwise.
func TestCgroupConcurrentRuns(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	n := 200
	if slow > 1 {
		n = 50
	}
	if v, err := strconv.Atoi(os.Getenv("TJ_CONCURRENT_RUNS")); err == nil && v > 0 {
		n = v
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := u.workdir(t)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := u.jail(t, w, []string{"-q"}, "exit", "0")
					if o.code != 0 || o.report.Status != "exited" {
						t.Errorf("run %d: %s", i, o)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// A supervisor killed with SIGKILL takes its jail with it, and the groups
// it could not remove are removed by the next run in the same cgroup.
func TestCgroupSupervisorKilled(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		child, fg := marker("skchild"), marker("skfg")
		// As root in the VM the runs start in the root cgroup, the one place
		// on cgroup v2 where a second supervisor can start next to a dead
		// one's groups (a delegated cgroup whose controllers are enabled
		// takes no new processes; systemd removes such a scope with its
		// last process).
		rc, err := u.newRunCgroup()
		if err != nil {
			t.Fatal(err)
		}
		// Releases whichever rc the test ends with (release has a pointer
		// receiver): the root cgroup's fd below, or the run cgroup.
		defer rc.release()
		if rc.dir != "" && u.uid == 0 {
			rc.release()
			rc = runCgroup{dir: "", fd: -1}
			if rc.fd, err = unix.Open("/sys/fs/cgroup", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				t.Fatal(err)
			}
		}
		flags := []string{"run", "-q", "--workdir", w}
		for _, d := range u.degraded {
			flags = append(flags, "--allow-degraded", d)
		}
		cmd := exec.Command(tooljailBin, append(flags, "--", filepath.Join(w, "tjhelper"), "spawn", child, ";", "hold", fg)...)
		cmd.Dir, cmd.Env = w, u.environ(nil)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		deadline := time.Now().Add(30 * time.Second * slow)
		// The child's argv is "tjhelper _hold MARKER"; the supervisor's own
		// argv holds both markers too, so the foreground command is
		// recognised by not being the supervisor.
		running := func() bool {
			fgSeen := false
			for _, p := range hostProcs(fg) {
				if !strings.HasPrefix(p, strconv.Itoa(cmd.Process.Pid)+":") {
					fgSeen = true
				}
			}
			childSeen := false
			for _, p := range hostProcs(child) {
				if strings.Contains(p, ": tjhelper _hold ") {
					childSeen = true
				}
			}
			return fgSeen && childSeen
		}
		for !running() {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the jailed command did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		owners := func(pid int) []string {
			if vmCgroup != "" && rc.dir == "" {
				return ownerDirs([]string{"/sys/fs/cgroup"}, pid)
			}
			return ownerDirs(testCgroupDirs(), pid)
		}
		// While it lives, its groups exist (nobody else removes them).
		if !u.cgroupDegraded() && rc.dir == "" && len(owners(cmd.Process.Pid)) == 0 {
			t.Fatalf("the running supervisor has no cgroup directory")
		}
		// Only the supervisor: not its process group.
		cmd.Process.Kill()
		cmd.Wait()
		requireGone(t, child, fg)

		left := rc.leftovers(cmd.Process.Pid)
		if u.cgroupDegraded() {
			if len(left) > 0 {
				t.Errorf("a run without cgroups left cgroups: %v", left)
			}
			return
		}
		if rc.dir != "" {
			// A delegated cgroup of its own (the VM's unprivileged user):
			// what is left holds no process, so the delegating manager can
			// remove it; release checks that it can.
			for _, d := range left {
				if p, _ := os.ReadFile(filepath.Join(d, "cgroup.procs")); len(bytes.TrimSpace(p)) > 0 {
					t.Errorf("processes left in %s: %s", d, p)
				}
			}
			return
		}
		// The next run in the same cgroup removes them.
		next := exec.Command(tooljailBin, append(flags, "--", "/bin/true")...)
		next.Dir, next.Env = w, u.environ(nil)
		next.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
		if out, err := next.CombinedOutput(); err != nil {
			t.Fatalf("the next run: %v: %s", err, out)
		}
		// (Another test's run in the same cgroup may have removed them
		// first: the same clean-up.)
		if dead := owners(cmd.Process.Pid); len(dead) > 0 {
			t.Errorf("the SIGKILLed supervisor's groups are still there after the next run: %v", dead)
		}
		if left := owners(next.Process.Pid); len(left) > 0 {
			t.Errorf("the next run left cgroups: %v", left)
		}
	})
}

// A run cgroup released twice closes its descriptor once: the second
// release must not close what this process opened under the same number
// since (a server's cleanup releases after its stop did).
func TestRunCgroupReleasedOnce(t *testing.T) {
	fd, err := unix.Open(t.TempDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc := runCgroup{fd: fd}
	rc.release()
	// The lowest free number: the one just released, unless another
	// goroutine took it first.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rc.release()
	for _, f := range []*os.File{r, w} {
		if _, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil {
			t.Errorf("a second release closed fd %d, opened after the first (the released one was %d): %v", f.Fd(), fd, err)
		}
	}
}
