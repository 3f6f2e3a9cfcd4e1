package jail

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

func TestHostUser(t *testing.T) {
	id := func(u, g int) *HostID { return &HostID{UID: u, GID: g} }
	for _, c := range []struct {
		name         string
		root         bool
		euid, egid   int
		asked, owner *HostID
		want         HostID
		explicit     bool
		err          string
	}{
		{name: "unprivileged: itself", euid: 1000, egid: 1000, owner: id(2000, 2000), want: HostID{1000, 1000}},
		{name: "unprivileged asks itself", euid: 1000, egid: 1000, asked: id(1000, 1000), want: HostID{1000, 1000}, explicit: true},
		{name: "unprivileged asks another", euid: 1000, egid: 1000, asked: id(1001, 1001), err: "only real root"},
		{name: "root, root-owned workdir", root: true, owner: id(0, 0), want: DefaultHostUser},
		{name: "root, no workdir", root: true, want: DefaultHostUser},
		{name: "root, user's workdir", root: true, owner: id(1000, 1000), want: HostID{1000, 1000}},
		{name: "root, user's workdir in group root", root: true, owner: id(1000, 0), want: HostID{1000, DefaultHostUser.GID}},
		{name: "container root without CAP_SYS_ADMIN: itself", owner: id(0, 0), want: HostID{0, 0}},
		{name: "container root asks another", asked: id(1000, 1000), err: "only real root"},
		{name: "root asks", root: true, owner: id(1000, 1000), asked: id(4242, 4243), want: HostID{4242, 4243}, explicit: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, explicit, err := hostUser(c.root, c.euid, c.egid, c.asked, c.owner)
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
	if m := idmapFor(HostID{1000, 1000}, HostID{1000, 1000}); m != nil {
		t.Errorf("same owner: %+v, want none", m)
	}
	m := idmapFor(HostID{0, 0}, DefaultHostUser)
	if m == nil || m.From.UID != 0 || m.To.UID != uint32(DefaultHostUser.UID) || m.To.GID != uint32(DefaultHostUser.GID) {
		t.Errorf("root-owned bind: %+v", m)
	}
	if m := idmapFor(HostID{1000, 5}, HostID{1000, 1000}); m == nil || m.From.GID != 5 {
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
		{Kind: MountBind, Source: "/home/u/proj", Dest: "/home/u/proj", Writable: true},
		{Kind: MountBind, Source: "/srv/data", Dest: "/data"}, // read-only: nothing to do
		{Kind: MountTmpfs, Dest: "/tmp"},
	}
	srcs := []source{{obj: work}, {obj: data}, {}}
	for _, c := range []struct {
		name    string
		trusted []*hostpath.Object
		want    []overBind
	}{
		{"outside every bind", []*hostpath.Object{obj("/etc/p.toml", 1, 7, 8)}, []overBind{}},
		{"in a read-only bind", []*hostpath.Object{obj("/srv/data/p.toml", 1, 5, 6, 9)}, []overBind{}},
		{"at the workdir's top", []*hostpath.Object{obj("/home/u/proj/p.toml", 1, 2, 3, 4, 10)}, []overBind{
			{Dest: "/home/u/proj/p.toml", ID: hostpath.ID{Dev: 1, Ino: 10}, ReadOnly: true},
		}},
		{"nested, two files", []*hostpath.Object{
			obj("/home/u/proj/ci/a/p.toml", 1, 2, 3, 4, 11, 12, 13),
			obj("/home/u/proj/ci/base.toml", 1, 2, 3, 4, 11, 14),
		}, []overBind{
			{Dest: "/home/u/proj/ci", ID: hostpath.ID{Dev: 1, Ino: 11}},
			{Dest: "/home/u/proj/ci/a", ID: hostpath.ID{Dev: 1, Ino: 12}},
			{Dest: "/home/u/proj/ci/base.toml", ID: hostpath.ID{Dev: 1, Ino: 14}, ReadOnly: true},
			{Dest: "/home/u/proj/ci/a/p.toml", ID: hostpath.ID{Dev: 1, Ino: 13}, ReadOnly: true},
		}},
		{"the bind itself (a cache bound read-write)", []*hostpath.Object{obj("/home/u/proj", 1, 2, 3, 4)}, []overBind{
			{Dest: "/home/u/proj", ID: hostpath.ID{Dev: 1, Ino: 4}, ReadOnly: true},
		}},
		// Found by identity: another spelling of the workdir (a bind
		// mount of it elsewhere on the host) is still inside it.
		{"through an alias", []*hostpath.Object{obj("/mnt/alias/p.toml", 1, 20, 4, 21)}, []overBind{
			{Dest: "/home/u/proj/p.toml", ID: hostpath.ID{Dev: 1, Ino: 21}, ReadOnly: true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := overBinds(c.trusted, mounts, srcs)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("overBinds =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestInsideWritable(t *testing.T) {
	work := obj("/w", 1, 2)
	mounts := []Mount{{Kind: MountBind, Source: "/w", Dest: "/w", Writable: true}, {Kind: MountBind, Source: "/r", Dest: "/r"}}
	srcs := []source{{obj: work}, {obj: obj("/r", 1, 3)}}
	if b := insideWritable(obj("/w/sub/report.json", 1, 2, 4, 5).Chain, mounts, srcs); b != "/w" {
		t.Errorf("a file below the workdir: %q", b)
	}
	if b := insideWritable(obj("/r/report.json", 1, 3, 6).Chain, mounts, srcs); b != "" {
		t.Errorf("a file in a read-only bind: %q", b)
	}
	if b := insideWritable(obj("/w", 1, 2).Chain, mounts, srcs); b != "/w" {
		t.Errorf("the workdir itself: %q", b)
	}
}

func TestPlanMounts(t *testing.T) {
	s := &Spec{Net: NetHost, Mounts: []Mount{
		{Kind: MountMask, Dest: "/w/secrets/key"},
		{Kind: MountMask, Dest: "/w/secrets"},
		{Kind: MountBind, Source: "/w", Dest: "/w", Writable: true},
		{Kind: MountMask, Dest: "/w/secretsfile"},
	}}
	var got []string
	for _, m := range planMounts(s) {
		got = append(got, string(m.Kind)+" "+m.Dest)
	}
	want := []string{"bind /w", "bind /etc/resolv.conf", "mask /w/secrets", "mask /w/secretsfile"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planMounts = %v, want %v", got, want)
	}
	s.Mounts = append(s.Mounts, Mount{Kind: MountBind, Source: "/x/resolv.conf", Dest: "/etc/resolv.conf"})
	n := 0
	for _, m := range planMounts(s) {
		if m.Dest == "/etc/resolv.conf" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a Spec that binds /etc/resolv.conf itself gets %d binds there", n)
	}
}

func TestOutputOpen(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "old"), []byte("kept"), 0o644)
	for _, c := range []struct {
		name, want string
	}{
		{"link", "is a symlink"},
		{"fifo", "FIFO"},
		{"sub", "is a directory"},
		{"missing/x", "no such file"},
		{"link/x", "symlink"},
	} {
		o := &Output{Path: filepath.Join(dir, c.name), Perm: 0o644}
		err := o.open()
		if err == nil {
			err = o.create()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
		if o.File != nil {
			t.Errorf("%s: opened", c.name)
		}
	}
	// A missing file is created by create, not by open; refuse closes.
	o := &Output{Path: filepath.Join(dir, "new"), Perm: 0o600}
	if err := o.open(); err != nil || o.File != nil {
		t.Fatalf("open of a missing file: %v, file %v", err, o.File)
	}
	if _, err := os.Lstat(o.Path); err == nil {
		t.Fatal("open created the file")
	}
	o.refuse()
	settleOutputs([]*Output{o})
	if _, err := os.Lstat(o.Path); err == nil || o.File != nil {
		t.Fatal("a refused output was created")
	}
	o = &Output{Path: filepath.Join(dir, "new"), Perm: 0o600}
	settleOutputs([]*Output{o})
	if fi, err := os.Lstat(o.Path); err != nil || o.File == nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settled output: %v, file %v", err, o.File)
	}
	o.File.Close()
	// An existing file is opened as it is (the caller truncates).
	o = &Output{Path: filepath.Join(dir, "old"), Append: true, Perm: 0o600}
	if err := o.open(); err != nil || o.File == nil {
		t.Fatalf("existing file: %v", err)
	}
	o.File.WriteString("+")
	o.File.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "old")); string(b) != "kept+" {
		t.Fatalf("append wrote %q", b)
	}
}

// The report says Landlock restricts pathname sockets exactly from the ABI
// that handles resolve_unix, and not in a read-only bind that a writable
// mount's rule reaches.
func TestUnixSockets(t *testing.T) {
	for abi, want := range map[int]string{0: "not restricted", 7: "not restricted", 8: "not restricted", 9: "landlock", 10: "landlock"} {
		if got := unixSockets(abi, nil); !strings.HasPrefix(got, want) {
			t.Errorf("unixSockets(%d) = %q, want %q...", abi, got, want)
		}
	}
	ro := Mount{Kind: MountBind, Source: "/srv/data", Dest: "/tmp/data"}
	for _, c := range []struct {
		name   string
		mounts []Mount
		want   string
	}{
		{"ro bind alone", []Mount{{Kind: MountBind, Source: "/srv/data", Dest: "/data"}}, "landlock"},
		{"ro bind in a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tmp", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind in the workdir", []Mount{{Kind: MountBind, Source: "/w", Dest: "/tmp", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind over a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tmp/data", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind beside a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tm", Writable: true}, ro}, "landlock"},
		{"ro bind in a read-only bind", []Mount{{Kind: MountBind, Source: "/x", Dest: "/tmp"}, ro}, "landlock"},
	} {
		if got := unixSockets(9, c.mounts); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q...", c.name, got, c.want)
		}
	}
}

// The seccomp cache directory is made with makeDirs: each missing
// component created 0700 in the parent it opened, never through a symlink
// a run could have planted.
func TestMakeDirs(t *testing.T) {
	base := t.TempDir()
	o, err := makeDirs(filepath.Join(base, "a/b/c"), 0o700)
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
	if o, err = makeDirs(filepath.Join(base, "a/b/c"), 0o700); err != nil {
		t.Fatalf("existing: %v", err)
	}
	o.Close()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if o, err := makeDirs(filepath.Join(base, "link/cache"), 0o700); err == nil {
		o.Close()
		t.Error("made a directory through a planted symlink")
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "cache")); err == nil {
		t.Error("a directory was created where the symlink points")
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := makeDirs(filepath.Join(base, "file"), 0o700); err == nil {
		o.Close()
		t.Error("a file was taken for the directory")
	}
}
