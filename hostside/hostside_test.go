package hostside

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostpath"
)

// def stands for jail.def, the identity HostUser is given
// for a root supervisor's jail that nothing else decides.
var def = ID{UID: 524287, GID: 524287}

func TestHostUser(t *testing.T) {
	id := func(u, g int) *ID { return &ID{UID: u, GID: g} }
	for _, c := range []struct {
		name         string
		root         bool
		euid, egid   int
		asked, owner *ID
		want         ID
		explicit     bool
		err          string
	}{
		{name: "unprivileged: itself", euid: 1000, egid: 1000, owner: id(2000, 2000), want: ID{1000, 1000}},
		{name: "unprivileged asks itself", euid: 1000, egid: 1000, asked: id(1000, 1000), want: ID{1000, 1000}, explicit: true},
		{name: "unprivileged asks another", euid: 1000, egid: 1000, asked: id(1001, 1001), err: "only real root"},
		{name: "root, root-owned workdir", root: true, owner: id(0, 0), want: def},
		{name: "root, no workdir", root: true, want: def},
		{name: "root, user's workdir", root: true, owner: id(1000, 1000), want: ID{1000, 1000}},
		{name: "root, user's workdir in group root", root: true, owner: id(1000, 0), want: ID{1000, def.GID}},
		{name: "container root without CAP_SYS_ADMIN: itself", owner: id(0, 0), want: ID{0, 0}},
		{name: "container root asks another", asked: id(1000, 1000), err: "only real root"},
		{name: "root asks", root: true, owner: id(1000, 1000), asked: id(4242, 4243), want: ID{4242, 4243}, explicit: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, explicit, err := HostUser(c.root, c.euid, c.egid, c.asked, c.owner, def)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want || explicit != c.explicit {
				t.Errorf("hostUser = %v, %v, %v; want %v, %v", got, explicit, err, c.want, c.explicit)
			}
		})
	}
}

func TestIdmapFor(t *testing.T) {
	if m := idmapFor(ID{1000, 1000}, ID{1000, 1000}); m != nil {
		t.Errorf("same owner: %+v, want none", m)
	}
	m := idmapFor(ID{0, 0}, def)
	if m == nil || m.From.UID != 0 || m.To.UID != uint32(def.UID) || m.To.GID != uint32(def.GID) {
		t.Errorf("root-owned bind: %+v", m)
	}
	if m := idmapFor(ID{1000, 5}, ID{1000, 1000}); m == nil || m.From.GID != 5 {
		t.Errorf("a group that differs needs a mapping too: %+v", m)
	}
}

// obj is an opened object with a made-up chain: names and inodes.
func obj(path string, inos ...uint64) *hostpath.Object {
	names := append([]string{"/"}, strings.Split(strings.TrimPrefix(path, "/"), "/")...)
	o := &hostpath.Object{Path: path}
	for i, n := range names {
		o.Chain = append(o.Chain, hostpath.Elem{Name: n, ID: hostpath.ID{Dev: 1, Ino: inos[i]}})
	}
	o.Stat.Dev, o.Stat.Ino = 1, inos[len(inos)-1]
	return o
}

func TestOverBinds(t *testing.T) {
	work := obj("/home/u/proj", 1, 2, 3, 4)
	data := obj("/srv/data", 1, 5, 6)
	mounts := []Mount{
		{Kind: Bind, Source: "/home/u/proj", Dest: "/home/u/proj", Writable: true},
		{Kind: Bind, Source: "/srv/data", Dest: "/data"}, // read-only: nothing to do
		{Kind: Tmpfs, Dest: "/tmp"},
	}
	srcs := []Source{{Obj: work}, {Obj: data}, {}}
	for _, c := range []struct {
		name    string
		trusted []*hostpath.Object
		want    []Over
	}{
		{"outside every bind", []*hostpath.Object{obj("/etc/p.toml", 1, 7, 8)}, []Over{}},
		{"in a read-only bind", []*hostpath.Object{obj("/srv/data/p.toml", 1, 5, 6, 9)}, []Over{}},
		{"at the workdir's top", []*hostpath.Object{obj("/home/u/proj/p.toml", 1, 2, 3, 4, 10)}, []Over{
			{Dest: "/home/u/proj/p.toml", ID: hostpath.ID{Dev: 1, Ino: 10}, ReadOnly: true},
		}},
		{"nested, two files", []*hostpath.Object{
			obj("/home/u/proj/ci/a/p.toml", 1, 2, 3, 4, 11, 12, 13),
			obj("/home/u/proj/ci/base.toml", 1, 2, 3, 4, 11, 14),
		}, []Over{
			{Dest: "/home/u/proj/ci", ID: hostpath.ID{Dev: 1, Ino: 11}},
			{Dest: "/home/u/proj/ci/a", ID: hostpath.ID{Dev: 1, Ino: 12}},
			{Dest: "/home/u/proj/ci/base.toml", ID: hostpath.ID{Dev: 1, Ino: 14}, ReadOnly: true},
			{Dest: "/home/u/proj/ci/a/p.toml", ID: hostpath.ID{Dev: 1, Ino: 13}, ReadOnly: true},
		}},
		{"the bind itself (a cache bound read-write)", []*hostpath.Object{obj("/home/u/proj", 1, 2, 3, 4)}, []Over{
			{Dest: "/home/u/proj", ID: hostpath.ID{Dev: 1, Ino: 4}, ReadOnly: true},
		}},
		// Found by identity: another spelling of the workdir (a bind
		// mount of it elsewhere on the host) is still inside it.
		{"through an alias", []*hostpath.Object{obj("/mnt/alias/p.toml", 1, 20, 4, 21)}, []Over{
			{Dest: "/home/u/proj/p.toml", ID: hostpath.ID{Dev: 1, Ino: 21}, ReadOnly: true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := OverBinds(c.trusted, mounts, srcs)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("OverBinds =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestInsideWritable(t *testing.T) {
	work := obj("/w", 1, 2)
	mounts := []Mount{{Kind: Bind, Source: "/w", Dest: "/w", Writable: true}, {Kind: Bind, Source: "/r", Dest: "/r"}}
	srcs := []Source{{Obj: work}, {Obj: obj("/r", 1, 3)}}
	if b := InsideWritable(obj("/w/sub/report.json", 1, 2, 4, 5).Chain, mounts, srcs); b != "/w" {
		t.Errorf("a file below the workdir: %q", b)
	}
	if b := InsideWritable(obj("/r/report.json", 1, 3, 6).Chain, mounts, srcs); b != "" {
		t.Errorf("a file in a read-only bind: %q", b)
	}
	if b := InsideWritable(obj("/w", 1, 2).Chain, mounts, srcs); b != "/w" {
		t.Errorf("the workdir itself: %q", b)
	}
}

// The seccomp cache directory is made with makeDirs: each missing
// component created 0700 in the parent it opened, never through a symlink
// a run could have planted.
func TestMakeDirs(t *testing.T) {
	base := t.TempDir()
	o, err := MakeDirs(filepath.Join(base, "a/b/c"), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		st, err := os.Lstat(filepath.Join(base, d))
		if err != nil || !st.IsDir() || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v %v, want a directory only its owner can enter", d, st.Mode(), err)
		}
	}
	if o, err = MakeDirs(filepath.Join(base, "a/b/c"), 0o700); err != nil {
		t.Fatalf("existing: %v", err)
	}
	o.Close()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if o, err := MakeDirs(filepath.Join(base, "link/cache"), 0o700); err == nil {
		o.Close()
		t.Error("made a directory through a planted symlink")
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "cache")); err == nil {
		t.Error("a directory was created where the symlink points")
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := MakeDirs(filepath.Join(base, "file"), 0o700); err == nil {
		o.Close()
		t.Error("a file was taken for the directory")
	}
}
