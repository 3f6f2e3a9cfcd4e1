package cgroup

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnprivileged re-runs Probe and New as uid 65534. Without a delegated
// subtree (this v1 host; a v2 host outside a delegated scope) Probe must say
// so with a reason and a fix, and New must fail with ErrUnavailable.
func TestUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to uid 65534")
	}
	// The go test binary sits in a 0700 directory: copy it out.
	dir, err := os.MkdirTemp("", "tjcg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "cgroup.test")
	exe, _ := os.ReadFile("/proc/self/exe")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"TJCG_CHILD=unpriv"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child as 65534: %v %s", err, out)
	}
	var r struct {
		Probe       Support
		UID         int
		NewError    string `json:"new_error"`
		Unavailable bool
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("uid %d: %s", r.UID, out)
	if r.UID != 65534 {
		t.Fatalf("child ran as uid %d", r.UID)
	}
	anyCap := r.Probe.Controllers[Memory] || r.Probe.Controllers[CPU] || r.Probe.Controllers[Pids]
	if anyCap {
		t.Skipf("uid 65534 has a delegated subtree here (%s); the unavailable path cannot be shown", r.Probe.Base)
	}
	if r.Probe.Mode != ModeNone || r.Probe.Reason == "" || r.Probe.Fix == "" {
		t.Errorf("Probe as 65534 = %+v, want mode none with a reason and a fix", r.Probe)
	}
	if r.NewError == "" || !r.Unavailable {
		t.Errorf("New as 65534: error %q (ErrUnavailable %v), want an ErrUnavailable error", r.NewError, r.Unavailable)
	}
	// The fix names what to change on the host; the CLI adds the
	// --allow-degraded alternative itself.
	if !strings.Contains(r.Probe.Fix, "root") && !strings.Contains(r.Probe.Fix, "Delegate") {
		t.Errorf("Fix %q names neither root nor delegation", r.Probe.Fix)
	}
}
