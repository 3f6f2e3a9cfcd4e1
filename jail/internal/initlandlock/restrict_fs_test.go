package initlandlock_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// tree is a throw-away directory layout that mirrors the jail's rules:
// rx (a system directory: ReadExec), ro (--ro: Read), rw (the workdir:
// ReadWrite), files (ReadWrite rules on two files of a directory) and out
// (outside every rule). Everything is world writable, so that only
// Landlock can deny, for root and for uid 65534 alike.
type tree struct {
	base, rx, ro, rw, files, out string
}

func newTree(t *testing.T) tree {
	t.Helper()
	// Not t.TempDir: its parent is 0700, which uid 65534 cannot search.
	base, err := os.MkdirTemp("", "initlandlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	tr := tree{base: base}
	tr.rx = filepath.Join(base, "rx")
	tr.ro = filepath.Join(base, "ro")
	tr.rw = filepath.Join(base, "rw")
	tr.files = filepath.Join(base, "files")
	tr.out = filepath.Join(base, "out")
	trueBin, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{tr.base, tr.rx, tr.ro, tr.rw, tr.files, tr.out} {
		must(t, os.MkdirAll(d, 0o777))
		must(t, os.Chmod(d, 0o777))
	}
	for _, f := range []string{"ro/f", "ro/g", "rw/f", "files/allowed", "files/other", "out/secret", "rx/f"} {
		p := filepath.Join(base, f)
		must(t, os.WriteFile(p, []byte("data\n"), 0o666))
		must(t, os.Chmod(p, 0o666))
	}
	for _, f := range []string{"rx/true", "ro/true", "rw/true", "files/true"} {
		p := filepath.Join(base, f)
		must(t, writeExecutable(p, trueBin))
		must(t, os.Chmod(p, 0o777))
	}
	return tr
}

// system returns the rules every scenario needs to run binaries: /usr (and
// the /lib64 loader symlink) read+exec, /proc read, /dev/null as a device.
func system() []landlock.Rule {
	rules := []landlock.Rule{{Path: "/usr", Access: landlock.ReadExec}, {Path: "/proc", Access: landlock.Read}, {Path: "/dev/null", Access: landlock.Device}}
	if _, err := os.Stat("/lib64"); err == nil {
		rules = append(rules, landlock.Rule{Path: "/lib64", Access: landlock.ReadExec})
	}
	return rules
}

func (tr tree) policy() landlock.Policy {
	return landlock.Policy{Rules: append(system(),
		landlock.Rule{Path: tr.rx, Access: landlock.ReadExec},
		landlock.Rule{Path: tr.ro, Access: landlock.Read},
		landlock.Rule{Path: tr.rw, Access: landlock.ReadWrite},
		landlock.Rule{Path: filepath.Join(tr.files, "allowed"), Access: landlock.ReadWrite},
		landlock.Rule{Path: filepath.Join(tr.files, "true"), Access: landlock.ReadWrite},
	)}
}

type check struct {
	name string
	op   op
	want string // with Landlock: "ok" or an errno name; "EXDEV|EACCES" accepts either
}

// checks are what each kind of rule allows and denies. The allowed ops
// (which the jail's own tests, landlock/restrict_fs_test.go, also check)
// show that the denials next to them are the rule's and not a ruleset
// that denies everything; ops run in order (the rw ones build on each
// other).
func (tr tree) checks() []check {
	j := func(p ...string) string { return filepath.Join(append([]string{tr.base}, p...)...) }
	return []check{
		{"read ro file", op{Do: "read", Path: j("ro/f")}, "ok"},
		{"list ro dir", op{Do: "readdir", Path: tr.ro}, "ok"},
		{"write ro file", op{Do: "write", Path: j("ro/f")}, "EACCES"},
		{"truncate ro file", op{Do: "truncate", Path: j("ro/f")}, "EACCES"},
		{"create in ro", op{Do: "create", Path: j("ro/new")}, "EACCES"},
		{"mkdir in ro", op{Do: "mkdir", Path: j("ro/newdir")}, "EACCES"},
		{"unlink in ro", op{Do: "unlink", Path: j("ro/g")}, "EACCES"},
		{"exec in ro", op{Do: "exec", Path: j("ro/true")}, "EACCES"},

		{"exec in rx", op{Do: "exec", Path: j("rx/true")}, "ok"},
		{"read in rx", op{Do: "read", Path: j("rx/f")}, "ok"},
		{"write in rx", op{Do: "write", Path: j("rx/f")}, "EACCES"},
		{"truncate in rx", op{Do: "truncate", Path: j("rx/f")}, "EACCES"},
		{"create in rx", op{Do: "create", Path: j("rx/new")}, "EACCES"},
		{"mkdir in rx", op{Do: "mkdir", Path: j("rx/newdir")}, "EACCES"},
		{"unlink in rx", op{Do: "unlink", Path: j("rx/f")}, "EACCES"},

		{"read rw file", op{Do: "read", Path: j("rw/f")}, "ok"},
		{"write rw file", op{Do: "write", Path: j("rw/f")}, "ok"},
		{"truncate rw file", op{Do: "truncate", Path: j("rw/f")}, "ok"},
		{"create in rw", op{Do: "create", Path: j("rw/new")}, "ok"},
		{"mkdir in rw", op{Do: "mkdir", Path: j("rw/d")}, "ok"},
		{"rename within rw", op{Do: "rename", Path: j("rw/new"), To: j("rw/d/moved")}, "ok"},
		{"link within rw", op{Do: "link", Path: j("rw/d/moved"), To: j("rw/linked")}, "ok"},
		{"exec in rw", op{Do: "exec", Path: j("rw/true")}, "ok"},
		{"unlink in rw", op{Do: "unlink", Path: j("rw/linked")}, "ok"},

		// refer: only between ReadWrite rules.
		{"hard-link ro file into rw", op{Do: "link", Path: j("ro/f"), To: j("rw/stolen")}, "EXDEV|EACCES"},
		{"rename ro file into rw", op{Do: "rename", Path: j("ro/f"), To: j("rw/stolen2")}, "EXDEV|EACCES"},
		{"rename rw file into ro", op{Do: "rename", Path: j("rw/f"), To: j("ro/planted")}, "EXDEV|EACCES"},
		{"hard-link rw file into out", op{Do: "link", Path: j("rw/true"), To: j("out/planted")}, "EXDEV|EACCES"},

		{"file rule: read allowed file", op{Do: "read", Path: j("files/allowed")}, "ok"},
		{"file rule: write allowed file", op{Do: "write", Path: j("files/allowed")}, "ok"},
		{"file rule: exec allowed file", op{Do: "exec", Path: j("files/true")}, "ok"}, // a device node's rights would not allow it
		{"file rule: sibling denied", op{Do: "read", Path: j("files/other")}, "EACCES"},
		{"file rule: dir not listable", op{Do: "readdir", Path: tr.files}, "EACCES"},
		{"file rule: no create next to it", op{Do: "create", Path: j("files/new")}, "EACCES"},

		{"outside: read", op{Do: "read", Path: j("out/secret")}, "EACCES"},
		{"outside: list", op{Do: "readdir", Path: tr.out}, "EACCES"},
		{"outside: create", op{Do: "create", Path: j("out/new")}, "EACCES"},
		{"outside: list the tree", op{Do: "readdir", Path: tr.base}, "EACCES"},
		{"outside: host /etc", op{Do: "read", Path: "/etc/passwd"}, "EACCES"},
	}
}

func ops(cs []check) []op {
	var out []op
	for _, c := range cs {
		out = append(out, c.op)
	}
	return out
}

// TestRestrictFS runs the checks without Landlock (every op works: DAC is
// not what denies) and with the ruleset the init builds, as root and as
// uid 65534.
func TestRestrictFS(t *testing.T) {
	abi := requireABI(t, 1).ABI
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			control := newTree(t)
			got := run(t, scenario{NoRestrict: true, Ops: ops(control.checks())}, cred)
			for i, c := range control.checks() {
				if got.Results[i] != "ok" {
					t.Errorf("control (no Landlock) %s: %s; the test tree is wrong", c.name, got.Results[i])
				}
			}

			tr := newTree(t)
			got = restricted(t, scenario{Policy: tr.policy(), Ops: ops(tr.checks())}, cred)
			for i, c := range tr.checks() {
				want := c.want
				if abi < 2 && (c.op.Do == "rename" || c.op.Do == "link") {
					want = "EXDEV" // ABI 1 denies all reparenting
				}
				if !matches(got.Results[i], want) {
					t.Errorf("%s: got %s, want %s", c.name, got.Results[i], want)
				}
			}
		})
	}
}

// TestRestrictList: a List rule (the jail's rule on "/") lets every
// directory below it be listed and nothing else: no reads, no creates.
func TestRestrictList(t *testing.T) {
	requireABI(t, 1)
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			tr := newTree(t)
			p := tr.policy()
			p.Rules = append(p.Rules, landlock.Rule{Path: tr.base, Access: landlock.List})
			checks := []check{
				{"list the rule's dir", op{Do: "readdir", Path: tr.base}, "ok"},
				{"list a dir below", op{Do: "readdir", Path: tr.out}, "ok"},
				{"list the file rule's dir", op{Do: "readdir", Path: tr.files}, "ok"},
				{"read below", op{Do: "read", Path: filepath.Join(tr.out, "secret")}, "EACCES"},
				{"read the file rule's sibling", op{Do: "read", Path: filepath.Join(tr.files, "other")}, "EACCES"},
				{"create below", op{Do: "create", Path: filepath.Join(tr.out, "new")}, "EACCES"},
				{"mkdir below", op{Do: "mkdir", Path: filepath.Join(tr.out, "d")}, "EACCES"},
				{"list outside", op{Do: "readdir", Path: "/etc"}, "EACCES"},
			}
			got := restricted(t, scenario{Policy: p, Ops: ops(checks)}, cred)
			for i, c := range checks {
				if got.Results[i] != c.want {
					t.Errorf("%s: got %s, want %s", c.name, got.Results[i], c.want)
				}
			}
		})
	}
}

// writeExecutable writes a program the tests exec, holding syscall.ForkLock
// while it is open for writing: the subtests run in parallel, and a child
// another one forks in the meantime would hold the write descriptor until
// its exec, which fails the exec of the program with ETXTBSY (the control
// run of TestRestrictFS did once, in a CI imitation beside a CPU hog).
func writeExecutable(p string, data []byte) error {
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	return os.WriteFile(p, data, 0o777)
}
