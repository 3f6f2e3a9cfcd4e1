package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// tmpWatch records who creates entries in /tmp and /var/tmp while the leak
// runs go on, with fanotify (FAN_CREATE on the two directories, Linux
// 5.9+ for the names): other people's work creates entries there too, and
// only the creator's pid tells them apart from ours.
type tmpWatch struct {
	fd      int
	handles map[string][]byte // directory -> its file handle, to name the event's directory
	driver  int
	mu      sync.Mutex
	creates []tmpCreate
	stop    chan struct{}
	done    chan struct{}
}

// tmpCreate is one entry created in a watched directory.
type tmpCreate struct {
	Dir  string `json:"dir"`
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	// Ours: the creator was a descendant of the bench driver when the event
	// was read (a tooljail supervisor, or a process of its jail).
	Ours bool `json:"ours"`
	// Gone: the creator had exited before the event was read, so it could
	// not be told apart (a supervisor pid of this pass still counts as ours).
	Gone bool `json:"gone"`
}

var tmpDirs = []string{"/tmp", "/var/tmp"}

// watchTmp starts watching; Stop returns what was seen.
func watchTmp() (*tmpWatch, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_DFID_NAME|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fanotify_init: %w", err)
	}
	w := &tmpWatch{fd: fd, driver: os.Getpid(), handles: map[string][]byte{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, d := range tmpDirs {
		if h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, d, 0); err == nil {
			w.handles[d] = h.Bytes()
		}
		if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_CREATE|unix.FAN_ONDIR, unix.AT_FDCWD, d); err != nil && !errors.Is(err, unix.ENOENT) {
			unix.Close(fd)
			return nil, fmt.Errorf("fanotify_mark %s: %w", d, err)
		}
	}
	go w.loop()
	return w, nil
}

// loop drains the queue every 20 ms: soon enough to find most creators
// still alive, cheap enough not to matter next to the runs.
func (w *tmpWatch) loop() {
	defer close(w.done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		w.drain()
		select {
		case <-w.stop:
			w.drain()
			return
		case <-t.C:
		}
	}
}

// Stop ends the watch and returns the creates seen.
func (w *tmpWatch) Stop() []tmpCreate {
	close(w.stop)
	<-w.done
	unix.Close(w.fd)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.creates
}

func (w *tmpWatch) drain() {
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for _, c := range parseFanotify(buf[:n], w.handles) {
			if c.Pid > 0 {
				if isDescendant(c.Pid, w.driver) {
					c.Ours = true
				} else if _, err := os.Stat("/proc/" + strconv.Itoa(c.Pid)); err != nil {
					c.Gone = true
				}
			}
			w.mu.Lock()
			w.creates = append(w.creates, c)
			w.mu.Unlock()
		}
	}
}

// parseFanotify decodes FAN_REPORT_DFID_NAME events: the metadata, then an
// info record with the directory's fsid and file handle and the entry's
// name. The directory is told by comparing its handle with dirs'.
func parseFanotify(b []byte, dirs map[string][]byte) []tmpCreate {
	var out []tmpCreate
	const metaLen = 24 // struct fanotify_event_metadata
	for len(b) >= metaLen {
		evLen := int(binary.NativeEndian.Uint32(b[0:4]))
		mLen := int(binary.NativeEndian.Uint16(b[6:8]))
		if evLen < metaLen || evLen > len(b) || mLen < metaLen || mLen > evLen {
			break
		}
		pid := int(int32(binary.NativeEndian.Uint32(b[20:24])))
		c := tmpCreate{Pid: pid, Dir: "?"}
		info := b[mLen:evLen]
		for len(info) >= 4 {
			typ := info[0]
			iLen := int(binary.NativeEndian.Uint16(info[2:4]))
			if iLen < 4 || iLen > len(info) {
				break
			}
			// header (4), fsid (8), struct file_handle (4 + 4 + bytes), name.
			if typ == unix.FAN_EVENT_INFO_TYPE_DFID_NAME && iLen >= 20 {
				hb := int(binary.NativeEndian.Uint32(info[12:16]))
				if off := 20 + hb; off <= iLen {
					for d, h := range dirs {
						if bytes.Equal(h, info[20:off]) {
							c.Dir = d
						}
					}
					name := info[off:iLen]
					for i, ch := range name {
						if ch == 0 {
							name = name[:i]
							break
						}
					}
					c.Name = string(name)
				}
			}
			info = info[iLen:]
		}
		out = append(out, c)
		b = b[evLen:]
	}
	return out
}

// isDescendant tells whether pid's parent chain reaches root.
func isDescendant(pid, root int) bool {
	for hops := 0; pid > 1 && hops < 1000; hops++ {
		pp, err := parentOf(pid)
		if err != nil {
			return false
		}
		if pp == root {
			return true
		}
		pid = pp
	}
	return false
}
