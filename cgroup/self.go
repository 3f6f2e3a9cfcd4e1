package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// selfV1Memory is the v1 memory group of this process when LimitSelf
// made one: a run's thread that joined its group (JoinThread) goes back
// there, not to the base.
var selfV1Memory string

// LimitSelf moves the calling process, every thread, into a cgroup of
// its own with a memory cap of memory bytes (swap 0), beside its runs'
// groups, never above them: what the process itself allocates is bounded
// and shown apart, and no run's memory counts against it. It is for a
// long-lived supervisor (tooljail serve); call it before the first New.
// The process stays there until release, which moves it back.
//
// By host:
//   - cgroup v2, below a delegated or root-owned cgroup that is not the
//     root cgroup: the supervisor leaf <base>/tooljail-<pid>-.../supervisor
//     that New uses anyway (see New) gets memory.max.
//   - cgroup v1 (root only): <memory base>/tooljail-<pid>-...-run-supervisor
//     in the memory hierarchy, which CleanupStale removes after a crash
//     like a run's; the other hierarchies are left as they are.
//
// Elsewhere (no memory controller this user may write, the root cgroup)
// it returns an error wrapping ErrUnavailable that says why.
func LimitSelf(memory int64) (release func() error, err error) {
	if memory <= 0 {
		return nil, fmt.Errorf("cgroup: LimitSelf needs a memory cap, got %d", memory)
	}
	_, h, err := detect()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	switch h := h.(type) {
	case v2Host:
		return limitSelfV2(h, memory)
	case v1Host:
		return limitSelfV1(h, memory)
	}
	return nil, fmt.Errorf("%w: unknown cgroup host", ErrUnavailable)
}

func limitSelfV2(h v2Host, memory int64) (func() error, error) {
	if h.root {
		return nil, fmt.Errorf("%w: the process is in the root cgroup, which has no memory cap and must not be left for it; start it in a cgroup of its own (%s)", ErrUnavailable, fixDelegate)
	}
	ownerDir, enabled, err := self.acquireV2(h)
	if err != nil {
		return nil, err
	}
	if !contains(enabled, Memory) {
		self.release()
		return nil, fmt.Errorf("%w: cgroup v2 memory controller cannot be enabled below %s; %s", ErrUnavailable, h.base, fixDelegate)
	}
	leaf := filepath.Join(ownerDir, supervisorDir)
	if err := writeFile(leaf, "memory.max", strconv.FormatInt(memory, 10)); err != nil {
		self.release()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := writeFile(leaf, "memory.swap.max", "0"); err != nil && !isNotExist(err) {
		self.release()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return func() error {
		writeFile(leaf, "memory.max", "max")
		return self.release()
	}, nil
}

func limitSelfV1(h v1Host, memory int64) (func() error, error) {
	base, ok := h.bases[Memory]
	if !ok {
		return nil, fmt.Errorf("%w: cgroup v1 memory hierarchy is not mounted", ErrUnavailable)
	}
	dir := filepath.Join(base, flatRunName(selfName(), supervisorDir))
	if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("%w: create %s: %v (%s)", ErrUnavailable, dir, err, fixV1)
	}
	if err := applyV1(v1Dirs{Memory: dir}, Resources{Memory: memory}); err != nil {
		unix.Rmdir(dir)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := writeFile(dir, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		unix.Rmdir(dir)
		return nil, fmt.Errorf("%w: move into %s: %v", ErrUnavailable, dir, err)
	}
	selfV1Memory = dir
	return func() error {
		selfV1Memory = ""
		if err := writeFile(base, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return err
		}
		return rmdirRetry(dir)
	}, nil
}
