package landlock_test

import (
	"slices"
	"testing"
)

// Ports in the jail's own network namespace (the default profile's
// network "none": only lo), so nothing else can hold them.
const portA, portB = 40001, 40002

// TestRestrictTCP: with RestrictTCP and port A allowed for bind and
// connect, the command listens on A and connects to it, while connecting to
// B and binding B or an ephemeral port fail with EACCES. Without Landlock
// the same binds work and the connect to B is refused by the kernel (no
// listener), not denied.
func TestRestrictTCP(t *testing.T) {
	requireABI(t, 4)
	s := jailSpec(t, ownedDir(t))
	s.Landlock.RestrictTCP = true
	s.Landlock.BindTCP = []uint16{portA}
	s.Landlock.ConnectTCP = []uint16{portA}
	ops := []op{
		{Do: "listen", Port: portA},
		{Do: "connect", Port: portA},
		{Do: "connect", Port: portB},
		{Do: "bind", Port: portB},
		{Do: "bind", Port: 0},
	}
	control, res, got := runBoth(t, s, ops...)
	if want := []string{"ok", "ok", "ECONNREFUSED", "ok", "ok"}; !slices.Equal(control, want) {
		t.Fatalf("control without Landlock: got %v, want %v", control, want)
	}
	if want := []string{"ok", "ok", "EACCES", "EACCES", "EACCES"}; !slices.Equal(got, want) {
		t.Errorf("listen A, connect A, connect B, bind B, bind 0: got %v, want %v", got, want)
	}
	if want := []string{"bind_tcp", "connect_tcp"}; !slices.Equal(res.Enforcement.LandlockNet, want) {
		t.Errorf("landlock_net_rights = %v, want %v", res.Enforcement.LandlockNet, want)
	}
}

// TestUnrestrictedTCP: without RestrictTCP the domain does not handle TCP.
func TestUnrestrictedTCP(t *testing.T) {
	requireABI(t, 4)
	res, got := runJailed(t, jailSpec(t, ownedDir(t)),
		op{Do: "listen", Port: portA},
		op{Do: "connect", Port: portA},
		op{Do: "bind", Port: portB},
	)
	if res.Enforcement.LandlockABI == 0 {
		t.Fatalf("Landlock not enforced: degraded %v", res.Enforcement.Degraded)
	}
	if want := []string{"ok", "ok", "ok"}; !slices.Equal(got, want) {
		t.Errorf("listen A, connect A, bind B without RestrictTCP: got %v, want %v", got, want)
	}
	if len(res.Enforcement.LandlockNet) != 0 {
		t.Errorf("landlock_net_rights = %v, want none", res.Enforcement.LandlockNet)
	}
}
