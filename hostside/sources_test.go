package hostside

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sources are opened once, by the supervisor: a missing optional one
// is left out, a missing required one and a refused read-write one fail.
func TestResolveSources(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("usr/bin", dir+"/link")
	os.WriteFile(dir+"/file", nil, 0o644)
	root, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	mounts := []Mount{
		{Kind: Bind, Source: "/usr", Dest: "/usr"},
		{Kind: Bind, Source: dir + "/missing", Dest: "/opt", Optional: true},
		{Kind: Bind, Source: dir, Dest: "/work", Writable: true},
		{Kind: Tmpfs, Dest: "/tmp"},
		{Kind: Bind, Source: "/bin", Dest: "/bin", KeepSymlink: true, Optional: true},
	}
	srcs, err := Resolve(root, nil, mounts, "/work")
	if err != nil {
		t.Fatal(err)
	}
	defer CloseSources(srcs)
	if srcs[0].Obj == nil || !srcs[0].Obj.IsDir() || srcs[1].Obj != nil || srcs[2].Obj == nil || srcs[3].Obj != nil {
		t.Errorf("sources %+v", srcs)
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 && (srcs[4].Obj == nil || !srcs[4].Obj.IsSymlink()) {
		t.Errorf("/bin is a symlink here and must be kept as one: %+v", srcs[4])
	}
	for _, c := range []struct {
		m    Mount
		want string
	}{
		{Mount{Kind: Bind, Source: dir + "/missing", Dest: "/x"}, "does not exist"},
		{Mount{Kind: Bind, Source: "/usr/local", Dest: "/x", Writable: true}, "system directory /usr"},
		{Mount{Kind: Bind, Source: "/", Dest: "/work", Writable: true}, "workdir /: refusing"},
		{Mount{Kind: Bind, Source: dir + "/link", Dest: "/x"}, "symlink"},
		{Mount{Kind: Bind, Source: dir + "/file", Dest: "/work", Writable: true}, "workdir " + dir + "/file: not a directory"},
	} {
		if _, err := Resolve(root, nil, []Mount{c.m}, "/work"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.m, err, c.want)
		}
	}
}

// Binds InRoot are opened in the tree, symlinks resolved there; the
// others on the host. A missing optional one is skipped, a loop or a
// writable entry fails.
func TestResolveSourcesInRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rootfs")
	os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755)
	os.MkdirAll(filepath.Join(dir, "etc/ssl/real"), 0o755)
	os.MkdirAll(filepath.Join(dir, "wide"), 0o755)
	os.Chmod(filepath.Join(dir, "wide"), 0o777)
	os.Symlink("usr/bin", filepath.Join(dir, "bin"))
	os.Symlink("/etc/ssl/real", filepath.Join(dir, "etc/ssl/certs"))
	os.Symlink("/usr", filepath.Join(dir, "lib")) // the tree's /usr, not the host's
	os.Symlink("/loop", filepath.Join(dir, "loop"))
	root, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tree, err := OpenTree(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	mounts := []Mount{
		{Kind: Bind, Source: "/usr", Dest: "/usr", Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: Bind, Source: "/bin", Dest: "/bin", Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: Bind, Source: "/lib", Dest: "/lib", Optional: true, InRoot: true},
		{Kind: Bind, Source: "/sbin", Dest: "/sbin", Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: Bind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true, InRoot: true},
		{Kind: Bind, Source: "/etc", Dest: "/host-etc"},
	}
	srcs, err := Resolve(root, tree, mounts, "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer CloseSources(srcs)
	want := []string{filepath.Join(dir, "usr"), filepath.Join(dir, "bin"), filepath.Join(dir, "usr"), "", filepath.Join(dir, "etc/ssl/real"), "/etc"}
	for i, w := range want {
		got := ""
		if srcs[i].Obj != nil {
			got = srcs[i].Obj.Path
		}
		if got != w {
			t.Errorf("%s: opened %q, want %q", mounts[i].Source, got, w)
		}
	}
	if !srcs[1].Obj.IsSymlink() {
		t.Errorf("the tree's bin -> usr/bin is not kept as a symlink")
	}
	if _, ok := srcs[2].Obj.Within(tree.ID()); !ok {
		t.Errorf("the tree's lib -> /usr reached %s, outside the tree", srcs[2].Obj.Path)
	}
	for _, c := range []struct {
		m    Mount
		want string
	}{
		{Mount{Kind: Bind, Source: "/loop", Dest: "/x", Optional: true, InRoot: true}, "too many levels of symbolic links"},
		{Mount{Kind: Bind, Source: "/wide", Dest: "/x", InRoot: true}, "chmod go-w"},
		{Mount{Kind: Bind, Source: "/missing", Dest: "/x", InRoot: true}, "/missing does not exist in the root directory " + dir},
	} {
		if _, err := Resolve(root, tree, []Mount{c.m}, "/tmp"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.m, err, c.want)
		}
	}
}

// The root directory is refused when others may write it, naming the
// mode and the fix.
func TestOpenTreeRefused(t *testing.T) {
	dir := t.TempDir()
	root, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	os.Chmod(dir, 0o777)
	if _, err := OpenTree(root, dir); err == nil || !strings.Contains(err.Error(), "mode 0777") || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Errorf("a world-writable root: %v", err)
	}
	if _, err := OpenTree(root, filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing root: %v", err)
	}
	os.Chmod(dir, 0o755)
	tree, err := OpenTree(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	tree.Close()
}
