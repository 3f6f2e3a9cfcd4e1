package landlock_test

import (
	"slices"
	"testing"
)

// TestRestrictDevice: on ABI 5+ device ioctls need the ioctl_dev right,
// which the jail's Device rules grant: on a new pty master (/dev/ptmx, a
// symlink to the jail's own devpts) TIOCGPTN works, as without Landlock,
// and so does writing /dev/null. Every device node of a jail has a Device
// rule (binds are nodev), so no run can show the denial: that Read and
// ReadWrite rules grant no ioctl_dev is TestAccessRights and
// TestCompileRules.
func TestRestrictDevice(t *testing.T) {
	requireABI(t, 5)
	ops := []op{{Do: "ptmx", Path: "/dev/ptmx"}, {Do: "write", Path: "/dev/null"}}
	control, _, got := runBoth(t, jailSpec(t, ownedDir(t)), ops...)
	if want := []string{"ok", "ok"}; !slices.Equal(control, want) {
		t.Fatalf("control without Landlock: TIOCGPTN, write /dev/null: got %v, want %v", control, want)
	}
	if want := []string{"ok", "ok"}; !slices.Equal(got, want) {
		t.Errorf("Device rules: TIOCGPTN, write /dev/null: got %v, want %v", got, want)
	}
}
