package hostpath

import (
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlinkBeneath is OpenBeneath's answer for a path with a symlink in it.
var ErrSymlinkBeneath = errors.New("a symlink on the way")

// OpenBeneath opens rel (relative, no "..") below the directory o, one
// component at a time, following no symlink (ErrSymlinkBeneath) and never
// leaving o. The Object's Chain continues o's, so Within works on it.
func (o *Object) OpenBeneath(rel string) (*Object, error) {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &os.PathError{Op: "open", Path: rel, Err: unix.EINVAL}
	}
	chain := append([]Elem(nil), o.Chain...)
	dir := int(o.File.Fd())
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		fd, st, err := openComponent(dir, name)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path.Join(o.Path, rel), Err: err}
		}
		fds = append(fds, fd)
		chain = append(chain, Elem{Name: name, ID: idOf(&st)})
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return nil, &os.PathError{Op: "open", Path: path.Join(o.Path, strings.Join(parts[:i+1], "/")), Err: ErrSymlinkBeneath}
		case unix.S_IFDIR:
		default:
			if i+1 < len(parts) {
				return nil, &os.PathError{Op: "open", Path: path.Join(o.Path, rel), Err: unix.ENOTDIR}
			}
		}
		dir = fd
		if i+1 == len(parts) {
			fds = fds[:len(fds)-1] // handed to the Object
			return &Object{File: os.NewFile(uintptr(fd), path.Join(o.Path, rel)), Path: path.Join(o.Path, rel), Stat: st, Chain: chain}, nil
		}
	}
	panic("unreachable")
}

// A Walker opens many paths below one directory as OpenBeneath does, but
// opens each directory on the way once: a run that protects a dozen paths
// in .git does not walk from the bind's root a dozen times. Close it when
// done; the Objects it returned are the caller's.
type Walker struct {
	o    *Object
	dirs map[string]walkDir // rel -> the directory's O_PATH fd and chain
}

type walkDir struct {
	fd    int
	chain []Elem
	err   error // why rel cannot be walked through, or nil
}

// Walk starts a Walker below o.
func (o *Object) Walk() *Walker { return &Walker{o: o, dirs: map[string]walkDir{}} }

// dir is the directory rel ("" for the root), opened once.
func (w *Walker) dir(rel string) walkDir {
	if rel == "" {
		return walkDir{fd: int(w.o.File.Fd()), chain: w.o.Chain}
	}
	if d, ok := w.dirs[rel]; ok {
		return d
	}
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	d := walkDir{fd: -1}
	p := w.dir(parent)
	switch {
	case p.err != nil:
		d.err = p.err
	default:
		fd, st, err := openComponent(p.fd, name)
		switch {
		case err != nil:
			d.err = err
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			unix.Close(fd)
			d.err = ErrSymlinkBeneath
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			unix.Close(fd)
			d.err = unix.ENOTDIR
		default:
			d.fd = fd
			d.chain = append(append(make([]Elem, 0, len(p.chain)+1), p.chain...), Elem{Name: name, ID: idOf(&st)})
		}
	}
	w.dirs[rel] = d
	return d
}

// Open is OpenBeneath(rel), through the directories already opened.
func (w *Walker) Open(rel string) (*Object, error) {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &os.PathError{Op: "open", Path: rel, Err: unix.EINVAL}
	}
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	full := path.Join(w.o.Path, rel)
	d := w.dir(parent)
	if d.err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: d.err}
	}
	fd, st, err := openComponent(d.fd, name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: full, Err: ErrSymlinkBeneath}
	}
	chain := append(append(make([]Elem, 0, len(d.chain)+1), d.chain...), Elem{Name: name, ID: idOf(&st)})
	return &Object{File: os.NewFile(uintptr(fd), full), Path: full, Stat: st, Chain: chain}, nil
}

// Close closes the directories the Walker opened.
func (w *Walker) Close() {
	for _, d := range w.dirs {
		if d.fd >= 0 {
			unix.Close(d.fd)
		}
	}
	w.dirs = nil
}
