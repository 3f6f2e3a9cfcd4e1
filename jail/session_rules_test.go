package jail

import (
	"testing"
	"time"
)

func TestSessionCallFits(t *testing.T) {
	base := &Spec{Args: []string{"(session)"}, Dir: "/work", Env: []string{"A=1"}, Hostname: "jail",
		Limits: Limits{Memory: 1 << 30, Pids: 64, Timeout: time.Minute, OutputLimit: 1 << 20}}
	for _, c := range []struct {
		name string
		edit func(s *Spec)
		fits bool
	}{
		{"same", func(s *Spec) {}, true},
		{"its own command, env, dir", func(s *Spec) { s.Args = []string{"ls"}; s.Env = nil; s.Dir = "/work/sub" }, true},
		{"its own timeout and output limit", func(s *Spec) { s.Limits.Timeout = time.Second; s.Limits.OutputLimit = 10 }, true},
		{"dropped env names", func(s *Spec) { s.EnvDropped = []EnvDrop{{Name: "TOKEN"}} }, true},
		{"more memory", func(s *Spec) { s.Limits.Memory *= 2 }, false},
		{"more pids", func(s *Spec) { s.Limits.Pids = 65 }, false},
		{"another host name", func(s *Spec) { s.Hostname = "x" }, false},
		{"the network", func(s *Spec) { s.Net = NetHost }, false},
		{"a mount", func(s *Spec) { s.Mounts = append(s.Mounts, Mount{Source: "/", Dest: "/host"}) }, false},
	} {
		call := *base
		call.Limits = base.Limits
		c.edit(&call)
		if got := sessionCallFits(base, &call) == ""; got != c.fits {
			t.Errorf("%s: fits %v, want %v (%s)", c.name, got, c.fits, sessionCallFits(base, &call))
		}
	}
}

func TestValidSessionID(t *testing.T) {
	id := newSessionID()
	if !ValidSessionID(id) || newSessionID() == id {
		t.Fatalf("new ids %q: not valid or not new", id)
	}
	for _, bad := range []string{"", "abc", id[:31], id + "0", "0123456789ABCDEF0123456789abcdef", "../../etc/passwd0123456789abcdef0"} {
		if ValidSessionID(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
}
