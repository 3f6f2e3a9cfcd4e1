package landlock_test

import (
	"fmt"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// TestRestrictScopes: on ABI 6+ the command cannot connect to an abstract
// unix socket created outside its domain (here by the test, in the network
// namespace the jail shares with network "host"), which it can without
// Landlock, while it can still signal its own process group. That it
// cannot signal the jail's init is integration's
// TestLandlockSignalScopeAndReport.
func TestRestrictScopes(t *testing.T) {
	requireABI(t, 6)
	name := fmt.Sprintf("tooljail-landlock-test-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	s := jailSpec(t, ownedDir(t))
	s.Net = jail.NetHost // abstract socket names belong to a network namespace
	ops := []op{
		{Do: "abstract", Path: name},
		{Do: "kill0", Pid: 0}, // own process group, inside the domain
	}
	control, res, got := runBoth(t, s, ops...)
	if want := []string{"ok", "ok"}; !slices.Equal(control, want) {
		t.Fatalf("control without Landlock: got %v, want %v", control, want)
	}
	if want := []string{"EPERM", "ok"}; !slices.Equal(got, want) {
		t.Errorf("connect(@%s), kill(0, 0): got %v, want %v", name, got, want)
	}
	if want := []string{"abstract_unix_socket", "signal"}; !slices.Equal(res.Enforcement.LandlockScopes, want) {
		t.Errorf("landlock_scopes = %v, want %v", res.Enforcement.LandlockScopes, want)
	}
}
