package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// A flood of denied calls is bounded: past --max-violations the run is
// killed with status violation and a reason that says so; with no bound
// the same flood runs to its end and every call is counted.
func TestMaxViolations(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		prof := filepath.Join(u.dir(t), "deny-getppid.toml")
		writeFile(t, prof, "extends = \"default\"\n[seccomp]\ndeny = [\"getppid\"]\n", 0o644)

		o, r := u.sys(t, w, []string{"--profile", prof, "--max-violations", "100"}, "loop", "getppid", "100000")
		if o.code != 159 || r.Status != "violation" || !strings.Contains(o.report.Reason, "more than 100 denied") {
			t.Errorf("want exit 159, status violation, a reason naming the bound\n%s", o)
		}
		if v := r.find("getppid"); v == nil || v.Count < 101 || v.Count > 100000 {
			t.Errorf("getppid counted %+v, want more than 100 and the run stopped early\n%s", v, o)
		}

		o, r = u.sys(t, w, []string{"--profile", prof, "--max-violations", "0"}, "loop", "getppid", "5000")
		if o.code != 0 || r.Status != "exited" {
			t.Errorf("unbounded: want exit 0\n%s", o)
		}
		if v := r.find("getppid"); v == nil || v.Count != 5000 {
			t.Errorf("unbounded: getppid counted %+v, want 5000", v)
		}
	})
}
