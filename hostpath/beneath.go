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
