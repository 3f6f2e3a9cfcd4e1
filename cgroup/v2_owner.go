package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// owner is this supervisor's v2 tooljail-<pid>-<start>-<ns> directory,
// shared by its live groups and removed with the last of them (v1 runs
// have none: see the layout in paths.go).
type owner struct {
	mu        sync.Mutex
	live      int
	v2Dir     string
	v2Base    string   // the cgroup the supervisor came from
	v2Enabled []string // controllers enabled for the runs
	v2Added   []string // controllers this supervisor enabled in v2Base
	movedSelf bool     // the supervisor lives in v2Dir/supervisor
}

var self owner

// acquireV2 makes (once) the owner directory below the base, moves the
// supervisor into a leaf when the base is not the root cgroup (what that
// means for an embedder: see New), and enables the controllers for the runs.
func (o *owner) acquireV2(h v2Host) (string, []string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.v2Dir != "" {
		o.live++
		return o.v2Dir, o.v2Enabled, nil
	}
	dir := filepath.Join(h.base, selfName())
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, fmt.Errorf("%w: create %s: %v (%s)", ErrUnavailable, dir, err, fixDelegate)
	}
	if !h.root && !o.movedSelf {
		leaf := filepath.Join(dir, supervisorDir)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			unix.Rmdir(dir)
			return "", nil, fmt.Errorf("%w: create %s: %v", ErrUnavailable, leaf, err)
		}
		// Writing the pid moves every thread of the supervisor.
		if err := writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			unix.Rmdir(leaf)
			unix.Rmdir(dir)
			return "", nil, fmt.Errorf("%w: move the supervisor out of %s: %v (%s)", ErrUnavailable, h.base, err, fixDelegate)
		}
		o.movedSelf = true
	}
	avail, _ := readString(h.base, "cgroup.controllers")
	var want []string
	for _, c := range []string{Memory, CPU, Pids} {
		if contains(strings.Fields(avail), c) {
			want = append(want, c)
		}
	}
	enabled, added, err := enableControllers(h.base, want)
	if err == nil {
		enabled, _, err = enableControllers(dir, enabled)
	}
	if err != nil {
		// Runs still get a group (CPU times come from the core cpu.stat);
		// New fails for any cap whose controller is missing.
		enabled = nil
	}
	o.v2Dir, o.v2Base, o.v2Enabled, o.v2Added = dir, h.base, enabled, added
	o.live++
	return dir, enabled, nil
}

// enableControllers enables want in dir/cgroup.subtree_control and returns
// what is enabled there and what this call added. EBUSY means processes
// still sit in dir (another supervisor about to move out of a shared base):
// retry for up to a second.
func enableControllers(dir string, want []string) (enabled, added []string, err error) {
	cur, err := readString(dir, "cgroup.subtree_control")
	if err != nil {
		return nil, nil, err
	}
	var add []string
	for _, c := range want {
		if !contains(strings.Fields(cur), c) {
			add = append(add, "+"+c)
			added = append(added, c)
		}
	}
	if len(add) == 0 {
		return want, nil, nil
	}
	deadline := time.Now().Add(time.Second)
	for {
		err = writeFile(dir, "cgroup.subtree_control", strings.Join(add, " "))
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("enable controllers in %s: %w", dir, err)
	}
	return want, added, nil
}

// release drops one v2 group; the last one removes the owner directory.
// A v2 supervisor that moved itself into a leaf first moves back into the
// cgroup it came from (see moveBack); when another supervisor's groups,
// or controllers it did not enable, keep it from that, the owner
// directory stays, by design, until the next CleanupStale in that cgroup
// after this process exits. Any other failure is returned: the owner
// directory, or its leaf, is left behind and the caller says so.
func (o *owner) release() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.live--
	if o.live > 0 || o.v2Dir == "" {
		return nil
	}
	dir, left := o.v2Dir, o.movedSelf
	if left {
		moved, err := o.moveBack()
		if !moved {
			if err != nil {
				err = fmt.Errorf("move the supervisor back into %s: %w; %s stays until the next run there removes it", o.v2Base, err, dir)
			}
			return err
		}
	}
	// Moved back, the directory's controllers are off: whether or not it
	// goes now, the next group starts over (acquireV2 takes the same name
	// again if it is still there).
	o.v2Dir, o.v2Base, o.v2Enabled, o.v2Added, o.movedSelf = "", "", nil, nil, false
	if left {
		if err := rmdirRetry(filepath.Join(dir, supervisorDir)); err != nil {
			return err
		}
	}
	return rmdirRetry(dir)
}

// moveBack puts the supervisor back into the cgroup it came from, so that
// its leaf and owner directory can be removed and the cgroup is left as it
// was found. The kernel only lets a process into a (non-root) cgroup whose
// subtree_control is empty, so this works when this supervisor enabled
// every controller there itself and no other sub-group needs them: first
// the groups of dead supervisors are removed, then the controllers are
// disabled (the kernel refuses while a sub-group still uses one). It
// reports whether it moved; not moving with a nil error is the case by
// design (another supervisor's groups, or controllers someone else
// enabled).
func (o *owner) moveBack() (bool, error) {
	base := o.v2Base
	cleanupV2(base, map[string]bool{})
	for _, name := range subdirs(base) {
		if name != filepath.Base(o.v2Dir) {
			return false, nil // another supervisor's groups, or someone else's
		}
	}
	cur, err := readString(base, "cgroup.subtree_control")
	if err != nil {
		return false, err
	}
	var off []string
	for _, c := range strings.Fields(cur) {
		if !contains(o.v2Added, c) {
			return false, nil // enabled by someone else: not ours to undo
		}
		off = append(off, "-"+c)
	}
	// The owner directory's own controllers go first: the kernel refuses
	// to disable a controller in base that a child still enables.
	if own, _ := readString(o.v2Dir, "cgroup.subtree_control"); strings.TrimSpace(own) != "" {
		var l []string
		for _, c := range strings.Fields(own) {
			l = append(l, "-"+c)
		}
		if err := writeFile(o.v2Dir, "cgroup.subtree_control", strings.Join(l, " ")); err != nil {
			return false, err
		}
	}
	if len(off) > 0 {
		if err := writeFile(base, "cgroup.subtree_control", strings.Join(off, " ")); err != nil {
			return false, err
		}
	}
	if err := writeFile(base, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		return false, err
	}
	return true, nil
}
