// Package cgroup gives each run its own cgroup with memory, CPU and pids caps,
// on cgroup v2 (delegated subtrees for unprivileged users) and on v1/hybrid
// hosts, reads its figures and removes it. The jail package never touches
// cgroupfs paths itself.
//
// The order of calls for one run:
//
//	s := cgroup.Probe()              // preflight: what can be capped here
//	cgroup.CleanupStale()            // groups of supervisors that died
//	g, err := cgroup.New(id, r)      // r masked by s.Mask when degrading is allowed
//	v2: cmd.SysProcAttr.UseCgroupFD = g.DirFD() >= 0; CgroupFD = g.DirFD()
//	    cmd.Start()                  // on failure retry without UseCgroupFD
//	v1: leave, err := g.JoinThread() // the forking thread joins the group...
//	    cmd.Start(); leave()         // ...the init is forked inside, the thread leaves
//	g.AddProc(pid)                   // fallback when neither worked; before the init runs
//	... wait for the command ...
//	st := g.Stats()                  // before Delete: the figures die with the group
//	g.Kill(); g.Delete()
//
// By host:
//   - cgroup v2 (kernel 5.7+ for CLONE_INTO_CGROUP, 5.14+ for cgroup.kill,
//     5.19+ for memory.peak, 6.1+ for pids.peak): groups live below the
//     supervisor's own cgroup, which must be writable (root, or a delegated
//     systemd scope for other users). An OOM kills the whole group
//     (memory.oom.group).
//   - cgroup v1 and hybrid hosts: the v1 memory, cpu, cpuacct, pids and freezer
//     hierarchies (the freezer only for a group whose processes are not one
//     PID namespace, Resources.OwnPIDNamespace), below the supervisor's own
//     cgroup in each; only root can write them. v1 has no memory.oom.group,
//     so a watcher on the group's OOM event kills the rest of the group when
//     the kernel kills one process.
//     DirFD is -1: the caller forks the init from a thread that joined the
//     group (JoinThread), or moves it in with AddProc before it runs.
//
// What it does to the calling process: on cgroup v2, unless the process
// is in the root cgroup, the first New moves the whole process into a leaf
// <own cgroup>/tooljail-<pid>-<start>-<ns>/supervisor and enables the
// memory, cpu and pids controllers in its own cgroup, as the kernel's "no
// internal processes" rule requires of a cgroup with sub-groups; it moves
// back when its last group is deleted, where it can. A Go program that
// embeds the package and must stay where it is runs the tooljail binary as
// a child process instead (New's doc has the details). On v1 the process
// never moves; only the thread that calls JoinThread does, for one fork.
package cgroup

import "errors"

// Resources are the caps of one group; zero means no cap.
type Resources struct {
	Memory int64   // bytes; swap is always 0
	CPUs   float64 // CPUs (cpu.max quota/period, period 100 ms)
	Pids   int64
	// OwnPIDNamespace says that every process the group will hold is in
	// one PID namespace of its own, whose init the caller holds and kills:
	// the kernel kills the whole namespace with its init, and nothing in
	// it can fork its way out. Kill then needs no v1 freezer to stop forks
	// while it signals, and the group is not made in that hierarchy: a
	// mkdir, an rmdir, a thread's join and leave fewer per run.
	OwnPIDNamespace bool
}

// Mode is the cgroup version the groups are made with.
type Mode string

const (
	ModeV2   Mode = "v2"
	ModeV1   Mode = "v1"
	ModeNone Mode = "none"
)

// The controllers a cap needs; keys of Support.Controllers.
const (
	Memory = "memory"
	CPU    = "cpu"
	Pids   = "pids"
)

// ErrUnavailable is wrapped by New's errors when a requested cap (or any
// group at all) cannot be made on this host by this user.
var ErrUnavailable = errors.New("cgroup cap unavailable")

// Stats are a group's figures; nil means the host cannot give it.
type Stats struct {
	// MemoryPeak is the highest memory use in bytes (v2 memory.peak,
	// v1 memory.max_usage_in_bytes).
	MemoryPeak *int64
	// MemoryLimit is the cap in effect as the kernel stored it (rounded to
	// pages); nil when no memory cap was set.
	MemoryLimit *int64
	// OOMKills counts processes killed because the group reached its memory
	// cap: v2 memory.events oom_kill (each member killed by oom.group counts);
	// v1 memory.oom_control oom_kill plus the processes the v1 OOM watcher
	// killed afterwards.
	OOMKills *int64
	// PidsPeak is the highest number of tasks (pids.peak, kernel 6.1+).
	PidsPeak *int64
	// PidsLimitHits counts forks refused by pids.max (pids.events max).
	PidsLimitHits *int64
	// CPUUserUsec and CPUSystemUsec are the CPU time of every process that
	// ever ran in the group: v2 cpu.stat; v1 cpuacct.usage split in the
	// proportion of cpuacct.usage_user/usage_sys, as v2 splits it.
	CPUUserUsec   *int64
	CPUSystemUsec *int64
	// CPUThrottledUs is the time the group was held back by its CPU quota
	// (v2 cpu.stat throttled_usec, v1 cpu.stat throttled_time).
	CPUThrottledUs *int64
}
