package roottpl

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Cache holds a process's templates by shape. A shape gets a template
// on its second run (a process that runs one jail, like the CLI, never
// builds one). A template is dropped when a source it binds has changed,
// when a mount or unmount in this process's mount namespace may have
// changed a bind's tree below it (a run's own clone of the bind would
// have it), when it is older than MaxAge, and when its shape is the
// least recently used of more than Max.
type Cache struct {
	MaxAge time.Duration
	Max    int

	mu sync.Mutex
	m  map[string]*entry
	// mounts is /proc/self/mountinfo, polled for changes; a raw
	// descriptor: os.File's would be in Go's epoll set, whose wake-ups
	// take the kernel's change flag before this poll sees it.
	mounts     int
	mountsOpen bool
}

type entry struct {
	t      *Template
	last   time.Time
	failed time.Time // a build failed then: none is tried until MaxAge later
}

// Clone returns a clone of the template of key, if it has a current one
// (nil otherwise), with the template's Types, and whether the caller
// should build one (the shape ran before and has none).
func (c *Cache) Clone(key string, now time.Time) (root *os.File, types []uint32, build bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	e := c.m[key]
	if e == nil {
		if c.m == nil {
			c.m = map[string]*entry{}
		}
		c.m[key] = &entry{last: now}
		c.evict()
		return nil, nil, false, nil
	}
	e.last = now
	if e.t != nil && !e.t.Current() {
		e.t.Close()
		e.t = nil
	}
	if e.t == nil {
		return nil, nil, e.failed.IsZero() || now.Sub(e.failed) > c.MaxAge, nil
	}
	root, err = e.t.Clone()
	return root, e.t.Types, false, err
}

// Put keeps t as key's template, in place of the one it had.
func (c *Cache) Put(key string, t *Template, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mountsOpen {
		// Opened before the first template is kept: a mount made
		// after it shows as a change (mounts_poll).
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Close()
			return
		}
		c.mounts, c.mountsOpen = fd, true
	}
	e := c.entry(key)
	if e.t != nil {
		e.t.Close()
	}
	e.t, e.last, e.failed = t, now, time.Time{}
	c.evict()
}

// Failed notes that key's template could not be built: its runs build
// their roots themselves until MaxAge has passed.
func (c *Cache) Failed(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(key).failed = now
}

func (c *Cache) entry(key string) *entry {
	if c.m == nil {
		c.m = map[string]*entry{}
	}
	e := c.m[key]
	if e == nil {
		e = &entry{}
		c.m[key] = e
	}
	return e
}

// expire drops the templates older than MaxAge, and all of them when
// the mount table changed since the last look.
func (c *Cache) expire(now time.Time) {
	changed := c.mountsOpen && mountsChanged(c.mounts)
	for _, e := range c.m {
		if e.t != nil && (changed || now.Sub(e.t.built) > c.MaxAge) {
			e.t.Close()
			e.t = nil
		}
	}
}

// mountsChanged says whether a mount or unmount happened in this
// process's mount namespace since the last call (the kernel flags
// /proc/self/mountinfo with POLLPRI, and the poll takes the flag).
func mountsChanged(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	return err != nil || (n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0)
}

// evict drops the least recently used shapes beyond Max.
func (c *Cache) evict() {
	for len(c.m) > c.Max {
		var oldest string
		var at time.Time
		for k, e := range c.m {
			if oldest == "" || e.last.Before(at) {
				oldest, at = k, e.last
			}
		}
		if e := c.m[oldest]; e.t != nil {
			e.t.Close()
		}
		delete(c.m, oldest)
	}
}
