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
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Change is one entry of a change set with its baseline: what the host
// path was when the run ended. The command could not change the lower
// layer, so a Base that differs from the host at apply time means someone
// else changed the path (a conflict).
type Change struct {
	Entry
	Base Stamp `json:"base"`
}

// Overlay's own names in the upper layer (mounted with userxattr).
const (
	xattrOpaque   = "user.overlay.opaque"
	xattrRedirect = "user.overlay.redirect"
	xattrMetacopy = "user.overlay.metacopy"
)

// Scan lists what the command changed in one bind: upper is the bind's
// upper layer directory, lower the host directory (the lower layer; an
// O_PATH descriptor will do), bind its destination in the jail (written in
// every Entry.Bind), protect the run's protected names (IsProtected).
//
// It walks only the upper layer, plus the lower listing of each directory
// the command removed and made again (an opaque directory: the lower names
// it no longer shows are deletions). Every lower path is reached by openat2
// beneath lower with no symlink, magic link or mount crossed. The cost is
// proportional to the upper layer, never to the host tree.
//
// What an upper object means, compared with the lower path of the same name:
//   - a whiteout (character device 0/0): Deleted, typed as the lower object;
//     a deleted directory is one entry (its subtree is implied);
//   - no lower path: Created (a symlink: kind Symlink); a new directory's
//     contents are entries of their own;
//   - another type: TypeChanged;
//   - a regular file with other content (size, then sha256 or bytes):
//     Modified; the same content with other permission bits: ModeChanged;
//   - a symlink with another target: Symlink;
//   - the same type, permission bits, content and target: no entry. A copy-up
//     that changed nothing visible (open O_RDWR, touch, chown) is not a change:
//     mtime-only, owner-only and xattr-only changes are not reported.
//   - a directory that the lower layer has too (with the same mode) is only a
//     container: no entry; an opaque one also deletes every lower name it
//     does not show.
//
// FIFOs, sockets and devices are listed with Skipped set (apply does not
// make special files); so are paths that cross a mount on the host (apply
// does not either) and names that are not UTF-8 (JSON cannot keep them).
// Hard links the upper layer holds between entries: the first Path (sorted)
// is the file, the others name it in Link. Sparse files and user xattrs are
// not reported: apply copies holes as holes and user.* xattrs (not
// user.overlay.*) of every file it writes.
//
// Entries come sorted by Path (byte order), so a directory precedes what is
// in it. Protected is set by IsProtected(Path, protect).
func Scan(upper, lower *os.File, bind string, protect []string) ([]Change, error) {
	s := &scanner{bind: bind, buf: make([]byte, 64<<10)}
	up, err := reopenDir(int(upper.Fd()), ".")
	if err != nil {
		return nil, fmt.Errorf("scan the upper layer %s: %w (the change set's directory must be readable by the supervisor)", upper.Name(), err)
	}
	low, err := openInLayer(int(lower.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		unix.Close(up)
		return nil, fmt.Errorf("scan: open the host directory %s: %w", lower.Name(), err)
	}
	err = s.dir(up, low, "", false)
	unix.Close(up)
	unix.Close(low)
	if err != nil {
		return nil, err
	}
	s.finish(protect)
	return s.out, nil
}

type scanner struct {
	bind string
	out  []Change
	// ids[i] is the upper inode of out[i] when it is a regular file with
	// more than one link (for Link), else the zero id.
	ids []fileID
	buf []byte // for reading files and directories, reused
}

type fileID struct{ dev, ino uint64 }

// finish sorts the entries and sets Link, Protected and the Skipped of
// names JSON cannot keep.
func (s *scanner) finish(protect []string) {
	idx := make([]int, len(s.out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(s.out[a].Path, s.out[b].Path) })
	out := make([]Change, len(s.out))
	first := map[fileID]string{}
	for i, j := range idx {
		out[i] = s.out[j]
		c := &out[i]
		c.Protected = IsProtected(c.Path, protect)
		if !utf8.ValidString(c.Path) && c.Skipped == "" {
			c.Skipped = "the name is not UTF-8: a change set keeps only UTF-8 names; copy it by hand"
		}
		// Only an entry apply writes can be what others link to.
		if id := s.ids[j]; id != (fileID{}) && !c.Protected && c.Skipped == "" {
			if p, ok := first[id]; ok {
				c.Link = p
			} else {
				first[id] = c.Path
			}
		}
	}
	s.out, s.ids = out, nil
}

func (s *scanner) add(c Change, id fileID) {
	c.Bind = s.bind
	s.out = append(s.out, c)
	s.ids = append(s.ids, id)
}

// dir scans the upper directory up (an open directory) at rel against the
// lower directory low (an O_PATH directory, or -1 when the lower layer has
// no directory there). opaque: the lower names up does not show were
// deleted (the directory was removed and made again, or is inside one
// that was: overlay marks only the directory made over a whiteout, and a
// directory made inside it has no lower layer to merge).
func (s *scanner) dir(up, low int, rel string, opaque bool) error {
	names, err := readNames(up, s.buf)
	if err != nil {
		return fmt.Errorf("scan: list %q in the upper layer: %w", showRel(rel), err)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := s.entry(up, low, path.Join(rel, name), name, opaque); err != nil {
			return err
		}
	}
	if !opaque || low < 0 {
		return nil
	}
	lfd, err := reopenDir(low, ".")
	if err != nil {
		return fmt.Errorf("scan: list %q on the host: %w", showRel(rel), err)
	}
	lnames, err := readNames(lfd, s.buf)
	unix.Close(lfd)
	if err != nil {
		return fmt.Errorf("scan: list %q on the host: %w", showRel(rel), err)
	}
	slices.Sort(lnames)
	for _, name := range lnames {
		if _, ok := slices.BinarySearch(names, name); ok {
			continue
		}
		l, err := lstatBeneath(low, name)
		if err != nil {
			return fmt.Errorf("scan: %q on the host: %w", showRel(path.Join(rel, name)), err)
		}
		if !l.exists && !l.mount {
			continue // gone meanwhile: nothing to delete
		}
		if err := s.deleted(low, path.Join(rel, name), name, l); err != nil {
			return err
		}
	}
	return nil
}

// lowerObj is what a lower path is.
type lowerObj struct {
	exists bool
	mount  bool // another mount is there on the host
	st     unix.Stat_t
}

// lstatBeneath stats name in the lower directory dir: no symlink followed,
// no mount crossed (mount is set instead).
func lstatBeneath(dir int, name string) (lowerObj, error) {
	fd, err := openInLayer(dir, name, unix.O_PATH)
	switch {
	case errors.Is(err, unix.ENOENT):
		return lowerObj{}, nil
	case errors.Is(err, unix.EXDEV):
		return lowerObj{mount: true}, nil
	case err != nil:
		return lowerObj{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return lowerObj{}, err
	}
	return lowerObj{exists: true, st: st}, nil
}

const mountSkip = "another file system is mounted here on the host: apply does not cross mounts; change it by hand"

// deleted records the lower object name of dir (at rel) as deleted.
func (s *scanner) deleted(dir int, rel, name string, l lowerObj) error {
	c := Change{Entry: Entry{Path: rel, Kind: Deleted}}
	if l.mount {
		c.Type, c.Skipped = TypeDir, mountSkip
		s.add(c, fileID{})
		return nil
	}
	c.Type = typeOf(l.st.Mode)
	base, err := s.base(dir, rel, name, l)
	if err != nil {
		return err
	}
	c.Base = base
	s.add(c, fileID{})
	return nil
}

// base is the Stamp of the lower object l (name in dir), with its sha256
// when it is a regular file up to HashLimit.
func (s *scanner) base(dir int, rel, name string, l lowerObj) (Stamp, error) {
	if !l.exists {
		return Stamp{}, nil
	}
	b := stampOf(&l.st)
	if l.st.Mode&unix.S_IFMT == unix.S_IFREG && l.st.Size <= HashLimit {
		sum, err := hashBeneath(dir, name, &l.st, s.buf)
		if errors.Is(err, unix.EACCES) {
			// The supervisor cannot read it (nor could the command): no
			// hash, size and times decide at apply.
			return b, nil
		}
		if err != nil {
			return Stamp{}, fmt.Errorf("scan: hash %q on the host: %w", showRel(rel), err)
		}
		b.SHA256 = sum
	}
	return b, nil
}

// entry scans the upper object name of up (at rel) against low.
func (s *scanner) entry(up, low int, rel, name string, opaque bool) error {
	ust, l, err := statBoth(up, low, rel, name)
	if err != nil {
		return err
	}
	utype := ust.Mode & unix.S_IFMT
	if utype == unix.S_IFCHR && ust.Rdev == 0 { // a whiteout
		if l.exists || l.mount {
			return s.deleted(low, rel, name, l)
		}
		return nil // hides nothing (the lower path went away meanwhile)
	}
	c := Change{Entry: Entry{Path: rel, Type: typeOf(ust.Mode), Mode: fmt.Sprintf("%04o", ust.Mode&07777)}}
	if l.mount {
		c.Kind, c.Skipped = TypeChanged, mountSkip
		s.add(c, fileID{})
		return nil
	}
	if c.Base, err = s.base(low, rel, name, l); err != nil {
		return err
	}
	same := l.exists && l.st.Mode&unix.S_IFMT == utype
	sameMode := same && l.st.Mode&07777 == ust.Mode&07777
	c.Kind = kindByType(l.exists, same, utype)
	var id fileID
	switch utype {
	case unix.S_IFDIR:
		return s.directory(up, low, rel, name, c, l, opaque, sameMode)
	case unix.S_IFREG:
		if err := s.file(up, low, rel, name, &c, &ust, l); err != nil {
			return err
		}
		if ust.Nlink > 1 {
			id = fileID{ust.Dev, ust.Ino}
		}
	case unix.S_IFLNK:
		if err := symlinkEntry(up, low, rel, name, &c, same); err != nil {
			return err
		}
	default: // FIFO, socket, device
		c.Skipped = fmt.Sprintf("a %s: special files are not applied", describeType(c.Type))
		if same && c.Kind == "" && (!sameMode || ust.Rdev != l.st.Rdev) {
			c.Kind = TypeChanged
		}
	}
	if c.Kind == "" {
		return nil
	}
	s.add(c, id)
	return nil
}

// statBoth stats name in the upper layer and, when low is open, on the
// host below it.
func statBoth(up, low int, rel, name string) (ust unix.Stat_t, l lowerObj, err error) {
	if err := unix.Fstatat(up, name, &ust, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ust, l, fmt.Errorf("scan: %q in the upper layer: %w", showRel(rel), err)
	}
	if low >= 0 {
		if l, err = lstatBeneath(low, name); err != nil {
			return ust, l, fmt.Errorf("scan: %q on the host: %w", showRel(rel), err)
		}
	}
	return ust, l, nil
}

// kindByType is the kind an upper object of type utype has by its type
// alone: new (a symlink is its own kind), or of another type than the
// host's; "" when the types agree and only the content or mode can tell.
func kindByType(exists, same bool, utype uint32) string {
	switch {
	case !exists && utype == unix.S_IFLNK:
		return Symlink
	case !exists:
		return Created
	case !same:
		return TypeChanged
	}
	return ""
}

// symlinkEntry reads the upper symlink's target, and the host's when it
// is a symlink too: a new target is a change of kind Symlink. A
// symlink's own mode is always 0777 on Linux: not a change.
func symlinkEntry(up, low int, rel, name string, c *Change, same bool) error {
	t, err := readlinkAt(up, name)
	if err != nil {
		return fmt.Errorf("scan: read the symlink %q in the upper layer: %w", showRel(rel), err)
	}
	c.Target = t
	if !same {
		return nil
	}
	lt, err := readlinkAt(low, name)
	if err != nil {
		return fmt.Errorf("scan: read the symlink %q on the host: %w", showRel(rel), err)
	}
	if lt != t {
		c.Kind = Symlink
	}
	return nil
}

// directory handles an upper directory: an entry when it is new, replaces
// another type or has other permission bits, then its contents.
func (s *scanner) directory(up, low int, rel, name string, c Change, l lowerObj, opaque, sameMode bool) error {
	fd, restore, err := openUpper(up, name, c.Mode, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("scan: open %q in the upper layer: %w (the change store must be the supervisor's: check its owner and modes)", showRel(rel), err)
	}
	defer unix.Close(fd)
	defer restore() // after the contents: looking them up needs search permission
	if v, ok := getxattr(fd, xattrRedirect); ok {
		return fmt.Errorf("scan: %q in the upper layer has a redirect (%s=%q): this overlay was mounted with redirect_dir, which tooljail does not use; the change set cannot be read", showRel(rel), xattrRedirect, v)
	}
	sub := -1
	if c.Kind == "" { // the lower layer has a directory here too
		if !sameMode {
			c.Kind = ModeChanged
		}
		if v, _ := getxattr(fd, xattrOpaque); v == "y" {
			opaque = true
		}
		if sub, err = openInLayer(low, name, unix.O_PATH|unix.O_DIRECTORY); err != nil {
			return fmt.Errorf("scan: open %q on the host: %w", showRel(rel), err)
		}
		defer unix.Close(sub)
	} else {
		opaque = false
	}
	if c.Kind != "" {
		s.add(c, fileID{})
	}
	return s.dir(fd, sub, rel, opaque)
}

// file fills c for an upper regular file: its size and hash, and the kind
// when it replaces a lower regular file.
func (s *scanner) file(up, low int, rel, name string, c *Change, ust *unix.Stat_t, l lowerObj) error {
	c.Size = ust.Size
	fd, restore, err := openUpper(up, name, c.Mode, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("scan: open %q in the upper layer: %w (the change store must be the supervisor's: check its owner and modes)", showRel(rel), err)
	}
	defer unix.Close(fd)
	restore()
	if _, ok := getxattr(fd, xattrMetacopy); ok {
		return fmt.Errorf("scan: %q in the upper layer is a metacopy (its data is in the lower layer): this overlay was mounted with metacopy, which tooljail does not use; the change set cannot be read", showRel(rel))
	}
	if ust.Size <= HashLimit {
		if c.SHA256, err = hashFD(fd, s.buf); err != nil {
			return fmt.Errorf("scan: hash %q in the upper layer: %w", showRel(rel), err)
		}
	}
	if c.Kind != "" || l.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	switch {
	case ust.Size != l.st.Size:
		c.Kind = Modified
	case ust.Size <= HashLimit:
		if c.SHA256 != c.Base.SHA256 {
			c.Kind = Modified
		}
	default:
		eq, err := sameContent(fd, low, name, &l.st)
		if errors.Is(err, unix.EACCES) {
			eq, err = false, nil // cannot tell: say modified, apply's check is by size and times
		}
		if err != nil {
			return fmt.Errorf("scan: compare %q with the host's: %w", showRel(rel), err)
		}
		if !eq {
			c.Kind = Modified
		}
	}
	if c.Kind == "" && l.st.Mode&07777 != ust.Mode&07777 {
		c.Kind = ModeChanged
	}
	return nil
}

// sameContent compares the upper file fd with the lower file name of low
// (lst its stat; too big to hash), byte by byte.
func sameContent(fd, low int, name string, lst *unix.Stat_t) (bool, error) {
	lfd, err := openLowerFile(low, name, lst)
	if err != nil {
		return false, err
	}
	defer unix.Close(lfd)
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); ; {
		n, err := preadFull(fd, bufA, off)
		if err != nil {
			return false, err
		}
		m, err := preadFull(lfd, bufB, off)
		if err != nil {
			return false, err
		}
		if n != m || !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		if n < len(bufA) {
			return true, nil
		}
		off += int64(n)
	}
}

// preadFull reads buf from fd at off until it is full or the file ends.
func preadFull(fd int, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// openUpper opens the upper object name of up (perm: its permission bits,
// octal) for reading. The upper layer belongs to the change store: a
// command that made a file or directory unreadable (chmod 000) made it
// unreadable to an unprivileged supervisor too. The supervisor owns it
// then, so it adds the owner's read bit (and search, for a directory)
// while it reads; restore puts the mode back.
func openUpper(up int, name, perm string, flags int) (fd int, restore func(), err error) {
	nothing := func() {}
	fd, err = openInLayer(up, name, flags)
	if !errors.Is(err, unix.EACCES) {
		return fd, nothing, err
	}
	mode := permBits(perm)
	add := uint32(0o400)
	if flags&unix.O_DIRECTORY != 0 {
		add = 0o500
	}
	if mode&add == add || unix.Fchmodat(up, name, mode|add, 0) != nil {
		return -1, nothing, err
	}
	fd, err2 := openInLayer(up, name, flags)
	if err2 != nil {
		unix.Fchmodat(up, name, mode, 0)
		return -1, nothing, err
	}
	return fd, func() { unix.Fchmod(fd, mode) }, nil
}

// openInLayer opens rel below dir: no symlink or magic link followed
// (the last component included), nothing outside dir, no mount crossed.
func openInLayer(dir int, rel string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// reopenDir opens the directory name of dir for reading its entries.
func reopenDir(dir int, name string) (int, error) {
	return openInLayer(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
}

// openLowerFile opens the lower regular file name of low for reading and
// checks it is still the object lst describes.
func openLowerFile(low int, name string, lst *unix.Stat_t) (int, error) {
	fd, err := openInLayer(low, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Dev != lst.Dev || st.Ino != lst.Ino {
		unix.Close(fd)
		return -1, errors.New("replaced on the host while the change set was read; scan again")
	}
	return fd, nil
}

// hashBeneath is the sha256 of the lower regular file name of dir.
func hashBeneath(dir int, name string, lst *unix.Stat_t, buf []byte) (string, error) {
	fd, err := openLowerFile(dir, name, lst)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return hashFD(fd, buf)
}

// hashFD is the sha256 of the file fd from its start (pread: the offset
// is left alone), read through buf.
func hashFD(fd int, buf []byte) (string, error) {
	h := sha256.New()
	for off := int64(0); ; {
		n, err := unix.Pread(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		h.Write(buf[:n])
		off += int64(n)
	}
}

// readNames lists the directory fd (its names, no stat), from its start,
// through buf.
func readNames(fd int, buf []byte) ([]string, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return nil, errors.New("getdents returned a malformed record")
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				names = append(names, s)
			}
			b = b[reclen:]
		}
	}
}

// readlinkAt is the target of the symlink name in dir.
func readlinkAt(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// getxattr reads the xattr name of fd; ok is false when it is not set.
func getxattr(fd int, name string) (string, bool) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Fgetxattr(fd, name, buf)
		if err == unix.ERANGE {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return "", false
		}
		return string(buf[:n]), true
	}
}

func stampOf(st *unix.Stat_t) Stamp {
	return Stamp{Exists: true, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// typeOf is the Entry.Type of an st_mode.
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

func describeType(t string) string {
	switch t {
	case TypeFIFO:
		return "FIFO"
	case TypeSocket:
		return "socket"
	}
	return "device"
}

// showRel is rel for messages: the bind's root is ".".
func showRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
