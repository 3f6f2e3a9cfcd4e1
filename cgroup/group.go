package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// Group is one run's cgroup.
type Group struct {
	mode        Mode
	dir         string            // v2: the group directory
	dirs        map[string]string // v1: hierarchy -> group directory
	homes       map[string]string // v1: hierarchy -> the supervisor's own cgroup
	fd          int               // v2: O_PATH fd of dir, else -1
	controllers map[string]bool
	res         Resources
	oom         *oomWatcher // v1 only

	mu      sync.Mutex
	deleted bool
}

// New creates the group for run id with caps r. Every nonzero cap is
// applied or New fails with an error wrapping ErrUnavailable that says why
// and what to do; use Support.Mask first to run with fewer caps. A zero
// Resources still gives a group, for the CPU and memory figures.
func New(id string, r Resources) (*Group, error) {
	if err := validRunID(id); err != nil {
		return nil, err
	}
	if r.Memory < 0 || r.CPUs < 0 || r.Pids < 0 {
		return nil, fmt.Errorf("cgroup: negative cap in %+v", r)
	}
	h, err := detect()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if h.layout == cgroups.Unified {
		return newV2(h, id, r)
	}
	return newV1(h, id, r)
}

// needed lists the controllers the nonzero caps of r need.
func needed(r Resources) []string {
	var n []string
	if r.Memory > 0 {
		n = append(n, Memory)
	}
	if r.CPUs > 0 {
		n = append(n, CPU)
	}
	if r.Pids > 0 {
		n = append(n, Pids)
	}
	return n
}

// cpuQuota turns CPUs into a quota per 100 ms period; the kernel refuses
// quotas under 1 ms.
const cpuPeriod = 100000

func cpuQuota(cpus float64) int64 {
	q := int64(cpus*cpuPeriod + 0.5)
	if q < 1000 {
		q = 1000
	}
	return q
}

// Mode is the version this group lives in.
func (g *Group) Mode() Mode { return g.mode }

// Controllers says, for "memory", "cpu" and "pids", whether the group is in
// that controller: true for every cap that was asked for (New fails
// otherwise), and for the controllers that only give figures.
func (g *Group) Controllers() map[string]bool {
	m := make(map[string]bool, len(g.controllers))
	for k, v := range g.controllers {
		m[k] = v
	}
	return m
}

// Resources are the caps applied.
func (g *Group) Resources() Resources { return g.res }

// Path is the group directory (v1: in the memory hierarchy, or the first
// one joined), for diagnostics.
func (g *Group) Path() string {
	if g.mode == ModeV2 {
		return g.dir
	}
	if d, ok := g.dirs[Memory]; ok {
		return d
	}
	return g.sortedDirs()[0]
}

func (g *Group) sortedDirs() []string {
	var l []string
	for _, d := range g.dirs {
		l = append(l, d)
	}
	sort.Strings(l)
	return l
}

// DirFD is an O_PATH fd of the group directory for CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD/CgroupFD), or -1 when the group cannot be
// entered that way (v1). The fd stays open until Delete.
func (g *Group) DirFD() int { return g.fd }

// AddProc moves pid into the group (fallback when clone into it failed,
// and always on v1). Call it while pid is still blocked, before it can fork.
func (g *Group) AddProc(pid int) error {
	if g.mode == ModeV2 {
		return writeFile(g.dir, "cgroup.procs", strconv.Itoa(pid))
	}
	for _, c := range v1JoinOrder {
		if d, ok := g.dirs[c]; ok {
			if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// v1JoinOrder is the order AddProc and JoinThread enter the v1
// hierarchies: the freezer first, as the kill path relies on it.
var v1JoinOrder = []string{"freezer", Memory, CPU, "cpuacct", Pids}

// JoinThread moves the calling OS thread, and only it, into the group (v1
// only), so that a process the thread forks next starts in the group, as
// CLONE_INTO_CGROUP does on v2. leave moves the thread back to the
// supervisor's cgroup; call it right after the fork, on the same thread
// (the caller holds runtime.LockOSThread from JoinThread until leave).
//
// Why not AddProc: moving another process (writing its pid to
// cgroup.procs or tasks) takes the kernel's global threadgroup lock for
// writing, which waits for an RCU grace period: 5 to 150 ms per run on a
// busy host. A thread that moves itself (writing "0" to tasks) needs no
// such lock. While the thread is in the group it is counted there (pids,
// cpuacct): one thread for the microseconds the fork takes.
//
// When leave fails, or JoinThread fails and still returns leave, the
// thread is (partly) in the group: the caller must not fork from it or
// unlock it (a locked thread ends with its goroutine), and must run
// nothing else on it. When JoinThread fails without leave, the thread is
// where it was.
func (g *Group) JoinThread() (leave func() error, err error) {
	if g.mode != ModeV1 {
		return nil, fmt.Errorf("cgroup: JoinThread is for v1 groups; on v2 clone into the group with DirFD")
	}
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

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) {
	if g.mode == ModeV2 {
		return readPids(g.dir)
	}
	return g.v1Procs()
}

// Stats reads the figures. Call it before Delete.
func (g *Group) Stats() Stats {
	if g.mode == ModeV2 {
		return statsV2(g.dir, g.res)
	}
	var extra int64
	if g.oom != nil {
		extra = g.oom.settle()
	}
	st := statsV1(g.dirs, g.res)
	if st.OOMKills != nil {
		v := *st.OOMKills + extra
		st.OOMKills = &v
	}
	return st
}

// Kill kills every process in the group and waits (up to 2 s) until the
// group is empty.
func (g *Group) Kill() error {
	if g.mode == ModeV2 {
		return killV2(g.dir)
	}
	_, err := killV1(g.dirs)
	return err
}

// Delete removes the group; call Kill first. It retries for a short while
// when tasks are still leaving (EBUSY), and is safe to call twice.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if g.oom != nil {
		g.oom.stop()
	}
	var errs []error
	if g.mode == ModeV2 {
		errs = append(errs, rmdirRetry(g.dir))
	} else {
		for _, d := range g.sortedDirs() {
			errs = append(errs, rmdirRetry(d))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	g.deleted = true
	if g.mode == ModeV2 {
		self.release()
	}
	return nil
}

// rmdirRetry removes a cgroup directory; ENOENT counts as done.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	// A task that has just exited can keep the group busy for a moment:
	// retry soon first, then every 10 ms.
	wait := 250 * time.Microsecond
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w (kill its processes first)", dir, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// openDirFD opens dir for CLONE_INTO_CGROUP the way runc does.
func openDirFD(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

func runDirName(id string) string { return runPrefix + id }

func joinRun(owner, id string) string { return filepath.Join(owner, runDirName(id)) }
