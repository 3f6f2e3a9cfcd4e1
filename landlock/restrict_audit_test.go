package landlock_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/landlock"
)

// TestWatchDenials: as root, a jailed command is denied an exec, a write, a
// TCP connect and a signal; the run's report lists each with its path and
// access, and nothing of another jail denied at the same time (whose own
// report has its denial). Not as root, WatchDenials fails with
// ErrNotObservable and the report says why. When the kernel audit is off
// the test turns it on for its duration and restores it.
func TestWatchDenials(t *testing.T) {
	requireABI(t, 7)
	if os.Geteuid() != 0 {
		if _, err := landlock.WatchDenials(); !errors.Is(err, landlock.ErrNotObservable) {
			t.Errorf("WatchDenials as uid %d: %v, want ErrNotObservable", os.Geteuid(), err)
		}
		res, _ := runJailed(t, jailSpec(t, ownedDir(t)))
		if d := res.Enforcement.LandlockDenials; !strings.Contains(d, landlock.ErrNotObservable.Error()) || !strings.Contains(d, "CAP_AUDIT_READ") {
			t.Errorf("landlock_denials as uid %d: %q, want ErrNotObservable naming CAP_AUDIT_READ", os.Geteuid(), d)
		}
		t.Skip("the audit multicast needs root (CAP_AUDIT_READ)")
	}
	was, err := landlock.SetAuditEnabled(true)
	if err != nil {
		t.Skipf("kernel audit: %v", err)
	}
	if !was {
		t.Log("kernel audit was disabled; enabled for this test")
		t.Cleanup(func() { landlock.SetAuditEnabled(false) })
	}
	tr := newTree(t)
	s := tr.spec(t)
	s.Landlock.RestrictTCP = true // no port allowed
	ops := []op{
		{Do: "exec", Path: filepath.Join(tr.ro, "true")},
		{Do: "write", Path: "/proc/self/comm"},
		{Do: "connect", Port: portA},
		{Do: "kill0", Pid: 1}, // the jail's init, outside the domain
	}
	var other *jail.Result
	var otherErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		other, _, otherErr = jailed(s, op{Do: "connect", Port: portB})
	}()
	res, got, err := jailed(s, ops...)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if otherErr != nil {
		t.Fatalf("the other run: %v", otherErr)
	}
	if want := []string{"EACCES", "EACCES", "EACCES", "EPERM"}; !slices.Equal(got, want) {
		t.Fatalf("denied ops: got %v, want %v", got, want)
	}
	if res.Enforcement.LandlockDenials != "reported" {
		t.Fatalf("landlock_denials = %q, want reported", res.Enforcement.LandlockDenials)
	}
	t.Logf("violations %+v", res.Violations)
	type denial struct {
		path   func(string) bool
		access string
		what   string
	}
	is := func(p string) func(string) bool { return func(s string) bool { return s == p } }
	want := []denial{
		{is(filepath.Join(tr.ro, "true")), "execute", "exec in ro"},
		{func(s string) bool { return strings.HasPrefix(s, "/proc/") && strings.HasSuffix(s, "/comm") }, "write_file", "write /proc/self/comm"},
		{is(fmt.Sprintf("127.0.0.1:%d", portA)), "connect_tcp", "connect A"},
		{func(s string) bool { return strings.HasPrefix(s, "pid ") }, "signal", "kill the init"},
	}
	for _, wd := range want {
		if !slices.ContainsFunc(res.Violations, func(v jail.Violation) bool {
			return v.Kind == "landlock" && wd.path(v.Path) && slices.Equal(v.Access, []string{wd.access}) && v.Pid > 0 && v.Count >= 1
		}) {
			t.Errorf("missing denial: %s (%s)", wd.what, wd.access)
		}
	}
	otherPath := fmt.Sprintf("127.0.0.1:%d", portB)
	for _, v := range res.Violations {
		if v.Path == otherPath {
			t.Errorf("the other run's denial is in this report: %+v", v)
		}
	}
	if !slices.ContainsFunc(other.Violations, func(v jail.Violation) bool { return v.Path == otherPath }) {
		t.Errorf("the other run's report lacks its denial (%s): %+v", otherPath, other.Violations)
	}
}

// TestWatchDenialsUnprivileged: a process without CAP_AUDIT_READ (here the
// jailed command, as a supervisor run by a user would be) gets
// ErrNotObservable with the reason.
func TestWatchDenialsUnprivileged(t *testing.T) {
	requireABI(t, 7)
	_, got := runJailed(t, jailSpec(t, ownedDir(t)), op{Do: "watch"})
	if !strings.Contains(got[0], landlock.ErrNotObservable.Error()) || !strings.Contains(got[0], "CAP_AUDIT_READ") {
		t.Errorf("WatchDenials in a jail: %q", got[0])
	}
}
