package landlock

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The audit status is read once per statusFresh: again once it is stale,
// after drop, and after a failure that is not kept; an answer (audit on or
// off) and EPERM are kept.
func TestStatusCache(t *testing.T) {
	on, off := auditStatus{Enabled: 1}, auditStatus{Enabled: 0}
	timeout := errors.New("read audit-netlink: i/o timeout")
	type step struct {
		at    time.Duration // since the start
		drop  bool          // drop before this get
		kern  auditStatus   // what a read would return
		err   error
		read  bool // whether this get must read
		wantE uint32
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"on, kept while fresh", []step{
			{at: 0, kern: on, read: true, wantE: 1},
			{at: time.Second, kern: off, read: false, wantE: 1},
			{at: statusFresh - time.Millisecond, kern: off, read: false, wantE: 1},
			{at: statusFresh, kern: off, read: true, wantE: 0},
		}},
		{"off is kept too", []step{
			{at: 0, kern: off, read: true, wantE: 0},
			{at: time.Second, kern: on, read: false, wantE: 0},
		}},
		{"drop reads again", []step{
			{at: 0, kern: on, read: true, wantE: 1},
			{at: time.Second, drop: true, kern: off, read: true, wantE: 0},
			{at: 2 * time.Second, kern: on, read: false, wantE: 0},
		}},
		{"EPERM is kept", []step{
			{at: 0, err: unix.EPERM, read: true},
			{at: time.Second, kern: on, read: false},
		}},
		{"a timeout is not kept", []step{
			{at: 0, err: timeout, read: true},
			{at: time.Millisecond, kern: on, read: true, wantE: 1},
			{at: 2 * time.Millisecond, kern: off, read: false, wantE: 1},
		}},
		{"a clock before the read reads again", []step{
			{at: time.Hour, kern: on, read: true, wantE: 1},
			{at: 0, kern: off, read: true, wantE: 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s statusCache
			start := time.Now()
			for i, st := range c.steps {
				if st.drop {
					s.drop()
				}
				reads := 0
				got, err := s.get(start.Add(st.at), func() (auditStatus, error) {
					reads++
					return st.kern, st.err
				})
				if (reads == 1) != st.read {
					t.Errorf("step %d: %d reads, want read %v", i, reads, st.read)
				}
				wantErr := st.err
				if !st.read {
					wantErr = nil
					for j := i - 1; j >= 0; j-- {
						if c.steps[j].read {
							wantErr = c.steps[j].err
							break
						}
					}
				}
				if !errors.Is(err, wantErr) || (err == nil && got.Enabled != st.wantE) {
					t.Errorf("step %d: enabled %d, err %v; want %d, %v", i, got.Enabled, err, st.wantE, wantErr)
				}
			}
		})
	}
}

// On the kernel: a status read while audit was on stands for the runs
// that follow, until a Stop finds its marker did not come back (audit was
// turned off meanwhile); the next WatchDenials reads the status again and
// says audit is disabled.
func TestWatchDenialsSeesAuditTurnedOff(t *testing.T) {
	if s := Probe(); s.ABI < 7 {
		t.Skipf("needs Landlock ABI 7, kernel offers %d (%s)", s.ABI, s.Reason)
	}
	if os.Geteuid() != 0 {
		t.Skip("the audit multicast needs root (CAP_AUDIT_READ)")
	}
	was, err := SetAuditEnabled(true)
	if err != nil {
		t.Skipf("kernel audit: %v", err)
	}
	t.Cleanup(func() { SetAuditEnabled(was) })

	w, err := WatchDenials()
	if err != nil {
		t.Fatalf("WatchDenials with audit on: %v", err)
	}
	if _, st := w.StopStats(); !st.Synced {
		t.Fatal("with audit on, Stop's marker did not come back")
	}
	if _, err := setAudit(false); err != nil {
		t.Fatal(err)
	}
	// The status read above still stands.
	w, err = WatchDenials()
	if err != nil {
		t.Fatalf("WatchDenials right after audit was turned off: %v, want the status read before (kept for %s)", err, statusFresh)
	}
	if _, st := w.StopStats(); st.Synced {
		t.Fatal("with audit off, Stop's marker came back")
	}
	if _, err := WatchDenials(); !errors.Is(err, ErrNotObservable) || !strings.Contains(err.Error(), "audit is disabled") {
		t.Fatalf("WatchDenials after a Stop whose marker did not come back: %v, want ErrNotObservable saying audit is disabled", err)
	}
}
