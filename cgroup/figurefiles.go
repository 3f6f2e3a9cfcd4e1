package cgroup

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// figureFiles keeps the figure files a group's Stats and Figures read
// open: a session's calls read the same ones at every call, and an open
// cgroup file read again from offset 0 gives its text made anew (the
// kernel's seq_file starts over at offset 0), without the path lookup of
// another open. Only figure files, made in one piece (readFigureAt0).
// close closes them, before the group's directories go.
type figureFiles struct {
	mu  sync.Mutex
	fds map[string]int
}

// read reads the file at p whole, through its open descriptor.
func (f *figureFiles) read(p string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd, ok := f.fds[p]
	if !ok {
		var err error
		if fd, err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, &os.PathError{Op: "open", Path: p, Err: err}
		}
		if f.fds == nil {
			f.fds = map[string]int{}
		}
		f.fds[p] = fd
	}
	return readFigureAt0(fd, p)
}

// close closes every descriptor; read opens them again if called after.
func (f *figureFiles) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fd := range f.fds {
		unix.Close(fd)
	}
	f.fds = nil
}
