package roottpl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Source is a fixed bind's source, opened by the supervisor for a
// template (hostside's rules, as for any run).
type Source struct {
	// Tree is a detached mount tree of it, its attributes set: moved
	// into the template. nil: an optional source that does not exist.
	Tree     *os.File
	Dev, Ino uint64 // what the source path must still be (Current)
	Type     uint32 // its S_IFMT
	Dir      bool
	Symlink  bool // a symlink kept as one: Target is recreated
	Target   string
}

// Template is a built template: a detached tmpfs, read-only, with the
// fixed binds in it.
type Template struct {
	root  *os.File
	want  []want
	built time.Time
	// Types are the S_IFMT of each mount's source in the template, by
	// mount index; 0: not in it, or an optional source that does not
	// exist.
	Types []uint32
}

// want is what a fixed bind's source path must still be for the
// template to be used.
type want struct {
	path     string
	follow   bool // the source's symlink is followed (not KeepSymlink)
	dev, ino uint64
	absent   bool // an optional source that did not exist
	// symlink: a symlink recreated in the template with target (its
	// inode is not held by the template, so its number can come back).
	symlink bool
	target  string
}

// The root's tmpfs is the one the init makes (mounts.c, tj_jail_root).
const (
	rootSize = 2 << 20
	dirMode  = 0o755
	fileMode = 0o644
)

// Build makes the template of shape s; srcs are the fixed binds'
// sources, by mount index (the others are ignored). It consumes their
// trees.
func Build(s *Shape, srcs []Source) (*Template, error) {
	if !Supported() {
		return nil, errors.New("this kernel cannot move mounts into a detached mount tree or clone one (Linux 6.15 can)")
	}
	b, err := newBuilder(s.UID, s.GID)
	if err != nil {
		return nil, err
	}
	t, err := b.build(s, srcs)
	if err != nil {
		b.root.Close()
		return nil, err
	}
	return t, nil
}

type builder struct {
	root     *os.File
	rootMnt  uint64
	uid, gid int
}

func newBuilder(uid, gid int) (*builder, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"size", strconv.Itoa(rootSize)}, {"mode", "0755"}, {"uid", strconv.Itoa(uid)}, {"gid", strconv.Itoa(gid)}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("tmpfs option %s: %w", kv[0], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("create the template's tmpfs: %w", err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("fsmount the template's tmpfs: %w", err)
	}
	b := &builder{root: os.NewFile(uintptr(fd), "root template"), uid: uid, gid: gid}
	if b.rootMnt, err = mountID(fd); err != nil {
		b.root.Close()
		return nil, err
	}
	return b, nil
}

// build makes what the init would make on the jail's root, in its
// order: /proc and /dev, the /etc files, then the plan's mounts (the
// fixed binds, and the mount points of the others).
func (b *builder) build(s *Shape, srcs []Source) (*Template, error) {
	t := &Template{root: b.root, Types: make([]uint32, len(s.Mounts))}
	for _, e := range Early {
		if err := b.point(e, true); err != nil {
			return nil, err
		}
	}
	if err := b.etc(s.Etc); err != nil {
		return nil, err
	}
	points := map[string]bool{}
	for _, p := range s.Points {
		points[p.Path] = p.Dir
	}
	for i, m := range s.Mounts {
		if !s.In[i] {
			if dir, ok := points[m.Dest]; ok {
				if err := b.point(m.Dest, dir); err != nil {
					return nil, err
				}
			}
			continue
		}
		src := srcs[i]
		w := want{path: m.Source, follow: !m.KeepSymlink, dev: src.Dev, ino: src.Ino}
		switch {
		case src.Tree == nil && !src.Symlink:
			w.absent = true
		case src.Symlink:
			if err := b.symlink(m.Dest, src.Target); err != nil {
				return nil, err
			}
			t.Types[i] = unix.S_IFLNK
			w.symlink, w.target = true, src.Target
		default:
			if err := b.bind(m.Dest, src); err != nil {
				return nil, err
			}
			t.Types[i] = src.Type
		}
		t.want = append(t.want, w)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(int(b.root.Fd()), "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return nil, fmt.Errorf("make the template read-only: %w", err)
	}
	t.built = time.Now()
	return t, nil
}

// point makes a mount point of a run's own mount.
func (b *builder) point(p string, dir bool) error {
	fd, err := b.dest(p, dir)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

func (b *builder) etc(files []File) error {
	if len(files) == 0 {
		return nil
	}
	dir, err := b.dest("/etc", true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	for _, f := range files {
		fd, err := unix.Openat(dir, f.Name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, fileMode)
		if err != nil {
			return fmt.Errorf("template: create /etc/%s: %w", f.Name, err)
		}
		w := os.NewFile(uintptr(fd), f.Name)
		_, err = w.WriteString(f.Data)
		if err == nil {
			err = b.own(fd)
		}
		w.Close()
		if err != nil {
			return fmt.Errorf("template: write /etc/%s: %w", f.Name, err)
		}
	}
	return nil
}

func (b *builder) symlink(dest, target string) error {
	parent, name, err := b.parent(dest)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := unix.Symlinkat(target, parent, name); err != nil {
		return fmt.Errorf("template: symlink %s: %w", dest, err)
	}
	if err := unix.Fchownat(parent, name, b.uid, b.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("template: chown %s: %w", dest, err)
	}
	return nil
}

func (b *builder) bind(dest string, src Source) error {
	dst, err := b.dest(dest, src.Dir)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	err = unix.MoveMount(int(src.Tree.Fd()), "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("template: bind %s: %w", dest, err)
	}
	return nil
}

// dest opens the mount point p in the template, creating it and its
// parents when missing, as the init does (mounts.c, tj_dest): never
// inside a bind, only on the template's own tmpfs.
func (b *builder) dest(p string, dir bool) (int, error) {
	if !clean(p) {
		return -1, fmt.Errorf("template: %q is not an absolute clean path", p)
	}
	if p == "/" {
		return unix.Dup(int(b.root.Fd()))
	}
	fd, err := openBeneath(int(b.root.Fd()), p[1:], unix.O_PATH|unix.O_CLOEXEC)
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if (st.Mode&unix.S_IFMT == unix.S_IFDIR) != dir {
			unix.Close(fd)
			return -1, fmt.Errorf("template: %s exists and is not a %s", p, map[bool]string{true: "directory", false: "file"}[dir])
		}
		return fd, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("template: open %s: %w", p, err)
	}
	parent, name, err := b.parent(p)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if dir {
		err = unix.Mkdirat(parent, name, dirMode)
		if err == nil {
			err = unix.Fchmodat(parent, name, dirMode, 0)
		}
	} else {
		var f int
		if f, err = unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, fileMode); err == nil {
			err = unix.Fchmod(f, fileMode)
			unix.Close(f)
		}
	}
	if err == nil {
		err = unix.Fchownat(parent, name, b.uid, b.gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return -1, fmt.Errorf("template: create %s: %w", p, err)
	}
	fd, err = openBeneath(parent, name, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return -1, fmt.Errorf("template: open %s: %w", p, err)
	}
	return fd, nil
}

// parent opens p's parent directory (made when missing) on the
// template's own tmpfs, and returns p's last name.
func (b *builder) parent(p string) (int, string, error) {
	i := strings.LastIndexByte(p, '/')
	dir := p[:i]
	if dir == "" {
		dir = "/"
	}
	parent, err := b.dest(dir, true)
	if err != nil {
		return -1, "", err
	}
	id, err := mountID(parent)
	if err == nil && id != b.rootMnt {
		err = fmt.Errorf("template: %s would be created inside a bind (%s)", p, dir)
	}
	if err != nil {
		unix.Close(parent)
		return -1, "", err
	}
	return parent, p[i+1:], nil
}

func (b *builder) own(fd int) error {
	if err := unix.Fchown(fd, b.uid, b.gid); err != nil {
		return err
	}
	return unix.Fchmod(fd, fileMode)
}

func openBeneath(dir int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dir, rel, &how)
		if err != unix.EAGAIN || i == 100 {
			return fd, err
		}
	}
}

func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, fmt.Errorf("statx: %w", err)
	}
	return stx.Mnt_id, nil
}

// Clone returns a clone of the template's tree for one run: the jail's
// root, moved into the init's mount namespace.
func (t *Template) Clone() (*os.File, error) {
	fd, err := unix.OpenTree(int(t.root.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, fmt.Errorf("clone the root template: %w", err)
	}
	return os.NewFile(uintptr(fd), "root"), nil
}

// Current says whether every source the template binds is still the
// object it bound, and every optional one it left out still missing.
func (t *Template) Current() bool {
	for _, w := range t.want {
		flags := unix.AT_SYMLINK_NOFOLLOW
		if w.follow {
			flags = 0
		}
		if w.symlink {
			if target, err := os.Readlink(w.path); err != nil || target != w.target {
				return false
			}
			continue
		}
		var stx unix.Statx_t
		err := unix.Statx(unix.AT_FDCWD, w.path, flags|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &stx)
		if w.absent {
			if !errors.Is(err, unix.ENOENT) {
				return false
			}
			continue
		}
		if err != nil || stx.Ino != w.ino || unix.Mkdev(stx.Dev_major, stx.Dev_minor) != w.dev {
			return false
		}
	}
	return true
}

// Close releases the template; clones made from it stay.
func (t *Template) Close() error {
	return t.root.Close()
}

// Supported says whether this kernel can build and clone templates: a
// bind moved into a detached tmpfs, and the tree cloned (Linux 6.15).
// It needs real root, as every detached bind of the host does.
var Supported = sync.OnceValue(func() bool {
	b, err := newBuilder(os.Geteuid(), os.Getegid())
	if err != nil {
		return false
	}
	defer b.root.Close()
	tree, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(tree)
	if unix.Mkdirat(int(b.root.Fd()), "d", 0o700) != nil {
		return false
	}
	if unix.MoveMount(tree, "", int(b.root.Fd()), "d", unix.MOVE_MOUNT_F_EMPTY_PATH) != nil {
		return false
	}
	t := &Template{root: b.root}
	c, err := t.Clone()
	if err != nil {
		return false
	}
	c.Close()
	return true
})
