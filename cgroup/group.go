package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Group is one run's cgroup.
type Group struct {
	b backend

	mu      sync.Mutex
	deleted bool
}

// backend is one group, on v1 (v1Group, v1.go) or on v2 (v2Group, v2.go):
// what differs between the versions. detect (support.go) decides once
// which version the host has and returns its host, v1Host or v2Host, whose
// newGroup makes the group with its caps set; the v1 OOM watcher is in
// v1_oom.go, the v2 owner directory and the supervisor's leaf in
// v2_owner.go. Group adds only what both share.
//
// github.com/containerd/cgroups/v3 gives the host's mode (cgroups.Mode);
// groups are written through cgroupfs directly. Its cgroup2.Manager is not
// used: importing it links cilium/ebpf, protobuf, logrus and godbus into
// every start-up, its kill fallback logs and waits on the group's
// processes (it would reap the jail's init), and it has no owner
// directory, supervisor leaf or EBUSY retry.
type backend interface {
	mode() Mode
	// dirFD is an O_PATH fd of the group directory for CLONE_INTO_CGROUP,
	// or -1 when the group cannot be entered that way.
	dirFD() int
	addProc(pid int) error
	joinThread() (leave func() error, err error)
	stats(f Figures) Stats
	kill() error
	// remove removes the group's directories and, once they are gone,
	// frees what the group held; on error it may be called again.
	remove() error
}

// New creates the group for run id with caps r. Every nonzero cap is
// applied or New fails with an error wrapping ErrUnavailable that says why
// and what to do; use Support.Mask first to run with fewer caps. A zero
// Resources still gives a group, for the CPU and memory figures.
//
// What New does to the calling process on cgroup v2: when the process is
// not in the root cgroup, the first New (also one that then fails) moves
// the whole process, every thread, from its cgroup <base> into a leaf
// <base>/tooljail-<pid>-<start>-<ns>/supervisor, and enables the memory,
// cpu and pids controllers available in <base>: a cgroup whose sub-groups
// use controllers may hold no processes itself. The caller's caps on
// <base> still apply (the leaf is below it), /proc/self/cgroup shows the
// leaf, and processes it forks meanwhile start there. When the last group
// is deleted (or that first New fails), the process moves back into
// <base> and the controllers it enabled are disabled again, if <base>
// then holds no other sub-group and no controller someone else enabled;
// otherwise it stays in the leaf until it exits, and the next CleanupStale
// in <base> after that removes the directories.
// Running in a leaf cgroup already does not avoid the move: the groups are
// made below the caller's own cgroup, which makes it an inner one. An
// embedder that must not move runs the tooljail binary as a child process
// (only that process moves), or runs in the root cgroup. On v1 nothing
// moves: see JoinThread.
func New(id string, r Resources) (*Group, error) {
	if err := validRunID(id); err != nil {
		return nil, err
	}
	if r.Memory < 0 || r.CPUs < 0 || r.Pids < 0 {
		return nil, fmt.Errorf("cgroup: negative cap in %+v", r)
	}
	_, h, err := detect()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	b, err := h.newGroup(id, r)
	if err != nil {
		return nil, err
	}
	return &Group{b: b}, nil
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
func (g *Group) Mode() Mode { return g.b.mode() }

// DirFD is an O_PATH fd of the group directory for CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD/CgroupFD), or -1 when the group cannot be
// entered that way (v1). The fd stays open until Delete.
func (g *Group) DirFD() int { return g.b.dirFD() }

// AddProc moves pid into the group (fallback when clone into it failed,
// and always on v1). Call it while pid is still blocked, before it can fork.
func (g *Group) AddProc(pid int) error { return g.b.addProc(pid) }

// JoinThread moves the calling OS thread, and only it, into the group (v1
// only), so that a process the thread forks next starts in the group, as
// CLONE_INTO_CGROUP does on v2. leave moves the thread back to the
// supervisor's cgroup; call it right after the fork, on the same thread
// (the caller holds runtime.LockOSThread from JoinThread until leave).
//
// Why not AddProc: moving another process (writing its pid to
// cgroup.procs or tasks) takes the kernel's global threadgroup lock for
// writing, which waits for an RCU grace period. A thread that moves itself
// (writing "0" to tasks) needs no such lock. While the thread is in the
// group it is counted there (pids, cpuacct): one thread, for as long as
// the fork takes.
//
// When leave fails, or JoinThread fails and still returns leave, the
// thread is (partly) in the group: the caller must not fork from it or
// unlock it (a locked thread ends with its goroutine), and must run
// nothing else on it. When JoinThread fails without leave, the thread is
// where it was.
func (g *Group) JoinThread() (leave func() error, err error) { return g.b.joinThread() }

// Stats reads the figures. Call it before Delete.
func (g *Group) Stats() Stats { return g.b.stats(AllFigures) }

// Figures reads only the figures of f, the others nil: fewer files, for
// a reader that needs only some (a session's call).
func (g *Group) Figures(f Figures) Stats { return g.b.stats(f) }

// Figures is a set of a group's figures, by the files they come from.
type Figures uint8

const (
	// Counters: OOMKills, PidsLimitHits, CPUThrottledUs (the figures that
	// count events, for a baseline that a later read is compared with).
	Counters Figures = 1 << iota
	// Peaks: MemoryPeak, PidsPeak.
	Peaks
	// CPUUsage: CPUUserUsec, CPUSystemUsec.
	CPUUsage
	// Limit: MemoryLimit.
	Limit

	AllFigures = Counters | Peaks | CPUUsage | Limit
)

// Kill kills every process in the group and waits (up to settleTimeout)
// until the group is empty.
func (g *Group) Kill() error { return g.b.kill() }

// Delete removes the group; call Kill first. It retries for a short while
// when tasks are still leaving (EBUSY), and is safe to call twice.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if err := g.b.remove(); err != nil {
		return err
	}
	g.deleted = true
	return nil
}

// rmdirRetry removes a cgroup directory; ENOENT counts as done.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(settleTimeout)
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
