package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// v1Host is a cgroup v1 or hybrid host: each run's group is one directory
// in each hierarchy, directly in the supervisor's own cgroup there (see
// paths.go). Only root can write v1 hierarchies.
type v1Host struct {
	bases map[string]string // hierarchy -> the supervisor's own cgroup
}

// v1Hierarchies are the v1 controllers a group joins: the three caps, plus
// cpuacct for CPU times and freezer for an atomic kill (v1Hierarchy).
var v1Hierarchies = []string{Memory, CPU, "cpuacct", Pids, "freezer"}

// v1Hierarchy says whether a group of r is made in hierarchy c: not in the
// freezer when its processes are one PID namespace (Resources'
// OwnPIDNamespace), which dies with its init.
func v1Hierarchy(c string, r Resources) bool {
	return c != "freezer" || !r.OwnPIDNamespace
}

// detectV1 finds the supervisor's cgroup in each mounted hierarchy.
func detectV1(pc procCgroups, mounts cgroupMounts) v1Host {
	h := v1Host{bases: map[string]string{}}
	for _, c := range v1Hierarchies {
		m, ok := mounts.v1[c]
		p, ok2 := pc.v1[c]
		if ok && ok2 {
			h.bases[c] = hostDir(m, p)
		}
	}
	return h
}

func (h v1Host) probe(s *Support) {
	uid := os.Getuid()
	var why []string
	for _, c := range []string{Memory, CPU, Pids} {
		dir, ok := h.bases[c]
		switch {
		case !ok:
			why = append(why, c+" hierarchy not mounted")
		case !writable(dir):
			why = append(why, fmt.Sprintf("%s not writable by uid %d", dir, uid))
		default:
			s.Controllers[c] = true
			if s.Base == "" {
				s.Base = dir
			}
			s.Mode = ModeV1
		}
	}
	if len(why) > 0 {
		s.Reason = "cgroup v1 (" + s.Host + " host): " + strings.Join(why, "; ")
		s.Fix = fixV1
		if uid == 0 {
			s.Fix = "mount the missing v1 controllers, or use a cgroup v2 host"
		}
	}
}

// newGroup makes <base>/<owner>-run-<id> in every writable hierarchy and
// sets the caps of r; with a memory cap it starts the OOM watcher.
func (h v1Host) newGroup(id string, r Resources) (backend, error) {
	g := &v1Group{dirs: v1Dirs{}, homes: map[string]string{}, res: r}
	made := map[string]bool{} // co-mounted controllers (cpu,cpuacct) share one directory
	fail := func(err error) (backend, error) {
		for d := range made {
			unix.Rmdir(d)
		}
		return nil, err
	}
	name := flatRunName(selfName(), id)
	for c, base := range h.bases {
		if !v1Hierarchy(c, r) {
			continue
		}
		d := filepath.Join(base, name)
		if !made[d] {
			if err := unix.Mkdir(d, 0o755); err != nil {
				if err == unix.EEXIST {
					return fail(fmt.Errorf("cgroup: run id %q already has a group at %s", id, d))
				}
				if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
					continue // not writable: that hierarchy is not used
				}
				return fail(fmt.Errorf("%w: create %s: %v", ErrUnavailable, d, err))
			}
			made[d] = true
		}
		g.dirs[c] = d
		// The run's directory sits in the supervisor's own cgroup, where
		// a joining thread goes back (its own memory group, LimitSelf).
		g.homes[c] = base
		if c == Memory && selfV1Memory != "" {
			g.homes[c] = selfV1Memory
		}
	}
	for _, c := range needed(r) {
		if _, ok := g.dirs[c]; !ok {
			base, mounted := h.bases[c]
			if !mounted {
				return fail(fmt.Errorf("%w: cgroup v1 %s hierarchy is not mounted; mount it, or pass --allow-degraded cgroup", ErrUnavailable, c))
			}
			return fail(fmt.Errorf("%w: cgroup v1 %s hierarchy at %s is not writable by uid %d; %s", ErrUnavailable, c, base, os.Getuid(), fixV1))
		}
	}
	if len(g.dirs) == 0 {
		return fail(fmt.Errorf("%w: no writable cgroup v1 hierarchy for uid %d; %s", ErrUnavailable, os.Getuid(), fixV1))
	}
	if err := applyV1(g.dirs, r); err != nil {
		return fail(err)
	}
	if r.Memory > 0 {
		w, err := watchOOM(g.dirs, g.files.read)
		if err != nil {
			return fail(fmt.Errorf("cgroup: watch OOM events of %s: %w", g.dirs[Memory], err))
		}
		g.oom = w
	}
	return g, nil
}

// cleanupStale kills and removes the run groups dead supervisors left in
// the bases, then the owner directories older versions made there.
func (h v1Host) cleanupStale(live map[string]bool) error {
	// Gather each dead run's directories across hierarchies so the kill
	// can freeze them first.
	runs := map[string]v1Dirs{} // owner/run -> hierarchy -> dir
	var owners []string         // owner directories, removed last
	add := func(key, c, dir string) {
		if runs[key] == nil {
			runs[key] = v1Dirs{}
		}
		runs[key][c] = dir
	}
	for c, base := range h.bases {
		for _, o := range staleDirs(base, live) {
			if o.run {
				add(filepath.Base(o.path), c, o.path)
				continue
			}
			for _, name := range subdirs(o.path) {
				add(o.owner+"/"+name, c, filepath.Join(o.path, name))
			}
			owners = append(owners, o.path)
		}
	}
	var errs []error
	for _, dirs := range runs {
		if _, err := dirs.kill(); err != nil && !ignorable(err) {
			errs = append(errs, err)
			continue
		}
		for _, d := range dirs {
			errs = append(errs, quiet(rmdirRetry(d)))
		}
	}
	for _, o := range owners {
		errs = append(errs, quiet(rmdirRetry(o)))
	}
	return errors.Join(errs...)
}

// applyV1 writes the caps of r into the v1 group directories.
func applyV1(dirs v1Dirs, r Resources) error {
	if r.Memory > 0 {
		d := dirs[Memory]
		v := strconv.FormatInt(r.Memory, 10)
		if err := writeFile(d, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		// Swap 0: mem+swap capped at the memory cap where swap accounting
		// exists, else the group is told not to swap.
		if exists(d + "/memory.memsw.limit_in_bytes") {
			if err := writeFile(d, "memory.memsw.limit_in_bytes", v); err != nil {
				return err
			}
		} else if err := writeFile(d, "memory.swappiness", "0"); err != nil {
			return err
		}
	}
	if r.CPUs > 0 {
		d := dirs[CPU]
		if err := writeFile(d, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		if err := writeFile(d, "cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(r.CPUs), 10)); err != nil {
			return err
		}
	}
	if r.Pids > 0 {
		if err := writeFile(dirs[Pids], "pids.max", strconv.FormatInt(r.Pids, 10)); err != nil {
			return err
		}
	}
	return nil
}

// v1Group is a run's group on cgroup v1: one directory per hierarchy it
// could be made in. It cannot be cloned into (no DirFD).
type v1Group struct {
	dirs  v1Dirs            // hierarchy -> group directory
	homes map[string]string // hierarchy -> the supervisor's own cgroup
	res   Resources
	oom   *oomWatcher // with a memory cap: v1 has no memory.oom.group
	files figureFiles
}

// v1JoinOrder is the order addProc and joinThread enter the v1
// hierarchies: the freezer first, as the kill path relies on it.
var v1JoinOrder = []string{"freezer", Memory, CPU, "cpuacct", Pids}

func (g *v1Group) mode() Mode { return ModeV1 }

func (g *v1Group) dirFD() int { return -1 }

func (g *v1Group) addProc(pid int) error {
	for _, c := range v1JoinOrder {
		if d, ok := g.dirs[c]; ok {
			if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinThread: see Group.JoinThread.
func (g *v1Group) joinThread() (leave func() error, err error) {
	// Leaving needs write access to the home groups' tasks files, which a
	// delegated v1 hierarchy may not give even where the run's group is
	// writable: then do not join (the caller falls back to AddProc).
	for _, c := range v1JoinOrder {
		if _, ok := g.dirs[c]; !ok {
			continue
		}
		home := g.homes[c]
		if home == "" {
			return nil, fmt.Errorf("cgroup: no home directory known for the %s hierarchy", c)
		}
		if err := unix.Faccessat(unix.AT_FDCWD, filepath.Join(home, "tasks"), unix.W_OK, unix.AT_EACCESS); err != nil {
			return nil, fmt.Errorf("cgroup: cannot move back to %s: %w", home, err)
		}
	}
	var moved []string
	back := func() error {
		var errs []error
		for i := len(moved) - 1; i >= 0; i-- {
			if err := writeFile(g.homes[moved[i]], "tasks", "0"); err != nil {
				errs = append(errs, fmt.Errorf("move the supervisor thread back: %w", err))
			}
		}
		return errors.Join(errs...)
	}
	for _, c := range v1JoinOrder {
		d, ok := g.dirs[c]
		if !ok {
			continue
		}
		if err = writeFile(d, "tasks", "0"); err != nil {
			if berr := back(); berr != nil {
				return back, errors.Join(err, berr)
			}
			return nil, err
		}
		moved = append(moved, c)
	}
	return back, nil
}

// stats settles the OOM watcher first, so that figures read right after
// the command died include the rest of the group, and adds what it
// killed to the kernel's count.
func (g *v1Group) stats(f Figures) Stats {
	var extra int64
	if g.oom != nil {
		extra = g.oom.settle()
	}
	st := statsV1(g.files.read, g.dirs, g.res, f)
	if st.OOMKills != nil {
		v := *st.OOMKills + extra
		st.OOMKills = &v
	}
	return st
}

func (g *v1Group) kill() error {
	_, err := g.dirs.kill()
	return err
}

// remove stops the OOM watcher, closes the figure files and removes every
// directory.
func (g *v1Group) remove() error {
	if g.oom != nil {
		g.oom.stop()
	}
	g.files.close()
	var errs []error
	for _, d := range g.dirs.sorted() {
		errs = append(errs, rmdirRetry(d))
	}
	return errors.Join(errs...)
}

// statsV1 reads the figures f of v1 group directories.
func statsV1(rd reader, dirs v1Dirs, r Resources, f Figures) Stats {
	var st Stats
	if d, ok := dirs[Memory]; ok {
		if f&Peaks != 0 {
			st.MemoryPeak = intFileBy(rd, d, "memory.max_usage_in_bytes")
		}
		if f&Limit != 0 && r.Memory > 0 {
			st.MemoryLimit = intFileBy(rd, d, "memory.limit_in_bytes")
		}
		if f&Counters != 0 {
			st.OOMKills = keyedBy(rd, d, "memory.oom_control", "oom_kill")
		}
	}
	if d, ok := dirs[Pids]; ok {
		if f&Peaks != 0 {
			st.PidsPeak = intFileBy(rd, d, "pids.peak")
		}
		if f&Counters != 0 {
			st.PidsLimitHits = keyedBy(rd, d, "pids.events", "max")
		}
	}
	if d, ok := dirs["cpuacct"]; ok && f&CPUUsage != 0 {
		st.CPUUserUsec, st.CPUSystemUsec = v1CPUTimes(rd, d)
	}
	if d, ok := dirs[CPU]; ok && f&Counters != 0 {
		if ns := keyedBy(rd, d, "cpu.stat", "throttled_time"); ns != nil {
			us := *ns / 1000
			st.CPUThrottledUs = &us
		}
	}
	return st
}

// v1CPUTimes gives a v1 group's user and system CPU time in µs. Only
// cpuacct.usage is exact (the run time the scheduler charged, in ns);
// usage_user and usage_sys (4.7+), like cpuacct.stat, are ticks sampled
// at each timer interrupt. A throttled group is sampled at its worst: a
// CFS quota runs out on the tick, and the task then running is charged
// the whole tick, so for a group held to its quota they read above
// cpuacct.usage (enough to fail TestCPUQuota in CI). The exact total is
// split in their proportion instead, which is what v2's cpu.stat does
// for user_usec and system_usec (the kernel's cputime_adjust).
func v1CPUTimes(rd reader, d string) (user, sys *int64) {
	total, terr := readIntBy(rd, d, "cpuacct.usage")
	u, uerr := readIntBy(rd, d, "cpuacct.usage_user")
	s, serr := readIntBy(rd, d, "cpuacct.usage_sys")
	if uerr != nil || serr != nil {
		m, err := readKeyedBy(rd, d, "cpuacct.stat")
		if err != nil {
			return nil, nil
		}
		uu, su := ticksToUsec(m, "user"), ticksToUsec(m, "system")
		if uu == nil || su == nil {
			return uu, su
		}
		u, s = *uu*1000, *su*1000
	}
	if terr == nil {
		u, s = splitCPU(total, u, s)
	}
	u, s = u/1000, s/1000
	return &u, &s
}

// splitCPU divides total between user and system in the proportion of
// the sampled user and sys, as the kernel's cputime_adjust does: all to
// one side when the other was never sampled, and the sampled figures as
// they are when no total is known.
func splitCPU(total, user, sys int64) (int64, int64) {
	switch {
	case total <= 0:
		return user, sys
	case sys <= 0:
		return total, 0
	case user <= 0:
		return 0, total
	}
	// The product can overflow int64 after ~2.5 CPU-hours in ns, so
	// scale in float64: a 53-bit mantissa is exact well past that, and a
	// report's µs figure needs no more.
	s := int64(float64(total) * (float64(sys) / float64(user+sys)))
	return total - s, s
}

// userHZ is the unit of cpuacct.stat, fixed at 100 by the kernel ABI.
const userHZ = 100

func ticksToUsec(m map[string]int64, k string) *int64 {
	v, ok := m[k]
	if !ok {
		return nil
	}
	v *= 1000000 / userHZ
	return &v
}

// v1Dirs are one group's directories, hierarchy -> directory: a live
// group's, or one a dead supervisor left (cleanupStale kills those too).
type v1Dirs map[string]string

func (d v1Dirs) sorted() []string {
	var l []string
	for _, dir := range d {
		l = append(l, dir)
	}
	sort.Strings(l)
	return l
}

// path is the directory in the memory hierarchy, or the first one, for
// error messages.
func (d v1Dirs) path() string {
	if dir, ok := d[Memory]; ok {
		return dir
	}
	return d.sorted()[0]
}

// procs lists the union of the processes of every hierarchy the group
// is in (they should agree; a process moved out of one must not escape
// the kill).
func (d v1Dirs) procs() ([]int, error) {
	seen := map[int]bool{}
	var all []int
	var errs []string
	for _, dir := range d.sorted() {
		pids, err := readPids(dir)
		if err != nil {
			if !isNotExist(err) {
				errs = append(errs, err.Error())
			}
			continue
		}
		for _, p := range pids {
			if !seen[p] {
				seen[p] = true
				all = append(all, p)
			}
		}
	}
	if len(errs) > 0 {
		return all, errors.New(strings.Join(errs, "; "))
	}
	return all, nil
}

// kill freezes the group (when it is in a freezer hierarchy) so nothing
// forks while the SIGKILLs go out, kills every process, thaws, and waits
// until every hierarchy is empty. It returns how many processes it signalled.
// A group of one PID namespace has no freezer: the caller kills its init,
// which takes the namespace along, and the SIGKILLs here only hasten it.
func (d v1Dirs) kill() (int, error) {
	// Usually the run's init has been reaped and took the rest of its PID
	// namespace along: nothing is left, and an empty group cannot gain a
	// process (only a member can fork into it), so there is nothing to
	// freeze.
	if pids, err := d.procs(); err == nil && len(pids) == 0 {
		return 0, nil
	}
	fz, hasFreezer := d["freezer"]
	if hasFreezer {
		if err := writeFile(fz, "freezer.state", "FROZEN"); err == nil {
			waitFor(func() bool { s, err := readString(fz, "freezer.state"); return err != nil || s == "FROZEN" })
		}
	}
	n, err := signalAll(d.procs)
	if hasFreezer {
		// Frozen tasks only die once thawed.
		if terr := writeFile(fz, "freezer.state", "THAWED"); terr != nil && err == nil && !isNotExist(terr) {
			err = terr
		}
	}
	if err != nil {
		return n, fmt.Errorf("kill cgroup %s: %w", d.path(), err)
	}
	return n, waitEmpty(d.procs, d.path())
}
