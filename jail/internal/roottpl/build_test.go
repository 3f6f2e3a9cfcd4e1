package roottpl

import (
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needTemplates(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("templates need root (detached binds of the host)")
	}
	if !Supported() {
		t.Skip("this kernel cannot build templates (Linux 6.15 can)")
	}
}

// detach makes the read-only detached tree a supervisor makes of a
// source (hostside.Detach).
func detach(t *testing.T, p string) *os.File {
	t.Helper()
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		t.Fatal(err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), p)
}

func source(t *testing.T, p string, keepSymlink bool) Source {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, p, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Source{} // absent
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && keepSymlink {
		target, _ := os.Readlink(p)
		return Source{Dev: st.Dev, Ino: st.Ino, Type: unix.S_IFLNK, Symlink: true, Target: target}
	}
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	typ := st.Mode & unix.S_IFMT
	return Source{Tree: detach(t, p), Dev: st.Dev, Ino: st.Ino, Type: typ, Dir: typ == unix.S_IFDIR}
}

// testShape is a template of a file, a directory, a symlink and an
// absent optional source from dir, with a run's tmpfs and workdir.
func testShape(t *testing.T, dir string) (*Shape, []Source) {
	t.Helper()
	ms := []Mount{
		{Kind: Bind, Source: dir + "/f", Dest: "/etc/f", Fixed: true},
		{Kind: Bind, Source: dir + "/d", Dest: "/opt/d", Fixed: true},
		{Kind: Bind, Source: dir + "/l", Dest: "/bin2", Fixed: true, KeepSymlink: true},
		{Kind: Bind, Source: dir + "/absent", Dest: "/etc/absent", Fixed: true, Optional: true},
		{Kind: Tmpfs, Dest: "/tmp"},
		{Kind: Bind, Source: dir, Dest: "/work/p", Dir: true},
	}
	in := InTemplate(ms)
	pts, ok := MountPoints(ms, in)
	if !ok {
		t.Fatal("no mount points")
	}
	s := &Shape{Mounts: ms, In: in, Points: pts, Etc: []File{{"passwd", "x:1\n"}}, UID: 1234, GID: 5678}
	srcs := make([]Source, len(ms))
	for i, m := range ms {
		if in[i] {
			srcs[i] = source(t, m.Source, m.KeepSymlink)
		}
	}
	return s, srcs
}

func makeSources(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(dir+"/d", 0o700)
	os.WriteFile(dir+"/d/inner", nil, 0o600)
	os.Symlink("target", dir+"/l")
	return dir
}

// A template holds what the init would make on the jail's root, with the
// same owners and modes whatever the umask, the binds of its sources, and
// nothing can be written in it.
func TestBuild(t *testing.T) {
	needTemplates(t)
	dir := makeSources(t)
	s, srcs := testShape(t, dir)
	old := syscall.Umask(0o077)
	tpl, err := Build(s, srcs)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer tpl.Close()
	if want := []uint32{unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK, 0, 0, 0}; !slices.Equal(tpl.Types, want) {
		t.Errorf("types %o, want %o", tpl.Types, want)
	}
	root, err := tpl.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := int(root.Fd())
	for _, tc := range []struct {
		path string
		mode uint32 // 0: not checked
		own  bool   // owned by the jail's root (1234:5678)
	}{
		{".", unix.S_IFDIR | 0o755, true},
		{"proc", unix.S_IFDIR | 0o755, true},
		{"dev", unix.S_IFDIR | 0o755, true},
		{"etc", unix.S_IFDIR | 0o755, true},
		{"etc/passwd", unix.S_IFREG | 0o644, true},
		{"tmp", unix.S_IFDIR | 0o755, true},
		{"work", unix.S_IFDIR | 0o755, true},
		{"work/p", unix.S_IFDIR | 0o755, true},
		{"opt", unix.S_IFDIR | 0o755, true},
		{"bin2", unix.S_IFLNK | 0o777, true},
		{"etc/f", unix.S_IFREG | 0o600, false},
		{"opt/d/inner", unix.S_IFREG | 0o600, false},
	} {
		var st unix.Stat_t
		if err := unix.Fstatat(r, tc.path, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if st.Mode != tc.mode {
			t.Errorf("%s: mode %o, want %o", tc.path, st.Mode, tc.mode)
		}
		if tc.own && (st.Uid != 1234 || st.Gid != 5678) {
			t.Errorf("%s: owned by %d:%d, want 1234:5678", tc.path, st.Uid, st.Gid)
		}
	}
	if got := readAt(t, r, "etc/f"); got != "one" {
		t.Errorf("etc/f: %q, want the source's", got)
	}
	if got := readAt(t, r, "etc/passwd"); got != "x:1\n" {
		t.Errorf("etc/passwd: %q", got)
	}
	buf := make([]byte, 64)
	if n, err := unix.Readlinkat(r, "bin2", buf); err != nil || string(buf[:n]) != "target" {
		t.Errorf("bin2: %q %v, want a symlink to target", buf[:n], err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(r, "etc/absent", &st, 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("an optional source that does not exist: %v", err)
	}
	if err := unix.Mkdirat(r, "new", 0o755); !errors.Is(err, unix.EROFS) {
		t.Errorf("mkdir in the template's root: %v, want EROFS", err)
	}
	if _, err := unix.Openat(r, "etc/passwd", unix.O_WRONLY, 0); !errors.Is(err, unix.EROFS) {
		t.Errorf("write /etc/passwd: %v, want EROFS", err)
	}
	if _, err := unix.Openat(r, "etc/f", unix.O_WRONLY, 0); !errors.Is(err, unix.EROFS) {
		t.Errorf("write a bind: %v, want EROFS", err)
	}
}

// A template is current only while each source path is still the object
// it bound, and an optional source it left out is still missing.
func TestCurrent(t *testing.T) {
	needTemplates(t)
	for _, tc := range []struct {
		name   string
		change func(dir string) error
	}{
		{"a file replaced by a rename", func(dir string) error {
			if err := os.WriteFile(dir+"/f.new", []byte("two"), 0o600); err != nil {
				return err
			}
			return os.Rename(dir+"/f.new", dir+"/f")
		}},
		{"a directory replaced", func(dir string) error {
			if err := os.Rename(dir+"/d", dir+"/d.old"); err != nil {
				return err
			}
			return os.Mkdir(dir+"/d", 0o700)
		}},
		{"a symlink replaced", func(dir string) error {
			os.Remove(dir + "/l")
			return os.Symlink("other", dir+"/l")
		}},
		{"an optional source that appeared", func(dir string) error {
			return os.WriteFile(dir+"/absent", nil, 0o600)
		}},
		{"a source that went", func(dir string) error { return os.Remove(dir + "/f") }},
	} {
		dir := makeSources(t)
		s, srcs := testShape(t, dir)
		tpl, err := Build(s, srcs)
		if err != nil {
			t.Fatal(err)
		}
		if !tpl.Current() {
			t.Errorf("%s: not current before the change", tc.name)
		}
		// Written in place: still the same object.
		if err := os.WriteFile(dir+"/f", []byte("one more"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !tpl.Current() {
			t.Errorf("%s: a file written in place made it stale", tc.name)
		}
		if err := tc.change(dir); err != nil {
			t.Fatal(err)
		}
		if tpl.Current() {
			t.Errorf("%s: still current", tc.name)
		}
		tpl.Close()
	}
}

// A mount point the template would have to make inside a bind is
// refused, as the init refuses it (the run then builds its own root and
// fails there).
func TestBuildRefusesInsideBind(t *testing.T) {
	needTemplates(t)
	dir := makeSources(t)
	ms := []Mount{
		{Kind: Bind, Source: dir + "/d", Dest: "/opt/d", Fixed: true},
		{Kind: Bind, Source: dir + "/f", Dest: "/opt/d/sub/f", Fixed: true},
	}
	in := InTemplate(ms)
	pts, _ := MountPoints(ms, in)
	s := &Shape{Mounts: ms, In: in, Points: pts}
	srcs := []Source{source(t, dir+"/d", false), source(t, dir+"/f", false)}
	if tpl, err := Build(s, srcs); err == nil {
		tpl.Close()
		t.Fatal("built a template that made a directory inside a bind")
	}
	if _, err := os.Stat(dir + "/d/sub"); err == nil {
		t.Error("the build made a directory in the host's directory")
	}
}

func readAt(t *testing.T, dir int, p string) string {
	t.Helper()
	fd, err := unix.Openat(dir, p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.Read(b)
	return string(b[:n])
}

func smallTemplate(t *testing.T) *Template {
	t.Helper()
	tpl, err := Build(&Shape{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// The cache builds on a shape's second run, clones while the template is
// current and young, and drops it when it ages, when a mount changed,
// and beyond Max; a failed build is not retried before MaxAge.
func TestCache(t *testing.T) {
	needTemplates(t)
	c := &Cache{MaxAge: time.Minute, Max: 2}
	t0 := time.Now()
	clone := func(key string, at time.Time) (got, build bool) {
		t.Helper()
		root, _, build, err := c.Clone(key, at)
		if err != nil {
			t.Fatal(err)
		}
		if root != nil {
			root.Close()
		}
		return root != nil, build
	}
	if got, build := clone("a", t0); got || build {
		t.Errorf("first run: clone %v, build %v; want neither", got, build)
	}
	if got, build := clone("a", t0); got || !build {
		t.Errorf("second run: clone %v, build %v; want a build", got, build)
	}
	c.Put("a", smallTemplate(t), t0)
	if got, _ := clone("a", t0.Add(time.Second)); !got {
		t.Error("no clone of a current template")
	}
	if got, build := clone("a", t0.Add(2*time.Minute)); got || !build {
		t.Errorf("after MaxAge: clone %v, build %v; want a build", got, build)
	}

	c.Put("a", smallTemplate(t), t0)
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	unix.Unmount(mnt, 0)
	if got, build := clone("a", t0.Add(time.Second)); got || !build {
		t.Errorf("after a mount: clone %v, build %v; want a build", got, build)
	}
	c.Put("a", smallTemplate(t), t0)
	if got, _ := clone("a", t0.Add(time.Second)); !got {
		t.Error("no clone after the rebuild")
	}

	clone("b", t0)
	c.Failed("b", t0)
	if _, build := clone("b", t0.Add(time.Second)); build {
		t.Error("a failed build is tried again at once")
	}
	if _, build := clone("b", t0.Add(2*time.Minute)); !build {
		t.Error("a failed build is not tried again after MaxAge")
	}

	c.Put("b", smallTemplate(t), t0.Add(2*time.Second))
	kept := smallTemplate(t)
	c.Put("c", kept, t0.Add(3*time.Second))
	if n := held(c); n != 2 {
		t.Errorf("%d templates kept, want Max 2", n)
	}
	if got, _ := clone("a", t0.Add(4*time.Second)); got {
		t.Error("the least recently used shape was kept beyond Max")
	}
	if _, err := kept.Clone(); err != nil {
		t.Errorf("a kept template was closed: %v", err)
	}
}

// held is the number of templates c holds.
func held(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.m {
		if e.t != nil {
			n++
		}
	}
	return n
}
