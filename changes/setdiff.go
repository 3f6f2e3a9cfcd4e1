package changes

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Diff writes what the change set id does (WriteDiff per entry): every
// entry when p is "", else the entry whose Path is p, or "DEST/PATH"
// naming the bind's destination too. The old side is the host's file as
// it is now, the new one the set's copy, both opened below their roots
// following no symlink. An applied set keeps no copy to compare.
func (s *Store) Diff(w io.Writer, id, p string) error {
	return s.diffWith(w, id, p, WriteDiff)
}

type diffWriter func(w io.Writer, c Change, old, new io.Reader) error

func (s *Store) diffWith(w io.Writer, id, p string, write diffWriter) error {
	dir, err := s.openSet(id, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	set, err := readSet(dir)
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("change set %s is still being recorded", id)
	}
	if err != nil {
		return fmt.Errorf("change set %s: %w", id, err)
	}
	if set.State == StateApplied {
		return fmt.Errorf("change set %s is applied: the host has its changes, and the set keeps no copy to compare", id)
	}
	var pick []int
	for i, c := range set.Changes {
		if p == "" || c.Path == p || path.Join(c.Bind, c.Path) == path.Clean(p) {
			pick = append(pick, i)
		}
	}
	if len(pick) == 0 {
		return fmt.Errorf("change set %s has no entry %q (`tooljail changes show %s` lists them)", id, p, id)
	}
	hosts := map[string]*hostpath.Object{}
	uppers := map[string]int{}
	defer func() {
		for _, o := range hosts {
			o.Close()
		}
		for _, fd := range uppers {
			unix.Close(fd)
		}
	}()
	for n, b := range set.Binds {
		o, err := hostpath.Open(b.Host, hostpath.Options{})
		if err != nil {
			return fmt.Errorf("change set %s: bind %s: %w", id, b.Dest, err)
		}
		hosts[b.Dest] = o
		if o.Stat.Dev != b.Dev || o.Stat.Ino != b.Ino {
			return fmt.Errorf("change set %s: %s is no longer the directory the run had: it was moved or replaced", id, b.Host)
		}
		fd, err := openBeneath(int(dir.Fd()), path.Join(upperDir, fmt.Sprint(n)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("change set %s: its copy of %s: %w", id, b.Dest, err)
		}
		uppers[b.Dest] = fd
	}
	for _, i := range pick {
		c := set.Changes[i]
		host, ok := hosts[c.Bind]
		if !ok || !validRel(c.Path) {
			return fmt.Errorf("change set %s: entry %q in %q: not a path of one of its binds; the set is damaged", id, c.Path, c.Bind)
		}
		var old, new io.Reader // plain nils when absent
		if c.Base.Exists && c.Base.Mode&unix.S_IFMT == unix.S_IFREG {
			if f := openRegular(int(host.File.Fd()), c.Path); f != nil {
				defer f.Close()
				old = f
			}
		}
		if c.Kind != Deleted && c.Type == TypeFile {
			f := openRegular(uppers[c.Bind], c.Path)
			restore := func() {}
			if f == nil {
				// The command may have left it unreadable to its owner.
				fd, put, err := openUpper(uppers[c.Bind], c.Path, c.Mode, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
				if err != nil {
					return fmt.Errorf("change set %s: its copy of %s: %w", id, path.Join(c.Bind, c.Path), err)
				}
				f, restore = os.NewFile(uintptr(fd), c.Path), put
			}
			defer f.Close()
			defer restore() // before the close: it chmods the descriptor
			new = f
		}
		if err := write(w, c, old, new); err != nil {
			return err
		}
	}
	return nil
}

// openRegular opens rel below dir for reading if it is a regular file
// (no symlink on the way), else nil.
func openRegular(dir int, rel string) *os.File {
	fd, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), rel)
}
