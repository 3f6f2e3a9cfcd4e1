package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFollowRefusal(t *testing.T) {
	const me, other = 1000, 1001
	for _, c := range []struct {
		name      string
		protected bool
		dir       dirInfo
		linkUID   uint32
		want      string // substring of the refusal; "" = followed
	}{
		{"system dir", true, dirInfo{uid: 0}, 0, ""},
		{"system dir, someone's link", true, dirInfo{uid: 0}, other, "neither you nor root"},
		{"own home, own link", true, dirInfo{uid: me}, me, ""},
		{"own home, root's link", true, dirInfo{uid: me}, 0, ""},
		{"someone's home, their link", true, dirInfo{uid: other}, other, "neither you nor root"},
		{"someone's home, root's link", true, dirInfo{uid: other}, 0, "directory of uid"},
		{"group-writable system dir", true, dirInfo{uid: 0, sharedWrite: true}, 0, "group or everyone"},
		{"writable project dir", false, dirInfo{uid: me}, me, "may write"},
		{"writable, root's link", false, dirInfo{uid: 0}, 0, "may write"},
		{"sticky /tmp, own link", true, dirInfo{uid: 0, sticky: true, sharedWrite: true}, me, ""},
		{"sticky /tmp, dir owner's link", true, dirInfo{uid: 0, sticky: true, sharedWrite: true}, 0, ""},
		{"sticky /tmp, other's link", true, dirInfo{uid: 0, sticky: true, sharedWrite: true}, other, "neither you nor root"},
		{"overflow uid, mapped", true, dirInfo{uid: 0}, 65534, "neither you nor root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := followRefusal(c.protected, c.dir, c.linkUID, owners{euid: me})
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("followRefusal = %q, want %q", got, c.want)
			}
		})
	}
}

// In a user namespace that does not map the overflow uid, a link and a
// directory of that uid (an owner outside the namespace) are followed;
// shared-writable directories are still refused.
func TestFollowRefusalOuterOwner(t *testing.T) {
	const me = 0
	who := owners{euid: me, outer: 65534, hasOuter: true}
	for _, c := range []struct {
		name    string
		dir     dirInfo
		linkUID uint32
		want    string
	}{
		{"outer link in outer dir", dirInfo{uid: 65534}, 65534, ""},
		{"outer link in root dir", dirInfo{uid: 0}, 65534, ""},
		{"mapped user's link", dirInfo{uid: 65534}, 1000, "neither you nor root"},
		{"outer dir writable by all", dirInfo{uid: 65534, sharedWrite: true}, 65534, "group or everyone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := followRefusal(true, c.dir, c.linkUID, who)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("followRefusal = %q, want %q", got, c.want)
			}
		})
	}
}

func TestUnmapped(t *testing.T) {
	for _, c := range []struct {
		uidMap string
		uid    uint32
		want   bool
	}{
		{"         0          0 4294967295\n", 65534, false}, // the initial namespace
		{"         0       1000          1\n", 65534, true},  // unshare -r
		{"0 1000 1\n1 100000 65536\n", 65534, false},         // rootless podman
		{"0 1000 1\n1 100000 65533\n", 65534, true},
		{"", 65534, false}, // no map understood: no wider trust
		{"0 x 1\n", 65534, false},
		{"0 0\n", 65534, false},
	} {
		if got := unmapped(c.uidMap, c.uid); got != c.want {
			t.Errorf("unmapped(%q, %d) = %v, want %v", c.uidMap, c.uid, got, c.want)
		}
	}
}

func TestRefusal(t *testing.T) {
	id := func(n uint64) ID { return ID{Dev: 1, Ino: n} }
	r := &rules{
		system: map[ID]string{id(2): "/usr", id(3): "/etc"},
		top:    map[ID]string{id(1): "/", id(4): "/tmp", id(5): "/home"},
		homes:  map[ID]string{id(5): "/home", id(6): "/home/u"},
	}
	chain := func(ids ...uint64) []Elem {
		out := []Elem{{Name: "/", ID: id(1)}}
		for _, n := range ids {
			out = append(out, Elem{Name: "x", ID: id(n)})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		chain []Elem
		want  string // "" = allowed
	}{
		{"root", chain(), "root directory"},
		{"/usr", chain(2), "is the system directory /usr"},
		{"/usr/local/bin", chain(2, 10, 11), "lies in the system directory /usr"},
		{"/etc/systemd", chain(3, 12), "system directory /etc"},
		{"/tmp", chain(4), "top-level"},
		{"/tmp/proj", chain(4, 13), ""},
		{"/home", chain(5), "top-level"},
		{"$HOME", chain(5, 6), "home directory"},
		{"$HOME/proj", chain(5, 6, 14), ""},
		// A bind mount of /usr/lib at /srv/x: the chain still meets /usr's
		// identity only if the path goes through it; the object itself is
		// compared too.
		{"alias of /usr", chain(15, 2), "is the system directory /usr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := r.refusal(c.chain)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("refusal = %q, want %q", got, c.want)
			}
		})
	}
}

// tree makes a directory tree for the walk tests, in a directory no rule
// protects, and rules that protect dir/prot (as a home would be).
func tree(t *testing.T) (string, *rules) {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{"real/sub", "prot/inner"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "real/sub/f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"planted":        filepath.Join(d, "real"), // a symlink a run could have left
		"prot/ok":        "../real/sub",            // in a protected directory
		"prot/abs":       filepath.Join(d, "real"),
		"prot/loop":      "loop",
		"real/sub/chain": "../../prot/ok",
	} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	r := loadRules(filepath.Join(d, "prot"), "/nonexistent")
	// Only prot: not its parents (the test's temporary directories).
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(d, "prot"), &st); err != nil {
		t.Fatal(err)
	}
	r.homes = map[ID]string{idOf(&st): filepath.Join(d, "prot")}
	return d, r
}

func open(t *testing.T, r *rules, p string, opt Options) (*Object, error) {
	t.Helper()
	root, err := os.OpenFile("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	o, err := openIn(r, root, p, opt)
	if err == nil {
		t.Cleanup(func() { o.Close() })
	}
	return o, err
}

func TestOpenWalk(t *testing.T) {
	d, r := tree(t)
	real := filepath.Join(d, "real")
	for _, c := range []struct {
		path    string
		opt     Options
		want    string // resolved path; "" = an error
		wantErr string
	}{
		{path: d + "/real/sub/f", want: d + "/real/sub/f"},
		{path: d + "/real/sub/../sub/./f", want: d + "/real/sub/f"},
		{path: d + "/planted", wantErr: "in a directory a jailed run may write"},
		{path: d + "/planted/sub", wantErr: "planted is a symlink"},
		{path: d + "/planted", opt: Options{KeepSymlink: true}, want: d + "/planted"},
		{path: d + "/prot/ok/f", want: real + "/sub/f"},
		{path: d + "/prot/abs/sub", want: real + "/sub"},
		{path: d + "/prot/loop", wantErr: "too many levels"},
		{path: d + "/real/sub/chain", wantErr: "in a directory a jailed run may write"},
		{path: d + "/real/sub/f/x", wantErr: "not a directory"},
		{path: d + "/missing", wantErr: "no such file"},
		{path: "/", want: "/"},
	} {
		t.Run(strings.TrimPrefix(c.path, d), func(t *testing.T) {
			o, err := open(t, r, c.path, c.opt)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Path != c.want {
				t.Errorf("Path = %q, want %q", o.Path, c.want)
			}
			// The descriptor is the object named by the resolved path.
			var st unix.Stat_t
			if err := unix.Lstat(c.want, &st); err != nil {
				t.Fatal(err)
			}
			if o.ID() != idOf(&st) {
				t.Errorf("descriptor is %v, path %s is %v", o.ID(), c.want, idOf(&st))
			}
			if got := o.Chain[len(o.Chain)-1].ID; got != o.ID() {
				t.Errorf("chain ends with %v, not the object %v", got, o.ID())
			}
			if len(o.Chain) != strings.Count(strings.TrimSuffix(c.want, "/"), "/")+1 {
				t.Errorf("chain %v does not match %s", o.Chain, c.want)
			}
		})
	}
	if _, err := open(t, r, d+"/missing", Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing path: %v, want fs.ErrNotExist", err)
	}
	var se *SymlinkError
	if _, err := open(t, r, d+"/planted", Options{}); !errors.As(err, &se) || se.Target != real {
		t.Errorf("planted: %v, want a SymlinkError naming %s", err, real)
	}
	if _, err := open(t, r, "relative", Options{}); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestWithin(t *testing.T) {
	d, r := tree(t)
	o, err := open(t, r, d+"/real/sub/f", Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := open(t, r, d+"/real", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rel, ok := o.Within(dir.ID()); !ok || rel != "sub/f" {
		t.Errorf("Within(real) = %q, %v; want sub/f", rel, ok)
	}
	if rel, ok := dir.Within(dir.ID()); !ok || rel != "" {
		t.Errorf("Within(self) = %q, %v", rel, ok)
	}
	other, err := open(t, r, d+"/prot", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Within(other.ID()); ok {
		t.Error("real/sub/f is within prot")
	}
}

// The walk swaps nothing in: the descriptor it returns is the directory it
// checked, even while another process exchanges the directory with a
// symlink to / in a loop (the race the supervisor had when it checked a
// path and opened it again).
func TestOpenRacingExchange(t *testing.T) {
	d, r := tree(t)
	w := filepath.Join(d, "real/w")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(d, "real/swap")); err != nil {
		t.Fatal(err)
	}
	var wst unix.Stat_t
	if err := unix.Stat(w, &wst); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, w, unix.AT_FDCWD, filepath.Join(d, "real/swap"), unix.RENAME_EXCHANGE)
		}
	}()
	var root unix.Stat_t
	unix.Stat("/", &root)
	for i := 0; i < 2000; i++ {
		o, err := open(t, r, w, Options{})
		if err != nil {
			var se *SymlinkError
			if !errors.As(err, &se) {
				t.Fatalf("try %d: %v", i, err)
			}
			continue
		}
		if o.ID() == idOf(&root) || !o.IsDir() || o.ID() != idOf(&wst) {
			t.Fatalf("try %d: opened %v (%s), not the directory %v", i, o.ID(), o.Path, idOf(&wst))
		}
		o.Close()
	}
	close(stop)
	<-done
}

// A home of the password database that is a symlink is not followed: a
// run could have planted it (to a directory it controls) before the home
// was created. $HOME is followed.
func TestPasswdHomeSymlinkNotFollowed(t *testing.T) {
	d := t.TempDir()
	evil := filepath.Join(d, "evil")
	mine := filepath.Join(d, "mine")
	for _, p := range []string{evil, mine} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(evil, filepath.Join(d, "planted"))
	os.Symlink(mine, filepath.Join(d, "homelink"))
	passwd := filepath.Join(d, "passwd")
	os.WriteFile(passwd, []byte("u:x:1000:1000::"+filepath.Join(d, "planted")+":/bin/sh\n"), 0o644)
	r := loadRules(filepath.Join(d, "homelink"), passwd)
	var evilSt, mineSt unix.Stat_t
	unix.Stat(evil, &evilSt)
	unix.Stat(mine, &mineSt)
	if _, ok := r.homes[idOf(&evilSt)]; ok {
		t.Error("the target of a symlinked passwd home is protected")
	}
	if _, ok := r.homes[idOf(&mineSt)]; !ok {
		t.Error("$HOME given through a symlink is not protected")
	}
}

func TestHomeDirs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/usr/sbin/nologin\nu:x:1000:1000::/home/u/:/bin/sh\nbad line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(HomeDirs(p), ","); got != "/root,/root,/home/u/" {
		t.Errorf("%q", got)
	}
	if got := strings.Join(HomeDirs(filepath.Join(t.TempDir(), "none")), ","); got != "/root" {
		t.Errorf("no passwd: %q", got)
	}
}
