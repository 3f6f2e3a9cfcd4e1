package call

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/tools"
)

// A change mode needs a read-write workdir to put its overlay over.
func TestCheckChanges(t *testing.T) {
	for _, c := range []struct {
		name      string
		r         Resolved
		byDefault bool
		want      string
	}{
		{"none", Resolved{Profile: "default", ReadOnlyWorkdir: true}, true, ""},
		{"off on a read-only workdir", Resolved{Profile: "default", ReadOnlyWorkdir: true, Changes: "off"}, true, ""},
		{"review, read-write", Resolved{Profile: "default", Changes: "review"}, false, ""},
		{"record, read-write", Resolved{Profile: "./p.toml", Changes: "record"}, false, ""},
		{"review, the default's read-only workdir", Resolved{Profile: "default", ReadOnlyWorkdir: true, Changes: "review"}, true,
			`changes = "review": the tool's workdir is read-only (the server-wide default for a tool that names no profile)`},
		{"review, a read-only profile", Resolved{Profile: "readonly", ReadOnlyWorkdir: true, Changes: "apply-on-success"}, false,
			"its profile readonly sets filesystem.workdir_readonly"},
		{"review, no workdir", Resolved{Profile: "./nw.toml", NoWorkdir: true, Changes: "review"}, false, "binds no workdir"},
	} {
		err := checkChanges(c.r, c.byDefault)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// Resolve refuses a tool whose change mode could record nothing, before
// any call, and passes the mode on.
func TestResolveChanges(t *testing.T) {
	f, err := tools.Parse("f.toml", []byte(`
[tools.ro]
description = "d"
command = ["true"]
changes = "review"
[tools.rw]
description = "d"
command = ["true"]
profile = "default"
changes = "review"
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(f, tools.ServerDefaults, f.Lookup("ro")); err == nil || !strings.Contains(err.Error(), "tool ro: changes = \"review\": the tool's workdir is read-only") {
		t.Errorf("ro: %v", err)
	}
	r, err := Resolve(f, tools.ServerDefaults, f.Lookup("rw"))
	if err != nil || r.Changes != "review" {
		t.Errorf("rw: %+v, %v", r, err)
	}
}
