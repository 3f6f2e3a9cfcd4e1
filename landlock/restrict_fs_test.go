package landlock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// tree is a throw-away directory layout bound into the jail the way a
// profile binds it, each kind of mount giving its kind of rule: rx (a
// system directory: read-only, ReadExec), ro (--ro: Read), rw (the
// workdir: ReadWrite) and files (a read-write bind of one file of a
// directory: a ReadWrite rule on a file). The workdir shows at its host
// path, as the CLI binds it; the others under /tree, outside every other
// mount: below the jail's /tmp they would also get the rights of its
// ReadWrite rule, which covers everything mounted below it. Everything is
// world writable and belongs to the jail's host user, so only the mounts
// and Landlock can deny. The fields are paths inside the jail.
type tree struct {
	host              string // the host directory holding it all
	rx, ro, rw, files string
}

func newTree(t *testing.T) tree {
	t.Helper()
	host := ownedDir(t)
	tr := tree{host: host, rx: "/tree/rx", ro: "/tree/ro", rw: filepath.Join(host, "rw"), files: "/tree/files"}
	trueBin, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := hostUser()
	for _, d := range []string{"rx", "ro", "rw", "files"} {
		p := filepath.Join(tr.host, d)
		must(t, os.MkdirAll(p, 0o777))
		must(t, os.Chmod(p, 0o777))
		must(t, os.Chown(p, uid, gid))
	}
	for _, f := range []string{"ro/f", "rw/f", "files/allowed", "rx/f"} {
		p := filepath.Join(tr.host, f)
		must(t, os.WriteFile(p, []byte("data\n"), 0o666))
		must(t, os.Chmod(p, 0o666))
		must(t, os.Chown(p, uid, gid))
	}
	for _, f := range []string{"rx/true", "ro/true", "rw/true"} {
		p := filepath.Join(tr.host, f)
		must(t, os.WriteFile(p, trueBin, 0o777))
		must(t, os.Chmod(p, 0o777))
		must(t, os.Chown(p, uid, gid))
	}
	return tr
}

// spec binds the tree: rw is the workdir, the others are binds.
func (tr tree) spec(t *testing.T) *jail.Spec {
	h := func(p string) string { return filepath.Join(tr.host, p) }
	return jailSpec(t, tr.rw,
		jail.Mount{Kind: jail.MountBind, Source: h("rx"), Dest: tr.rx, Exec: true},
		jail.Mount{Kind: jail.MountBind, Source: h("ro"), Dest: tr.ro},
		jail.Mount{Kind: jail.MountBind, Source: h("files/allowed"), Dest: filepath.Join(tr.files, "allowed"), Writable: true},
	)
}

type check struct {
	name string
	op   op
	want string // with Landlock: "ok" or an errno name
}

// checks are what each kind of rule allows and denies where the mounts
// allow it (the control run shows every op works without Landlock). What
// a read-only mount already denies (write, truncate, create, remove, link
// or rename across mounts) fails with EROFS or EXDEV before Landlock is
// asked: integration's TestLandlockReadOnlyPaths checks it through the
// binary, and the rights tables (TestAccessRights, TestCompileRules) that
// Read and ReadExec rules grant none of it.
func (tr tree) checks() []check {
	in := filepath.Join
	return []check{
		{"read ro file", op{Do: "read", Path: in(tr.ro, "f")}, "ok"},
		{"list ro dir", op{Do: "readdir", Path: tr.ro}, "ok"},
		{"exec in ro", op{Do: "exec", Path: in(tr.ro, "true")}, "EACCES"},

		{"exec in rx", op{Do: "exec", Path: in(tr.rx, "true")}, "ok"},
		{"read in rx", op{Do: "read", Path: in(tr.rx, "f")}, "ok"},

		{"read rw file", op{Do: "read", Path: in(tr.rw, "f")}, "ok"},
		{"write rw file", op{Do: "write", Path: in(tr.rw, "f")}, "ok"},
		{"truncate rw file", op{Do: "truncate", Path: in(tr.rw, "f")}, "ok"},
		{"create in rw", op{Do: "create", Path: in(tr.rw, "new")}, "ok"},
		{"mkdir in rw", op{Do: "mkdir", Path: in(tr.rw, "d")}, "ok"},
		{"rename within rw", op{Do: "rename", Path: in(tr.rw, "new"), To: in(tr.rw, "d/moved")}, "ok"},
		{"link within rw", op{Do: "link", Path: in(tr.rw, "d/moved"), To: in(tr.rw, "linked")}, "ok"},
		{"exec in rw", op{Do: "exec", Path: in(tr.rw, "true")}, "ok"},
		{"unlink in rw", op{Do: "unlink", Path: in(tr.rw, "linked")}, "ok"},

		{"file rule: read allowed file", op{Do: "read", Path: in(tr.files, "allowed")}, "ok"},
		{"file rule: write allowed file", op{Do: "write", Path: in(tr.files, "allowed")}, "ok"},

		// The jail's List rule on /: every directory lists, nothing
		// below is granted by it (files/ holds only the bound file).
		{"list /", op{Do: "readdir", Path: "/"}, "ok"},
		{"list a directory only / covers", op{Do: "readdir", Path: tr.files}, "ok"},
	}
}

// TestRestrictFS runs the checks in a jail without Landlock (every op
// works: the mounts and DAC allow them all) and with it (each works or is
// denied as the rule of its mount says).
func TestRestrictFS(t *testing.T) {
	abi := requireABI(t, 1).ABI
	control := newTree(t)
	var ops []op
	for _, c := range control.checks() {
		ops = append(ops, c.op)
	}
	_, got := runJailed(t, withoutLandlock(control.spec(t)), ops...)
	for i, c := range control.checks() {
		if got[i] != "ok" {
			t.Errorf("control (no Landlock) %s: %s; the test tree is wrong", c.name, got[i])
		}
	}

	tr := newTree(t)
	ops = nil
	for _, c := range tr.checks() {
		ops = append(ops, c.op)
	}
	res, got := runJailed(t, tr.spec(t), ops...)
	if res.Enforcement.LandlockABI != abi {
		t.Fatalf("landlock_abi %d, want %d (degraded %v)", res.Enforcement.LandlockABI, abi, res.Enforcement.Degraded)
	}
	for i, c := range tr.checks() {
		want := c.want
		if abi < 2 && strings.Contains(c.name, "within rw") {
			want = "EXDEV" // ABI 1 denies all reparenting
		}
		if got[i] != want {
			t.Errorf("%s: got %s, want %s", c.name, got[i], want)
		}
	}
}

// TestRestrictProcAndFD checks that the command still reads its own stdin
// pipe through /dev/stdin and bash process substitution (/dev/fd/63), both
// of which go through /proc/self/fd magic links, writes /dev/null and reads
// /proc/self, while the Read rule on /proc denies writing /proc/self/comm,
// which the control run without Landlock may write.
func TestRestrictProcAndFD(t *testing.T) {
	requireABI(t, 1)
	s := jailSpec(t, ownedDir(t))
	ops := []op{
		{Do: "sh", Path: "cat /dev/stdin"},
		{Do: "sh", Path: "cat <(echo substituted)"},
		{Do: "sh", Path: "echo to-null > /dev/null && echo null-ok"},
		{Do: "sh", Path: "head -c 4 /proc/self/status"},
		{Do: "sh", Path: "(echo x > /proc/self/comm) 2>/dev/null && echo comm-written || echo comm-denied"},
	}
	control, _, got := runBoth(t, s, ops...)
	want := []string{"from-stdin", "substituted", "null-ok", "Name", "comm-denied"}
	wantControl := append(want[:4:4], "comm-written")
	for i := range ops {
		if control[i] != wantControl[i] {
			t.Errorf("control %q: got %q, want %q", ops[i].Path, control[i], wantControl[i])
		}
		if got[i] != want[i] {
			t.Errorf("%q: got %q, want %q", ops[i].Path, got[i], want[i])
		}
	}
}
