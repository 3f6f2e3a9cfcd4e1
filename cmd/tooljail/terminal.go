package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/tooljail/tooljail/internal/term"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/serve"
)

// wantTTY decides whether a run jailed here gets a terminal: --tty and
// --no-tty say so; else it does when a person is at both ends (stdin and
// stdout are terminals) and the output is not captured into the report.
func wantTTY(f *runFlags, stdinTerm, stdoutTerm bool) bool {
	switch {
	case f.tty:
		return true
	case f.noTTY:
		return false
	}
	return stdinTerm && stdoutTerm && !f.json
}

// ttySize is the caller's window size, from stdout or stdin; 0 when
// neither is a terminal (jail.TTY's default then).
func ttySize() (rows, cols uint16) {
	for _, f := range []*os.File{os.Stdout, os.Stdin} {
		if r, c, ok := term.Size(int(f.Fd())); ok {
			return r, c
		}
	}
	return 0, 0
}

// rawTerminal puts the caller's terminal (stdin) in raw mode for a run
// with a terminal: the jail's does the echo, line editing and ^C. The
// restore it returns is safe to call more than once.
func rawTerminal(tty bool) (restore func(), err error) {
	if !tty || !term.IsTerminal(int(os.Stdin.Fd())) {
		return func() {}, nil
	}
	st, err := term.MakeRaw(int(os.Stdin.Fd()))
	if err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { st.Restore() }), nil
}

// terminalSizes sends the caller's window size at each SIGWINCH, for an
// interactive served call, until stop.
func terminalSizes() (<-chan serve.InputResize, func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	out := make(chan serve.InputResize, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if rows, cols := ttySize(); rows != 0 {
					select {
					case out <- serve.InputResize{Rows: rows, Cols: cols}:
					case <-done:
						return
					}
				}
			}
		}
	}()
	return out, sync.OnceFunc(func() {
		signal.Stop(winch)
		close(done)
	})
}

// ttySignal is how a forwarded signal reaches cmd: for a run with a
// terminal, SIGWINCH becomes the new window size, which makes the
// jail's terminal send SIGWINCH itself; any other signal, and every
// signal without a terminal, is sent.
func ttySignal(cmd *jail.Cmd) func(os.Signal) error {
	if cmd.TTY == nil {
		return cmd.Signal
	}
	return func(s os.Signal) error {
		if s != syscall.SIGWINCH {
			return cmd.Signal(s)
		}
		if rows, cols := ttySize(); rows != 0 {
			return cmd.Resize(rows, cols)
		}
		return nil
	}
}

// forwardedSignals are the signals a run jailed here passes to its command
// (the jail's init forwards the same set to the command's process group,
// jail/internal/initc/init_reap.c): those a terminal or an agent runtime sends. SIGKILL
// cannot be caught: it kills tooljail, and with it the jail (its init has
// PR_SET_PDEATHSIG).
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM,
}

// forward passes what comes on r.sigs to the command (send) until end,
// and gives each that comes after it its default action (r.raise); a
// second SIGINT kills the whole run.
func (r *signalRelay) forward(send func(os.Signal) error) {
	interrupts := 0
	for s := range r.sigs {
		r.mu.Lock()
		if r.ended {
			r.mu.Unlock()
			r.raise(s)
			continue
		}
		var out os.Signal
		out, interrupts = forwarded(s, interrupts)
		send(out)
		r.mu.Unlock()
	}
}

// raiseDefault gives s its default action in this process, as if no
// relay had asked for it: its notification is undone and it comes again.
func raiseDefault(s os.Signal) {
	signal.Reset(s)
	if n, ok := s.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), n)
	}
}

// forwarded is what the command gets for s, given how many SIGINTs came
// before: the signal itself, or a kill for a second interrupt (the user
// insists; the command may be ignoring it).
func forwarded(s os.Signal, interrupts int) (os.Signal, int) {
	if s == syscall.SIGINT {
		interrupts++
		if interrupts > 1 {
			return os.Kill, interrupts
		}
	}
	return s, interrupts
}

// signalRelay passes forwardedSignals to a run's command while it runs.
type signalRelay struct {
	sigs     chan os.Signal
	notified chan struct{}   // closed once signal.Notify returned
	stop     func()          // stops the notification, unless a forwarder took over at end; safe to call again
	forwards bool            // a forwarder reads sigs (the command started)
	raise    func(os.Signal) // a signal's default action after end: raiseDefault

	mu    sync.Mutex
	ended bool // the command is gone
}

// startSignalRelay starts the notification in the background: the first
// signal.Notify starts a locked thread in the runtime for the signals,
// which overlaps with parsing the flags and loading the profile.
func startSignalRelay() *signalRelay {
	r := &signalRelay{sigs: make(chan os.Signal, 16), notified: make(chan struct{}), raise: raiseDefault}
	go func() {
		// Not those it was started ignoring: the command inherits
		// them ignored instead.
		notify(r.sigs, forwardedSignals...)
		close(r.notified)
	}()
	r.stop = sync.OnceFunc(func() {
		<-r.notified
		r.mu.Lock()
		forwarded := r.ended && r.forwards
		r.mu.Unlock()
		if !forwarded {
			signal.Stop(r.sigs)
		}
	})
	return r
}

// run starts cmd, forwards the signals to it from then on, and waits for
// it; execOut, when not nil, is told of the command's exec (--exec-fd).
func (r *signalRelay) run(cmd *jail.Cmd, execOut *os.File) (*jail.Result, error) {
	<-r.notified
	var told chan struct{}
	if cmd.Start() == nil {
		r.forwards = true
		go r.forward(ttySignal(cmd))
		if execOut != nil {
			told = make(chan struct{})
			go func() {
				defer close(told)
				tellExec(execOut, cmd.WaitExec)
			}()
		}
	} else if execOut != nil {
		execOut.Close()
	}
	res, err := cmd.Wait()
	if told != nil {
		<-told
	}
	return res, err
}

// end makes a signal tooljail's own again: one that comes while it writes
// the report or the audit log ends it by its default action instead of
// going to a command that is gone. The forwarder does so for the signal
// that comes, rather than end stopping the notification: signal.Stop is a
// round trip to the runtime's signal thread per signal, paid by every run
// for a signal that seldom comes (BENCHMARKS.md). Without a
// forwarder (the command never started) the notification stops here.
func (r *signalRelay) end() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
	if !r.forwards {
		r.stop()
	}
}
