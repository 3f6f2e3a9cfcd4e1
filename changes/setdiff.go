package changes

import (
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
	set, err := diffableSet(dir, id)
	if err != nil {
		return err
	}
	pick := pickEntries(set.Changes, p)
	if len(pick) == 0 {
		return fmt.Errorf("change set %s has no entry %q (`tooljail changes show %s` lists them)", id, p, id)
	}
	roots := diffRoots{hosts: map[string]*hostpath.Object{}, uppers: map[string]int{}}
	defer roots.close()
	if err := roots.open(dir, id, set.Binds); err != nil {
		return err
	}
	for _, i := range pick {
		if err := roots.diff(w, id, set.Changes[i], write); err != nil {
			return err
		}
	}
	return nil
}

// diffableSet reads the set in dir, refusing one that has no copies to
// compare: still being recorded, or applied.
func diffableSet(dir *os.File, id string) (*Set, error) {
	set, err := readRecorded(dir, id)
	if err != nil {
		return nil, err
	}
	if set.State == StateApplied {
		return nil, fmt.Errorf("change set %s is applied: the host has its changes, and the set keeps no copy to compare", id)
	}
	return set, nil
}

// pickEntries is the indexes of the changes Diff shows for p: all for "",
// else those whose Path is p or whose DEST/PATH is.
func pickEntries(changes []Change, p string) []int {
	var pick []int
	for i, c := range changes {
		if p == "" || c.Path == p || path.Join(c.Bind, c.Path) == path.Clean(p) {
			pick = append(pick, i)
		}
	}
	return pick
}

// diffRoots are the two sides of a set's binds, by destination: the host
// directory as it is now and the set's upper layer.
type diffRoots struct {
	hosts  map[string]*hostpath.Object
	uppers map[string]int
}

// open opens both sides of every bind, refusing a host directory that is
// no longer the one the run had.
func (r diffRoots) open(dir *os.File, id string, binds []BindInfo) error {
	for n, b := range binds {
		o, err := hostpath.Open(b.Host, hostpath.Options{})
		if err != nil {
			return fmt.Errorf("change set %s: bind %s: %w", id, b.Dest, err)
		}
		r.hosts[b.Dest] = o
		if o.Stat.Dev != b.Dev || o.Stat.Ino != b.Ino {
			return fmt.Errorf("change set %s: %s is no longer the directory the run had: it was moved or replaced", id, b.Host)
		}
		fd, err := openBeneath(int(dir.Fd()), path.Join(upperDir, fmt.Sprint(n)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("change set %s: its copy of %s: %w", id, b.Dest, err)
		}
		r.uppers[b.Dest] = fd
	}
	return nil
}

func (r diffRoots) close() {
	for _, o := range r.hosts {
		o.Close()
	}
	for _, fd := range r.uppers {
		unix.Close(fd)
	}
}

// diff writes one entry: the host's regular file against the set's copy,
// each side a plain nil when it has none.
func (r diffRoots) diff(w io.Writer, id string, c Change, write diffWriter) error {
	host, ok := r.hosts[c.Bind]
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
		f, restore, err := openCopy(r.uppers[c.Bind], c)
		if err != nil {
			return fmt.Errorf("change set %s: its copy of %s: %w", id, path.Join(c.Bind, c.Path), err)
		}
		defer f.Close()
		defer restore() // before the close: it chmods the descriptor
		new = f
	}
	return write(w, c, old, new)
}

// openCopy opens the set's copy of a changed file for reading; restore
// puts back a mode the command left unreadable to its owner.
func openCopy(upper int, c Change) (f *os.File, restore func(), err error) {
	if f := openRegular(upper, c.Path); f != nil {
		return f, func() {}, nil
	}
	fd, put, err := openUpper(upper, c.Path, c.Mode, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), c.Path), put, nil
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
