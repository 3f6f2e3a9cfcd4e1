package initlandlock_test

import (
	"slices"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// TestRestrictTCP: with RestrictTCP and one allowed connect port, a
// connect to another port that listens on 127.0.0.1 (so that only Landlock
// can refuse it) fails with EACCES while the allowed one works, and
// binding is denied since no bind port is listed.
func TestRestrictTCP(t *testing.T) {
	requireABI(t, 4)
	allowed, other := listenTCP(t), listenTCP(t)
	p := landlock.Policy{RestrictTCP: true, ConnectTCP: []uint16{uint16(allowed)}}
	ops := []op{
		{Do: "connect", Port: allowed},
		{Do: "connect", Port: other},
		{Do: "bind", Port: 0},
	}
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			ctl := run(t, scenario{NoRestrict: true, Ops: ops}, cred)
			if !slices.Equal(ctl.Results, []string{"ok", "ok", "ok"}) {
				t.Fatalf("control without Landlock: %v", ctl.Results)
			}
			got := restricted(t, scenario{Policy: p, Ops: ops}, cred)
			if want := []string{"ok", "EACCES", "EACCES"}; !slices.Equal(got.Results, want) {
				t.Errorf("connect allowed, connect other, bind: got %v, want %v", got.Results, want)
			}
			if want := []string{"bind_tcp", "connect_tcp"}; !slices.Equal(got.Enforced.NetRights, want) {
				t.Errorf("NetRights = %v, want %v", got.Enforced.NetRights, want)
			}
		})
	}
}
