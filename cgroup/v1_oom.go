package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oomWatcher stands in for v2's memory.oom.group on v1: the kernel OOM
// killer picks one victim, and the watcher, woken through
// cgroup.event_control, kills the rest of the group so a jail never runs
// on half-killed.
type oomWatcher struct {
	dirs   v1Dirs
	read   reader // the group's open figure files
	efd    *os.File
	done   chan struct{}
	closed atomic.Bool

	mu     sync.Mutex
	seen   int64 // oom_kill count already answered
	killed int64 // processes the watcher killed
}

func watchOOM(dirs v1Dirs, rd reader) (*oomWatcher, error) {
	dir := dirs[Memory]
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		unix.Close(efd)
		return nil, err
	}
	// The kernel keeps its own references; ctl can be closed afterwards.
	err = writeFile(dir, "cgroup.event_control", fmt.Sprintf("%d %d", efd, ctl.Fd()))
	ctl.Close()
	if err != nil {
		unix.Close(efd)
		return nil, err
	}
	// A non-blocking fd goes to the runtime poller, so Close wakes the Read.
	w := &oomWatcher{dirs: dirs, read: rd, efd: os.NewFile(uintptr(efd), "oom-eventfd"), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *oomWatcher) loop() {
	defer close(w.done)
	var buf [8]byte
	for {
		if _, err := w.efd.Read(buf[:]); err != nil {
			return
		}
		// The event also fires when the group is removed.
		if w.closed.Load() {
			return
		}
		// It fires when the group enters OOM, before the kernel has
		// picked and killed its victim: wait for the kill.
		w.mu.Lock()
		seen := w.seen
		w.mu.Unlock()
		waitFor(func() bool { k := w.oomKills(); return k == nil || *k > seen })
		w.settle()
	}
}

func (w *oomWatcher) oomKills() *int64 {
	return keyedBy(w.read, w.dirs[Memory], "memory.oom_control", "oom_kill")
}

// settle kills the rest of the group if the kernel OOM-killed a process
// since the last call, and returns how many processes the watcher killed
// in all. Stats calls it too, so figures read right after the command
// died already include the rest of the group.
func (w *oomWatcher) settle() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if k := w.oomKills(); k != nil && *k > w.seen {
		w.seen = *k
		n, _ := w.dirs.kill()
		w.killed += int64(n)
	}
	return w.killed
}

func (w *oomWatcher) stop() {
	if w.closed.Swap(true) {
		return
	}
	w.efd.Close()
	<-w.done
}
