package landlock

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRestrictThread runs the filesystem checks of TestRestrictFS on a
// thread restricted with RestrictThread: the same rules must give the same
// answers, for the thread itself and for the programs it starts (what
// stage 2 relies on: the command is exec'd from that thread). Threads that
// were not restricted stay free, which is why only a process that execs
// next may use it.
func TestRestrictThread(t *testing.T) {
	requireABI(t, 1)
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			tr := newTree(t)
			var ops []op
			for _, c := range tr.checks() {
				ops = append(ops, c.op)
			}
			secret := filepath.Join(tr.base, "out/secret")
			ops = append(ops,
				// A program started from the thread: bash reading outside
				// every rule must be denied.
				op{Do: "sh", Path: "cat " + secret + " 2>&1 || true"},
				op{Do: "threads_read", Path: secret},
			)
			got := run(t, scenario{Policy: tr.policy(), ThreadOnly: true, Threads: 2, Ops: ops}, cred)
			if got.Err != "" {
				t.Fatalf("RestrictThread: %s", got.Err)
			}
			checks := tr.checks()
			for i, c := range checks {
				want := c.want
				if Probe().ABI < 2 && strings.Contains(c.name, "within rw") && c.op.Do != "create" {
					want = "EXDEV"
				}
				if !matches(got.Results[i], want) {
					t.Errorf("%s: got %s, want %s", c.name, got.Results[i], want)
				}
			}
			if r := got.Results[len(checks)]; !strings.Contains(r, "Permission denied") {
				t.Errorf("a program started from the restricted thread read %s: %q", secret, r)
			}
			if r := got.Results[len(checks)+1]; r != "ok" {
				t.Errorf("other threads: %s, want ok (RestrictThread must not touch them)", r)
			}

			// Restrict reports the same enforcement for the same policy.
			all := run(t, scenario{Policy: tr.policy()}, cred)
			if all.Err != "" {
				t.Fatalf("Restrict: %s", all.Err)
			}
			if !reflect.DeepEqual(all.Enforced, got.Enforced) {
				t.Errorf("RestrictThread reports %+v, Restrict %+v", got.Enforced, all.Enforced)
			}
		})
	}
}

// TestRestrictThreadBelowMinABI: the process stays unchanged and the error
// is the one Restrict gives.
func TestRestrictThreadBelowMinABI(t *testing.T) {
	s := requireABI(t, 1)
	p := Policy{Rules: system(), MinABI: s.ABI + 1}
	got := run(t, scenario{Policy: p, ThreadOnly: true, Ops: []op{{Do: "read", Path: "/etc/passwd"}}}, nil)
	if !strings.Contains(got.Err, ErrBelowMinABI.Error()) {
		t.Errorf("err %q, want %q", got.Err, ErrBelowMinABI)
	}
	if got.Results[0] != "ok" {
		t.Errorf("after a refused RestrictThread, reading /etc/passwd: %s", got.Results[0])
	}
}
