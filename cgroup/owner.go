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

var (
	selfNameOnce sync.Once
	selfNameVal  string
)

// selfName is this process's owner directory name.
func selfName() string {
	selfNameOnce.Do(func() {
		start, _ := procStartTime(os.Getpid())
		selfNameVal = ownerName(os.Getpid(), start, pidNS())
	})
	return selfNameVal
}

// owner is this supervisor's tooljail-<pid>-<start> directory in each
// hierarchy, shared by its live groups and removed with the last of them.
type owner struct {
	mu   sync.Mutex
	live int
	// v2
	v2Dir     string
	v2Enabled []string // controllers enabled for the runs
	movedSelf bool     // the supervisor lives in v2Dir/supervisor
	// v1: hierarchy -> owner directory
	v1Dirs map[string]string
}

var self owner

// acquireV2 makes (once) the owner directory below the base, moves the
// supervisor into a leaf when the base is not the root cgroup, and enables
// the controllers for the runs.
func (o *owner) acquireV2(h host) (string, []string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.v2Dir != "" {
		o.live++
		return o.v2Dir, o.v2Enabled, nil
	}
	dir := filepath.Join(h.v2Base, selfName())
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, fmt.Errorf("%w: create %s: %v (%s)", ErrUnavailable, dir, err, fixDelegate)
	}
	if !h.v2Root && !o.movedSelf {
		leaf := filepath.Join(dir, supervisorDir)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			os.Remove(dir)
			return "", nil, fmt.Errorf("%w: create %s: %v", ErrUnavailable, leaf, err)
		}
		// Writing the pid moves every thread of the supervisor.
		if err := writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			os.Remove(leaf)
			os.Remove(dir)
			return "", nil, fmt.Errorf("%w: move the supervisor out of %s: %v (%s)", ErrUnavailable, h.v2Base, err, fixDelegate)
		}
		o.movedSelf = true
	}
	avail, _ := readString(h.v2Base, "cgroup.controllers")
	var want []string
	for _, c := range []string{Memory, CPU, Pids} {
		if contains(strings.Fields(avail), c) {
			want = append(want, c)
		}
	}
	enabled, err := enableControllers(h.v2Base, want)
	if err == nil {
		enabled, err = enableControllers(dir, enabled)
	}
	if err != nil {
		// Runs still get a group (CPU times come from the core cpu.stat);
		// New fails for any cap whose controller is missing.
		enabled = nil
	}
	o.v2Dir, o.v2Enabled = dir, enabled
	o.live++
	return dir, enabled, nil
}

// enableControllers enables want in dir/cgroup.subtree_control and returns
// what is enabled there. EBUSY means processes still sit in dir (another
// supervisor about to move out of a shared base): retry for up to a second.
func enableControllers(dir string, want []string) ([]string, error) {
	cur, err := readString(dir, "cgroup.subtree_control")
	if err != nil {
		return nil, err
	}
	var add []string
	for _, c := range want {
		if !contains(strings.Fields(cur), c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return want, nil
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
		return nil, fmt.Errorf("enable controllers in %s: %w", dir, err)
	}
	return want, nil
}

// acquireV1 makes (once) the owner directory in every writable hierarchy.
func (o *owner) acquireV1(h host) map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.v1Dirs != nil {
		o.live++
		return o.v1Dirs
	}
	dirs := map[string]string{}
	name := selfName()
	for c, base := range h.v1Base {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			continue // not writable: that hierarchy is not used
		}
		dirs[c] = d
	}
	o.v1Dirs = dirs
	o.live++
	return dirs
}

// release drops one group; the last one removes the owner directories
// (except a v2 owner that holds the supervisor itself: the next
// CleanupStale after this process exits removes that one).
func (o *owner) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.live--
	if o.live > 0 {
		return
	}
	for _, d := range o.v1Dirs {
		os.Remove(d)
	}
	o.v1Dirs = nil
	if o.v2Dir != "" && !o.movedSelf {
		os.Remove(o.v2Dir)
		o.v2Dir, o.v2Enabled = "", nil
	}
}
