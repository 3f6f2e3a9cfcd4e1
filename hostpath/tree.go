package hostpath

import (
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// A tree is a directory used as the root of a file system: a debootstrap,
// an unpacked container image's rootfs (a jail's filesystem.root). Its
// symlinks were written for that root, so they are resolved in it: an
// absolute target starts again at the tree's root, and ".." stops there,
// as the kernel's RESOLVE_IN_ROOT has it. No symlink in the tree can
// lead out of it (DIR/usr -> /usr is a loop, not the host's /usr), so
// every one is followed, whoever made it: what it can reach is the tree,
// which the jail shows read-only anyway. Every component is opened
// beneath the one before (RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, one
// name at a time), so no path of the host is looked up.

// OpenInTree opens p (absolute, a path as the tree's own root sees it) in
// the tree o (a directory), symlinks resolved in the tree. KeepSymlink
// keeps a last component that is a symlink, as OpenIn does. The Object's
// Path and Chain continue o's.
func (o *Object) OpenInTree(p string, opt Options) (*Object, error) {
	if !o.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", o.Path)
	}
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("%s: not an absolute path", p)
	}
	w := &walker{asked: path.Join(o.Path, p), prefix: o.Path, base: o.Chain[:len(o.Chain)-1]}
	return w.open(o.File, o.Chain[len(o.Chain)-1], o.Stat, p, opt)
}

// CheckTree says why the opened directory o may not be used as a tree
// (OpenInTree) by this process, or nil: it must be a
// directory that belongs to root or the caller (or, in a user namespace,
// to an owner outside it, as the walk's trust has it) and that neither its
// group nor anyone else may write. Anyone else who could change the tree
// would choose the programs and libraries the jail runs.
func CheckTree(o *Object) error {
	r := defaultRules()
	if why := r.treeRefusal(o.Chain); why != "" {
		return fmt.Errorf("%s %s, not a root file system of its own: every symlink in a root directory is followed, so it must hold no directory that a jailed run may write; give the directory of an unpacked root file system", o.Path, why)
	}
	return checkTree(o.Path, &o.Stat, r.owners)
}

// treeRefusal says why the directory at the end of chain may not be a
// tree, or "": the host's root, a top-level directory or a home directory
// or a parent of one. Their subtrees hold what jailed runs write (a
// workdir, /tmp), where a run may plant a symlink that a walk in the tree
// would follow, since it follows every one.
func (r *rules) treeRefusal(chain []Elem) string {
	if len(chain) == 1 {
		return "is the host's root directory"
	}
	last := chain[len(chain)-1].ID
	if top, ok := r.top[last]; ok {
		return fmt.Sprintf("is the top-level directory %s", top)
	}
	if h, ok := r.homes[last]; ok {
		return fmt.Sprintf("is %s, a home directory or a directory that holds one", h)
	}
	return ""
}

func checkTree(p string, st *unix.Stat_t, who owners) error {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory (mode %#o); give the directory of an unpacked root file system", p, st.Mode&unix.S_IFMT)
	}
	if !who.trusted(st.Uid) {
		whom := fmt.Sprintf("neither you (uid %d) nor root", who.euid)
		if who.euid == 0 {
			whom = "not root"
		}
		return fmt.Errorf("%s belongs to uid %d, %s: whoever owns it chooses the programs the jail runs; fix: chown it to yourself or root (chown -R), or unpack the root file system again as yourself", p, st.Uid, whom)
	}
	if perm := st.Mode & 0o7777; perm&0o022 != 0 {
		return fmt.Errorf("%s has mode %#o: its group or everyone may write it and so choose the programs the jail runs; fix: chmod go-w %s", p, perm, p)
	}
	return nil
}

// CheckTreeEntry says why an object opened in a tree (OpenInTree) may not
// be shown from it, or nil: as for the tree itself (CheckTree), nobody
// but its owner may write it, unless it is a symlink (whose mode means
// nothing). A tree's usr writable by everyone is refused even though the
// tree itself is not.
func CheckTreeEntry(o *Object) error {
	return checkTreeEntry(o.Path, &o.Stat)
}

func checkTreeEntry(p string, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	if perm := st.Mode & 0o7777; perm&0o022 != 0 {
		return fmt.Errorf("%s has mode %#o: its group or everyone may write it and so change what the jail runs; fix: chmod go-w %s", p, perm, p)
	}
	return nil
}

// OpenTreeIn opens the tree p (a host path, by the rules of OpenIn, with
// root standing for "/") and checks it (CheckTree).
func OpenTreeIn(root *os.File, p string) (*Object, error) {
	o, err := OpenIn(root, p, Options{})
	if err != nil {
		return nil, err
	}
	if err := CheckTree(o); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}
