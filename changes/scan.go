package changes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Change is an Entry with what apply checks before it writes: the host
// path's stamp when the run ended (its baseline).
type Change struct {
	Entry
	Base Stamp `json:"base"`
}

// Scan lists the changes of one bind: upper is the overlay's upper layer
// for it, lower the host directory that was its lower layer (an O_PATH
// descriptor will do), bind its destination in the jail, protect the
// run's protected names (IsProtected).
//
// Only the upper layer is walked, and below a directory the command
// removed and made again (opaque), the lower directory's names: the cost
// is the change set's, never the tree's. The lower layer is reached
// beneath lower without following a symlink or crossing a mount (the
// overlay did not show other mounts either).
//
// What the upper layer holds that is no change is left out: a file
// copied up because it was opened for writing, or whose owner or times
// alone changed (a change of mtime alone is not reported), and a
// directory copied up because something below it changed.
func Scan(upper, lower *os.File, bind string, protect []string) ([]Change, error) {
	s := &scanner{bind: bind, protect: protect, links: map[[2]uint64][]string{}, linkOf: map[string][2]uint64{}}
	up, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", upper.Fd()), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("scan %s: open the upper layer: %w", bind, err)
	}
	defer unix.Close(up)
	lo, err := unix.Openat2(int(lower.Fd()), ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC})
	if err != nil {
		return nil, fmt.Errorf("scan %s: open the host directory: %w", bind, err)
	}
	defer unix.Close(lo)
	if err := s.dir("", up, lo, false); err != nil {
		return nil, fmt.Errorf("scan %s: %w", bind, err)
	}
	sort.Slice(s.out, func(i, j int) bool { return s.out[i].Path < s.out[j].Path })
	s.hardLinks()
	return s.out, nil
}

type scanner struct {
	bind    string
	protect []string
	out     []Change
	// links are the names of the upper layer's regular files that have
	// more than one, by device and inode; linkOf the other way round.
	links  map[[2]uint64][]string
	linkOf map[string][2]uint64
}

// names lists a directory's entries, sorted.
func names(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	n, err := f.Readdirnames(-1)
	slices.Sort(n)
	return n, err
}

// lowerAt opens name in the lower directory ld (-1: there is none) as
// O_PATH without following a symlink or crossing a mount, and stats it:
// -1 and a zero stat when it does not exist.
func lowerAt(ld int, name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if ld < 0 {
		return -1, st, nil
	}
	fd, err := unix.Openat2(ld, name, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return -1, st, nil
	case errors.Is(err, unix.EXDEV):
		// Another file system mounted there: the overlay showed the
		// directory beneath it, which the host cannot be asked about
		// through this bind. Treated as absent.
		return -1, st, nil
	case err != nil:
		return -1, st, fmt.Errorf("%s in the host directory: %w", name, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// dir compares the upper directory ud (rel below the bind) with the lower
// one ld (-1: none); opaque: the command removed the lower one and made
// this one, so the lower entries it lacks are deleted.
func (s *scanner) dir(rel string, ud, ld int, opaque bool) error {
	upNames, err := names(ud)
	if err != nil {
		return fmt.Errorf("%s: list the upper layer: %w", orDot(rel), err)
	}
	for _, name := range upNames {
		if err := s.entry(path.Join(rel, name), name, ud, ld); err != nil {
			return err
		}
	}
	if !opaque || ld < 0 {
		return nil
	}
	lowNames, err := names(ld)
	if err != nil {
		return fmt.Errorf("%s: list the host directory: %w", orDot(rel), err)
	}
	for _, name := range lowNames {
		if _, ok := slices.BinarySearch(upNames, name); ok {
			continue
		}
		lf, lst, err := lowerAt(ld, name)
		if err != nil {
			return err
		}
		if lf < 0 {
			continue
		}
		err = s.add(path.Join(rel, name), Deleted, &lst, nil, lf, -1, "")
		unix.Close(lf)
		if err != nil {
			return err
		}
	}
	return nil
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// entry compares one name of an upper directory with the lower one.
func (s *scanner) entry(rel, name string, ud, ld int) error {
	var ust unix.Stat_t
	if err := unix.Fstatat(ud, name, &ust, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: stat in the upper layer: %w", rel, err)
	}
	lf, lst, err := lowerAt(ld, name)
	if err != nil {
		return err
	}
	if lf >= 0 {
		defer unix.Close(lf)
	}
	utype, ltype := ust.Mode&unix.S_IFMT, lst.Mode&unix.S_IFMT
	if lf < 0 {
		ltype = 0
	}
	switch {
	case isWhiteout(&ust):
		if lf < 0 {
			return nil // nothing below to delete
		}
		return s.add(rel, Deleted, &lst, nil, lf, -1, "")
	case utype == unix.S_IFDIR:
		return s.subdir(rel, name, ud, &ust, lf, &lst, ltype)
	}
	kind, err := fileKind(ud, name, &ust, lf, &lst, ltype)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if kind == "" {
		return nil
	}
	return s.add(rel, kind, &lst, &ust, lf, ud, name)
}

// subdir handles a directory of the upper layer.
func (s *scanner) subdir(rel, name string, ud int, ust *unix.Stat_t, lf int, lst *unix.Stat_t, ltype uint32) error {
	sub, err := unix.Openat(ud, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: open in the upper layer: %w", rel, err)
	}
	defer unix.Close(sub)
	var kind string
	lowerDir := -1
	switch {
	case lf < 0:
		kind = Created
	case ltype != unix.S_IFDIR:
		kind = TypeChanged
	default:
		lowerDir = lf
		if ust.Mode&07777 != lst.Mode&07777 {
			kind = ModeChanged
		}
	}
	if kind != "" {
		if err := s.add(rel, kind, lst, ust, lf, ud, name); err != nil {
			return err
		}
	}
	opaque := lowerDir >= 0 && isOpaque(sub)
	return s.dir(rel, sub, lowerDir, opaque)
}

// isWhiteout says whether an upper object is overlayfs's mark of a
// deleted path: a character device 0/0.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// isOpaque says whether an upper directory hides the lower one's entries.
func isOpaque(fd int) bool {
	buf := make([]byte, 4)
	n, err := unix.Fgetxattr(fd, "user.overlay.opaque", buf)
	return err == nil && n >= 1 && (buf[0] == 'y' || buf[0] == 'x')
}

// fileKind is the kind of change of a non-directory upper object against
// the lower one (ltype 0: none); "" when it is no change.
func fileKind(ud int, name string, ust *unix.Stat_t, lf int, lst *unix.Stat_t, ltype uint32) (string, error) {
	utype := ust.Mode & unix.S_IFMT
	switch {
	case ltype == 0:
		if utype == unix.S_IFLNK {
			return Symlink, nil
		}
		return Created, nil
	case ltype != utype:
		return TypeChanged, nil
	case utype == unix.S_IFLNK:
		a, err := readlinkAt(ud, name)
		if err != nil {
			return "", err
		}
		b, err := readlinkAt(lf, "")
		if err != nil {
			return "", err
		}
		if a != b {
			return Symlink, nil
		}
		return "", nil
	case utype == unix.S_IFREG:
		same := ust.Size == lst.Size
		if same {
			var err error
			if same, err = sameContent(ud, name, lf); err != nil {
				return "", err
			}
		}
		switch {
		case !same:
			return Modified, nil
		case ust.Mode&07777 != lst.Mode&07777:
			return ModeChanged, nil
		}
		return "", nil
	default: // a FIFO, socket or device made again
		if ust.Mode&07777 != lst.Mode&07777 {
			return ModeChanged, nil
		}
		return "", nil
	}
}

func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", fmt.Errorf("readlink: %w", err)
	}
	return string(buf[:n]), nil
}

// sameContent compares an upper file with the lower one byte for byte.
func sameContent(ud int, name string, lf int) (bool, error) {
	a, err := openFile(ud, name)
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := reopen(lf)
	if err != nil {
		return false, err
	}
	defer b.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == io.EOF || eb == io.ErrUnexpectedEOF, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, nil
		}
	}
}

func openFile(dir int, name string) (*os.File, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// reopen opens an O_PATH descriptor of a regular file for reading.
func reopen(fd int) (*os.File, error) {
	r, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open the host's file: %w", err)
	}
	return os.NewFile(uintptr(r), "lower"), nil
}

// hashFile is the sha256 of a regular file up to HashLimit, "" above it.
func hashFile(f *os.File, size int64) (string, error) {
	if size > HashLimit {
		return "", nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, HashLimit+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// typeOf names a file type (Entry.Type).
func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	case unix.S_IFIFO:
		return TypeFIFO
	case unix.S_IFSOCK:
		return TypeSocket
	default:
		return TypeDevice
	}
}

// add records one change: kind, the lower object (lst, lf; lf < 0 when
// absent) and the upper one (ust in directory ud as name; nil for a
// deletion).
func (s *scanner) add(rel, kind string, lst, ust *unix.Stat_t, lf, ud int, name string) error {
	c := Change{Entry: Entry{Bind: s.bind, Path: rel, Kind: kind}}
	c.Base = stampOf(lst, lf >= 0)
	if lf >= 0 && lst.Mode&unix.S_IFMT == unix.S_IFREG && kind != Created && kind != ModeChanged {
		// What the set replaces or deletes: apply sees an edit made
		// since by its content too.
		f, err := reopen(lf)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		c.Base.SHA256, err = hashFile(f, lst.Size)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: hash the host's file: %w", rel, err)
		}
	}
	if ust == nil {
		c.Type = typeOf(lst.Mode)
	} else {
		c.Type = typeOf(ust.Mode)
		c.Mode = fmt.Sprintf("%04o", ust.Mode&07777)
		switch ust.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			c.Size = ust.Size
			f, err := openFile(ud, name)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			c.SHA256, err = hashFile(f, ust.Size)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: hash: %w", rel, err)
			}
			if ust.Nlink > 1 {
				k := [2]uint64{ust.Dev, ust.Ino}
				s.links[k] = append(s.links[k], rel)
				s.linkOf[rel] = k
			}
		case unix.S_IFLNK:
			t, err := readlinkAt(ud, name)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			c.Target = t
		case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
			c.Skipped = "a " + c.Type + ": special files are not applied"
		}
	}
	c.Protected = protectedChange(c.Entry, s.protect)
	s.out = append(s.out, c)
	return nil
}

// hardLinks marks, among the names of one new file, all but the first in
// Path order as links to it (s.out is sorted by then).
func (s *scanner) hardLinks() {
	first := map[[2]uint64]string{}
	for k, paths := range s.links {
		if len(paths) > 1 {
			first[k] = slices.Min(paths)
		}
	}
	if len(first) == 0 {
		return
	}
	for i := range s.out {
		c := &s.out[i]
		if k, ok := s.linkOf[c.Path]; ok {
			if f, ok := first[k]; ok && f != c.Path {
				c.Link = f
			}
		}
	}
}

// stampOf is a host object's stamp (absent when !exists).
func stampOf(st *unix.Stat_t, exists bool) Stamp {
	if !exists {
		return Stamp{}
	}
	return Stamp{
		Exists: true, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}
}

// IsProtected says whether rel (a path relative to a bind) is one of the
// protected names or below one: at the bind's root, or below one or two
// directories (the repositories jail/protect.go looks for), and for the
// names of a repository's git directory (".git/...", ".gitmodules") at
// any depth, since a repository the command makes anywhere is one git
// will run hooks from.
func IsProtected(rel string, names []string) bool {
	comps := strings.Split(rel, "/")
	for _, n := range names {
		m := strings.Split(n, "/")
		for d := 0; d+len(m) <= len(comps); d++ {
			if d > 2 && !anyDepth(n) {
				break
			}
			if slices.Equal(comps[d:d+len(m)], m) {
				return true
			}
		}
	}
	return false
}

func anyDepth(name string) bool {
	return strings.HasPrefix(name, ".git/") || name == ".gitmodules"
}

// protectedChange says whether applying e would write a protected path:
// e's path is one or below one (IsProtected), or e deletes or replaces a
// directory that holds where one would be.
func protectedChange(e Entry, names []string) bool {
	if IsProtected(e.Path, names) {
		return true
	}
	if e.Kind != Deleted && e.Kind != TypeChanged {
		return false
	}
	comps := strings.Split(e.Path, "/")
	for _, n := range names {
		m := strings.Split(n, "/")
		for d := 0; d < len(comps); d++ {
			if d > 2 && !anyDepth(n) {
				break
			}
			tail := comps[d:]
			if len(tail) < len(m) && slices.Equal(tail, m[:len(tail)]) {
				return true
			}
		}
	}
	return false
}

// Summarize is what a report lists of a set: its first MaxEntries
// entries, the totals of all, and whether entries were left out.
func Summarize(all []Change) (entries []Entry, t Totals, truncated bool) {
	entries = []Entry{}
	for _, c := range all {
		if len(entries) < MaxEntries {
			entries = append(entries, c.Entry)
		} else {
			truncated = true
		}
		t.Entries++
		switch c.Kind {
		case Created:
			t.Created++
		case Modified:
			t.Modified++
		case Deleted:
			t.Deleted++
		case TypeChanged:
			t.TypeChanged++
		case ModeChanged:
			t.ModeChanged++
		case Symlink:
			t.Symlink++
		}
		if c.Type == TypeFile && c.Kind != Deleted && c.Kind != ModeChanged && c.Link == "" {
			t.Bytes += c.Size
		}
	}
	return entries, t, truncated
}
