package profiles

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// With filesystem.root, the system and etc entries come from the tree and
// nothing else does: the workdir, ro, rw and tmpfs mounts are the host's
// as without it.
func TestSpecRoot(t *testing.T) {
	root := tree(t)
	proj := filepath.Join(root, "home/user/proj")
	for _, tc := range []struct {
		root, want string
	}{
		{"", ""},
		{"/srv/rootfs", "/srv/rootfs"},
		{"rootfs/", filepath.Join(proj, "rootfs")},
		{"../images/./debian", filepath.Join(root, "home/user/images/debian")},
	} {
		p := mustLoad(t, "default")
		p.Filesystem.Root = &tc.root
		p.Filesystem.Ro = []string{"/srv/data:/data"}
		p.Filesystem.Rw = []string{"out"}
		s, err := p.Spec(Request{Args: []string{"sh"}, Cwd: proj})
		if err != nil {
			t.Fatal(err)
		}
		if s.Root != tc.want {
			t.Errorf("root %q: Spec.Root %q, want %q", tc.root, s.Root, tc.want)
		}
		inRoot := tc.want != ""
		for _, m := range s.Mounts {
			fromSystem := m.Kind == jail.MountBind && !m.Writable && (m.Exec || strings.HasPrefix(m.Dest, "/etc/"))
			if m.InRoot != (inRoot && fromSystem) {
				t.Errorf("root %q: mount %+v: InRoot %v", tc.root, m, m.InRoot)
			}
		}
		if m := findMount(s, "/usr"); m == nil || m.Source != "/usr" || !m.KeepSymlink || !m.Optional {
			t.Errorf("root %q: /usr mount %+v", tc.root, m)
		}
		if m := findMount(s, "/etc/ssl/certs"); m == nil || m.Source != "/etc/ssl/certs" || !m.Optional {
			t.Errorf("root %q: /etc/ssl/certs mount %+v", tc.root, m)
		}
	}
}

func TestSetRoot(t *testing.T) {
	p := mustLoad(t, "default")
	if err := p.SetRoot("/srv/rootfs"); err != nil || *p.Filesystem.Root != "/srv/rootfs" {
		t.Errorf("SetRoot: %v, root %q", err, *p.Filesystem.Root)
	}
	for _, bad := range []string{"", "/srv/x\x00y"} {
		if err := p.SetRoot(bad); err == nil || !strings.Contains(err.Error(), "filesystem.root") {
			t.Errorf("SetRoot(%q): %v", bad, err)
		}
	}
	if *p.Filesystem.Root != "/srv/rootfs" {
		t.Errorf("a refused value changed the root to %q", *p.Filesystem.Root)
	}
}

// A profile file may set root, and a child inherits or overrides it; the
// value shows in profile show.
func TestRootKey(t *testing.T) {
	p, err := Parse("t", []byte("extends = \"default\"\n[filesystem]\nroot = \"/srv/rootfs\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *p.Filesystem.Root != "/srv/rootfs" {
		t.Errorf("root %q", *p.Filesystem.Root)
	}
	out, err := p.Marshal()
	if err != nil || !strings.Contains(string(out), "root = '/srv/rootfs'") {
		t.Errorf("Marshal: %v\n%s", err, out)
	}
	child, err := Bases{"base": p}.Parse("c", []byte("extends = \"base\"\n"))
	if err != nil || *child.Filesystem.Root != "/srv/rootfs" {
		t.Errorf("child: %v", err)
	}
	if _, err := Parse("t", []byte("extends = \"default\"\n[filesystem]\nroot = \"/a\\u0000b\"\n")); err == nil || !strings.Contains(err.Error(), "filesystem.root") {
		t.Errorf("a NUL in root: %v", err)
	}
	if def := mustLoad(t, "default"); *def.Filesystem.Root != "" {
		t.Errorf("the default profile's root is %q, want the host's", *def.Filesystem.Root)
	}
}

// A client's text may not set root; extending a base that sets it is fine.
func TestRefuseRoot(t *testing.T) {
	text := []byte("extends = \"default\"\n\n[filesystem]\nroot = \"/\"\n")
	err := RefuseRoot("profile_toml", text)
	if err == nil || !strings.Contains(err.Error(), "profile_toml:4:1: filesystem.root: a client's profile cannot choose the jail's root directory") {
		t.Errorf("RefuseRoot: %v", err)
	}
	for _, ok := range []string{"extends = \"default\"\n", "extends = \"default\"\n[filesystem]\nsystem = [\"/opt\"]\n", "not toml ["} {
		if err := RefuseRoot("profile_toml", []byte(ok)); err != nil {
			t.Errorf("RefuseRoot(%q): %v", ok, err)
		}
	}
}
