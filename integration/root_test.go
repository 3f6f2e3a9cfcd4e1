package integration

import (
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A root of your own (filesystem.root, --root DIR): the jail's system
// directories and /etc entries come from a directory tree instead of the
// host, opened beneath the tree with its symlinks resolved in it; the
// tree must belong to root or the caller and be writable by no one else.

// rootfs is a small root file system owned by u: the static helper as
// usr/bin/tjhelper, a marker file, the merged-/usr link bin -> usr/bin,
// etc/ssl/certs -> /etc/ssl/tree-certs (absolute: in the tree) and
// etc/os-release -> a host file (absolute: not in the tree, so not shown).
type rootfs struct {
	dir     string
	marker  string // the content of usr/share/marker
	ca      string // of etc/ssl/tree-certs/ca.pem
	hostTxt string // the host file etc/os-release names
	busybox bool   // usr/bin/busybox, with sh, cat, ls and test linked to it
}

func (u *user) rootfs(t *testing.T) *rootfs {
	t.Helper()
	parent := u.dir(t)
	r := &rootfs{dir: filepath.Join(parent, "rootfs"), marker: marker("tree"), ca: marker("ca"), hostTxt: filepath.Join(parent, "host-only.txt")}
	for _, d := range []string{"usr/bin", "usr/share", "etc/ssl/tree-certs", "opt"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"usr/share/marker": r.marker, "etc/ssl/tree-certs/ca.pem": r.ca}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(r.dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(r.hostTxt, []byte(marker("host")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(helperBin, filepath.Join(r.dir, "usr/bin/tjhelper")); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"bin":            "usr/bin",
		"etc/ssl/certs":  "/etc/ssl/tree-certs",
		"etc/os-release": r.hostTxt,
		"opt/tools":      "/usr/bin", // the tree's /usr/bin, not the host's
	}
	if bb := staticBusybox(); bb != "" {
		if err := copyFile(bb, filepath.Join(r.dir, "usr/bin/busybox")); err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"sh", "cat", "ls", "test"} {
			links["usr/bin/"+a] = "busybox"
		}
		r.busybox = true
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(r.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	r.chown(t, u.uid, u.gid)
	return r
}

// chown gives the whole tree to uid:gid, symlinks included.
func (r *rootfs) chown(t *testing.T, uid, gid int) {
	t.Helper()
	err := filepath.Walk(r.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// staticBusybox is a statically linked busybox of this host (Debian's
// busybox-static), or "" where there is none (the VM guests).
func staticBusybox() string {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p
		}
	}
	return ""
}

// hostOnly is a program of the host's /usr/bin that the tree lacks: a
// file, or where there is none (the VM guests' busybox applets) a link.
func hostOnly(t *testing.T, r *rootfs) string {
	t.Helper()
	ents, err := os.ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	var link string
	for _, e := range ents {
		if strings.Trim(e.Name(), "abcdefghijklmnopqrstuvwxyz") != "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.dir, "usr/bin", e.Name())); !os.IsNotExist(err) {
			continue
		}
		switch {
		case e.Type().IsRegular():
			return filepath.Join("/usr/bin", e.Name())
		case link == "" && e.Type()&os.ModeSymlink != 0:
			link = filepath.Join("/usr/bin", e.Name())
		}
	}
	if link == "" {
		t.Fatal("no program in the host's /usr/bin that the tree lacks")
	}
	return link
}

// reportRoot is enforcement.root of a report.
func reportRoot(t *testing.T, o *outcome) string {
	t.Helper()
	var rep struct {
		Enforcement struct {
			Root string `json:"root"`
		} `json:"enforcement"`
	}
	if err := json.Unmarshal(o.reportRaw, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return rep.Enforcement.Root
}

// The command sees the tree's /usr, /bin and /etc entries, found by PATH
// in the tree, and none of the host's; a symlink in the tree to a host
// path does not reach the host's file. A relative --root is taken from
// the current directory.
func TestRootOfYourOwn(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		w := u.workdir(t)
		host := hostOnly(t, r)
		o := u.jailRun(t, w, run{args: []string{"--root", "rootfs"}, dir: filepath.Dir(r.dir)}, "tjhelper",
			"read", "/usr/share/marker", ";",
			"stat", host, ";",
			"read", "/etc/os-release", ";",
			"read", "/etc/ssl/certs/ca.pem", ";",
			"stat", "/bin", ";",
			"ls", "/usr/bin", ";",
			"ls", "/opt")
		l := o.ok(t, 7)
		var got string
		if o.value(t, 0, &got); got != r.marker {
			t.Errorf("/usr/share/marker is %q, want the tree's %q", got, r.marker)
		}
		if l[1] != "errno ENOENT" {
			t.Errorf("the host's %s is in the jail: %s", host, l[1])
		}
		if l[2] != "errno ENOENT" {
			t.Errorf("the tree's etc/os-release -> %s (a host path) reached the host's file: %s", r.hostTxt, l[2])
		}
		if o.value(t, 3, &got); got != r.ca {
			t.Errorf("/etc/ssl/certs/ca.pem is %q, want the tree's %q (its link is resolved in the tree)", got, r.ca)
		}
		var st struct{ Mode string }
		if o.value(t, 4, &st); !strings.HasPrefix(st.Mode, "12") {
			t.Errorf("/bin is not kept as the tree's symlink: mode %s", st.Mode)
		}
		var names []string
		o.value(t, 5, &names)
		want := []string{"tjhelper"}
		if r.busybox {
			want = []string{"busybox", "cat", "ls", "sh", "test", "tjhelper"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("/usr/bin holds %v, want the tree's %v", names, want)
		}
		if l[6] != "errno ENOENT" {
			t.Errorf("/opt, which the profile does not list, is shown: %s", l[6])
		}
		if got := reportRoot(t, o); got != r.dir {
			t.Errorf("enforcement.root is %q, want %q", got, r.dir)
		}
		// Without --root, the same jail is the host's.
		o = u.jail(t, w, nil, "stat", host)
		if l := o.ok(t, 1); failed(l[0]) {
			t.Errorf("without a root, the host's %s: %s", host, l[0])
		}
		if got := reportRoot(t, o); got != "" {
			t.Errorf("enforcement.root without a root: %q", got)
		}
	})
}

// A shell of the tree (a static busybox) runs there, with the tree's
// programs on PATH.
func TestRootBusybox(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		if !r.busybox {
			t.Skip("no static busybox on this host (Debian's busybox-static)")
		}
		w := u.workdir(t)
		host := hostOnly(t, r)
		o := u.jailRun(t, w, run{args: []string{"--root", r.dir}}, "sh", "-c", `cat /usr/share/marker; echo; test -e `+host+` && echo host || echo no-host; ls /bin/`)
		if o.code != 0 {
			t.Fatalf("want exit 0\n%s", o)
		}
		if want := r.marker + "\nno-host\n"; !strings.HasPrefix(o.stdout, want) || !strings.Contains(o.stdout, "busybox") {
			t.Errorf("stdout %q, want %q and the tree's /bin", o.stdout, want)
		}
	})
}

// A profile may set root and list more of the tree: an entry whose
// absolute symlink names a host directory is that directory in the tree.
func TestRootProfileKey(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		w := u.workdir(t)
		prof := filepath.Join(u.dir(t), "rooted.toml")
		text := "extends = \"default\"\n[filesystem]\nroot = \"" + r.dir + "\"\nsystem = [\"/opt/tools\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o := u.jailRun(t, w, run{args: []string{"--profile", prof}}, "/opt/tools/tjhelper", "ls", "/opt/tools", ";", "read", "/usr/share/marker")
		l := o.ok(t, 2)
		var names []string
		if o.value(t, 0, &names); !slices.Contains(names, "tjhelper") || slices.Contains(names, filepath.Base(hostOnly(t, r))) {
			t.Errorf("/opt/tools (-> /usr/bin in the tree) holds %v, want the tree's /usr/bin", names)
		}
		if !strings.Contains(l[1], r.marker) {
			t.Errorf("/usr/share/marker: %s", l[1])
		}
	})
}

// A tree that someone else could change is refused, naming what and the
// fix; so is a link in it that loops back to itself, and a missing one.
func TestRootRefused(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, c := range []struct {
			name  string
			spoil func(t *testing.T, r *rootfs)
			want  []string
		}{
			{"writable by others", func(t *testing.T, r *rootfs) { os.Chmod(r.dir, 0o777) }, []string{"root directory: ", "mode 0777", "chmod go-w"}},
			{"writable by its group", func(t *testing.T, r *rootfs) { os.Chmod(r.dir, 0o775) }, []string{"mode 0775"}},
			{"another user's", func(t *testing.T, r *rootfs) {
				if os.Geteuid() != 0 {
					t.Skip("only root can give the tree to another user")
				}
				os.Lchown(r.dir, 12345, 12345)
			}, []string{"belongs to uid 12345", "chown"}},
			{"usr writable by others", func(t *testing.T, r *rootfs) { os.Chmod(filepath.Join(r.dir, "usr"), 0o777) }, []string{"/usr has mode 0777"}},
			{"etc/ssl/certs -> /etc/ssl/certs", func(t *testing.T, r *rootfs) {
				os.Remove(filepath.Join(r.dir, "etc/ssl/certs"))
				os.Symlink("/etc/ssl/certs", filepath.Join(r.dir, "etc/ssl/certs"))
			}, []string{"bind /etc/ssl/certs of the root directory", "too many levels of symbolic links"}},
			{"missing", func(t *testing.T, r *rootfs) { os.RemoveAll(r.dir) }, []string{"does not exist"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := u.rootfs(t)
				c.spoil(t, r)
				o := u.jailRun(t, w, run{args: []string{"--root", r.dir}}, "tjhelper", "self")
				oneLineError(t, o, c.want...)
			})
		}
		// The host's root is no tree: runs write below it, and every
		// symlink in a tree is followed.
		o := u.jailRun(t, w, run{args: []string{"--root", "/"}}, "tjhelper", "self")
		oneLineError(t, o, "/ is the host's root directory, not a root file system of its own")
	})
}

// A tree inside the workdir is read-only there, as a profile file is:
// the command cannot change the next run's programs.
func TestRootInsideWorkdir(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		r := u.rootfs(t)
		inside := filepath.Join(w, "rootfs")
		if err := os.Rename(r.dir, inside); err != nil {
			t.Fatal(err)
		}
		o := u.jailRun(t, w, run{args: []string{"--root", inside}}, "tjhelper",
			"write", filepath.Join(inside, "usr/bin/tjhelper"), "10", ";",
			"write", filepath.Join(inside, "usr/share/new"), "10", ";",
			"write", filepath.Join(w, "out"), "10")
		l := o.ok(t, 3)
		if l[0] != "errno EROFS" || l[1] != "errno EROFS" || l[2] != "ok" {
			t.Errorf("writes to the tree in the workdir: %v, want EROFS, EROFS and the workdir writable", l)
		}
	})
}

// A system entry that is a symlink is kept as one, as on the host: the
// tree's usr -> /usr is then /usr -> /usr in the jail, a loop, not the
// host's /usr.
func TestRootUsrLinkToHost(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		host := hostOnly(t, r)
		if err := os.RemoveAll(filepath.Join(r.dir, "usr")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/usr", filepath.Join(r.dir, "usr")); err != nil {
			t.Fatal(err)
		}
		r.chown(t, u.uid, u.gid)
		w := u.workdir(t)
		o := u.jailRun(t, w, run{args: []string{"--root", r.dir}}, host, "--version")
		if o.code != 126 || !strings.Contains(o.stderr, "too many levels of symbolic links") {
			t.Errorf("the host's %s through the tree's usr -> /usr: want exit 126 (a loop)\n%s", host, o)
		}
	})
}

// Without namespaces nothing is mounted: a root directory is refused, not
// ignored (the command would run the host's programs).
func TestNoNamespacesRefusesRoot(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		w := u.workdir(t)
		o := u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces", "--root", r.dir}, wrap: noNSWrap}, "tjhelper", "self")
		if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container") {
			t.Skipf("the emulated container cannot start here: %s", o.stderr)
		}
		oneLineError(t, o, "the root directory "+r.dir+" can only be shown in a mount namespace of the jail's own")
	})
}

// A served profile may set a root, warm jails included; a client's own
// profile may extend it but not set one.
func TestRootServed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		w := u.workdir(t)
		dir := u.serverDir(t)
		prof := filepath.Join(dir, "rooted.toml")
		q := make([]string, len(u.degraded))
		for i, d := range u.degraded {
			q[i] = `"` + d + `"`
		}
		text := "extends = \"default\"\nallow_degraded = [" + strings.Join(q, ", ") + "]\n[filesystem]\nroot = \"" + r.dir + "\"\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(prof, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		s := u.startServer(t, dir, "--profile", prof, "--warm", "1", "--allow-client-profiles")
		for i := 0; i < 2; i++ { // the second one may take a warm jail
			rep := s.call(t, req{Argv: []string{"tjhelper", "read", "/usr/share/marker"}, Profile: prof, Workdir: w})
			rep.ok(t, 1)
			var got string
			if rep.value(t, 0, &got); got != r.marker {
				t.Errorf("run %d: /usr/share/marker is %q, want the tree's %q", i, got, r.marker)
			}
		}
		rep := s.callProfileTOML(t, req{Argv: []string{"tjhelper", "read", "/usr/share/marker"}, Workdir: w}, "extends = \""+prof+"\"\n")
		rep.ok(t, 1)
		rep = s.callProfileTOML(t, req{Argv: []string{"tjhelper", "self"}, Workdir: w}, "extends = \""+prof+"\"\n[filesystem]\nroot = \"/\"\n")
		rep.refused(t, "profile_toml:3:1: filesystem.root: a client's profile cannot choose the jail's root directory")
	})
}

// dynamicTree copies the host's dynamically linked /usr/bin/true into the
// tree as usr/bin/tjtrue, with its loader and libraries at the paths the
// host has them (the host's lib and lib64 links kept as links), and
// returns the libraries' paths in the tree. It skips the test where the
// host has no such program (the VM guests have busybox only).
func dynamicTree(t *testing.T, r *rootfs) (libs []string) {
	t.Helper()
	prog := "/usr/bin/true"
	f, err := elf.Open(prog)
	if err != nil {
		t.Skipf("%s: %v", prog, err)
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err := f.ImportedLibraries()
	if interp == "" || err != nil || len(needed) == 0 {
		t.Skipf("%s is not dynamically linked here", prog)
	}
	for _, l := range []string{"lib", "lib64", "lib32"} {
		if target, err := os.Readlink("/" + l); err == nil {
			if err := os.Symlink(target, filepath.Join(r.dir, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// copyIn copies the host's file p to the tree at p's directory as
	// the host resolves it, so that the tree's links lead there too.
	copyIn := func(p string) string {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(r.dir, dir, filepath.Base(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(real, dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	copyIn(interp)
	for _, n := range needed {
		found := ""
		for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
			if _, err := os.Stat(filepath.Join(d, n)); err == nil {
				found = filepath.Join(d, n)
				break
			}
		}
		if found == "" {
			t.Skipf("%s needs %s, not found in the usual directories", prog, n)
		}
		libs = append(libs, copyIn(found))
	}
	if err := copyFile(prog, filepath.Join(r.dir, "usr/bin/tjtrue")); err != nil {
		t.Fatal(err)
	}
	return libs
}

// A dynamically linked program of the tree runs with the tree's loader
// and libraries: without its libc in the tree it cannot start, though the
// host has one.
func TestRootDynamicProgram(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		r := u.rootfs(t)
		libs := dynamicTree(t, r)
		r.chown(t, u.uid, u.gid)
		w := u.workdir(t)
		o := u.jailRun(t, w, run{args: []string{"--root", r.dir}}, "tjtrue")
		if o.code != 0 {
			t.Fatalf("the tree's dynamically linked program with its loader and libraries: want exit 0\n%s", o)
		}
		for _, l := range libs {
			if err := os.Remove(l); err != nil {
				t.Fatal(err)
			}
		}
		o = u.jailRun(t, w, run{args: []string{"--root", r.dir}}, "tjtrue")
		if o.code != 127 || !strings.Contains(o.stderr, "error while loading shared libraries") {
			t.Errorf("without its libraries in the tree: want exit 127 from the tree's loader\n%s", o)
		}
	})
}
