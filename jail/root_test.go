package jail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostprobe"
)

func TestValidateRoot(t *testing.T) {
	inRoot := Mount{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true, InRoot: true}
	for _, tc := range []struct {
		name string
		edit func(s *Spec)
		want string // "" for valid
	}{
		{"a root and a bind from it", func(s *Spec) { s.Root = "/srv/rootfs"; s.Mounts = []Mount{inRoot} }, ""},
		{"a root and no bind from it", func(s *Spec) { s.Root = "/srv/rootfs" }, ""},
		{"a relative root", func(s *Spec) { s.Root = "rootfs" }, "clean absolute"},
		{"an unclean root", func(s *Spec) { s.Root = "/srv/../rootfs" }, "clean absolute"},
		{"a root with a NUL", func(s *Spec) { s.Root = "/srv/x\x00" }, "clean absolute"},
		{"a bind from no root", func(s *Spec) { s.Mounts = []Mount{inRoot} }, "none is given"},
		{"a writable bind from the root", func(s *Spec) {
			s.Root = "/srv/rootfs"
			s.Mounts = []Mount{{Kind: MountBind, Source: "/var", Dest: "/var", Writable: true, InRoot: true}}
		}, "read-only only"},
		{"a tmpfs from the root", func(s *Spec) {
			s.Root = "/srv/rootfs"
			s.Mounts = []Mount{{Kind: MountTmpfs, Dest: "/var", InRoot: true}}
		}, "only a bind"},
	} {
		s := validSpec()
		tc.edit(s)
		err := s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Without namespaces nothing can be mounted: a root directory is refused.
func TestRootNeedsNamespaces(t *testing.T) {
	s := validSpec()
	s.Root = "/srv/rootfs"
	s.AllowDegraded = []string{LayerNamespaces}
	s.Landlock = &LandlockSpec{}
	h := hostprobe.Host{}
	h.Landlock.ABI = 4
	if _, err := s.plan(h); err == nil || !strings.Contains(err.Error(), "root directory /srv/rootfs can only be shown in a mount namespace") {
		t.Errorf("plan without namespaces: %v", err)
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
	tree, err := openTree(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	mounts := []Mount{
		{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: MountBind, Source: "/bin", Dest: "/bin", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: MountBind, Source: "/lib", Dest: "/lib", Exec: true, Optional: true, InRoot: true},
		{Kind: MountBind, Source: "/sbin", Dest: "/sbin", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true, InRoot: true},
		{Kind: MountBind, Source: "/etc", Dest: "/host-etc"},
	}
	srcs, err := resolveSources(root, tree, mounts, "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer closeSources(srcs)
	want := []string{filepath.Join(dir, "usr"), filepath.Join(dir, "bin"), filepath.Join(dir, "usr"), "", filepath.Join(dir, "etc/ssl/real"), "/etc"}
	for i, w := range want {
		got := ""
		if srcs[i].obj != nil {
			got = srcs[i].obj.Path
		}
		if got != w {
			t.Errorf("%s: opened %q, want %q", mounts[i].Source, got, w)
		}
	}
	if !srcs[1].obj.IsSymlink() {
		t.Errorf("the tree's bin -> usr/bin is not kept as a symlink")
	}
	if _, ok := srcs[2].obj.Within(tree.ID()); !ok {
		t.Errorf("the tree's lib -> /usr reached %s, outside the tree", srcs[2].obj.Path)
	}
	for _, c := range []struct {
		m    Mount
		want string
	}{
		{Mount{Kind: MountBind, Source: "/loop", Dest: "/x", Optional: true, InRoot: true}, "too many levels of symbolic links"},
		{Mount{Kind: MountBind, Source: "/wide", Dest: "/x", InRoot: true}, "chmod go-w"},
		{Mount{Kind: MountBind, Source: "/missing", Dest: "/x", InRoot: true}, "/missing does not exist in the root directory " + dir},
	} {
		if _, err := resolveSources(root, tree, []Mount{c.m}, "/tmp"); err == nil || !strings.Contains(err.Error(), c.want) {
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
	if _, err := openTree(root, dir); err == nil || !strings.Contains(err.Error(), "mode 0777") || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Errorf("a world-writable root: %v", err)
	}
	if _, err := openTree(root, filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing root: %v", err)
	}
	os.Chmod(dir, 0o755)
	tree, err := openTree(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	tree.Close()
}
