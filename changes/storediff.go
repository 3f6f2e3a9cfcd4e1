package changes

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Diff writes, for each change of set id (or the one name picks: its
// Path, or "DEST/PATH" with its bind's destination), what applying it
// would do to the host as it is now (WriteDiff): a unified diff for a
// text file, a line for anything else.
func (s *Store) Diff(w io.Writer, id, name string) error {
	set, err := s.Get(id)
	if err != nil {
		return err
	}
	fd, err := openBeneath(int(s.root.Fd()), id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("change set %s: %w", id, err)
	}
	dir := os.NewFile(uintptr(fd), path.Join(s.dir, id))
	defer dir.Close()
	d := &differ{set: set, dir: dir, hosts: map[int]*hostpath.Object{}, uppers: map[int]int{}}
	defer d.close()
	found := false
	for _, c := range set.Changes {
		if name != "" && name != c.Path && name != strings.TrimSuffix(c.Bind, "/")+"/"+c.Path {
			continue
		}
		found = true
		if err := d.one(w, c); err != nil {
			return err
		}
	}
	if name != "" && !found {
		return fmt.Errorf("change set %s has no change at %q (`tooljail changes show %s` lists them)", id, name, id)
	}
	return nil
}

// differ opens each bind's host directory and upper layer once.
type differ struct {
	set    *Set
	dir    *os.File
	hosts  map[int]*hostpath.Object // nil: not the directory the run had
	uppers map[int]int              // -1: missing
}

func (d *differ) close() {
	for _, o := range d.hosts {
		if o != nil {
			o.Close()
		}
	}
	for _, fd := range d.uppers {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func (d *differ) bind(c Change) int {
	for i, b := range d.set.Binds {
		if b.Dest == c.Bind {
			return i
		}
	}
	return -1
}

// host is bind i's directory as the run had it, or nil.
func (d *differ) host(i int) *hostpath.Object {
	if o, ok := d.hosts[i]; ok {
		return o
	}
	b := d.set.Binds[i]
	o, err := hostpath.Open(b.Host, hostpath.Options{})
	if err == nil && (!o.IsDir() || o.Stat.Dev != b.Dev || o.Stat.Ino != b.Ino) {
		o.Close()
		o = nil
	}
	if err != nil {
		o = nil
	}
	d.hosts[i] = o
	return o
}

func (d *differ) upper(i int) int {
	if fd, ok := d.uppers[i]; ok {
		return fd
	}
	fd, err := openBeneath(int(d.dir.Fd()), path.Join(upperDir, fmt.Sprint(i)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		fd = -1
	}
	d.uppers[i] = fd
	return fd
}

// one writes change c: the host's regular file now as the old side, the
// set's as the new one, where each is.
func (d *differ) one(w io.Writer, c Change) error {
	i := d.bind(c)
	var old, new io.Reader
	if i >= 0 && c.Base.Exists && c.Base.Mode&unix.S_IFMT == unix.S_IFREG {
		if h := d.host(i); h != nil {
			if fd, err := openBeneath(int(h.File.Fd()), c.Path, unix.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
				f := os.NewFile(uintptr(fd), c.Path)
				defer f.Close()
				if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
					old = f
				}
			}
		}
	}
	if i >= 0 && c.Type == TypeFile && c.Kind != Deleted {
		if up := d.upper(i); up >= 0 {
			// The command may have left it unreadable to its owner.
			if fd, restore, err := openUpper(up, c.Path, c.Mode, unix.O_RDONLY); err == nil {
				f := os.NewFile(uintptr(fd), c.Path)
				defer f.Close()
				defer restore()
				new = f
			}
		}
	}
	return WriteDiff(w, c, old, new)
}
