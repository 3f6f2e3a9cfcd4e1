package fit

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/spec"
	"github.com/tooljail/tooljail/report"
)

func TestSessionCall(t *testing.T) {
	base := &spec.Spec{Args: []string{"(session)"}, Dir: "/work", Env: []string{"A=1"}, Hostname: "jail",
		Limits: spec.Limits{Memory: 1 << 30, Pids: 64, Timeout: time.Minute, OutputLimit: 1 << 20}}
	for _, c := range []struct {
		name string
		edit func(s *spec.Spec)
		fits bool
	}{
		{"same", func(s *spec.Spec) {}, true},
		{"its own command, env, dir", func(s *spec.Spec) { s.Args = []string{"ls"}; s.Env = nil; s.Dir = "/work/sub" }, true},
		{"its own timeout and output limit", func(s *spec.Spec) { s.Limits.Timeout = time.Second; s.Limits.OutputLimit = 10 }, true},
		{"dropped env names", func(s *spec.Spec) { s.EnvDropped = []report.EnvDrop{{Name: "TOKEN"}} }, true},
		{"more memory", func(s *spec.Spec) { s.Limits.Memory *= 2 }, false},
		{"more pids", func(s *spec.Spec) { s.Limits.Pids = 65 }, false},
		{"another host name", func(s *spec.Spec) { s.Hostname = "x" }, false},
		{"the network", func(s *spec.Spec) { s.Net = spec.NetHost }, false},
		{"a mount", func(s *spec.Spec) { s.Mounts = append(s.Mounts, spec.Mount{Source: "/", Dest: "/host"}) }, false},
	} {
		call := *base
		call.Limits = base.Limits
		c.edit(&call)
		if got := SessionCall(base, &call) == ""; got != c.fits {
			t.Errorf("%s: fits %v, want %v (%s)", c.name, got, c.fits, SessionCall(base, &call))
		}
	}
}

// A warm jail fits a call that differs from its Spec only in the
// arguments and environment, within the call's size, and whose workdir
// is still the directory the jail bound.
func TestWarm(t *testing.T) {
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	have := &spec.Spec{Args: []string{"(warm)"}, Dir: "/w", Env: []string{"A=1"},
		Mounts: []spec.Mount{{Kind: spec.MountBind, Source: dir, Dest: "/w", Writable: true}}}
	id := &FileID{st.Dev, st.Ino}
	for _, c := range []struct {
		name string
		edit func(s *spec.Spec)
		dir  *FileID
		size int
		want string // a substring of why it does not fit; "" fits
	}{
		{"same", func(s *spec.Spec) {}, id, 100, ""},
		{"its own command and env", func(s *spec.Spec) { s.Args = []string{"ls", "-l"}; s.Env = nil }, id, 100, ""},
		{"dropped env names", func(s *spec.Spec) { s.EnvDropped = []report.EnvDrop{{Name: "TOKEN"}} }, id, 100, ""},
		{"no workdir identity kept", func(s *spec.Spec) {}, nil, 100, ""},
		{"too big a call", func(s *spec.Spec) {}, id, initc.MaxCallBytes + 1, "bytes"},
		{"another dir", func(s *spec.Spec) { s.Dir = "/w/sub" }, id, 100, "differs"},
		{"more memory", func(s *spec.Spec) { s.Limits.Memory = 1 }, id, 100, "differs"},
		{"workdir replaced", func(s *spec.Spec) {}, &FileID{st.Dev, st.Ino + 1}, 100, "replaced"},
	} {
		want := *have
		c.edit(&want)
		got := Warm(have, &want, c.dir, c.size, 3)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
