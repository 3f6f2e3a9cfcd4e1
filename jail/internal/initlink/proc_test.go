package initlink

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func startWithPidfd(t *testing.T, args ...string) *Proc {
	t.Helper()
	fd := -1
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{PidFD: &fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if fd < 0 {
		t.Fatal("no pidfd from the clone")
	}
	return NewProc(cmd.Process.Pid, fd)
}

// wait says how the process ended; a signal after the reaping is refused
// with os.ErrProcessDone and reaches nobody.
func TestInitProc(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	p := startWithPidfd(t, "/bin/sh", "-c", "exit 3")
	if got := p.Wait(); got != (End{Desc: "exit status 3"}) {
		t.Errorf("wait = %+v, want exit status 3", got)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signal after wait = %v, want os.ErrProcessDone", err)
	}
	p = startWithPidfd(t, "/bin/sh", "-c", "sleep 10")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := p.Wait(); got != (End{Desc: "signal: SIGTERM", Signal: syscall.SIGTERM}) {
		t.Errorf("wait = %+v, want signal: SIGTERM", got)
	}
}
