package jail

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The filesystem view is built the way bubblewrap builds it: a tmpfs becomes
// a temporary root with the host's root moved below it (/oldroot), the jail's
// root is a second tmpfs (/newroot) populated from /oldroot, and a final
// pivot_root enters it and detaches everything else. Every mount is made with
// file descriptors (openat2, open_tree, fsmount, move_mount), so symlinks in
// a destination cannot redirect a mount, and mount points are created only on
// tmpfs instances the jail made itself: nothing is ever created on the host.

// Device nodes bound from the host's /dev. mknod is not allowed in a user
// namespace, so binding is the only way.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devShmSize caps the jail's /dev/shm.
const devShmSize = 64 << 20

type rootBuilder struct {
	oldroot int // O_PATH fd of the host's root (/oldroot)
	newroot int // O_PATH fd of the jail's root tmpfs (/newroot)
	// owned holds the mount ids of the tmpfs instances the jail made; only
	// there may mount points be created.
	owned map[uint64]bool
	// emptyFile is an empty read-only file on the temporary root, bound
	// over masked files.
	emptyFile int
}

// sortMounts orders mounts so that a mount never hides one made before it:
// by depth of the destination (stable, so equal depths keep their order),
// masks after everything else.
func sortMounts(ms []Mount) []Mount {
	out := append([]Mount(nil), ms...)
	depth := func(p string) int { return strings.Count(p, "/") }
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := out[i].Kind == MountMask, out[j].Kind == MountMask
		if mi != mj {
			return !mi
		}
		return depth(out[i].Dest) < depth(out[j].Dest)
	})
	return out
}

// buildRoot makes the jail's filesystem and enters it.
func buildRoot(cfg *initConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	base, err := pickBaseDir()
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0700"); err != nil {
		return fmt.Errorf("mount temporary root on %s: %w", base, err)
	}
	for _, d := range []string{"oldroot", "newroot"} {
		if err := unix.Mkdir(path.Join(base, d), 0o700); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	if err := unix.PivotRoot(base, path.Join(base, "oldroot")); err != nil {
		return fmt.Errorf("pivot_root to temporary root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}

	b := &rootBuilder{owned: map[uint64]bool{}}
	if b.oldroot, err = unix.Open("/oldroot", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("open old root: %w", err)
	}
	defer unix.Close(b.oldroot)
	if b.emptyFile, err = unix.Open("/empty", unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0o444); err != nil {
		return fmt.Errorf("create mask file: %w", err)
	}
	defer unix.Close(b.emptyFile)

	// The jail's root: read-only once populated, so the command can write
	// only where a writable mount says so.
	dirfd, err := unix.Open("/newroot", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	b.newroot = dirfd // temporarily: the directory the root tmpfs goes on
	rootMnt, err := b.newTmpfs(dirfd, 2<<20, 0o755, 0)
	unix.Close(dirfd)
	if err != nil {
		return fmt.Errorf("mount jail root: %w", err)
	}
	b.newroot = rootMnt
	defer unix.Close(b.newroot)

	if err := b.frame(cfg); err != nil {
		return err
	}
	for _, m := range sortMounts(cfg.Mounts) {
		var err error
		switch m.Kind {
		case MountBind:
			err = b.bind(m)
		case MountTmpfs:
			err = b.tmpfs(m)
		case MountMask:
			err = b.mask(m)
		}
		if err != nil {
			return err
		}
	}
	if err := unix.MountSetattr(b.newroot, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make jail root read-only: %w", err)
	}

	if err := unix.Fchdir(b.newroot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into jail root: %w", err)
	}
	// The temporary root (with the host's root below it) now sits on top
	// of "/": detach it, and with it every host mount.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach host root: %w", err)
	}
	return unix.Chdir("/")
}

// pickBaseDir finds a directory to mount the temporary root on. It is only
// covered inside the jail's private mount namespace.
func pickBaseDir() (string, error) {
	for _, d := range []string{"/tmp", "/mnt", "/run", "/var/tmp"} {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("no directory to build the jail on: the host has none of /tmp, /mnt, /run, /var/tmp")
}

// frame makes what every jail has: /proc, a minimal /dev, generated /etc
// files.
func (b *rootBuilder) frame(cfg *initConfig) error {
	// /proc of the jail's own PID namespace.
	procDir, err := b.dest("/proc", true)
	if err != nil {
		return err
	}
	err = b.mountFS(procDir, "proc", nil, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	unix.Close(procDir)
	if err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}

	if err := b.dev(); err != nil {
		return err
	}
	return b.etc(cfg)
}

func (b *rootBuilder) dev() error {
	devDir, err := b.dest("/dev", true)
	if err != nil {
		return err
	}
	devfd, err := b.newTmpfs(devDir, 1<<20, 0o755, unix.MOUNT_ATTR_NOEXEC)
	unix.Close(devDir)
	if err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	defer unix.Close(devfd)
	for _, n := range devNodes {
		src, err := openat2(b.oldroot, "dev/"+n, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_BENEATH})
		if err != nil {
			return fmt.Errorf("host /dev/%s: %w (the jail needs the host's basic device nodes)", n, err)
		}
		dst, err := b.dest("/dev/"+n, false)
		if err == nil {
			err = attach(src, dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false)
			unix.Close(dst)
		}
		unix.Close(src)
		if err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	links := [][2]string{
		{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
	}
	for _, l := range links {
		if err := unix.Symlinkat(l[0], devfd, l[1]); err != nil {
			return fmt.Errorf("symlink /dev/%s: %w", l[1], err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := unix.Mkdirat(devfd, d, 0o755); err != nil {
			return fmt.Errorf("mkdir /dev/%s: %w", d, err)
		}
	}
	pts, err := b.dest("/dev/pts", true)
	if err != nil {
		return err
	}
	err = b.mountFS(pts, "devpts", map[string]string{"newinstance": "", "ptmxmode": "0666", "mode": "0620"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	unix.Close(pts)
	if err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	shm, err := b.dest("/dev/shm", true)
	if err != nil {
		return err
	}
	fd, err := b.newTmpfs(shm, devShmSize, 0o1777, unix.MOUNT_ATTR_NOEXEC)
	unix.Close(shm)
	if err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	unix.Close(fd)
	return nil
}

// etc writes the files the jail generates: the jail user's identity, the
// host name and loopback names.
func (b *rootBuilder) etc(cfg *initConfig) error {
	etcDir, err := b.dest("/etc", true)
	if err != nil {
		return err
	}
	defer unix.Close(etcDir)
	home := cfg.Home
	if home == "" {
		home = "/"
	}
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			JailUser, JailUID, JailGID, JailUser, home),
		"group":    fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", JailUser, JailGID),
		"hostname": cfg.Hostname + "\n",
		"hosts":    fmt.Sprintf("127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", cfg.Hostname),
	}
	for name, content := range files {
		fd, err := unix.Openat(etcDir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return fmt.Errorf("create /etc/%s: %w", name, err)
		}
		_, err = unix.Write(fd, []byte(content))
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("write /etc/%s: %w", name, err)
		}
	}
	if cfg.Resolv {
		return b.bind(Mount{Kind: MountBind, Source: "/etc/resolv.conf", Dest: "/etc/resolv.conf", Optional: true})
	}
	return nil
}

// bind shows a host path in the jail.
func (b *rootBuilder) bind(m Mount) error {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if m.KeepSymlink {
		flags |= unix.O_NOFOLLOW
	}
	// The source is resolved inside the host's root, so an absolute
	// symlink on the host means what it means on the host.
	src, err := openat2(b.oldroot, strings.TrimPrefix(m.Source, "/"), &unix.OpenHow{
		Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) && m.Optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bind source %s: %w", m.Source, err)
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("bind source %s: %w", m.Source, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return b.symlink(src, m)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	dst, err := b.dest(m.Dest, isDir)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !m.Writable {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := attach(src, dst, attr, true); err != nil {
		return fmt.Errorf("bind %s on %s: %w", m.Source, m.Dest, err)
	}
	return nil
}

// symlink recreates a host symlink (like /bin -> usr/bin) at m.Dest.
func (b *rootBuilder) symlink(src int, m Mount) error {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(src, "", buf)
	if err != nil {
		return fmt.Errorf("read symlink %s: %w", m.Source, err)
	}
	parent, err := b.dest(path.Dir(m.Dest), true)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := b.mustOwn(parent, m.Dest); err != nil {
		return err
	}
	if err := unix.Symlinkat(string(buf[:n]), parent, path.Base(m.Dest)); err != nil {
		return fmt.Errorf("symlink %s: %w", m.Dest, err)
	}
	return nil
}

func (b *rootBuilder) tmpfs(m Mount) error {
	dst, err := b.dest(m.Dest, true)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	var attr uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	if !m.Writable {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	fd, err := b.newTmpfs(dst, m.Size, 0o1777, attr)
	if err != nil {
		return fmt.Errorf("tmpfs %s: %w", m.Dest, err)
	}
	unix.Close(fd)
	return nil
}

// mask hides what a bind shows at m.Dest: an empty read-only directory or
// file goes over it. A path that does not exist has nothing to hide.
func (b *rootBuilder) mask(m Mount) error {
	dst, err := openat2(b.newroot, strings.TrimPrefix(m.Dest, "/"), &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return destError(m.Dest, err)
	}
	defer unix.Close(dst)
	var st unix.Stat_t
	if err := unix.Fstat(dst, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		fd, err := b.newTmpfs(dst, 4096, 0o555, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return fmt.Errorf("mask %s: %w", m.Dest, err)
		}
		unix.Close(fd)
		return nil
	}
	if err := attach(b.emptyFile, dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
		return fmt.Errorf("mask %s: %w", m.Dest, err)
	}
	return nil
}

// dest opens the mount point for dest in the jail root, creating it (and
// its parents) when missing. A destination whose path leaves the jail root
// through a symlink is an error, and so is one that would have to be created
// inside a bind of a host directory.
func (b *rootBuilder) dest(dest string, dir bool) (int, error) {
	rel := strings.TrimPrefix(dest, "/")
	if rel == "" {
		return unix.Dup(b.newroot)
	}
	fd, err := openat2(b.newroot, rel, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR; isDir != dir {
			unix.Close(fd)
			want := "a directory"
			if !dir {
				want = "a file"
			}
			return -1, fmt.Errorf("mount destination %s: exists in the jail but is not %s like its source", dest, want)
		}
		return fd, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return -1, destError(dest, err)
	}
	parent, err := b.dest(path.Dir(dest), true)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if err := b.mustOwn(parent, dest); err != nil {
		return -1, err
	}
	name := path.Base(dest)
	if dir {
		err = unix.Mkdirat(parent, name, 0o755)
	} else {
		var f int
		f, err = unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err == nil {
			unix.Close(f)
		}
	}
	if err != nil {
		return -1, fmt.Errorf("create mount point %s: %w", dest, err)
	}
	fd, err = openat2(parent, name, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, destError(dest, err)
	}
	return fd, nil
}

func destError(dest string, err error) error {
	if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("mount destination %s: its path goes through a symlink that leaves the jail root; give the real path instead", dest)
	}
	return fmt.Errorf("mount destination %s: %w", dest, err)
}

// mustOwn refuses to create anything below a mount the jail did not make:
// such a directory belongs to the host.
func (b *rootBuilder) mustOwn(parent int, dest string) error {
	id, err := mountID(parent)
	if err != nil {
		return err
	}
	if !b.owned[id] {
		return fmt.Errorf("mount destination %s does not exist, and creating it would create %s on the host (inside a bind mount); create it on the host first or choose another destination",
			dest, path.Base(dest))
	}
	return nil
}

// newTmpfs mounts a fresh tmpfs on dir and returns an O_PATH fd of its root.
func (b *rootBuilder) newTmpfs(dir int, size int64, mode uint32, attr uint64) (int, error) {
	opts := map[string]string{"mode": strconv.FormatUint(uint64(mode), 8)}
	if size > 0 {
		opts["size"] = strconv.FormatInt(size, 10)
	}
	mnt, err := b.fsmount("tmpfs", opts, attr|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, err
	}
	if err := unix.MoveMount(mnt, "", dir, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(mnt)
		return -1, fmt.Errorf("move_mount: %w", err)
	}
	id, err := mountID(mnt)
	if err != nil {
		unix.Close(mnt)
		return -1, err
	}
	b.owned[id] = true
	return mnt, nil
}

// mountFS mounts a fresh instance of a pseudo filesystem on dir.
func (b *rootBuilder) mountFS(dir int, fstype string, opts map[string]string, attr uint64) error {
	mnt, err := b.fsmount(fstype, opts, attr)
	if err != nil {
		return err
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", dir, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

func (b *rootBuilder) fsmount(fstype string, opts map[string]string, attr uint64) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	for k, v := range opts {
		if v == "" {
			err = unix.FsconfigSetFlag(fs, k)
		} else {
			err = unix.FsconfigSetString(fs, k, v)
		}
		if err != nil {
			return -1, fmt.Errorf("%s option %s=%s: %w", fstype, k, v, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("create %s: %w", fstype, err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, int(attr))
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	return mnt, nil
}

// attach clones the mount tree at src (recursively when asked), applies attr
// to every mount of the clone, and moves it onto dst.
func attach(src, dst int, attr uint64, recursive bool) error {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(src, "", flags)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", setFlags, &unix.MountAttr{Attr_set: attr}); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, fmt.Errorf("statx: %w", err)
	}
	return stx.Mnt_id, nil
}

// openat2 retries EAGAIN: with RESOLVE_IN_ROOT or RESOLVE_BENEATH the kernel
// gives up a walk that raced with a mount or rename anywhere on the system
// (other jails starting) and asks the caller to try again.
func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, path, how)
		if err != unix.EAGAIN || i == 100 {
			return fd, err
		}
	}
}
