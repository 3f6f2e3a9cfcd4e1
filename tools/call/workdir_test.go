package call

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/tools"
)

func TestCheckWorkdir(t *testing.T) {
	c, _ := setup(t)
	file := filepath.Join(c.Workdir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		file *tools.File
		want string // "" accepted
	}{
		{c.Workdir, c.File, ""},
		{"/", c.File, "workdir / is the host's root directory"},
		{"/usr/share", c.File, "workdir /usr/share lies in the system directory /usr"},
		{"/tmp", c.File, "workdir /tmp is the top-level directory /tmp"},
		{"/root", c.File, "workdir /root is "},
		{filepath.Join(c.Workdir, "nope"), c.File, "does not exist"},
		{file, c.File, "not a directory"},
	} {
		cc := &Caller{File: tc.file, Defaults: c.Defaults, Workdir: tc.dir}
		err := cc.CheckWorkdir()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v; want %q", tc.dir, err, tc.want)
		}
	}
	// A file whose tools bind no workdir takes any.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nw.toml"), []byte("extends = \"default\"\n[filesystem]\nworkdir = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nw, err := tools.Parse(filepath.Join(dir, "tools.toml"), []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"true\"]\nprofile = \"nw.toml\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Resolve(nw, c.Defaults, nw.Tools[0]); err != nil || !r.NoWorkdir {
		t.Fatalf("the profile without a workdir: %+v %v", r, err)
	}
	if err := (&Caller{File: nw, Defaults: c.Defaults, Workdir: "/"}).CheckWorkdir(); err != nil {
		t.Errorf("no tool binds the workdir: %v", err)
	}
}
