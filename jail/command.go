package jail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/internal/relay"
	"github.com/tooljail/tooljail/jail/internal/verdict"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/runnet"
	"github.com/tooljail/tooljail/seccomp"
)

// Cmd is one jailed command, like exec.Cmd: set the fields, then Run, or
// Start and Wait. A Cmd cannot be reused.
type Cmd struct {
	Spec *Spec
	// Stdin is relayed to the command through a pipe the supervisor owns;
	// nil means /dev/null. A file or directory is never handed to the jail.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output up to the output limit
	// (shared by both); nil discards it (it is still counted).
	Stdout io.Writer
	Stderr io.Writer
	// MergeStderr makes the command's stdout and stderr one pipe, as
	// os/exec does when Stdout and Stderr are the same *os.File: its fd 1
	// and fd 2 share one open file, so whatever it writes to either keeps
	// the order it was written in. All of it goes to Stdout (Stderr must
	// be nil or Stdout) and is counted and captured as Result.Stdout;
	// Result.Stderr has Merged set and counts nothing.
	MergeStderr bool
	// CaptureOutput keeps the output in Result.Stdout.Text/Stderr.Text.
	CaptureOutput bool
	// FreshRoot makes the jail's init build its root although a root
	// template of this shape could serve it (docs/architecture.md, root
	// templates): what a one-shot `tooljail run` does; for measurements.
	FreshRoot bool
	// TTY, when set, gives the command a terminal instead of pipes (see
	// TTY): its output goes to Stdout as with MergeStderr, Stdin is typed
	// into it, and Resize changes its size.
	TTY *TTY
	// IgnoredSignals are signals the command starts with ignored, as a
	// program inherits an ignored signal across execve. The CLI passes
	// those it was started with (StartIgnored): `nohup tooljail run --
	// CMD` and a shell's background job give CMD what they would give it
	// directly. Without it, the command starts with the default action of
	// every signal this process handles, as os/exec's children do.
	// SIGKILL and SIGSTOP cannot be ignored; not for a Session's call
	// (its command is prepared before the call).
	IgnoredSignals []os.Signal
	// KeepRunning, for a call of a Session, keeps what the command leaves
	// running in the session after the call ends (else it is killed).
	KeepRunning bool
	// Outputs are host files the caller writes after the run (see
	// Output): Start opens them, or fails.
	Outputs []*Output

	ctx     context.Context
	res     *Result
	started time.Time
	plan    *plan

	proc    *initlink.Proc
	waitCh  chan initlink.End // how the init ended
	msgDone chan struct{}
	// exitSeen is closed at the init's exit record: the command ended and
	// nothing else of the jail is left (init_reap.c, tj_report).
	exitSeen chan struct{}
	relays   [2]*relay.Relay
	group    *cgroup.Group
	monitor  *seccomp.Monitor
	watcher  *landlock.Watcher
	nonsTmp  *hostside.PrivateTmp // the private temporary directory of a run without namespaces
	net      *runnet.Server       // the allow mode's proxies and resolver
	sock     int
	timer    *time.Timer
	// staleDone is closed when CleanupStale, started by openGroup, is done.
	staleDone chan struct{}

	// execDone is closed when the command was exec'd (execed, under mu),
	// could not be, or ended: what WaitExec waits for.
	execDone chan struct{}
	execed   bool

	mu        sync.Mutex
	killedFor Status // timeout or violation: why the supervisor killed the run
	killNote  string
	setupErr  *SetupError
	initFail  *SetupError // the init failed after the command started
	exitRec   *record
	ready     bool // stage 2 got as far as its ready record
	waited    bool
	resulted  bool // WaitResult has run
	early     bool // WaitResult returned on the exit record, before the init's end
	initPlan  *initPlan

	// warm is set for a jail built ahead of its command (warm.go).
	warm *warmState
	// chg is the run's change set (Spec.Changes, changes.go), or nil.
	chg *changes.Run
	// ttyIn is a copy of the terminal's master (tty.go), under mu: typed
	// into and resized until the run is over. ttyResized: Resize was
	// called, and its size is set when the terminal comes.
	ttyIn      *os.File
	ttyResized bool

	// sess is the Session of its init, or of a call (session.go); a
	// call's killPending asks for a kill once its stage 2 is ready, and
	// groupStart is the session's cgroup figures at its start.
	sess        *Session
	killPending bool
	groupStart  cgroup.Stats
}

// Command returns a Cmd that runs spec.
func Command(spec *Spec) *Cmd { return CommandContext(context.Background(), spec) }

// CommandContext is Command with a context: cancelling it kills the run.
func CommandContext(ctx context.Context, spec *Spec) *Cmd {
	return &Cmd{Spec: spec, ctx: ctx, sock: -1}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() (*Result, error) {
	if err := c.Start(); err != nil {
		return c.res, err
	}
	return c.Wait()
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts the jail. When it fails, Wait (or Run) returns a Result with
// status setup_error and the same error.
func (c *Cmd) Start() error {
	if len(c.IgnoredSignals) > 0 && (c.sessionCall() || (c.warm != nil && c.warm.taken)) {
		return errors.New("jail: Cmd.IgnoredSignals is not for a session's or a warm jail's call: its command is prepared before the call")
	}
	if c.warm != nil && c.warm.taken {
		return c.startCall()
	}
	if c.sessionCall() {
		return c.startSessionCall()
	}
	if c.res != nil {
		return errors.New("jail: Cmd already started")
	}
	c.started = time.Now()
	c.res = &Result{
		Schema:     Schema,
		Version:    Version,
		ID:         newID(),
		StartedAt:  c.started.UTC(),
		Violations: []Violation{},
	}
	if c.Spec == nil {
		return c.fail(&SetupError{Code: ExitSetup, Err: errors.New("no Spec")})
	}
	if _, err := signalMask(c.IgnoredSignals); err != nil {
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	c.res.Command = c.Spec.Args
	c.res.Workdir = c.Spec.Dir
	c.res.Profile = c.Spec.Profile
	c.res.EnvDropped = c.Spec.EnvDropped
	c.res.Limits = c.Spec.Limits.Report()
	p, err := makePlan(c.Spec, hostFor(c.Spec))
	if err != nil {
		hostside.SettleOutputs(c.Outputs)
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	c.plan = p
	c.res.Enforcement = p.enf
	if p.nons != nil {
		if err := noNSRefusal(c.sessionInit(), c.TTY != nil); err != nil {
			hostside.SettleOutputs(c.Outputs)
			return c.fail(&SetupError{Code: ExitSetup, Err: err})
		}
	}
	if err := c.starter()(); err != nil {
		return c.abandonStart(err)
	}
	return nil
}

// noNSRefusal is why a run without namespaces cannot be what was asked
// (a session's init, a terminal), or nil.
func noNSRefusal(sessionInit, tty bool) error {
	if sessionInit {
		return errors.New("a session needs the jail's namespaces, which this host does not allow (the run would be without namespaces): run without a session, or where user namespaces are allowed (tooljail check)")
	}
	if tty {
		return errors.New("a terminal (--tty) needs the jail's own devpts instance, which a run without namespaces does not have: run without --tty, or where user namespaces are allowed (tooljail check)")
	}
	return nil
}

// starter is how the jail of c's plan starts: with its namespaces, or
// without them (which a warm jail cannot be).
func (c *Cmd) starter() func() error {
	if c.plan.nons == nil {
		return c.start
	}
	if c.warm != nil {
		// Its reaper and stage 2 take the command at once (nonsreap.c).
		return func() error {
			return errors.New("a run without namespaces cannot be built ahead of its command (warm); run it cold")
		}
	}
	return c.startNoNS
}

// abandonStart undoes a start that failed with err, and returns the
// setup error that Wait reports too.
func (c *Cmd) abandonStart(err error) error {
	if c.proc != nil {
		// The init was forked (it waits for the sync byte): end it,
		// so that Wait reports the setup error and nothing is left.
		c.proc.Kill()
		<-c.waitCh
		c.proc = nil
	}
	c.cleanup()
	hostside.SettleOutputs(c.Outputs)
	return c.fail(&SetupError{Code: ExitSetup, Err: err})
}

func (c *Cmd) fail(e *SetupError) error {
	c.setupErr = e
	c.finishSetupError()
	return e
}

// readMessages handles what the init and stage 2 send until both are gone.
// A session's init routes its calls' records to the running call.
func (c *Cmd) readMessages() {
	defer close(c.msgDone)
	f, err := initlink.PollSocket(c.sock)
	if err != nil {
		c.kill(StatusAborted, err.Error())
		return
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		c.kill(StatusAborted, err.Error())
		return
	}
	for {
		pk, err := initlink.RecvPacket(rc)
		files := pk.Files
		if err != nil || len(pk.Data) == 0 {
			closeFiles(files)
			return
		}
		r, ok := initc.ParseRecord(pk.Data)
		t := c.recordFor(r.Type)
		if !ok || t == nil {
			closeFiles(files)
			continue
		}
		t.mu.Lock()
		files, after := t.handleRecord(r, files, pk.PID)
		t.mu.Unlock()
		closeFiles(files)
		if after != nil {
			after()
		}
	}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// recordFor is the Cmd a record of type typ is for: c, or for a
// session's init the running call (nil: none runs) when the record is a
// call's (stage 2's, or the end of its command).
func (c *Cmd) recordFor(typ int) *Cmd {
	if !c.sessionInit() {
		return c
	}
	switch typ {
	case initc.RecStage2Fail, initc.RecReady, initc.RecTTY, initc.RecExit, initc.RecExeced:
		return c.sess.current()
	}
	return c
}

// handleRecord takes one record, under c.mu; it returns the descriptors
// it did not keep and what to do once c.mu is released (a kill).
func (c *Cmd) handleRecord(r record, files []*os.File, pid int) ([]*os.File, func()) {
	var after func()
	switch r.Type {
	case initc.RecInitFail, initc.RecStage2Fail:
		switch {
		case c.setupErr != nil || c.initFail != nil:
		case c.ready && r.Type == initc.RecInitFail:
			// The command is running or ran: not a setup error.
			c.initFail = c.initPlan.failure(r)
		default:
			c.setupErr = c.initPlan.failure(r)
		}
		c.execDecided(false)
	case initc.RecExeced:
		c.execDecided(true)
	case initc.RecReady:
		files, after = c.handleReady(files, pid)
	case initc.RecTTY:
		// From stage 2, before its execve (stage2.c's tj_open_tty).
		if len(files) > 0 {
			c.gotTTY(files[0])
			files = files[1:]
		}
	case initc.RecSession:
		if c.sessionInit() {
			close(c.sess.ready)
		}
	case initc.RecExit:
		rr := r
		first := c.exitRec == nil
		c.exitRec = &rr
		if first {
			close(c.exitSeen)
		}
		c.execDecided(false)
	case initc.RecNet:
		// Once, from the init, before stage 2 starts.
		if c.net == nil && !c.ready && c.Spec.Net == NetAllow && c.setupErr == nil {
			after = c.openNetwork(files)
			files = nil // startNetwork closed them
		}
	}
	return files, after
}

// execDecided, under c.mu, closes execDone once: the command was exec'd
// (execed), or a record said it will not be.
func (c *Cmd) execDecided(execed bool) {
	select {
	case <-c.execDone:
	default:
		c.execed = execed
		close(c.execDone)
	}
}

// errNotExeced is WaitExec's error for a run that ended, or was killed,
// before its command was exec'd, without a setup error of its own.
var errNotExeced = errors.New("jail: the run ended before its command was exec'd; Wait returns its Result")

// WaitExec waits until the command has been exec'd in the jail, which
// os/exec's Start waits for before it returns: nil once the command runs
// (or has run), else the *SetupError that Wait will return too (Code
// ExitNotFound when it was not found in the jail, ExitNotExecutable when
// it may not be executed, ExitSetup when the jail could not be built), or
// an error for a run killed before it (Wait's Result says why). Call it
// after a Start that returned nil, before or while Wait runs; it does not
// end the run.
func (c *Cmd) WaitExec() error {
	if c.res == nil {
		return errors.New("jail: not started")
	}
	c.mu.Lock()
	err, done := c.setupErr, c.execDone
	c.mu.Unlock()
	if err != nil {
		return err // Start failed
	}
	ended := c.msgDone
	if c.sessionCall() {
		ended = c.sess.ended
	}
	select {
	case <-done:
	case <-ended:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.execed:
		return nil
	case c.setupErr != nil:
		return c.setupErr
	}
	return errNotExeced
}

// handleReady takes stage 2's ready record, under c.mu: its first
// descriptor, if any, is stage 2's seccomp listener. It returns the
// descriptors it did not keep and what to do once c.mu is released.
func (c *Cmd) handleReady(files []*os.File, pid int) ([]*os.File, func()) {
	var after func()
	c.ready = true
	if len(files) > 0 && c.monitor == nil {
		var err error
		if c.monitor, err = c.startMonitor(files[0]); err != nil {
			after = func() { c.kill(StatusAborted, monitorFailed(err)) }
		}
		files = files[1:]
	}
	if w := c.ackWatcher(); w != nil {
		w.Track(pid)
		initlink.SendPacket(c.sock, []byte{0}, nil)
	}
	if c.killPending {
		// After the ack: a kill sent before it would have been it.
		c.killPending = false
		after = c.sendKill
	}
	if c.warm != nil && !c.warm.isParked {
		// A warm jail's stage 2 parks after its ready record;
		// last here: Command may change c.Spec from now on.
		c.warm.isParked = true
		close(c.warm.parked)
	}
	return files, after
}

// openNetwork, under c.mu, starts the allow mode's proxies and resolver
// on the descriptors of the init's net record (startNetwork closes them);
// it returns what to do once c.mu is released.
func (c *Cmd) openNetwork(files []*os.File) func() {
	list, _ := allow.ParseList(c.Spec.Allow) // checked by Validate
	n, err := startNetwork(list, c.Spec.Limits, files)
	if err != nil {
		// The init waits for the byte below: the command
		// never starts. Before the command started: the setup
		// error decides.
		c.setupErr = &SetupError{Code: ExitSetup, Err: err}
		return func() { c.kill(StatusAborted, "") }
	}
	c.net = n
	initlink.SendPacket(c.sock, []byte{0}, nil)
	return nil
}

// startMonitor answers the denied calls of stage 2's listener.
func (c *Cmd) startMonitor(listener *os.File) (*seccomp.Monitor, error) {
	action := seccomp.ActionDeny
	if c.Spec.OnViolation == ViolationKill {
		action = seccomp.ActionKill
	}
	opts := seccomp.MonitorOptions{Action: action, OnKill: func() { c.kill(StatusViolation, "") },
		OnFail: func(err error) { c.kill(StatusAborted, monitorFailed(err)) }}
	if n := c.Spec.Limits.MaxViolations; n > 0 {
		opts.MaxViolations = uint64(n)
		opts.OnLimit = func() {
			c.kill(StatusViolation, fmt.Sprintf("more than %d denied system calls (--max-violations %d): the run was killed", n, n))
		}
	}
	m := seccomp.NewMonitor(listener, opts)
	return m, m.Err()
}

// ackWatcher is the Landlock denial watcher that waits for stage 2's pid
// (the session's for a session's call), or nil.
func (c *Cmd) ackWatcher() *landlock.Watcher {
	if c.sessionCall() {
		return c.sess.init.watcher
	}
	return c.watcher
}

// monitorFailed is the reason of a run killed because its seccomp monitor
// stopped: a denied call would wait for an answer that never comes.
func monitorFailed(err error) string {
	return fmt.Sprintf("killed by tooljail: its seccomp monitor failed (%v), so denied system calls could no longer be answered; the command may have run and changed files", err)
}

// kill ends the whole run: the init dies, the kernel kills the rest of the
// PID namespace, and the cgroup is killed as a second net.
func (c *Cmd) kill(why Status, note string) {
	c.mu.Lock()
	// A timer or a cancellation after the command's exit record only
	// tears down what is left: the command ended on its own, and the
	// report says so. A violation kill counts whenever it comes: the
	// monitor kills the offending process first, whose death may be the
	// exit record that beat it here.
	if c.killedFor == "" && (c.exitRec == nil || why == StatusViolation) {
		c.killedFor, c.killNote = why, note
	}
	c.mu.Unlock()
	if c.sessionCall() {
		// The call, not the session.
		c.killCall()
		return
	}
	if c.proc != nil {
		c.proc.Kill()
	}
	if c.group != nil {
		c.group.Kill()
	}
}

// Signal sends sig to the command (through the init, which forwards
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the command's
// process group). SIGKILL kills the whole run.
func (c *Cmd) Signal(sig os.Signal) error {
	if c.proc == nil {
		return errors.New("jail: not started")
	}
	if sig == os.Kill {
		c.kill(StatusSignaled, "killed by the caller")
		return nil
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("jail: unsupported signal %v", sig)
	}
	return c.proc.Signal(s)
}

// Cancel kills the whole run, as the context does, and has it reported as
// status cancelled (exit code 137, SIGKILL) with reason: a server calls it
// when the client that asked for the run went away. Like the other kills
// of the supervisor it counts only before the command's exit: a command
// that had already ended is reported as it ended. Call it after Start.
func (c *Cmd) Cancel(reason string) {
	c.kill(StatusCancelled, reason)
}

// Wait waits for the run to end, cleans up, and returns its Result. The
// error is the SetupError when the command never ran (status
// setup_error), or a *CleanupError when it ran, its Result is final and
// valid, but what the jail had on the host was not all removed.
func (c *Cmd) Wait() (*Result, error) {
	if c.res == nil {
		return nil, errors.New("jail: not started")
	}
	if !c.resulted {
		c.WaitResult()
	}
	if c.waited {
		return c.res, errors.New("jail: Wait called twice")
	}
	c.waited = true
	if c.proc == nil { // Start failed
		return c.res, c.setupErr
	}
	if c.early {
		// The init exits right after its exit record: wait for it, and
		// for the end of its messages, before removing its cgroup.
		<-c.waitCh
		<-c.msgDone
	}
	left := c.cleanup()
	if c.res.Status == StatusSetupError {
		return c.res, c.setupErr
	}
	if left != nil {
		return c.res, &CleanupError{Err: left}
	}
	return c.res, nil
}

// CleanupError is Wait's error when the run ended, with its Result final,
// but what the jail had on the host was not all removed: its cgroup still
// held processes after the kill, or could not be removed. The caller
// should say so (the CLI prints a warning, a server logs it); the next
// run in the same cgroup removes what is left once this process is gone
// (cgroup.CleanupStale).
type CleanupError struct{ Err error }

func (e *CleanupError) Error() string {
	return "the run ended, but its jail was not all removed: " + e.Err.Error()
}

func (e *CleanupError) Unwrap() error { return e.Err }

// WaitResult waits for the run to end and returns its Result, which is
// final: the jail's processes are gone and every figure is in. What is
// left is the run's cgroup to remove; Wait, which must still be called,
// removes it and returns the same Result. A server sends the Result to
// its client in between. The error is the SetupError Wait would return.
func (c *Cmd) WaitResult() (*Result, error) {
	if c.res == nil {
		return nil, errors.New("jail: not started")
	}
	if c.resulted {
		return c.res, errors.New("jail: WaitResult called twice")
	}
	c.resulted = true
	if c.proc == nil { // Start failed
		return c.res, c.setupErr
	}
	end := c.waitEnd()
	wall := time.Since(c.started)
	if c.timer != nil {
		c.timer.Stop()
	}
	c.collectStreams()
	violations, denials, stats := c.collectEvidence()
	// Under c.mu: on the exit record, the messages are still read, and a
	// late kill (Cancel) may come.
	c.mu.Lock()
	c.finish(end, wall, violations, denials, stats)
	c.mu.Unlock()
	c.finishChanges()
	if c.sessionCall() {
		c.sess.callEnded(c)
	}
	if c.res.Status == StatusSetupError {
		return c.res, c.setupErr
	}
	return c.res, nil
}

// waitEnd waits for the exit record, or else the init's end (it failed,
// or was killed; for a session's call, the session's end), and returns
// that end (zero on the exit record).
func (c *Cmd) waitEnd() initlink.End {
	var end initlink.End
	switch {
	case c.sessionCall():
		select {
		case <-c.exitSeen:
		case <-c.sess.ended:
			end = c.sess.end
			<-c.sess.init.msgDone
		}
	default:
		select {
		case <-c.exitSeen:
			c.early = true
		case end = <-c.waitCh:
			<-c.msgDone
		}
	}
	return end
}

// collectStreams stops the allow mode's servers and ends the output
// relays, into the result.
func (c *Cmd) collectStreams() {
	if c.net != nil {
		// The jail is gone (on the exit record, the init has killed what
		// was left): nothing can connect any more. Closing ends the
		// connections still forwarding.
		c.res.Network = c.net.Stop()
		c.net = nil
	}
	// A terminal's master came before the exit record, or never will.
	c.relays[0].Attach(nil)
	if c.sessionCall() && c.KeepRunning {
		// What the call kept may hold its output open: the call's
		// output ends with its command.
		for _, r := range c.relays {
			if r != nil {
				r.Cut()
			}
		}
	}
	c.res.Stdout = streamOf(c.relays[0].Result())
	c.res.Stdout.TTY = c.TTY != nil
	c.closeTTY()
	if c.relays[1] != nil {
		c.res.Stderr = streamOf(c.relays[1].Result())
	} else {
		c.res.Stderr = Stream{Merged: true}
	}
}

// collectEvidence stops the seccomp monitor and the Landlock watcher and
// reads the cgroup's figures: what verdict.Decide weighs besides the end.
func (c *Cmd) collectEvidence() (violations []seccomp.Violation, denials []landlock.Denial, stats cgroup.Stats) {
	switch {
	case c.monitor != nil && c.sessionCall() && c.KeepRunning:
		// What the call left may make denied calls: the session
		// answers them from now on, and reports them at its end.
		violations = c.monitor.Snapshot()
		c.sess.keep(c.monitor)
	case c.monitor != nil:
		violations = c.monitor.Stop()
	}
	if c.watcher != nil {
		denials = c.watcher.Stop()
		c.watcher = nil
	}
	switch {
	case c.sessionCall() && c.sess.init.group != nil:
		// What a call's report takes of the session's figures (its CPU
		// time is its own, from its exit record).
		end := c.sess.init.group.Figures(cgroup.Counters | cgroup.Peaks)
		end.MemoryLimit = c.sess.memoryLimit()
		stats = sessionCallStats(c.groupStart, end)
	case c.group != nil:
		stats = c.group.Stats()
	}
	return violations, denials, stats
}

// cleanup removes what the run had on the host and returns what it could
// not remove.
func (c *Cmd) cleanup() error {
	if c.sessionCall() {
		// Everything but the call's own output is the session's.
		c.sess.callEnded(c)
		return nil
	}
	if c.staleDone != nil {
		<-c.staleDone
	}
	if c.watcher != nil {
		c.watcher.Stop()
		c.watcher = nil
	}
	var left error
	if c.group != nil {
		left = errors.Join(c.group.Kill(), c.group.Delete())
	}
	if c.sock >= 0 {
		unix.Close(c.sock)
		c.sock = -1
	}
	if c.nonsTmp != nil {
		// Every process of the run is gone: the reaper killed them, and
		// the group above.
		c.nonsTmp.Remove()
		c.nonsTmp = nil
	}
	return left
}

func (c *Cmd) finishSetupError() {
	c.res.Status = StatusSetupError
	c.res.ExitCode = c.setupErr.Code
	c.res.Reason = c.setupErr.Error()
	c.res.WallTimeMs = ms(time.Since(c.started))
}

// finish fills the Result with what the run measured, and its verdict
// (verdict.Decide).
func (c *Cmd) finish(end initlink.End, wall time.Duration, violations []seccomp.Violation, denials []landlock.Denial, st cgroup.Stats) {
	r := c.res
	r.WallTimeMs = ms(wall)
	r.Violations = append(r.Violations, verdict.Violations(violations, denials)...)
	r.Violations = append(r.Violations, verdict.NetworkViolations(r.Network)...)
	r.NetworkLimitHits = verdict.NetLimitHits(r.Network)
	if c.ready && c.initPlan != nil && c.initPlan.enforced != nil {
		ll := c.initPlan.enforced
		r.Enforcement.LandlockABI = ll.ABI
		r.Enforcement.LandlockRights = ll.FSRights
		r.Enforcement.LandlockNet = ll.NetRights
		r.Enforcement.LandlockScopes = ll.Scopes
	}
	if e := c.exitRec; e != nil {
		r.CPUUserMs = int64p(e.Rusage.UserUsec / 1000)
		r.CPUSystemMs = int64p(e.Rusage.SystemUsec / 1000)
		r.MaxRSSBytes = int64p(e.Rusage.MaxRSSKiB * 1024)
		if e.Leftover >= 0 {
			r.KilledLeftoverProcesses = int64p(int64(e.Leftover))
		}
		if c.initPlan != nil {
			r.FullMounts = fullMounts(e.Fills, c.initPlan.mounts)
		}
	}
	c.applyCgroupStats(st)
	d := verdict.Decide(c.outcome(end, st))
	r.Status, r.ExitCode, r.Signal, r.Reason = d.Status, d.ExitCode, d.Signal, d.Reason
	if d.Status == StatusSetupError && c.setupErr == nil {
		c.setupErr = &SetupError{Code: ExitSetup, Err: errors.New(d.Reason)}
	}
}

// outcome gathers what decides the status, as Wait learned it.
func (c *Cmd) outcome(end initlink.End, st cgroup.Stats) verdict.Outcome {
	r := c.res
	o := verdict.Outcome{
		SetupErr:  c.setupErr,
		InitFail:  c.initFail,
		Started:   c.ready,
		KilledFor: c.killedFor,
		KillNote:  c.killNote,
		OOM:       st.OOMKills != nil && *st.OOMKills > 0,
		Init:      end,
		Limits:    &c.Spec.Limits,
		Truncated: r.Stdout.Truncated || r.Stderr.Truncated,
	}
	if e := c.exitRec; e != nil {
		o.Exit = &verdict.Exit{Code: e.ExitCode, Signal: syscall.Signal(e.Signal)}
	}
	if o.OOM {
		o.OOMReason = c.oomReason(st)
	}
	for _, v := range r.Violations {
		if o.FirstSyscall == "" && v.Kind == "syscall" {
			o.FirstSyscall = v.Syscall
		}
		if v.Kind == "arch" && v.Action == "killed" && !o.Arch {
			o.Arch, o.ArchCall = true, v.Syscall
		}
	}
	return o
}

func (c *Cmd) applyCgroupStats(st cgroup.Stats) {
	r := c.res
	usec2ms := func(p *int64) *int64 {
		if p == nil {
			return nil
		}
		return int64p(*p / 1000)
	}
	r.MemoryPeakBytes, r.OOMKills, r.PidsPeak, r.PidsLimitHits = st.MemoryPeak, st.OOMKills, st.PidsPeak, st.PidsLimitHits
	r.CPUThrottledMs = usec2ms(st.CPUThrottledUs)
	// The cgroup counts the whole tree, including processes nobody waited for.
	if st.CPUUserUsec != nil {
		r.CPUUserMs = usec2ms(st.CPUUserUsec)
	}
	if st.CPUSystemUsec != nil {
		r.CPUSystemMs = usec2ms(st.CPUSystemUsec)
	}
}

func (c *Cmd) oomReason(st cgroup.Stats) string {
	limit := c.Spec.Limits.Memory
	if st.MemoryLimit != nil {
		limit = *st.MemoryLimit // as the kernel stored it
	}
	var held []verdict.TmpfsHeld
	if c.initPlan != nil {
		var fills []mountFill
		if c.exitRec != nil {
			fills = c.exitRec.Fills
		}
		held = heldInTmpfs(fills, c.initPlan.mounts)
	}
	return verdict.MemoryReason(limit, st.MemoryPeak, *st.OOMKills, held, c.Spec.RaiseMemory)
}
