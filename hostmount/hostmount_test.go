package hostmount

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: detached mount trees need CAP_SYS_ADMIN")
	}
}

func openPath(t *testing.T, p string) *os.File {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), p)
	t.Cleanup(func() { f.Close() })
	return f
}

// ownedDir is a directory owned by 1000:1001 holding a file of the same
// owner, on a file system that supports idmapped mounts (t.TempDir, or a
// skip when it does not).
func ownedDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Join(d, "f")} {
		if err := os.Chown(p, 1000, 1001); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func statAt(t *testing.T, dirfd int, name string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("stat %s: %v", name, err)
	}
	return st
}

func TestCloneReadOnly(t *testing.T) {
	needRoot(t)
	d := ownedDir(t)
	tree, err := Clone(openPath(t, d), true, Attr{ReadOnly: true, NoSuid: true, NoDev: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if st := statAt(t, int(tree.Fd()), "f"); st.Uid != 1000 || st.Gid != 1001 {
		t.Fatalf("owner through a plain clone = %d:%d, want 1000:1001", st.Uid, st.Gid)
	}
	_, err = unix.Openat(int(tree.Fd()), "new", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Fatalf("create in a read-only clone: %v, want EROFS", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(tree.Fd()), &sfs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []int64{unix.ST_RDONLY, unix.ST_NOSUID, unix.ST_NODEV} {
		if sfs.Flags&f == 0 {
			t.Errorf("clone flags %#x lack %#x", sfs.Flags, f)
		}
	}
}

func TestCloneIdmapped(t *testing.T) {
	needRoot(t)
	d := ownedDir(t)
	m := Mapping{From: IDs{1000, 1001}, To: IDs{524287, 524286}}
	tree, err := Clone(openPath(t, d), true, Attr{NoSuid: true, NoDev: true}, &m)
	if errors.Is(err, ErrIdmapUnsupported) {
		t.Skipf("the test directory's file system: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if st := statAt(t, int(tree.Fd()), "f"); st.Uid != 524287 || st.Gid != 524286 {
		t.Fatalf("owner through the idmapped clone = %d:%d, want 524287:524286", st.Uid, st.Gid)
	}
	// A file the mapped user creates is stored as the owner's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsgid(524286)
	unix.Setfsuid(524287)
	fd, err := unix.Openat(int(tree.Fd()), "new", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	unix.Setfsuid(0)
	unix.Setfsgid(0)
	if err != nil {
		t.Fatalf("create as the mapped user: %v", err)
	}
	unix.Close(fd)
	var hs unix.Stat_t
	if err := unix.Lstat(filepath.Join(d, "new"), &hs); err != nil {
		t.Fatal(err)
	}
	if hs.Uid != 1000 || hs.Gid != 1001 {
		t.Fatalf("on the host the new file is %d:%d, want 1000:1001", hs.Uid, hs.Gid)
	}
	// Root (unmapped) cannot create through the mount.
	if _, err := unix.Openat(int(tree.Fd()), "byroot", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
		t.Fatal("root, which the mapping does not name, created a file through the idmapped clone")
	}
}

func TestCloneIdmapUnsupported(t *testing.T) {
	needRoot(t)
	// procfs does not support idmapped mounts on any kernel.
	m := Mapping{From: IDs{0, 0}, To: IDs{524287, 524287}}
	tree, err := Clone(openPath(t, "/proc"), false, Attr{ReadOnly: true}, &m)
	if err == nil {
		tree.Close()
		t.Fatal("idmapped a clone of /proc")
	}
	if !errors.Is(err, ErrIdmapUnsupported) {
		t.Fatalf("error %v is not ErrIdmapUnsupported", err)
	}
}

func TestUserNSCached(t *testing.T) {
	needRoot(t)
	m := Mapping{From: IDs{1, 2}, To: IDs{3, 4}}
	a, err := UserNS(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := UserNS(m)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("the same mapping made two namespaces")
	}
	c, err := UserNS(Mapping{From: IDs{1, 2}, To: IDs{3, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Fatal("two mappings share a namespace")
	}
}

func TestAttrFlags(t *testing.T) {
	for _, c := range []struct {
		a    Attr
		want uint64
	}{
		{Attr{}, 0},
		{Attr{ReadOnly: true}, unix.MOUNT_ATTR_RDONLY},
		{Attr{NoSuid: true, NoDev: true}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV},
		{Attr{true, true, true, true}, unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC},
	} {
		if got := c.a.flags(); got != c.want {
			t.Errorf("%+v.flags() = %#x, want %#x", c.a, got, c.want)
		}
	}
}

// A submount of an idmapped clone keeps its real owners: the mapping
// reaches only the top mount.
func TestCloneIdmapTopOnly(t *testing.T) {
	needRoot(t)
	d := ownedDir(t)
	sub := filepath.Join(d, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	inner := t.TempDir() // root-owned
	if err := os.WriteFile(filepath.Join(inner, "g"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(inner, sub, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	defer unix.Unmount(sub, unix.MNT_DETACH)
	m := Mapping{From: IDs{0, 0}, To: IDs{524287, 524287}}
	tree, err := Clone(openPath(t, d), true, Attr{NoSuid: true, NoDev: true}, &m)
	if errors.Is(err, ErrIdmapUnsupported) {
		t.Skipf("the test directory's file system: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if st := statAt(t, int(tree.Fd()), "sub/g"); st.Uid == 524287 || st.Gid == 524287 {
		t.Fatalf("a submount's root-owned file shows as %d:%d through the clone: the idmapping reached the submount", st.Uid, st.Gid)
	}
}
