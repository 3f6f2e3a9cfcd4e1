package landlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a throw-away directory layout that mirrors the jail's mounts:
// rx (system dir), ro (--ro bind), rw (workdir), files (a file rule on one
// file of a directory), out (outside every rule). Everything is world
// writable, so only Landlock can deny.
type tree struct {
	base, rx, ro, rw, files, out string
}

func newTree(t *testing.T) tree {
	t.Helper()
	base, err := os.MkdirTemp("", "landlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	return tree{base: base}.populate(t)
}

func (tr tree) populate(t *testing.T) tree {
	t.Helper()
	tr.rx = filepath.Join(tr.base, "rx")
	tr.ro = filepath.Join(tr.base, "ro")
	tr.rw = filepath.Join(tr.base, "rw")
	tr.files = filepath.Join(tr.base, "files")
	tr.out = filepath.Join(tr.base, "out")
	trueBin, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{tr.base, tr.rx, tr.ro, tr.rw, tr.files, tr.out} {
		must(t, os.MkdirAll(d, 0o777))
		must(t, os.Chmod(d, 0o777))
	}
	for _, f := range []string{"ro/f", "ro/g", "rw/f", "files/allowed", "files/other", "out/secret", "rx/f"} {
		p := filepath.Join(tr.base, f)
		must(t, os.WriteFile(p, []byte("data\n"), 0o666))
		must(t, os.Chmod(p, 0o666))
	}
	for _, f := range []string{"rx/true", "ro/true", "rw/true"} {
		p := filepath.Join(tr.base, f)
		must(t, os.WriteFile(p, trueBin, 0o777))
		must(t, os.Chmod(p, 0o777))
	}
	return tr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// system returns the rules every scenario needs to run binaries: /usr (and
// the /lib64 loader symlink) read+exec, /proc read, /dev/null as a device.
func system() []Rule {
	rules := []Rule{{"/usr", ReadExec}, {"/proc", Read}, {"/dev/null", Device}}
	if _, err := os.Stat("/lib64"); err == nil {
		rules = append(rules, Rule{"/lib64", ReadExec})
	}
	return rules
}

func (tr tree) policy() Policy {
	return Policy{Rules: append(system(),
		Rule{tr.rx, ReadExec},
		Rule{tr.ro, Read},
		Rule{tr.rw, ReadWrite},
		Rule{filepath.Join(tr.files, "allowed"), ReadWrite},
	)}
}

type check struct {
	name string
	op   op
	want string // "ok" or an errno name; "EXDEV|EACCES" accepts either
}

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
		{"create in rx", op{Do: "create", Path: j("rx/new")}, "EACCES"},

		{"read rw file", op{Do: "read", Path: j("rw/f")}, "ok"},
		{"write rw file", op{Do: "write", Path: j("rw/f")}, "ok"},
		{"truncate rw file", op{Do: "truncate", Path: j("rw/f")}, "ok"},
		{"create in rw", op{Do: "create", Path: j("rw/new")}, "ok"},
		{"mkdir in rw", op{Do: "mkdir", Path: j("rw/d")}, "ok"},
		{"rename within rw", op{Do: "rename", Path: j("rw/new"), To: j("rw/d/moved")}, "ok"},
		{"link within rw", op{Do: "link", Path: j("rw/d/moved"), To: j("rw/linked")}, "ok"},
		{"exec in rw", op{Do: "exec", Path: j("rw/true")}, "ok"},
		{"unlink in rw", op{Do: "unlink", Path: j("rw/linked")}, "ok"},

		{"hard-link ro file into rw", op{Do: "link", Path: j("ro/f"), To: j("rw/stolen")}, "EXDEV|EACCES"},
		{"rename ro file into rw", op{Do: "rename", Path: j("ro/f"), To: j("rw/stolen2")}, "EXDEV|EACCES"},
		{"rename rw file into ro", op{Do: "rename", Path: j("rw/f"), To: j("ro/planted")}, "EXDEV|EACCES"},

		{"file rule: read allowed file", op{Do: "read", Path: j("files/allowed")}, "ok"},
		{"file rule: write allowed file", op{Do: "write", Path: j("files/allowed")}, "ok"},
		{"file rule: sibling denied", op{Do: "read", Path: j("files/other")}, "EACCES"},
		{"file rule: dir not listable", op{Do: "readdir", Path: tr.files}, "EACCES"},

		{"outside: read", op{Do: "read", Path: j("out/secret")}, "EACCES"},
		{"outside: list", op{Do: "readdir", Path: tr.out}, "EACCES"},
		{"outside: create", op{Do: "create", Path: j("out/new")}, "EACCES"},
		{"outside: host /etc", op{Do: "read", Path: "/etc/passwd"}, "EACCES"},
	}
}

func matches(got, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if got == w {
			return true
		}
	}
	return false
}

// TestRestrictFS proves the rules mirror the mounts as intended, first
// showing that every operation succeeds without Landlock (so DAC is not what
// denies), then that Landlock allows and denies exactly as the access says.
func TestRestrictFS(t *testing.T) {
	requireABI(t, 1)
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			control := newTree(t)
			var ops []op
			for _, c := range control.checks() {
				ops = append(ops, c.op)
			}
			got := run(t, scenario{NoRestrict: true, Ops: ops}, cred)
			for i, c := range control.checks() {
				if got.Results[i] != "ok" {
					t.Errorf("control (no Landlock) %s: %s; the test tree is wrong", c.name, got.Results[i])
				}
			}

			tr := newTree(t)
			ops = nil
			for _, c := range tr.checks() {
				ops = append(ops, c.op)
			}
			got = run(t, scenario{Policy: tr.policy(), Ops: ops}, cred)
			if got.Err != "" {
				t.Fatalf("Restrict: %s", got.Err)
			}
			for i, c := range tr.checks() {
				want := c.want
				if Probe().ABI < 2 && strings.Contains(c.name, "within rw") && c.op.Do != "create" {
					want = "EXDEV" // ABI 1 denies all reparenting
				}
				if !matches(got.Results[i], want) {
					t.Errorf("%s: got %s, want %s", c.name, got.Results[i], want)
				}
			}
		})
	}
}

// TestRestrictProcAndFD checks that the command still reads its own stdin
// pipe through /dev/stdin and bash process substitution (/dev/fd/63), both
// of which go through /proc/self/fd magic links, and reads /proc/self.
func TestRestrictProcAndFD(t *testing.T) {
	requireABI(t, 1)
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			rules := system() // /dev/fd needs no rule of its own: /proc covers it
			sc := scenario{Policy: Policy{Rules: rules}, Ops: []op{
				{Do: "sh", Path: "cat /dev/stdin"},
				{Do: "sh", Path: "cat <(echo substituted)"},
				{Do: "sh", Path: "echo to-null > /dev/null && echo null-ok"},
				{Do: "sh", Path: "head -c 4 /proc/self/status"},
				{Do: "sh", Path: "echo x > /proc/self/comm 2>&1 || echo comm-denied"},
			}}
			got := run(t, sc, cred)
			if got.Err != "" {
				t.Fatalf("Restrict: %s", got.Err)
			}
			want := []string{"from-stdin", "substituted", "null-ok", "Name", "comm-denied"}
			for i, w := range want {
				if !strings.HasPrefix(got.Results[i], w) && !strings.HasSuffix(got.Results[i], w) {
					t.Errorf("%q: got %q, want %q", sc.Ops[i].Path, got.Results[i], w)
				}
			}
		})
	}
}

// TestRestrictRuleErrors: a missing path or a directory-only access on a
// file fails before anything is enforced (the child can still read /etc).
func TestRestrictRuleErrors(t *testing.T) {
	requireABI(t, 1)
	tr := newTree(t)
	cases := map[string]Policy{
		"missing path":  {Rules: []Rule{{filepath.Join(tr.base, "nope"), Read}}},
		"relative path": {Rules: []Rule{{"usr", Read}}},
		"list on file":  {Rules: []Rule{{filepath.Join(tr.ro, "f"), List}}},
		"bad access":    {Rules: []Rule{{tr.ro, "rwx"}}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			got := run(t, scenario{Policy: p, Ops: []op{{Do: "read", Path: "/etc/passwd"}}}, nil)
			if got.Err == "" {
				t.Fatal("Restrict succeeded")
			}
			if got.Results[0] != "ok" {
				t.Errorf("after a failed Restrict the process is restricted: %s", got.Results[0])
			}
			t.Log(got.Err)
		})
	}
}
