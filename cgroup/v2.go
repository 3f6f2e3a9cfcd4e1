package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// v2Host is a cgroup v2 (unified) host: the groups go below the
// supervisor's own cgroup, in an owner directory (see paths.go and
// v2_owner.go).
type v2Host struct {
	base string // directory of the base cgroup
	root bool   // base is the real root cgroup (exempt from no-internal-processes)
}

// detectV2 finds the base cgroup in /proc/self/cgroup and mountinfo.
func detectV2(pc procCgroups, mounts cgroupMounts) (v2Host, error) {
	if !pc.hasV2 || mounts.unified == nil {
		return v2Host{}, fmt.Errorf("cgroup v2 host but no cgroup2 entry in /proc/self/cgroup or mountinfo")
	}
	base := hostDir(*mounts.unified, v2Base(pc.unified, selfName()))
	// The root cgroup has no cgroup.events; every other one has.
	return v2Host{base: base, root: !exists(filepath.Join(base, "cgroup.events"))}, nil
}

func (h v2Host) probe(s *Support) {
	s.Base = h.base
	uid := os.Getuid()
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if !writable(filepath.Join(h.base, f)) {
			s.Reason = fmt.Sprintf("cgroup v2: %s is not writable by uid %d (not a delegated subtree)", filepath.Join(h.base, f), uid)
			s.Fix = fixDelegate
			return
		}
	}
	s.Mode = ModeV2
	avail, _ := readString(h.base, "cgroup.controllers")
	have := strings.Fields(avail)
	var missing []string
	for _, c := range []string{Memory, CPU, Pids} {
		s.Controllers[c] = contains(have, c)
		if !s.Controllers[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		s.Reason = fmt.Sprintf("cgroup v2: controllers %s are not available in %s (not delegated)", strings.Join(missing, ", "), h.base)
		s.Fix = "delegate them: systemd-run --user --scope -p Delegate=yes tooljail run ... (and Delegate=memory cpu pids for user@.service on older systemd)"
	}
	if h.root {
		return
	}
	// Other processes in the base keep its subtree_control from being
	// written; the supervisor can only move itself out. Only matters while
	// the controllers are not enabled there yet.
	enabled, _ := readString(h.base, "cgroup.subtree_control")
	if allIn(strings.Fields(enabled), have, []string{Memory, CPU, Pids}) {
		return
	}
	pids, _ := readPids(h.base)
	var others []string
	for _, p := range pids {
		if p != os.Getpid() {
			others = append(others, strconv.Itoa(p))
		}
	}
	if len(others) > 0 {
		for c := range s.Controllers {
			s.Controllers[c] = false
		}
		s.Reason = fmt.Sprintf("cgroup v2: %s also holds processes %s, so its controllers cannot be enabled for sub-groups", h.base, strings.Join(others, " "))
		s.Fix = "start tooljail in a cgroup of its own: " + fixDelegate
	}
}

// newGroup makes <base>/<owner>/run-<id> with the caps of r, after the
// owner directory (see acquireV2: it may move the supervisor).
func (h v2Host) newGroup(id string, r Resources) (backend, error) {
	ownerDir, enabled, err := self.acquireV2(h)
	if err != nil {
		return nil, err
	}
	for _, c := range needed(r) {
		if !contains(enabled, c) {
			self.release()
			return nil, fmt.Errorf("%w: cgroup v2 controller %s cannot be enabled below %s (available: %q); %s",
				ErrUnavailable, c, h.base, mustRead(h.base, "cgroup.controllers"), fixDelegate)
		}
	}
	dir := joinRun(ownerDir, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		self.release()
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cgroup: run id %q already has a group at %s", id, dir)
		}
		return nil, fmt.Errorf("%w: create %s: %v", ErrUnavailable, dir, err)
	}
	g := &v2Group{dir: dir, fd: -1, res: r}
	if err := applyV2(dir, r); err != nil {
		unix.Rmdir(dir)
		self.release()
		return nil, err
	}
	if g.fd, err = openDirFD(dir); err != nil {
		unix.Rmdir(dir)
		self.release()
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return g, nil
}

func (h v2Host) cleanupStale(live map[string]bool) error { return cleanupV2(h.base, live) }

func mustRead(dir, name string) string {
	s, _ := readString(dir, name)
	return s
}

// applyV2 writes the caps of r into dir.
func applyV2(dir string, r Resources) error {
	if r.Memory > 0 {
		if err := writeFile(dir, "memory.max", strconv.FormatInt(r.Memory, 10)); err != nil {
			return err
		}
		// memory.swap.max is absent without swap accounting
		// (CONFIG_MEMCG_SWAP / swapaccount=0): no swap can be charged then.
		if err := writeFile(dir, "memory.swap.max", "0"); err != nil && !isNotExist(err) {
			return err
		}
		// One OOM kill takes the whole jail: a half-killed tree is worse.
		if err := writeFile(dir, "memory.oom.group", "1"); err != nil {
			return err
		}
	}
	if r.CPUs > 0 {
		if err := writeFile(dir, "cpu.max", fmt.Sprintf("%d %d", cpuQuota(r.CPUs), cpuPeriod)); err != nil {
			return err
		}
	}
	if r.Pids > 0 {
		if err := writeFile(dir, "pids.max", strconv.FormatInt(r.Pids, 10)); err != nil {
			return err
		}
	}
	return nil
}

// v2Group is a run's group on cgroup v2: one directory, entered by
// CLONE_INTO_CGROUP through fd.
type v2Group struct {
	dir string
	fd  int // O_PATH fd of dir until remove, then -1
	// released: the group's hold on the owner directory is dropped (a
	// failed release is not retried: the hold is gone either way).
	released bool
	res      Resources
	files    figureFiles
}

func (g *v2Group) mode() Mode { return ModeV2 }

func (g *v2Group) dirFD() int { return g.fd }

func (g *v2Group) addProc(pid int) error {
	return writeFile(g.dir, "cgroup.procs", strconv.Itoa(pid))
}

func (g *v2Group) joinThread() (func() error, error) {
	return nil, fmt.Errorf("cgroup: JoinThread is for v1 groups; on v2 clone into the group with DirFD")
}

func (g *v2Group) stats(f Figures) Stats { return statsV2(g.files.read, g.dir, g.res, f) }

func (g *v2Group) kill() error { return killV2(g.dir) }

// remove removes the directory, then closes the fd and drops the group's
// hold on the owner directory (the last one removes it).
func (g *v2Group) remove() error {
	g.files.close()
	if err := rmdirRetry(g.dir); err != nil {
		return err
	}
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	if g.released {
		return nil
	}
	g.released = true
	return self.release()
}

// statsV2 reads the figures f of a v2 group directory.
func statsV2(rd reader, dir string, r Resources, f Figures) Stats {
	var st Stats
	if f&Peaks != 0 {
		st.MemoryPeak = intFileBy(rd, dir, "memory.peak")
		st.PidsPeak = intFileBy(rd, dir, "pids.peak")
	}
	if f&Limit != 0 && r.Memory > 0 {
		st.MemoryLimit = intFileBy(rd, dir, "memory.max")
	}
	if f&Counters != 0 {
		st.OOMKills = keyedBy(rd, dir, "memory.events", "oom_kill")
		st.PidsLimitHits = keyedBy(rd, dir, "pids.events", "max")
	}
	if f&(CPUUsage|Counters) == 0 {
		return st
	}
	if cpu, err := readKeyedBy(rd, dir, "cpu.stat"); err == nil {
		if f&CPUUsage != 0 {
			st.CPUUserUsec = ptr(cpu, "user_usec")
			st.CPUSystemUsec = ptr(cpu, "system_usec")
		}
		if f&Counters != 0 {
			st.CPUThrottledUs = ptr(cpu, "throttled_usec")
		}
	}
	return st
}

func ptr(m map[string]int64, k string) *int64 {
	v, ok := m[k]
	if !ok {
		return nil
	}
	return &v
}

// killV2 kills the group: cgroup.kill (5.14+), else freeze, SIGKILL every
// process, thaw. Then it waits until the group is empty.
func killV2(dir string) error {
	err := writeFile(dir, "cgroup.kill", "1")
	if err != nil && isNotExist(err) {
		err = freezeKillV2(dir)
	}
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	return waitEmpty(func() ([]int, error) { return readPids(dir) }, dir)
}

func freezeKillV2(dir string) error {
	if err := writeFile(dir, "cgroup.freeze", "1"); err != nil && !isNotExist(err) {
		return err
	}
	waitFor(func() bool {
		ev, err := readKeyed(dir, "cgroup.events")
		return err != nil || ev["frozen"] == 1
	})
	_, err := signalAll(func() ([]int, error) { return readPids(dir) })
	if terr := writeFile(dir, "cgroup.freeze", "0"); terr != nil && !isNotExist(terr) && err == nil {
		err = terr
	}
	return err
}

// cleanupV2 kills and removes the run groups dead supervisors left in
// base, then their owner directories.
func cleanupV2(base string, live map[string]bool) error {
	var errs []error
	for _, o := range staleDirs(base, live) {
		runs := []string{o.path}
		if !o.run {
			runs = nil
			for _, name := range subdirs(o.path) {
				runs = append(runs, filepath.Join(o.path, name))
			}
		}
		for _, d := range runs {
			if err := killV2(d); err != nil && !ignorable(err) {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, quiet(rmdirRetry(d)))
		}
		if !o.run {
			errs = append(errs, quiet(rmdirRetry(o.path)))
		}
	}
	return errors.Join(errs...)
}
