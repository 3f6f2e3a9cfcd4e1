package landlock

import (
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
)

// TestRestrictScopes: on ABI 6+ the restricted child cannot signal its
// parent (outside its domain) nor connect to an abstract unix socket the
// parent created, while it can still signal itself.
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
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			ops := []op{
				{Do: "kill0", Pid: os.Getpid()},
				{Do: "abstract", Path: name},
				{Do: "kill0", Pid: 0}, // own process group, inside the domain
			}
			if cred == nil { // uid 65534 cannot signal a root parent anyway
				ctl := run(t, scenario{NoRestrict: true, Ops: ops}, cred)
				if !slices.Equal(ctl.Results, []string{"ok", "ok", "ok"}) {
					t.Fatalf("control without Landlock: %v", ctl.Results)
				}
			}
			got := run(t, scenario{Policy: Policy{Rules: system()}, Ops: ops}, cred)
			if got.Err != "" {
				t.Fatalf("Restrict: %s", got.Err)
			}
			if want := []string{"EPERM", "EPERM"}; !slices.Equal(got.Results[:2], want) {
				t.Errorf("kill(parent), connect(@%s): got %v, want %v", name, got.Results[:2], want)
			}
			if want := []string{"abstract_unix_socket", "signal"}; !slices.Equal(got.Enforced.Scopes, want) {
				t.Errorf("Scopes = %v, want %v", got.Enforced.Scopes, want)
			}
		})
	}
}
