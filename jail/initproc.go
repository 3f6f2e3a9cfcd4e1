package jail

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// initProc is the forked init, held by the pidfd its clone returned: a
// signal can never reach a later process that reused the pid. The os
// package would do the same with os.FindProcess, but checks first, once
// per process, that pidfds work by cloning a throw-away child (0.1 ms of
// a CLI run's CPU); the clone's own pidfd needs no check.
type initProc struct {
	pid int

	mu sync.Mutex
	fd int // -1 once the init is reaped
}

// si_code of a child's end (x/sys/unix has no names for them).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

func newInitProc(pid, pidfd int) *initProc {
	return &initProc{pid: pid, fd: pidfd}
}

// signal sends sig to the init; os.ErrProcessDone once it has ended.
func (p *initProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return os.ErrProcessDone
	}
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("signal the jail's init: %w", err)
	}
	return nil
}

func (p *initProc) kill() { p.signal(unix.SIGKILL) }

// wait reaps the init and says how it ended ("exit status 0", "signal:
// killed"), for a report whose init sent no exit record.
func (p *initProc) wait() string {
	var info unix.Siginfo
	var err error
	for {
		err = unix.Waitid(unix.P_PIDFD, p.fd, &info, unix.WEXITED, nil)
		if err != unix.EINTR {
			break
		}
	}
	// Closed under the lock: a signal racing the close must not reach
	// whatever takes this descriptor number next.
	p.mu.Lock()
	unix.Close(p.fd)
	p.fd = -1
	p.mu.Unlock()
	if err != nil {
		return fmt.Sprintf("waitid: %v", err)
	}
	// A child's siginfo: si_pid, si_uid, then si_status follow the header
	// (signo, errno, code, padding).
	code := info.Code
	status := int(*(*int32)(unsafe.Add(unsafe.Pointer(&info), 24)))
	switch code {
	case cldExited:
		return fmt.Sprintf("exit status %d", status)
	case cldKilled, cldDumped:
		return "signal: " + unix.SignalName(syscall.Signal(status))
	}
	return fmt.Sprintf("si_code %d, status %d", code, status)
}
