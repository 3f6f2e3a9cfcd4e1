package integration

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The jail's init killed from the host while the command runs: the
// command started, so the run is not a setup error; the report says the
// init was killed and that the command may have run.
func TestInitKilledAfterStart(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		mark := marker("initkill")
		done := make(chan *outcome, 1)
		go func() {
			done <- u.jail(t, w, nil, "write", filepath.Join(w, "ran"), "1", ";", "sleep", (20 * time.Second * slow).String(), mark)
		}()
		var killed bool
		deadline := time.Now().Add(20 * time.Second * slow)
		for !killed && time.Now().Before(deadline) {
			for _, p := range hostProcs(mark) {
				pid, cmdline, _ := strings.Cut(p, ": ")
				if strings.HasPrefix(cmdline, filepath.Join(w, "tjhelper")+" ") {
					if init := parentOf(pid); init != "" {
						n, err := strconv.Atoi(init)
						killed = err == nil && syscall.Kill(n, syscall.SIGKILL) == nil
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		o := <-done
		if !killed {
			t.Fatalf("never found the jail's init to kill\n%s", o)
		}
		r := o.report
		if o.code != 137 || r == nil || r.Status != "aborted" || !strings.Contains(r.Reason, "SIGKILL") || !strings.Contains(r.Reason, "may have run") {
			t.Errorf("want exit 137, status aborted, a reason naming SIGKILL\n%s", o)
		}
		requireGone(t, mark)
	})
}
