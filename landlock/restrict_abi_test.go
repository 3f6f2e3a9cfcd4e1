package landlock_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// TestMinABIFailsClosed: a profile that needs a newer Landlock ABI than the
// kernel's is refused before the command runs, with both ABIs and the way
// out named; allowed degraded, it runs without Landlock and says so. (What
// Compile itself answers below the minimum is TestCompileABIDecisions.)
func TestMinABIFailsClosed(t *testing.T) {
	abi := requireABI(t, 1).ABI
	s := jailSpec(t, ownedDir(t))
	s.Landlock.MinABI = abi + 1

	refused := *s
	refused.Env = append(append([]string(nil), s.Env...), envScenario+"=[]") // prints [] if it runs
	cmd := jail.Command(&refused)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	res, err := cmd.Run()
	var setup *jail.SetupError
	if !errors.As(err, &setup) || res.Status != jail.StatusSetupError {
		t.Fatalf("run with min_abi %d on ABI %d: status %s, %v; want a setup error", abi+1, abi, res.Status, err)
	}
	for _, want := range []string{"landlock", fmt.Sprintf("ABI %d", abi+1), fmt.Sprint(abi), "--allow-degraded landlock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("the command ran: %q", stdout.String())
	}

	// Allowed degraded: the run goes on, unrestricted, and the report
	// says Landlock is missing.
	s.AllowDegraded = []string{jail.LayerLandlock}
	res, got := runJailed(t, s, op{Do: "write", Path: "/proc/self/comm"})
	if res.Enforcement.LandlockABI != 0 || !slices.Contains(res.Enforcement.Degraded, jail.LayerLandlock) {
		t.Errorf("degraded run: landlock_abi %d, degraded %v; want 0 and landlock listed", res.Enforcement.LandlockABI, res.Enforcement.Degraded)
	}
	if got[0] != "ok" {
		t.Errorf("degraded run, write /proc/self/comm: %s, want ok (no Landlock)", got[0])
	}
}
