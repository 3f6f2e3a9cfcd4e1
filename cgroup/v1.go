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

func newV1(h host, id string, r Resources) (*Group, error) {
	g := &Group{mode: ModeV1, dirs: map[string]string{}, homes: map[string]string{}, fd: -1, res: r, controllers: map[string]bool{}}
	made := map[string]bool{} // co-mounted controllers (cpu,cpuacct) share one directory
	fail := func(err error) (*Group, error) {
		for d := range made {
			unix.Rmdir(d)
		}
		return nil, err
	}
	name := flatRunName(selfName(), id)
	for c, base := range h.v1Base {
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
		// The run's directory sits in the supervisor's own cgroup.
		g.homes[c] = base
	}
	for _, c := range needed(r) {
		if _, ok := g.dirs[c]; !ok {
			base, mounted := h.v1Base[c]
			if !mounted {
				return fail(fmt.Errorf("%w: cgroup v1 %s hierarchy is not mounted; mount it, or pass --allow-degraded cgroup", ErrUnavailable, c))
			}
			return fail(fmt.Errorf("%w: cgroup v1 %s hierarchy at %s is not writable by uid %d; %s", ErrUnavailable, c, base, os.Getuid(), fixV1))
		}
	}
	if len(g.dirs) == 0 {
		return fail(fmt.Errorf("%w: no writable cgroup v1 hierarchy for uid %d; %s", ErrUnavailable, os.Getuid(), fixV1))
	}
	for _, c := range []string{Memory, CPU, Pids} {
		_, g.controllers[c] = g.dirs[c]
	}
	if err := applyV1(g.dirs, r); err != nil {
		return fail(err)
	}
	if r.Memory > 0 {
		w, err := watchOOM(g)
		if err != nil {
			return fail(fmt.Errorf("cgroup: watch OOM events of %s: %w", g.dirs[Memory], err))
		}
		g.oom = w
	}
	return g, nil
}

// applyV1 writes the caps of r into the v1 group directories.
func applyV1(dirs map[string]string, r Resources) error {
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

// statsV1 reads the figures of v1 group directories.
func statsV1(dirs map[string]string, r Resources) Stats {
	var st Stats
	if d, ok := dirs[Memory]; ok {
		st.MemoryPeak = intFile(d, "memory.max_usage_in_bytes")
		if r.Memory > 0 {
			st.MemoryLimit = intFile(d, "memory.limit_in_bytes")
		}
		st.OOMKills = keyed(d, "memory.oom_control", "oom_kill")
	}
	if d, ok := dirs[Pids]; ok {
		st.PidsPeak = intFile(d, "pids.peak")
		st.PidsLimitHits = keyed(d, "pids.events", "max")
	}
	if d, ok := dirs["cpuacct"]; ok {
		// usage_user/usage_sys are nanoseconds (4.7+); cpuacct.stat is
		// in USER_HZ ticks, the fallback.
		u, uerr := readInt(d, "cpuacct.usage_user")
		s, serr := readInt(d, "cpuacct.usage_sys")
		if uerr == nil && serr == nil {
			u, s = u/1000, s/1000
			st.CPUUserUsec, st.CPUSystemUsec = &u, &s
		} else if m, err := readKeyed(d, "cpuacct.stat"); err == nil {
			st.CPUUserUsec = ticksToUsec(m, "user")
			st.CPUSystemUsec = ticksToUsec(m, "system")
		}
	}
	if d, ok := dirs[CPU]; ok {
		if ns := keyed(d, "cpu.stat", "throttled_time"); ns != nil {
			us := *ns / 1000
			st.CPUThrottledUs = &us
		}
	}
	return st
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

// v1Procs lists the union of the processes of every hierarchy the group
// is in (they should agree; a process moved out of one must not escape
// the kill).
func (g *Group) v1Procs() ([]int, error) {
	seen := map[int]bool{}
	var all []int
	var errs []string
	for _, d := range g.sortedDirs() {
		pids, err := readPids(d)
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

// killV1 freezes the group (when it is in a freezer hierarchy) so nothing
// forks while the SIGKILLs go out, kills every process, thaws, and waits
// until every hierarchy is empty. It returns how many processes it signalled.
func killV1(dirs map[string]string) (int, error) {
	g := &Group{dirs: dirs}
	// Usually the run's init has been reaped and took the rest of its PID
	// namespace along: nothing is left, and an empty group cannot gain a
	// process (only a member can fork into it), so there is nothing to
	// freeze.
	if pids, err := g.v1Procs(); err == nil && len(pids) == 0 {
		return 0, nil
	}
	fz, hasFreezer := dirs["freezer"]
	if hasFreezer {
		if err := writeFile(fz, "freezer.state", "FROZEN"); err == nil {
			waitFor(func() bool { s, err := readString(fz, "freezer.state"); return err != nil || s == "FROZEN" })
		}
	}
	n, err := signalAll(g.v1Procs)
	if hasFreezer {
		// Frozen tasks only die once thawed.
		if terr := writeFile(fz, "freezer.state", "THAWED"); terr != nil && err == nil && !isNotExist(terr) {
			err = terr
		}
	}
	if err != nil {
		return n, fmt.Errorf("kill cgroup %s: %w", g.Path(), err)
	}
	return n, waitEmpty(g.v1Procs, g.Path())
}
