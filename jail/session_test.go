package jail_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

func startSession(t *testing.T, dir string, limits jail.SessionLimits) *jail.Session {
	t.Helper()
	spec := warmSpec(t, dir, nil, "true")
	s, err := jail.StartSession(spec, limits)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// call runs script in the session and returns its report.
func call(t *testing.T, s *jail.Session, keep bool, script string, env ...string) *jail.Result {
	t.Helper()
	sp := s.Spec()
	sp.Args = []string{"/bin/sh", "-c", script}
	sp.Env = append(append([]string(nil), sp.Env...), env...)
	cmd, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	cmd.CaptureOutput = true
	cmd.KeepRunning = keep
	res, err := cmd.Run()
	if err != nil {
		t.Fatalf("call %q: %v", script, err)
	}
	return res
}

func TestSessionCalls(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	s := startSession(t, dir, jail.SessionLimits{})
	r1 := call(t, s, false, `echo one > /tmp/f; echo $$; export X=1; cd /tmp; sleep 1000 & echo started`, "TJ_A=a")
	if r1.ExitCode != 0 || !strings.Contains(*r1.Stdout.Text, "started") {
		t.Fatalf("call 1: %+v %q", r1, *r1.Stdout.Text)
	}
	if r1.Session == nil || r1.Session.Call != 1 || r1.Session.ID != s.ID() {
		t.Errorf("call 1's session: %+v", r1.Session)
	}
	if r1.KilledLeftoverProcesses == nil || *r1.KilledLeftoverProcesses != 1 {
		t.Errorf("call 1 left a sleep, killed after it: %v", r1.KilledLeftoverProcesses)
	}
	r2 := call(t, s, false, `cat /tmp/f; pwd; echo "X=$X A=$TJ_A"; ps -e -o comm= | grep -c sleep`)
	out := *r2.Stdout.Text
	for _, want := range []string{"one\n", dir + "\n", "X= A=\n", "0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("call 2 output %q lacks %q", out, want)
		}
	}
	r3 := call(t, s, true, `sleep 1000 & echo kept`)
	if r3.ExitCode != 0 || r3.KilledLeftoverProcesses == nil || *r3.KilledLeftoverProcesses != 0 {
		t.Errorf("call 3 (keep): %+v", r3)
	}
	r4 := call(t, s, false, `ps -e -o comm= | grep -c sleep; ps -ef >&2`)
	if got := *r4.Stdout.Text; got != "1\n" {
		t.Logf("stderr %s", *r4.Stderr.Text)
		t.Errorf("call 4 sees %q sleeps, want the one call 3 kept", got)
	}
	r5 := call(t, s, false, `exit 7`)
	if r5.ExitCode != 7 || r5.Status != jail.StatusExited {
		t.Errorf("call 5: %s %d", r5.Status, r5.ExitCode)
	}
	res := s.Stop()
	if res.Calls != 5 || res.StoppedFor != jail.StopAsked {
		t.Errorf("stop: %+v", res)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
}
