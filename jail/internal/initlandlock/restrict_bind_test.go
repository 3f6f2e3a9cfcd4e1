package initlandlock_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tooljail/tooljail/jail/internal/initlandlock"
	"github.com/tooljail/tooljail/landlock"
)

// bindScenario binds the tree into a jail-like layout: rules at the binds'
// destinations, some of which exist only in a jail, and checks of what
// they allow on the sources.
func bindScenario(t *testing.T, tr tree) (scenario, []check) {
	t.Helper()
	j := func(p string) string { return filepath.Join(tr.base, p) }
	must(t, os.Symlink("out", j("link")))
	rw := func(p string) landlock.Rule { return landlock.Rule{Path: p, Access: landlock.ReadWrite} }
	sc := scenario{
		Policy: landlock.Policy{Rules: append(system(),
			rw("/jail/work"), rw("/jail/allowed"), rw(tr.ro), rw("/jail/link"), rw("/jail/missing"))},
		Binds: []initlandlock.Bind{
			{Dest: "/jail/work", Source: tr.rw},                 // a path only the jail has
			{Dest: "/jail/allowed", Source: j("files/allowed")}, // a file
			{Dest: tr.ro, Source: tr.rx},                        // the rule at tr.ro goes on tr.rx
			{Dest: "/jail/link", Source: j("link")},             // a symlink to out
			{Dest: "/jail/missing", Source: j("missing")},
		},
	}
	return sc, []check{
		{"write in the bound dir", op{Do: "write", Path: j("rw/f")}, "ok"},
		{"create in the bound dir", op{Do: "create", Path: j("rw/new")}, "ok"},
		{"write the bound file", op{Do: "write", Path: j("files/allowed")}, "ok"},
		{"read the bound file's sibling", op{Do: "read", Path: j("files/other")}, "EACCES"},
		{"list the bound file's dir", op{Do: "readdir", Path: tr.files}, "EACCES"},
		{"write in the source of the bind at ro", op{Do: "write", Path: j("rx/f")}, "ok"},
		{"read in ro, a bind's destination", op{Do: "read", Path: j("ro/f")}, "EACCES"},
		{"read the symlink's target", op{Do: "read", Path: j("out/secret")}, "EACCES"},
	}
}

// TestRestrictBinds: a rule at a bind's destination goes on the object the
// supervisor opened at the bind's source, whatever is (or is not) at that
// path in the init's view, and takes the rights of the source's file type;
// a bind whose source is a symlink or missing grants nothing. The control
// run shows every op works without Landlock.
func TestRestrictBinds(t *testing.T) {
	requireABI(t, 1)
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			_, checks := bindScenario(t, newTree(t))
			got := run(t, scenario{NoRestrict: true, Ops: ops(checks)}, cred)
			for i, c := range checks {
				if got.Results[i] != "ok" {
					t.Errorf("control (no Landlock) %s: %s; the test tree is wrong", c.name, got.Results[i])
				}
			}

			sc, checks := bindScenario(t, newTree(t))
			sc.Ops = ops(checks)
			got = restricted(t, sc, cred)
			for i, c := range checks {
				if got.Results[i] != c.want {
					t.Errorf("%s: got %s, want %s", c.name, got.Results[i], c.want)
				}
			}
		})
	}
}
