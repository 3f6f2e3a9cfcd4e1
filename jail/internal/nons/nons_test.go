package nons

import (
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail/spec"
	"github.com/tooljail/tooljail/seccomp"
)

// workdirShape is a run of the default profile's shape: a system
// directory, a workdir bound at its own path, /tmp and a home on tmpfs.
func workdirShape() *spec.Spec {
	return &spec.Spec{
		Args: []string{"make"}, Dir: "/src/p", Home: "/home/sandbox", Net: spec.NetNone,
		Mounts: []spec.Mount{
			{Kind: spec.MountBind, Source: "/usr", Dest: "/usr", Exec: true},
			{Kind: spec.MountTmpfs, Dest: "/home/sandbox", Writable: true},
			{Kind: spec.MountTmpfs, Dest: "/tmp", Writable: true},
			{Kind: spec.MountBind, Source: "/src/p", Dest: "/src/p", Writable: true},
		},
		Landlock: &spec.LandlockSpec{},
		Seccomp:  &seccomp.Policy{},
	}
}

// What the mode cannot do refuses to run.
func TestNoNSSpecRefusals(t *testing.T) {
	cases := map[string]struct {
		mutate func(s *spec.Spec)
		want   string
	}{
		"bind elsewhere": {func(s *spec.Spec) {
			s.Mounts = append(s.Mounts, spec.Mount{Kind: spec.MountBind, Source: "/data", Dest: "/mnt"})
		}, "at its own path"},
		"other tmpfs":     {func(s *spec.Spec) { s.Mounts = append(s.Mounts, spec.Mount{Kind: spec.MountTmpfs, Dest: "/scratch"}) }, "no tmpfs"},
		"mask below bind": {func(s *spec.Spec) { s.Mounts = append(s.Mounts, spec.Mount{Kind: spec.MountMask, Dest: "/src/p/.env"}) }, "nothing can hide"},
	}
	for name, c := range cases {
		s := workdirShape()
		c.mutate(s)
		if _, err := Spec(s, 7); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error with %q, got %v", name, c.want, err)
		}
	}
	s := workdirShape()
	s.Mounts = append(s.Mounts, spec.Mount{Kind: spec.MountMask, Dest: "/root"})
	if _, err := Spec(s, 7); err != nil {
		t.Errorf("a mask outside every bind hides what no rule grants: %v", err)
	}
}

// Namespace creation stays denied whatever the profile allows.
func TestNonsSeccomp(t *testing.T) {
	got := Seccomp(seccomp.Policy{Allow: []string{"@namespaces", "ptrace", "clone", "unshare", "setns", "clone3"}, Deny: []string{"chmod"}}, 9, spec.NetHost)
	if !slices.Equal(got.Allow, []string{"ptrace"}) || !slices.Equal(got.Deny, []string{"chmod"}) || len(got.DenySockets) != 0 {
		t.Fatalf("%+v", got)
	}
	// Below ABI 9 nothing else keeps the host's unix sockets out; with no
	// network the host's network is all there is.
	for _, c := range []struct {
		abi  int
		net  spec.NetMode
		want []string
	}{{9, spec.NetNone, []string{"inet"}}, {8, spec.NetHost, []string{"unix"}}, {7, spec.NetNone, []string{"unix", "inet"}}} {
		if got := Seccomp(seccomp.Policy{}, c.abi, c.net); !slices.Equal(got.DenySockets, c.want) {
			t.Errorf("ABI %d, net %s: deny sockets %q, want %q", c.abi, c.net, got.DenySockets, c.want)
		}
	}
}

func TestNonsPaths(t *testing.T) {
	s := workdirShape()
	env := []string{"PATH=/usr/bin", "HOME=/home/sandbox", "TMPDIR=/tmp", "LANG=C"}
	for dir, want := range map[string]string{
		"/src/p":            "/src/p",
		"/src/p/sub":        "/src/p/sub",
		"/tmp":              "/tmp/tooljail-1",
		"/home/sandbox":     "/tmp/tooljail-1",
		"/home/sandbox/a/b": "/tmp/tooljail-1/a/b",
	} {
		got, gotEnv := Paths("/tmp/tooljail-1", s.Mounts, dir, env)
		if got != want {
			t.Errorf("dir %s: %s, want %s", dir, got, want)
		}
		if !slices.Equal(gotEnv, []string{"PATH=/usr/bin", "LANG=C", "HOME=/tmp/tooljail-1", "TMPDIR=/tmp/tooljail-1"}) {
			t.Errorf("env %q", gotEnv)
		}
	}
	// A workdir below /tmp on the host is a bind, not the tmpfs.
	s.Mounts = append(s.Mounts, spec.Mount{Kind: spec.MountBind, Source: "/tmp/w", Dest: "/tmp/w", Writable: true})
	if got, _ := Paths("/tmp/tooljail-1", s.Mounts, "/tmp/w", nil); got != "/tmp/w" {
		t.Errorf("workdir below /tmp: %s", got)
	}
}

func TestMapsID(t *testing.T) {
	const initial = "         0          0 4294967295\n"
	const rootless = "         0       1000          1\n         1     100000      65536\n"
	for _, c := range []struct {
		idMap string
		id    uint64
		want  bool
	}{
		{initial, 524287, true}, {rootless, 0, true}, {rootless, 1000, true}, {rootless, 65536, true},
		{rootless, 65537, false}, {rootless, 524287, false}, {"0 65534 1\n", 524287, false}, {"", 0, false},
	} {
		if got := mapsID(c.idMap, c.id); got != c.want {
			t.Errorf("mapsID(%q, %d) = %v, want %v", c.idMap, c.id, got, c.want)
		}
	}
}
