// Package hostpath opens paths of the host for a jail's supervisor: once,
// one component at a time, following a symlink only where no jailed run can
// have planted it, and it says what it opened: the type, the owner, and the
// device and inode of the object and of every directory above it. Every
// decision about a host path (may it be bound read-write, does it lie in a
// read-write bind, which part of a bind is it) is then made on these
// descriptors and identities, never on a name looked up a second time.
//
// Why a walk of its own and not openat2 with RESOLVE_IN_ROOT: a run with a
// read-write bind can leave symlinks behind (out -> /root) for the next run's
// paths to go through, and the kernel follows any symlink a path meets. The
// walk follows one only when the directory holding it is one no run may bind
// read-write (see Refuse): a system directory or anything below one, a
// top-level directory, a home directory or a parent of one. In a sticky
// world-writable directory (/tmp) it also needs the symlink to belong to the
// caller or to the directory's owner, as the kernel's fs.protected_symlinks
// rule does for the kernel's own walks. Anywhere else a symlink is an error
// that names it and its target, so the user can give the real path.
package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// ID identifies a file system object: its device and inode.
type ID struct{ Dev, Ino uint64 }

func idOf(st *unix.Stat_t) ID { return ID{Dev: st.Dev, Ino: st.Ino} }

// Elem is one step of an opened object's path: a name and what it named.
type Elem struct {
	Name string // "/" for the root
	ID   ID
}

// Object is a host path opened by Open.
type Object struct {
	// File is an O_PATH descriptor of the object (close-on-exec). The
	// caller owns it.
	File *os.File
	// Path is the path as resolved: symlinks replaced by what they name.
	Path string
	Stat unix.Stat_t
	// Chain is the root first, then every directory down to the object,
	// then the object itself.
	Chain []Elem
}

// ID is the object's device and inode.
func (o *Object) ID() ID { return idOf(&o.Stat) }

// IsDir says whether the object is a directory.
func (o *Object) IsDir() bool { return o.Stat.Mode&unix.S_IFMT == unix.S_IFDIR }

// IsSymlink says whether the object is a symlink (only with KeepSymlink).
func (o *Object) IsSymlink() bool { return o.Stat.Mode&unix.S_IFMT == unix.S_IFLNK }

// Within says whether the object is id or lies below it, and if so its
// path relative to id ("" for id itself).
func (o *Object) Within(id ID) (rel string, ok bool) {
	for i := len(o.Chain) - 1; i >= 0; i-- {
		if o.Chain[i].ID == id {
			names := make([]string, 0, len(o.Chain)-1-i)
			for _, e := range o.Chain[i+1:] {
				names = append(names, e.Name)
			}
			return strings.Join(names, "/"), true
		}
	}
	return "", false
}

// Close closes the object's descriptor.
func (o *Object) Close() error { return o.File.Close() }

// Options change how Open treats the last component.
type Options struct {
	// KeepSymlink returns a last component that is a symlink as the
	// symlink itself (how /bin -> usr/bin is shown in the jail) instead of
	// following it.
	KeepSymlink bool
}

// maxLinks bounds the symlinks one Open follows, as the kernel's 40.
const maxLinks = 40

// SymlinkError is a symlink the walk refuses to follow.
type SymlinkError struct {
	Path   string // the path asked for
	Link   string // the symlink, as resolved so far
	Target string // what it points to
	Why    string
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s: %s is a symlink (to %s) %s; give the path it stands for instead", e.Path, e.Link, e.Target, e.Why)
}

// Open opens path (absolute) from this process's root.
func Open(p string, opt Options) (*Object, error) {
	root, err := os.OpenFile("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return OpenIn(root, p, opt)
}

// OpenIn opens path (absolute) with root standing for "/": this process's
// root, or another mount namespace's (/proc/PID/root), so that the
// descriptor belongs to that namespace.
func OpenIn(root *os.File, p string, opt Options) (*Object, error) {
	return openIn(defaultRules(), root, p, opt)
}

func openIn(r *rules, root *os.File, p string, opt Options) (*Object, error) {
	o, err := newOpener(r, root)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return o.Open(p, opt)
}

// An Opener opens many paths as OpenIn does, from one root, and opens each
// directory on the way to a path's last component once: the default
// profile's two dozen binds in /etc walk /etc once, not two dozen times.
// Every path still resolves through descriptors only, now the same ones
// for the directories they share, so two paths that name one directory see
// one object even if the directory is renamed between them. Close it when
// done; the Objects it returned are the caller's.
type Opener struct {
	rules *rules
	root  *os.File
	top   frame
	dirs  map[string]frame // resolved path -> its directory, open
}

// NewOpener starts an Opener with root standing for "/", as OpenIn's.
func NewOpener(root *os.File) (*Opener, error) { return newOpener(defaultRules(), root) }

func newOpener(r *rules, root *os.File) (*Opener, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: "/", Err: err}
	}
	return &Opener{rules: r, root: root, top: frame{fd: -1, elem: Elem{Name: "/", ID: idOf(&st)}, st: st}, dirs: map[string]frame{}}, nil
}

// Open opens path (absolute) as OpenIn does.
func (o *Opener) Open(p string, opt Options) (*Object, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("%s: not an absolute path", p)
	}
	if o.dirs == nil {
		return nil, fmt.Errorf("%s: the Opener is closed", p)
	}
	return (&walker{asked: p, rules: o.rules, dirs: o.dirs}).open(o.root, o.top.elem, o.top.st, p, opt)
}

// Close closes the directories the Opener kept.
func (o *Opener) Close() {
	for _, f := range o.dirs {
		unix.Close(f.fd)
	}
	o.dirs = nil
}

// open walks p from root (whose chain element and stat are top) and
// returns what it names.
func (w *walker) open(root *os.File, top Elem, st unix.Stat_t, p string, opt Options) (*Object, error) {
	defer w.closeAll()
	w.rootFD = int(root.Fd())
	w.push(-1, top, st)
	if err := w.walk(path.Clean(p), opt); err != nil {
		return nil, err
	}
	last := w.stack[len(w.stack)-1]
	fd := last.fd
	if fd < 0 { // the root itself
		var err error
		if fd, err = unix.Openat(w.rootFD, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return nil, &os.PathError{Op: "open", Path: "/", Err: err}
		}
	} else if last.shared { // the Opener's: the Object gets its own
		var err error
		if fd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return nil, &os.PathError{Op: "dup", Path: w.resolved(), Err: err}
		}
	} else {
		w.stack[len(w.stack)-1].fd = -1 // handed to the Object
	}
	o := &Object{File: os.NewFile(uintptr(fd), w.resolved()), Path: w.resolved(), Stat: last.st}
	o.Chain = append(o.Chain, w.base...)
	for _, f := range w.stack {
		o.Chain = append(o.Chain, f.elem)
	}
	return o, nil
}

type frame struct {
	fd     int // -1 for the root (the caller's descriptor)
	elem   Elem
	st     unix.Stat_t
	shared bool // fd is an Opener's, kept open after the walk
}

type walker struct {
	asked  string
	rules  *rules // nil: a tree's walk (OpenInTree), which follows every symlink
	rootFD int
	stack  []frame
	links  int
	// prefix and base are a tree's path and chain above its root
	// (OpenInTree): resolved paths and chains continue them.
	prefix string
	base   []Elem
	// dirs, when not nil, are an Opener's directories by resolved path:
	// taken from there instead of opened again, and added to.
	dirs map[string]frame
}

func (w *walker) push(fd int, e Elem, st unix.Stat_t) {
	w.stack = append(w.stack, frame{fd: fd, elem: e, st: st})
}

func (w *walker) dirFD() int {
	if fd := w.stack[len(w.stack)-1].fd; fd >= 0 {
		return fd
	}
	return w.rootFD
}

// popTo keeps the first n frames.
func (w *walker) popTo(n int) {
	for _, f := range w.stack[n:] {
		if f.fd >= 0 && !f.shared {
			unix.Close(f.fd)
		}
	}
	w.stack = w.stack[:n]
}

func (w *walker) closeAll() { w.popTo(0) }

func (w *walker) resolved() string {
	names := make([]string, 0, len(w.stack))
	for _, f := range w.stack[1:] {
		names = append(names, f.elem.Name)
	}
	if w.prefix != "" {
		return path.Join(append([]string{w.prefix}, names...)...)
	}
	return "/" + strings.Join(names, "/")
}

// walk resolves p's components onto the stack.
func (w *walker) walk(p string, opt Options) error {
	todo := splitPath(p)
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			if len(w.stack) > 1 {
				w.popTo(len(w.stack) - 1)
			}
			continue
		}
		last := len(todo) == 0
		// A directory on the way may be one an earlier walk opened. The
		// last component is always looked up afresh: it is what the
		// caller asked for.
		var key string
		if w.dirs != nil && !last {
			key = path.Join(w.resolved(), name)
			if f, ok := w.dirs[key]; ok {
				w.stack = append(w.stack, f)
				continue
			}
		}
		fd, st, err := openComponent(w.dirFD(), name)
		if err != nil {
			return &os.PathError{Op: "open", Path: path.Join(w.resolved(), name), Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if last && opt.KeepSymlink {
				w.push(fd, Elem{Name: name, ID: idOf(&st)}, st)
				return nil
			}
			target, err := w.follow(fd, name, &st)
			unix.Close(fd)
			if err != nil {
				return err
			}
			if path.IsAbs(target) {
				w.popTo(1)
			}
			todo = append(splitPath(target), todo...)
		case unix.S_IFDIR:
			f := frame{fd: fd, elem: Elem{Name: name, ID: idOf(&st)}, st: st}
			if key != "" {
				f.shared = true
				w.dirs[key] = f
			}
			w.stack = append(w.stack, f)
		default:
			if !last {
				unix.Close(fd)
				return &os.PathError{Op: "open", Path: path.Join(w.resolved(), name), Err: unix.ENOTDIR}
			}
			w.push(fd, Elem{Name: name, ID: idOf(&st)}, st)
		}
	}
	return nil
}

// follow decides whether the symlink name (open as fd) in the directory on
// top of the stack may be followed, and returns its target.
func (w *walker) follow(fd int, name string, st *unix.Stat_t) (string, error) {
	link := path.Join(w.resolved(), name)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: link, Err: err}
	}
	target := string(buf[:n])
	if w.links++; w.links > maxLinks {
		return "", &os.PathError{Op: "open", Path: w.asked, Err: unix.ELOOP}
	}
	if w.rules == nil {
		return target, nil // in a tree: it cannot lead out of it
	}
	dir := w.stack[len(w.stack)-1]
	chain := make([]Elem, len(w.stack))
	for i, f := range w.stack {
		chain[i] = f.elem
	}
	if why := followRefusal(w.rules.protects(chain), dirFacts(&dir.st), st.Uid, w.rules.owners); why != "" {
		return "", &SymlinkError{Path: w.asked, Link: link, Target: target, Why: why}
	}
	return target, nil
}

func dirFacts(st *unix.Stat_t) dirInfo {
	return dirInfo{
		uid:         st.Uid,
		sticky:      st.Mode&unix.S_ISVTX != 0,
		sharedWrite: st.Mode&0o022 != 0,
	}
}

// dirInfo is what the symlink rule needs of the directory holding a link.
type dirInfo struct {
	uid         uint32
	sticky      bool // only an entry's owner may rename or remove it (/tmp)
	sharedWrite bool // writable by its group or by everyone
}

// followRefusal says why a symlink owned by linkUID in dir may not be
// followed by the caller, or "" when it may. protected says whether dir is one
// that no run may bind read-write. Even there a link is trusted only when
// nobody but the caller and root can have put it there: the link and the
// directory belong to the caller or root (or an owner outside this user
// namespace, see owners), and no one else may write the
// directory, unless it is sticky (then the link's owner is all that
// counts, as the kernel's fs.protected_symlinks has it). So root follows
// no link a user made in that user's home.
func followRefusal(protected bool, dir dirInfo, linkUID uint32, who owners) string {
	switch {
	case !protected:
		return "in a directory a jailed run may write"
	case !who.trusted(linkUID):
		return fmt.Sprintf("owned by uid %d, neither you nor root", linkUID)
	case dir.sticky:
		return ""
	case !who.trusted(dir.uid):
		return fmt.Sprintf("in a directory of uid %d, neither you nor root", dir.uid)
	case dir.sharedWrite:
		return "in a directory its group or everyone may write"
	}
	return ""
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// openComponent opens one name in dir without following anything.
func openComponent(dir int, name string) (int, unix.Stat_t, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	}
	var st unix.Stat_t
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dir, name, &how)
		// RESOLVE_BENEATH gives up on a walk that raced with a rename or
		// mount anywhere and asks for another try.
		if errors.Is(err, unix.EAGAIN) && i < 100 {
			continue
		}
		if err != nil {
			return -1, st, err
		}
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, st, err
		}
		return fd, st, nil
	}
}
