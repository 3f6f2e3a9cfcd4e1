package initlandlock_test

import (
	"fmt"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// TestRestrictScopes: on ABI 6+ the restricted child cannot signal its
// parent (outside its domain) nor connect to an abstract unix socket the
// parent created, while it can still signal its own process group.
func TestRestrictScopes(t *testing.T) {
	requireABI(t, 6)
	name := fmt.Sprintf("tooljail-initlandlock-test-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ops := []op{
		{Do: "kill0", Pid: os.Getpid()},
		{Do: "abstract", Path: name},
		{Do: "kill0", Pid: 0}, // own process group, inside the domain
	}
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			if cred == nil { // uid 65534 cannot signal a root parent anyway
				ctl := run(t, scenario{NoRestrict: true, Ops: ops}, cred)
				if !slices.Equal(ctl.Results, []string{"ok", "ok", "ok"}) {
					t.Fatalf("control without Landlock: %v", ctl.Results)
				}
			}
			got := restricted(t, scenario{Policy: landlock.Policy{Rules: system()}, Ops: ops}, cred)
			if want := []string{"EPERM", "EPERM", "ok"}; !slices.Equal(got.Results, want) {
				t.Errorf("kill(parent), connect(@%s), kill(0): got %v, want %v", name, got.Results, want)
			}
			if want := []string{"abstract_unix_socket", "signal"}; !slices.Equal(got.Enforced.Scopes, want) {
				t.Errorf("Scopes = %v, want %v", got.Enforced.Scopes, want)
			}
		})
	}
}
