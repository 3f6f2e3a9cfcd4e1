package profiles

import (
	"fmt"
	"runtime"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/tooljail/tooljail/seccomp"
)

// Every shipped profile's seccomp filter is built into the binary
// (seccomp/builtin_filters.go), in both modes, under the key a run looks
// it up by: a run of a shipped profile never compiles a filter. Whether
// the file is what libseccomp compiles today is
// seccomp/internal/genbuiltin's test.
func TestBuiltinSeccompFilters(t *testing.T) {
	goarch, lib := seccomp.BuiltinTarget()
	maj, mnr, mic := libseccomp.GetLibraryVersion()
	here := fmt.Sprintf("%d.%d.%d", maj, mnr, mic)
	if goarch != runtime.GOARCH {
		t.Skipf("the built-in filters are generated for %s; on %s every run compiles its filter (or finds it in the disk cache)", goarch, runtime.GOARCH)
	}
	const regen = "run `make generate` (go run ./seccomp/internal/genbuiltin)"
	n := 0
	for _, info := range List() {
		p, err := Load(info.Name)
		if err != nil {
			t.Fatalf("profile %s: %v", info.Name, err)
		}
		if !*p.Seccomp.Enabled {
			continue
		}
		// As Spec hands it to the jail.
		policy := seccomp.Policy{Allow: p.Seccomp.Allow, Deny: p.Seccomp.Deny}
		for _, notify := range []bool{false, true} {
			n++
			if got := seccomp.Builtin(policy, notify); got == nil || got.Notify != notify {
				t.Errorf("profile %s, notify %v: no built-in filter: the file is stale, or was generated with another libseccomp (%s; this test links %s): %s", info.Name, notify, lib, here, regen)
			}
		}
	}
	if n == 0 {
		t.Fatal("no shipped profile enables seccomp: nothing was checked")
	}
}
