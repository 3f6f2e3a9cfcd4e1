package initlandlock_test

import (
	"os"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// TestRestrictDevice: on ABI 5+ device ioctls need ioctl_dev, which the
// init grants from a rule's device rights when the rule's path turns out
// to be a device node. TIOCGPTN on a new pty master (/dev/ptmx) works
// under a Device rule and under a ReadWrite rule on the node itself, and
// is denied under a ReadWrite rule on the directory holding it (directory
// rights: no ioctl_dev); a Read rule on the node denies opening it for
// writing. (The jail's own test, landlock/restrict_dev_test.go, can only
// show the allowed case: every device node of a jail has a Device rule.)
func TestRestrictDevice(t *testing.T) {
	requireABI(t, 5)
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skipf("no /dev/ptmx: %v", err)
	}
	rule := func(p string, a landlock.Access) landlock.Rule { return landlock.Rule{Path: p, Access: a} }
	cases := []struct {
		name  string
		rules []landlock.Rule
		want  string
	}{
		{"Device rule", []landlock.Rule{rule("/dev/ptmx", landlock.Device), rule("/dev/pts", landlock.Device)}, "ok"},
		{"ReadWrite on the node", []landlock.Rule{rule("/dev/ptmx", landlock.ReadWrite), rule("/dev/pts", landlock.Device)}, "ok"},
		{"ReadWrite on /dev", []landlock.Rule{rule("/dev", landlock.ReadWrite)}, "EACCES"},
		{"Read on the node", []landlock.Rule{rule("/dev/ptmx", landlock.Read)}, "open EACCES"},
	}
	for who, cred := range identities() {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			ops := []op{{Do: "ptmx", Path: "/dev/ptmx"}}
			if got := run(t, scenario{NoRestrict: true, Ops: ops}, cred); got.Results[0] != "ok" {
				t.Fatalf("control without Landlock: TIOCGPTN %s", got.Results[0])
			}
			for _, c := range cases {
				got := restricted(t, scenario{Policy: landlock.Policy{Rules: c.rules}, Ops: ops}, cred)
				if got.Results[0] != c.want {
					t.Errorf("%s: TIOCGPTN %s, want %s", c.name, got.Results[0], c.want)
				}
			}
		})
	}
}
