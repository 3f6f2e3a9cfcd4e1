package initlink

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Proc is the forked init, held by the pidfd its clone returned: a
// signal can never reach a later process that reused the pid. The os
// package would do the same with os.FindProcess, but checks first, once
// per process, that pidfds work by cloning a throw-away child; the clone's
// own pidfd needs no check.
type Proc struct {
	PID int

	mu sync.Mutex
	fd int // -1 once the init is reaped
	// KillSig is what kill sends: SIGKILL ends a jail's init and with it
	// its PID namespace; the reaper of a run without namespaces kills
	// the run's processes on initc.SigKillAll instead.
	KillSig syscall.Signal
}

func NewProc(pid, pidfd int) *Proc {
	return &Proc{PID: pid, fd: pidfd}
}

// Signal sends sig to the init; os.ErrProcessDone once it has ended.
func (p *Proc) Signal(sig syscall.Signal) error {
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

func (p *Proc) Kill() {
	sig := p.KillSig
	if sig == 0 {
		sig = unix.SIGKILL
	}
	p.Signal(sig)
}

// End is how the init ended: a description ("exit status 0",
// "signal: SIGKILL") and the signal that killed it, 0 when none did.
type End struct {
	Desc   string
	Signal syscall.Signal
}

// Wait reaps the init and says how it ended, for a report whose init sent
// no exit record. Waiting by pid is safe: the init is this process's
// child, and its pid is not free for reuse until this Wait has reaped it.
func (p *Proc) Wait() End {
	var ws unix.WaitStatus
	var err error
	for {
		_, err = unix.Wait4(p.PID, &ws, 0, nil)
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
	switch {
	case err != nil:
		return End{Desc: fmt.Sprintf("wait4: %v", err)}
	case ws.Exited():
		return End{Desc: fmt.Sprintf("exit status %d", ws.ExitStatus())}
	case ws.Signaled():
		return End{Desc: "signal: " + unix.SignalName(ws.Signal()), Signal: ws.Signal()}
	}
	return End{Desc: fmt.Sprintf("wait status %#x", uint32(ws))}
}
