package landlock_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/internal/landlockops"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/profiles"
)

// The behaviour tests run their scenarios where Landlock ships: in a real
// jail (jail.Command), whose supervisor compiles the policy
// (landlock.Compile), whose init builds the ruleset in the jail's mount
// namespace and whose stage 2 enters it and execs the command. The command
// is this test binary, bound read-only into the jail and re-executed with
// envScenario naming the ops to do; TestMain runs them and prints each
// result as JSON on stdout. A control run of the same Spec without Landlock
// shows what the mounts alone allow, so that a denial is Landlock's.
const envScenario = "TOOLJAIL_LANDLOCK_TEST_OPS"

// helperPath is where the test binary is bound in the jail.
const helperPath = "/tooljail-test/landlock.test"

func TestMain(m *testing.M) {
	if raw := os.Getenv(envScenario); raw != "" {
		os.Exit(helperMain(raw))
	}
	jail.Init()
	os.Exit(m.Run())
}

// op is one thing the jailed command does (landlockops.Run).
type op = landlockops.Op

func helperMain(raw string) int {
	var ops []op
	if err := json.Unmarshal([]byte(raw), &ops); err != nil {
		fmt.Fprintln(os.Stderr, "bad ops:", err)
		return 2
	}
	results := make([]string, 0, len(ops))
	for _, o := range ops {
		results = append(results, runOp(o))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return 2
	}
	return 0
}

// runOp does o: the shared operations, and those only a jailed command
// tries.
func runOp(o op) string {
	switch o.Do {
	case "sh":
		// stdin is a pipe, as the supervisor's stdio relay gives the command.
		cmd := exec.Command("/bin/bash", "-c", o.Path)
		cmd.Stdin = strings.NewReader("from-stdin\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out))
		}
		return strings.TrimSpace(string(out))
	case "watch":
		w, err := landlock.WatchDenials()
		if err != nil {
			return err.Error()
		}
		w.Stop()
		return "ok"
	}
	return landlockops.Run(o)
}

// hostUser is who the jail runs as on the host: for a root test, uid and
// gid 65534 (Spec.HostUser; the jail never runs as root); otherwise the
// test's own user, as for any supervisor that is not root.
func hostUser() (uid, gid int, spec *jail.HostID) {
	if os.Geteuid() == 0 {
		return 65534, 65534, &jail.HostID{UID: 65534, GID: 65534}
	}
	return os.Geteuid(), os.Getegid(), nil
}

// ownedDir makes a temporary directory that the jail's host user owns.
func ownedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "landlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	uid, gid, _ := hostUser()
	must(t, os.Chown(dir, uid, gid))
	must(t, os.Chmod(dir, 0o755))
	return dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jailSpec is the default profile's Spec for a run in workdir (bound
// read-write, as the CLI binds the current directory) with mounts added
// and the test binary bound in as the command. Seccomp and the cgroup caps
// are off, so that only the mounts and Landlock can deny; Landlock is on
// with the profile's settings (any ABI, TCP not handled).
func jailSpec(t testing.TB, workdir string, mounts ...jail.Mount) *jail.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Spec(profiles.Request{Args: []string{helperPath}, Cwd: workdir})
	if err != nil {
		t.Fatal(err)
	}
	s.Seccomp = nil
	s.Limits.Memory, s.Limits.CPUs, s.Limits.Pids = 0, 0, 0
	s.Limits.Timeout = 2 * time.Minute
	_, _, s.HostUser = hostUser()
	s.Mounts = append(s.Mounts, mounts...)
	s.Mounts = append(s.Mounts, jail.Mount{Kind: jail.MountBind, Source: exe, Dest: helperPath, Exec: true})
	if s.Landlock == nil {
		t.Fatal("the default profile has Landlock off")
	}
	return s
}

// withoutLandlock is s for the control run.
func withoutLandlock(s *jail.Spec) *jail.Spec {
	c := *s
	c.Landlock = nil
	return &c
}

// runJailed runs ops in a jail built from s and returns the run's report
// and each op's result. The run must get as far as the command's exit.
func runJailed(t testing.TB, s *jail.Spec, ops ...op) (*jail.Result, []string) {
	t.Helper()
	res, results, err := jailed(s, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return res, results
}

// jailed is runJailed for a goroutine other than the test's.
func jailed(s *jail.Spec, ops ...op) (*jail.Result, []string, error) {
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.Env = append(append([]string(nil), s.Env...), envScenario+"="+string(raw))
	cmd := jail.Command(&c)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res, err := cmd.Run()
	if err != nil {
		return res, nil, fmt.Errorf("jail: %w", err)
	}
	if res.Status != jail.StatusExited || res.ExitCode != 0 {
		return res, nil, fmt.Errorf("jailed run: status %s, exit %d, %s\nstderr: %s", res.Status, res.ExitCode, res.Reason, stderr.String())
	}
	var results []string
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil || len(results) != len(ops) {
		return res, nil, fmt.Errorf("jailed run output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return res, results, nil
}

// runBoth runs ops without Landlock (the control) and with it, and checks
// that the control run had no Landlock and the other had.
func runBoth(t *testing.T, s *jail.Spec, ops ...op) (control []string, res *jail.Result, restricted []string) {
	t.Helper()
	ctl, control := runJailed(t, withoutLandlock(s), ops...)
	if ctl.Enforcement.LandlockABI != 0 {
		t.Fatalf("control run enforced Landlock ABI %d", ctl.Enforcement.LandlockABI)
	}
	res, restricted = runJailed(t, s, ops...)
	if res.Enforcement.LandlockABI == 0 {
		t.Fatalf("Landlock not enforced: degraded %v", res.Enforcement.Degraded)
	}
	return control, res, restricted
}

func requireABI(t testing.TB, abi int) landlock.Support {
	t.Helper()
	s := landlock.Probe()
	if s.ABI < abi {
		t.Skipf("needs Landlock ABI %d, kernel offers %d (%s)", abi, s.ABI, s.Reason)
	}
	return s
}
