package profiles

import (
	"reflect"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func TestStartDir(t *testing.T) {
	for _, c := range []struct {
		workdir string
		hasTmp  bool
		want    string
	}{
		{"/home/u/proj", true, "/home/u/proj"},
		{"/home/u/proj", false, "/home/u/proj"},
		{"", true, "/tmp"},
		{"", false, JailHome},
	} {
		if got := startDir(c.workdir, c.hasTmp); got != c.want {
			t.Errorf("startDir(%q, %v) = %q, want %q", c.workdir, c.hasTmp, got, c.want)
		}
	}
}

func TestCheckVars(t *testing.T) {
	for _, c := range []struct {
		vars []string
		want string // "" = accepted
	}{
		{nil, ""},
		{[]string{"A=1", "B=", "C=x=y"}, ""},
		{[]string{"A=1", "NOVALUE"}, `env "NOVALUE": want KEY=VALUE`},
		{[]string{"=1"}, `env: "": not a valid environment variable name`},
		{[]string{"A\x00B=1"}, `env: "A\x00B": not a valid environment variable name`},
		{[]string{"A=1\x002"}, "env A: value contains a NUL byte"},
		// HOME is the profile's to refuse (env.set, env.pass), not a
		// caller's variable's: environment drops and reports it.
		{[]string{"HOME=/x"}, ""},
	} {
		err := checkVars(c.vars)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("checkVars(%q) = %q, want %q", c.vars, got, c.want)
		}
	}
}

func TestBindMounts(t *testing.T) {
	got := bindMounts([]string{"src", "/abs/../data:/data", "./a/"}, []string{"/out:/mnt/out/", "rel:/r"}, "/home/u/proj")
	want := []jail.Mount{
		{Kind: jail.MountBind, Source: "/home/u/proj/src", Dest: "/home/u/proj/src"},
		{Kind: jail.MountBind, Source: "/data", Dest: "/data"},
		{Kind: jail.MountBind, Source: "/home/u/proj/a", Dest: "/home/u/proj/a"},
		{Kind: jail.MountBind, Source: "/out", Dest: "/mnt/out", Writable: true},
		{Kind: jail.MountBind, Source: "/home/u/proj/rel", Dest: "/r", Writable: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bindMounts:\n got %+v\nwant %+v", got, want)
	}
}

func TestSystemMounts(t *testing.T) {
	fs := &Filesystem{System: []string{"/usr/", "/lib"}, Etc: []string{"ssl/certs"}}
	got := systemMounts(fs, true)
	want := []jail.Mount{
		{Kind: jail.MountBind, Source: "/usr", Dest: "/usr", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: jail.MountBind, Source: "/lib", Dest: "/lib", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: jail.MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true, InRoot: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("systemMounts:\n got %+v\nwant %+v", got, want)
	}
}

func TestValidateCheckEach(t *testing.T) {
	// The first bad entry of a list is reported, under the list's key,
	// with the entry's own error.
	for _, c := range []struct {
		fs   Filesystem
		want string
	}{
		{Filesystem{System: []string{"/usr", "usr"}}, `filesystem.system: "usr": want an absolute path such as /usr`},
		{Filesystem{Mask: []string{"/a", "b", "c"}}, `filesystem.mask: "b": want an absolute path inside the jail`},
		{Filesystem{Ro: []string{"a:b"}}, `filesystem.ro: "a:b": DEST "b" must be an absolute path inside the jail`},
		{Filesystem{Rw: []string{":x"}}, `filesystem.rw: ":x": want PATH or PATH:DEST`},
		{Filesystem{Protect: &[]string{"../x"}}, `filesystem.protect: "../x": want a clean path relative to a read-write bind's root, e.g. ".git/hooks" or ".envrc"`},
		{Filesystem{System: []string{"/usr"}, Etc: []string{"hosts"}}, ""},
	} {
		err := c.fs.validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("validate(%+v) = %q, want %q", c.fs, got, c.want)
		}
	}
}
