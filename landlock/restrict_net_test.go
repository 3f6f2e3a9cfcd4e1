package landlock

import (
	"slices"
	"testing"
)

// TestRestrictTCP: with RestrictTCP and one allowed connect port, a connect
// to another listening port on 127.0.0.1 fails with EACCES while the allowed
// one works, and binding is denied since no bind port is listed.
func TestRestrictTCP(t *testing.T) {
	requireABI(t, 4)
	allowed, other := listenTCP(t), listenTCP(t)
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			p := Policy{RestrictTCP: true, ConnectTCP: []uint16{uint16(allowed)}}
			ops := []op{
				{Do: "connect", Port: allowed},
				{Do: "connect", Port: other},
				{Do: "bind", Port: 0},
			}
			ctl := run(t, scenario{NoRestrict: true, Ops: ops}, cred)
			if !slices.Equal(ctl.Results, []string{"ok", "ok", "ok"}) {
				t.Fatalf("control without Landlock: %v", ctl.Results)
			}
			got := run(t, scenario{Policy: p, Ops: ops}, cred)
			if got.Err != "" {
				t.Fatalf("Restrict: %s", got.Err)
			}
			if want := []string{"ok", "EACCES", "EACCES"}; !slices.Equal(got.Results, want) {
				t.Errorf("connect allowed, connect other, bind: got %v, want %v", got.Results, want)
			}
			if want := []string{"bind_tcp", "connect_tcp"}; !slices.Equal(got.Enforced.NetRights, want) {
				t.Errorf("NetRights = %v, want %v", got.Enforced.NetRights, want)
			}
		})
	}
}

// TestUnrestrictedTCP: without RestrictTCP the domain does not handle TCP.
func TestUnrestrictedTCP(t *testing.T) {
	requireABI(t, 4)
	port := listenTCP(t)
	got := run(t, scenario{Policy: Policy{Rules: system()}, Ops: []op{{Do: "connect", Port: port}}}, nil)
	if got.Err != "" || got.Results[0] != "ok" {
		t.Fatalf("connect without RestrictTCP: %v %s", got.Results, got.Err)
	}
	if len(got.Enforced.NetRights) != 0 {
		t.Errorf("NetRights = %v, want none", got.Enforced.NetRights)
	}
}
