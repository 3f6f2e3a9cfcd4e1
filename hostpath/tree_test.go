package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A tree's symlinks are resolved in the tree: absolute targets start at
// its root, ".." stops there, and nothing of the host is reached.
func TestOpenInTree(t *testing.T) {
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("host"), 0o644)
	dir := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"usr/bin", "etc/ssl/real", "opt"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "usr/bin/sh"), []byte("tree"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/ssl/real/ca.pem"), []byte("tree"), 0o644)
	links := map[string]string{
		"bin":           "usr/bin",
		"etc/ssl/certs": "/etc/ssl/real",
		"loop":          "/loop",
		"opt/abs":       "/usr/bin",
		"opt/up":        "../../../../../../usr/bin",
		"opt/hostonly":  secret,
		"opt/hostdir":   host,
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	statOf := func(p string) ID {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return idOf(&st)
	}
	for _, tc := range []struct {
		path string
		keep bool
		want string // the tree's object opened, relative to dir
	}{
		{"/usr/bin/sh", false, "usr/bin/sh"},
		{"/bin/sh", false, "usr/bin/sh"},
		{"/bin", true, "bin"},
		{"/bin", false, "usr/bin"},
		{"/etc/ssl/certs/ca.pem", false, "etc/ssl/real/ca.pem"},
		{"/etc/ssl/certs", false, "etc/ssl/real"},
		{"/opt/abs/sh", false, "usr/bin/sh"},
		{"/opt/up/sh", false, "usr/bin/sh"},
		{"/../../usr/bin/sh", false, "usr/bin/sh"},
		{"/", false, ""},
	} {
		o, err := tree.OpenInTree(tc.path, Options{KeepSymlink: tc.keep})
		if err != nil {
			t.Errorf("OpenInTree(%s): %v", tc.path, err)
			continue
		}
		want := filepath.Join(dir, tc.want)
		if o.ID() != statOf(want) || o.Path != want {
			t.Errorf("OpenInTree(%s): opened %s, want %s", tc.path, o.Path, want)
		}
		if rel, ok := o.Within(tree.ID()); !ok || rel != tc.want {
			t.Errorf("OpenInTree(%s): within the tree %q %v, want %q", tc.path, rel, ok, tc.want)
		}
		if len(o.Chain) < len(tree.Chain) || o.Chain[0] != tree.Chain[0] {
			t.Errorf("OpenInTree(%s): chain %v does not continue the tree's", tc.path, o.Chain)
		}
		o.Close()
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{"/opt/hostonly", fs.ErrNotExist}, // the host's file is not in the tree
		{"/opt/hostdir/secret", fs.ErrNotExist},
		{"/loop", syscall.ELOOP},
		{"/usr/bin/sh/x", syscall.ENOTDIR},
		{"/missing", fs.ErrNotExist},
	} {
		o, err := tree.OpenInTree(tc.path, Options{})
		if err == nil {
			t.Errorf("OpenInTree(%s) opened %s", tc.path, o.Path)
			o.Close()
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("OpenInTree(%s): %v, want %v naming the tree", tc.path, err, tc.want)
		}
	}
	if _, err := tree.OpenInTree("usr", Options{}); err == nil {
		t.Error("a relative path was opened")
	}
}

// OpenInTree refuses a tree that is not a directory.
func TestOpenInTreeNotDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	o, err := Open(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.OpenInTree("/x", Options{}); err == nil {
		t.Error("a file was used as a tree")
	}
}

func TestCheckTree(t *testing.T) {
	who := owners{euid: 1000}
	for _, tc := range []struct {
		name string
		mode uint32
		uid  uint32
		want string // in the error; "" for none
	}{
		{"root's", unix.S_IFDIR | 0o755, 0, ""},
		{"the caller's", unix.S_IFDIR | 0o700, 1000, ""},
		{"the caller's, read-only", unix.S_IFDIR | 0o555, 1000, ""},
		{"another user's", unix.S_IFDIR | 0o755, 1001, "belongs to uid 1001, neither you (uid 1000) nor root"},
		{"group-writable", unix.S_IFDIR | 0o775, 0, "mode 0775"},
		{"world-writable", unix.S_IFDIR | 0o757, 1000, "chmod go-w"},
		{"sticky /tmp-like", unix.S_IFDIR | 0o1777, 0, "mode 01777"},
		{"a file", unix.S_IFREG | 0o644, 0, "not a directory"},
	} {
		st := unix.Stat_t{Mode: tc.mode, Uid: tc.uid}
		err := checkTree("/srv/rootfs", &st, who)
		if tc.name == "another user's" {
			if err := checkTree("/srv/rootfs", &st, owners{euid: 0}); err == nil || !strings.Contains(err.Error(), "belongs to uid 1001, not root") {
				t.Errorf("%s, for root: %v", tc.name, err)
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/srv/rootfs")):
			t.Errorf("%s: %v, want an error naming the tree and %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckTreeEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode uint32
		ok   bool
	}{
		{"a directory", unix.S_IFDIR | 0o755, true},
		{"a file", unix.S_IFREG | 0o644, true},
		{"a symlink", unix.S_IFLNK | 0o777, true},
		{"a world-writable directory", unix.S_IFDIR | 0o777, false},
		{"a sticky world-writable directory", unix.S_IFDIR | 0o1777, false},
		{"a group-writable file", unix.S_IFREG | 0o664, false},
	} {
		st := unix.Stat_t{Mode: tc.mode}
		if err := checkTreeEntry("/srv/rootfs/usr", &st); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// The host's root, a top-level directory and a home directory (or a
// parent of one) are no trees: jailed runs write below them.
func TestTreeRefusal(t *testing.T) {
	r := &rules{top: map[ID]string{{1, 2}: "/srv"}, homes: map[ID]string{{1, 3}: "/home/u", {1, 4}: "/home"}}
	root := Elem{Name: "/", ID: ID{1, 1}}
	for _, c := range []struct {
		chain []Elem
		want  string
	}{
		{[]Elem{root}, "the host's root directory"},
		{[]Elem{root, {Name: "srv", ID: ID{1, 2}}}, "the top-level directory /srv"},
		{[]Elem{root, {Name: "home", ID: ID{1, 4}}}, "is /home, a home directory or a directory that holds one"},
		{[]Elem{root, {Name: "home", ID: ID{1, 4}}, {Name: "u", ID: ID{1, 3}}}, "is /home/u"},
		{[]Elem{root, {Name: "srv", ID: ID{1, 2}}, {Name: "rootfs", ID: ID{1, 5}}}, ""},
		{[]Elem{root, {Name: "home", ID: ID{1, 4}}, {Name: "u", ID: ID{1, 3}}, {Name: "images", ID: ID{1, 6}}}, ""},
	} {
		if got := r.treeRefusal(c.chain); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.chain, got, c.want)
		}
	}
	// And CheckTree says so, for the real root.
	o, err := Open("/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := CheckTree(o); err == nil || !strings.Contains(err.Error(), "/ is the host's root directory, not a root file system of its own") {
		t.Errorf("CheckTree(/): %v", err)
	}
}
