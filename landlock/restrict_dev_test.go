package landlock

import (
	"os"
	"slices"
	"testing"
)

// TestRestrictDevice: a Device rule allows device ioctls (TIOCGPTN on a new
// pty master); a ReadWrite rule on the directory holding the node allows
// opening it but not the ioctl (ABI 5+ handles ioctl_dev).
func TestRestrictDevice(t *testing.T) {
	requireABI(t, 5)
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skipf("no /dev/ptmx: %v", err)
	}
	for who, cred := range identities(t) {
		t.Run(who, func(t *testing.T) {
			ops := []op{{Do: "ptmx", Path: "/dev/ptmx"}}
			dev := run(t, scenario{Policy: Policy{Rules: []Rule{{"/dev/ptmx", Device}, {"/dev/pts", Device}}}, Ops: ops}, cred)
			if dev.Err != "" || dev.Results[0] != "ok" {
				t.Errorf("Device rule: TIOCGPTN %v %s, want ok", dev.Results, dev.Err)
			}
			rw := run(t, scenario{Policy: Policy{Rules: []Rule{{"/dev", ReadWrite}}}, Ops: ops}, cred)
			if rw.Err != "" || rw.Results[0] != "EACCES" {
				t.Errorf("ReadWrite on /dev: TIOCGPTN %v %s, want EACCES", rw.Results, rw.Err)
			}
			ro := run(t, scenario{Policy: Policy{Rules: []Rule{{"/dev/ptmx", Read}}}, Ops: ops}, cred)
			if ro.Err != "" || ro.Results[0] != "open EACCES" {
				t.Errorf("Read rule: open O_RDWR %v %s, want open EACCES", ro.Results, ro.Err)
			}
		})
	}
}

// TestRestrictAllThreads: threads that existed before Restrict are
// restricted too (psx below ABI 8, TSYNC from ABI 8).
func TestRestrictAllThreads(t *testing.T) {
	requireABI(t, 1)
	tr := newTree(t)
	sc := scenario{Policy: tr.policy(), Threads: 6, Ops: []op{
		{Do: "threads_read", Path: tr.out + "/secret"},
		{Do: "threads_read", Path: tr.ro + "/f"},
	}}
	got := run(t, sc, nil)
	if got.Err != "" {
		t.Fatalf("Restrict: %s", got.Err)
	}
	if want := []string{"EACCES", "ok"}; !slices.Equal(got.Results, want) {
		t.Errorf("pinned threads: got %v, want %v", got.Results, want)
	}
}
