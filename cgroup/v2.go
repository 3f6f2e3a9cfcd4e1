package cgroup

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func newV2(h host, id string, r Resources) (*Group, error) {
	ownerDir, enabled, err := self.acquireV2(h)
	if err != nil {
		return nil, err
	}
	for _, c := range needed(r) {
		if !contains(enabled, c) {
			self.release()
			return nil, fmt.Errorf("%w: cgroup v2 controller %s cannot be enabled below %s (available: %q); %s",
				ErrUnavailable, c, h.v2Base, mustRead(h.v2Base, "cgroup.controllers"), fixDelegate)
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
	g := &Group{mode: ModeV2, dir: dir, fd: -1, res: r, controllers: map[string]bool{}}
	for _, c := range []string{Memory, CPU, Pids} {
		g.controllers[c] = contains(enabled, c)
	}
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

// statsV2 reads the figures of a v2 group directory.
func statsV2(dir string, r Resources) Stats {
	var st Stats
	st.MemoryPeak = intFile(dir, "memory.peak")
	if r.Memory > 0 {
		st.MemoryLimit = intFile(dir, "memory.max")
	}
	st.OOMKills = keyed(dir, "memory.events", "oom_kill")
	st.PidsPeak = intFile(dir, "pids.peak")
	st.PidsLimitHits = keyed(dir, "pids.events", "max")
	if cpu, err := readKeyed(dir, "cpu.stat"); err == nil {
		st.CPUUserUsec = ptr(cpu, "user_usec")
		st.CPUSystemUsec = ptr(cpu, "system_usec")
		st.CPUThrottledUs = ptr(cpu, "throttled_usec")
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
