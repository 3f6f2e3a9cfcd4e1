package jail

// #include "init.h"
import "C"

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/landlock"
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
	// CaptureOutput keeps the output in Result.Stdout.Text/Stderr.Text.
	CaptureOutput bool
	// Outputs are host files the caller writes after the run (see
	// Output): Start opens them, or fails.
	Outputs []*Output

	ctx     context.Context
	res     *Result
	started time.Time
	plan    *plan

	proc    *initProc
	waitCh  chan initEnd // how the init ended
	msgDone chan struct{}
	relays  [2]*relay
	group   *cgroup.Group
	monitor *seccomp.Monitor
	watcher *landlock.Watcher
	sock    int
	timer   *time.Timer
	// staleDone is closed when CleanupStale, started by openGroup, is done.
	staleDone chan struct{}

	mu        sync.Mutex
	killedFor Status // timeout or violation: why the supervisor killed the run
	killNote  string
	setupErr  *SetupError
	initFail  *SetupError // the init failed after the command started
	exitRec   *record
	ready     bool // stage 2 got as far as its ready record
	waited    bool
	initPlan  *initPlan
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
	c.res.Command = c.Spec.Args
	c.res.Workdir = c.Spec.Dir
	c.res.Profile = c.Spec.Profile
	c.res.Limits = reportLimits(&c.Spec.Limits)
	p, err := c.Spec.plan(probeHost())
	if err != nil {
		settleOutputs(c.Outputs)
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	c.plan = p
	c.res.Enforcement = p.enf
	if err := c.start(); err != nil {
		if c.proc != nil {
			// The init was forked (it waits for the sync byte): end it,
			// so that Wait reports the setup error and nothing is left.
			c.proc.kill()
			<-c.waitCh
			c.proc = nil
		}
		c.cleanup()
		settleOutputs(c.Outputs)
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	return nil
}

func (c *Cmd) fail(e *SetupError) error {
	c.setupErr = e
	c.finishSetupError()
	return e
}

func (c *Cmd) start() error {
	s, p := c.Spec, c.plan
	// The audit socket for Landlock denials opens, and the host side is
	// prepared (see hostside.go), while the cgroup is made; both are
	// joined before the init's plan is compiled, and on every early
	// return, so that cleanup closes what they opened.
	type watched struct {
		w   *landlock.Watcher
		err error
	}
	var watch chan watched
	if p.landlock != nil {
		watch = make(chan watched, 1)
		go func() {
			w, err := landlock.WatchDenials()
			watch <- watched{w, err}
		}()
	}
	joinWatcher := func() {
		if watch == nil {
			return
		}
		r := <-watch
		watch = nil
		if r.err != nil {
			c.res.Enforcement.LandlockDenials = r.err.Error()
			return
		}
		c.watcher = r.w
		c.res.Enforcement.LandlockDenials = "reported"
	}
	defer joinWatcher()
	hs := &hostSide{root: os.Geteuid() == 0}
	prepared := make(chan error, 1)
	go func() { prepared <- hs.prepare(c, p) }()
	joinPrepared := func() error {
		if prepared == nil {
			return nil
		}
		err := <-prepared
		prepared = nil
		return err
	}
	// One deferred call, in this order: what prepare opens after an early
	// return must be closed too.
	defer func() {
		joinPrepared()
		hs.close()
	}()

	if err := c.openGroup(); err != nil {
		return err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	c.sock = fds[0]
	// The kernel stamps each message with the sender's pid in our PID
	// namespace: how the Landlock watcher learns stage 2's host pid.
	if err := unix.SetsockoptInt(c.sock, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[1])
		return fmt.Errorf("socket credentials: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), "jail-socket")
	defer child.Close()

	stdin, err := c.stdinFile()
	if err != nil {
		return err
	}
	defer stdin.Close()
	budget := &outputBudget{remaining: -1}
	if s.Limits.OutputLimit > 0 {
		budget.remaining = s.Limits.OutputLimit
	}
	var outW [2]*os.File
	for i, dst := range []io.Writer{c.Stdout, c.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer w.Close()
		outW[i] = w
		c.relays[i] = newRelay(r, dst, budget, c.CaptureOutput)
	}
	// The init waits on this pipe until the supervisor has written its id
	// maps and opened the host paths; if the supervisor gives up first,
	// the pipe's end ends the init.
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer syncR.Close()
	defer syncW.Close()

	if err := joinPrepared(); err != nil {
		return err
	}
	joinWatcher()
	cgroupFD := -1
	if c.group != nil {
		cgroupFD = c.group.DirFD()
	}
	ip, err := newInitPlan(s, p, initFiles{
		stdin: int(stdin.Fd()), stdout: int(outW[0].Fd()), stderr: int(outW[1].Fd()),
		sock: int(child.Fd()), sync: int(syncR.Fd()),
	}, cgroupFD, &stage2Config{
		Args:    s.Args,
		Env:     s.Env,
		Dir:     s.Dir,
		NoFile:  s.Limits.NoFile,
		FSize:   s.Limits.FSize,
		CPUTime: int64((s.Limits.CPUTime + time.Second - 1) / time.Second),
		WaitAck: c.watcher != nil,
		// The supervisor's own setting: startInit turns it off only around
		// the fork.
		NoHugePages: thpDisabled(),
	})
	if err != nil {
		return err
	}
	// The init has a copy of the plan from the fork on.
	defer ip.free()
	c.initPlan = ip
	if err := c.startInit(ip); err != nil {
		return err
	}
	syncR.Close()
	if err := writeIDMaps(c.proc.pid, hs.id); err != nil {
		return err
	}
	if !hs.root {
		// In the init's mount namespace, where it may clone what it gets.
		if err := hs.resolveIn(c, fmt.Sprintf("/proc/%d/root", c.proc.pid)); err != nil {
			return err
		}
	}
	if err := hs.finish(c); err != nil {
		return err
	}
	c.res.Enforcement.HostUID, c.res.Enforcement.HostGID = &hs.id.UID, &hs.id.GID
	c.res.Enforcement.Idmapped = hs.idmapped
	fdList, err := ip.fillLate(hs.sources, hs.over, hs.prog)
	if err != nil {
		return err
	}
	if err := sendFDs(c.sock, fdList); err != nil {
		return err
	}
	// Nothing in the jail has run yet: the init is in its cgroup and waits
	// for this byte.
	if _, err := syncW.Write([]byte{0}); err != nil {
		return fmt.Errorf("start the jail's init: %w", err)
	}
	c.msgDone = make(chan struct{})
	go c.readMessages()
	if s.Limits.Timeout > 0 {
		c.timer = time.AfterFunc(s.Limits.Timeout, func() {
			c.kill(StatusTimeout, fmt.Sprintf("wall-clock limit %s reached; the whole process tree was killed", s.Limits.Timeout))
		})
	}
	if c.ctx.Done() != nil {
		go func() {
			select {
			case <-c.ctx.Done():
				c.kill(StatusSignaled, "the run was cancelled by the caller: "+c.ctx.Err().Error())
			case <-c.msgDone:
			}
		}()
	}
	return nil
}

// writeIDMaps maps uid and gid 0 of the init's user namespace to the
// jail's host identity: the supervisor's own, or for a root supervisor an
// unprivileged one (Spec.HostUser). Unprivileged user namespaces must deny
// setgroups; real root keeps it, for the init to drop its supplementary
// groups.
func writeIDMaps(pid int, id HostID) error {
	files := [][2]string{{"uid_map", fmt.Sprintf("0 %d 1\n", id.UID)}}
	if os.Geteuid() != 0 {
		files = append(files, [2]string{"setgroups", "deny"})
	}
	files = append(files, [2]string{"gid_map", fmt.Sprintf("0 %d 1\n", id.GID)})
	for _, f := range files {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", pid, f[0]), []byte(f[1]), 0); err != nil {
			return fmt.Errorf("write the jail's %s: %w (are unprivileged user namespaces allowed? see `tooljail check`)", f[0], err)
		}
	}
	return nil
}

// openGroup creates the run's cgroup: for the caps, and for accounting
// where the host allows a group without caps.
func (c *Cmd) openGroup() error {
	r := c.plan.resources
	capped := r.Memory > 0 || r.CPUs > 0 || r.Pids > 0
	if !capped && probeHost().Cgroup.Mode == cgroup.ModeNone {
		return nil
	}
	// Groups of dead supervisors are no business of this run: clean them
	// up alongside it (cleanup waits for it before the run ends).
	c.staleDone = make(chan struct{})
	go func() {
		defer close(c.staleDone)
		cgroup.CleanupStale()
	}()
	g, err := cgroup.New(c.res.ID, r)
	if err != nil {
		if capped {
			// Preflight said the caps could be set; they cannot: fail
			// closed rather than run without them.
			return fmt.Errorf("create the run's cgroup: %w", err)
		}
		return nil
	}
	c.group = g
	c.plan.enf.Cgroup = string(g.Mode())
	c.res.Enforcement = c.plan.enf
	return nil
}

// noHugePagesForChildren turns transparent huge pages off for this process
// while the init is forked, and returns what turns them back on. The init
// inherits the setting: it is charged to the run's memory cap, and with
// huge pages "always" (Debian's default) every page it writes in its copy
// of the supervisor's memory could become a 2 MiB one. Stage 2 sets the
// supervisor's own setting for the command. The flag is per process, so a
// concurrent Start may fork its init with huge pages on: that costs
// memory, nothing else.
func noHugePagesForChildren() (restore func()) {
	if thpDisabled() {
		return func() {}
	}
	if unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0) != nil {
		return func() {}
	}
	return func() { unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0) }
}

// thpDisabled says whether this process has PR_SET_THP_DISABLE set (an
// error, on kernels without it, counts as not set).
func thpDisabled() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	return err == nil && v != 0
}

// startInit forks the init from a goroutine locked to its OS thread until
// the init exits: the kernel sends the init's parent death signal when the
// forking thread ends, not the process.
func (c *Cmd) startInit(ip *initPlan) error {
	type started struct {
		proc *initProc
		err  error
	}
	startCh := make(chan started, 1)
	c.waitCh = make(chan initEnd, 1)
	intoGroup := ip.c.cgroup_fd >= 0
	joined := false
	go func() {
		runtime.LockOSThread()
		// v1: this thread joins the group and forks the init there (see
		// cgroup.Group.JoinThread); when it cannot, AddProc below.
		var leave func() error
		if c.group != nil && !intoGroup {
			var err error
			if leave, err = c.group.JoinThread(); err != nil {
				if leave != nil {
					// Stuck in the group: this thread forks nothing
					// and ends with this goroutine (it stays locked).
					startCh <- started{err: err}
					return
				}
				// Not joined: AddProc below.
			}
		}
		restoreTHP := noHugePagesForChildren()
		proc, err := ip.forkInit()
		if err != nil && intoGroup {
			// Clone into the cgroup can be refused (clone3 blocked by an
			// outer seccomp profile, a v1 host): AddProc below.
			intoGroup = false
			ip.c.cgroup_fd = -1
			proc, err = ip.forkInit()
		}
		restoreTHP()
		if leave != nil {
			if lerr := leave(); lerr != nil {
				// This thread is stuck in the run's group: end the init,
				// and the thread with this goroutine (it stays locked).
				if err == nil {
					proc.kill()
					proc.wait()
				}
				startCh <- started{err: errors.Join(err, lerr)}
				return
			}
			joined = err == nil
		}
		startCh <- started{proc, err}
		if err != nil {
			return
		}
		c.waitCh <- proc.wait()
	}()
	st := <-startCh
	if st.err != nil {
		return fmt.Errorf("start the jail's init: %w (are unprivileged user namespaces allowed? see `tooljail check`)", st.err)
	}
	c.proc = st.proc
	if c.group != nil && !intoGroup && !joined {
		if err := c.group.AddProc(c.proc.pid); err != nil {
			return fmt.Errorf("move the jail into its cgroup: %w", err)
		}
	}
	return nil
}

// stdinFile gives the init its stdin: /dev/null, or a pipe fed from Stdin.
func (c *Cmd) stdinFile() (*os.File, error) {
	if c.Stdin == nil {
		return os.Open(os.DevNull)
	}
	if f, ok := c.Stdin.(*os.File); ok && isDevNull(f) {
		return os.Open(os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		io.Copy(w, c.Stdin)
		w.Close()
	}()
	return r, nil
}

func isDevNull(f *os.File) bool {
	var st, null unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev
}

// readMessages handles what the init and stage 2 send until both are gone.
func (c *Cmd) readMessages() {
	defer close(c.msgDone)
	for {
		pk, err := recvPacket(c.sock)
		files := pk.files
		if err != nil || len(pk.data) == 0 {
			for _, f := range files {
				f.Close()
			}
			return
		}
		r, ok := parseRecord(pk.data)
		if !ok {
			for _, f := range files {
				f.Close()
			}
			continue
		}
		c.mu.Lock()
		switch r.typ {
		case C.TJ_REC_INIT_FAIL, C.TJ_REC_STAGE2_FAIL:
			switch {
			case c.setupErr != nil || c.initFail != nil:
			case c.ready && r.typ == C.TJ_REC_INIT_FAIL:
				// The command is running or ran: not a setup error.
				c.initFail = c.initPlan.failure(r)
			default:
				c.setupErr = c.initPlan.failure(r)
			}
		case C.TJ_REC_READY:
			c.ready = true
			if len(files) > 0 && c.monitor == nil {
				action := seccomp.ActionDeny
				if c.Spec.OnViolation == ViolationKill {
					action = seccomp.ActionKill
				}
				opts := seccomp.MonitorOptions{Action: action, OnKill: func() { c.kill(StatusViolation, "") }}
				if n := c.Spec.Limits.MaxViolations; n > 0 {
					opts.MaxViolations = uint64(n)
					opts.OnLimit = func() {
						c.kill(StatusViolation, fmt.Sprintf("more than %d denied system calls (--max-violations %d): the run was killed", n, n))
					}
				}
				c.monitor = seccomp.NewMonitorWith(files[0], opts)
				files = files[1:]
			}
			if c.watcher != nil {
				c.watcher.Track(pk.pid)
				unix.Sendmsg(c.sock, []byte{0}, nil, nil, unix.MSG_NOSIGNAL)
			}
		case C.TJ_REC_EXIT:
			rr := r
			c.exitRec = &rr
		}
		c.mu.Unlock()
		for _, f := range files {
			f.Close()
		}
	}
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
	if c.proc != nil {
		c.proc.kill()
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
	return c.proc.signal(s)
}

// Wait waits for the run to end, cleans up, and returns its Result. The
// error is non-nil only when the command never ran (status setup_error).
func (c *Cmd) Wait() (*Result, error) {
	if c.res == nil {
		return nil, errors.New("jail: not started")
	}
	if c.waited {
		return c.res, errors.New("jail: Wait called twice")
	}
	c.waited = true
	if c.proc == nil { // Start failed
		return c.res, c.setupErr
	}
	end := <-c.waitCh
	wall := time.Since(c.started)
	if c.timer != nil {
		c.timer.Stop()
	}
	<-c.msgDone
	c.res.Stdout = c.relays[0].stream()
	c.res.Stderr = c.relays[1].stream()
	var violations []seccomp.Violation
	if c.monitor != nil {
		violations = c.monitor.Stop()
	}
	var denials []landlock.Denial
	if c.watcher != nil {
		denials = c.watcher.Stop()
		c.watcher = nil
	}
	var stats cgroup.Stats
	if c.group != nil {
		stats = c.group.Stats()
	}
	c.cleanup()
	c.finish(end, wall, violations, denials, stats)
	if c.res.Status == StatusSetupError {
		return c.res, c.setupErr
	}
	return c.res, nil
}

func (c *Cmd) cleanup() {
	if c.staleDone != nil {
		<-c.staleDone
	}
	if c.watcher != nil {
		c.watcher.Stop()
		c.watcher = nil
	}
	if c.group != nil {
		c.group.Kill()
		c.group.Delete()
	}
	if c.sock >= 0 {
		unix.Close(c.sock)
		c.sock = -1
	}
}

func (c *Cmd) finishSetupError() {
	c.res.Status = StatusSetupError
	c.res.ExitCode = c.setupErr.Code
	c.res.Reason = c.setupErr.Error()
	c.res.WallTimeMs = ms(time.Since(c.started))
}

// finish decides the status and fills the Result.
func (c *Cmd) finish(end initEnd, wall time.Duration, violations []seccomp.Violation, denials []landlock.Denial, st cgroup.Stats) {
	r := c.res
	r.WallTimeMs = ms(wall)
	for _, v := range violations {
		r.Violations = append(r.Violations, Violation{
			Kind: v.Kind, Syscall: v.Syscall, Args: v.Args, Pid: v.Pid, JailPid: v.JailPid, Count: v.Count, Action: v.Action,
		})
	}
	for _, d := range denials {
		r.Violations = append(r.Violations, Violation{
			Kind: "landlock", Path: d.Path, Access: d.Access, Pid: d.Pid, Count: d.Count, Action: "denied",
		})
	}
	if c.ready && c.initPlan != nil && c.initPlan.enforced != nil {
		ll := c.initPlan.enforced
		r.Enforcement.LandlockABI = ll.ABI
		r.Enforcement.LandlockRights = ll.FSRights
		r.Enforcement.LandlockNet = ll.NetRights
		r.Enforcement.LandlockScopes = ll.Scopes
	}
	if e := c.exitRec; e != nil {
		r.CPUUserMs = int64p(e.rusage.UserUsec / 1000)
		r.CPUSystemMs = int64p(e.rusage.SystemUsec / 1000)
		r.MaxRSSBytes = int64p(e.rusage.MaxRSSKiB * 1024)
	}
	c.applyCgroupStats(st)

	o := outcome{
		setupErr:  c.setupErr,
		initFail:  c.initFail,
		started:   c.ready,
		killedFor: c.killedFor,
		killNote:  c.killNote,
		oom:       st.OOMKills != nil && *st.OOMKills > 0,
		init:      end,
		limits:    &c.Spec.Limits,
		truncated: r.Stdout.Truncated || r.Stderr.Truncated,
	}
	if e := c.exitRec; e != nil {
		o.exit = &exitFacts{code: e.exitCode, signal: syscall.Signal(e.signal)}
	}
	if o.oom {
		o.oomReason = c.oomReason(st)
	}
	for i := range r.Violations {
		v := &r.Violations[i]
		if o.firstSyscall == "" && v.Kind == "syscall" {
			o.firstSyscall = v.Syscall
		}
		if v.Kind == "arch" && v.Action == "killed" && !o.arch {
			o.arch, o.archCall = true, v.Syscall
		}
	}
	d := decide(o)
	r.Status, r.ExitCode, r.Signal, r.Reason = d.status, d.exitCode, d.signal, d.reason
	if d.status == StatusSetupError && c.setupErr == nil {
		c.setupErr = &SetupError{Code: ExitSetup, Err: errors.New(d.reason)}
	}
}

// exitFacts is the command's end as the init saw it.
type exitFacts struct {
	code   int            // as a shell reports it: the status, or 128+signal
	signal syscall.Signal // 0 when it exited
}

// outcome is everything that decides a run's status, as Wait learned it.
type outcome struct {
	setupErr  *SetupError // the command never ran
	initFail  *SetupError // the init failed after the command started
	started   bool        // stage 2 got as far as its execve
	exit      *exitFacts  // nil: no exit record came
	killedFor Status      // why the supervisor killed the run before the exit record, or ""
	killNote  string
	oom       bool
	oomReason string
	// arch: the monitor saw a non-native (x32, i386) call and killed its
	// caller (archCall names it). Without notification nobody sees such a
	// call: the filter kills the caller with SIGSYS, which the exit record
	// cannot tell from a SIGSYS sent by a process, so it is no violation.
	arch         bool
	archCall     string
	firstSyscall string // the first denied call recorded, for a kill's reason
	init         initEnd
	limits       *Limits
	truncated    bool // output over the limit was dropped
}

// verdict is a run's status, exit code, signal and reason.
type verdict struct {
	status   Status
	exitCode int
	signal   string
	reason   string
}

// decide turns what happened into the report's verdict. The order is the
// order of evidence: a setup error means the command never ran; a kill by
// the supervisor that came before the exit record explains that exit; then
// what the kernel did (a non-native call, the OOM killer); then the exit
// record itself. A run whose command started is never a setup error.
func decide(o outcome) verdict {
	sigsys := 128 + int(syscall.SIGSYS)
	commandKilled := o.exit != nil && (o.exit.signal == syscall.SIGKILL || o.exit.signal == syscall.SIGSYS)
	var v verdict
	switch {
	case o.setupErr != nil:
		v = verdict{StatusSetupError, o.setupErr.Code, "", o.setupErr.Error()}
	case o.killedFor == StatusTimeout:
		v = verdict{StatusTimeout, ExitTimeout, "", o.killNote}
	case o.killedFor == StatusViolation:
		v = verdict{StatusViolation, sigsys, "SIGSYS", "killed for a denied system call (--on-violation kill)"}
		if o.killNote != "" {
			v.reason = o.killNote
		} else if o.firstSyscall != "" {
			v.reason = fmt.Sprintf("killed for a denied system call: %s (--on-violation kill)", o.firstSyscall)
		}
	case o.arch && commandKilled:
		v = verdict{StatusViolation, sigsys, "SIGSYS", "killed for a non-native system call (x32 or i386 entry point)"}
		if o.archCall != "" {
			v.reason = fmt.Sprintf("killed for a non-native system call: %s (x32 or i386 entry point)", o.archCall)
		}
	case o.oom && (o.exit == nil || o.exit.signal == syscall.SIGKILL):
		v = verdict{StatusMemoryLimit, 128 + int(syscall.SIGKILL), "SIGKILL", o.oomReason}
	case o.exit != nil && o.exit.signal != 0:
		v = verdict{StatusSignaled, o.exit.code, unix.SignalName(o.exit.signal), signalReason(o.exit.signal, o.limits)}
		if o.killedFor == StatusSignaled {
			v.reason = o.killNote
		}
	case o.exit != nil:
		v = verdict{StatusExited, o.exit.code, "", ""}
		if o.truncated {
			v.reason = fmt.Sprintf("output over the limit of %d bytes was dropped", o.limits.OutputLimit)
		}
	case o.killedFor == StatusSignaled:
		v = verdict{StatusSignaled, 128 + int(syscall.SIGKILL), "SIGKILL", o.killNote}
	case o.started:
		v = verdict{StatusAborted, ExitSetup, "", ""}
		what := "ended (" + o.init.desc + ")"
		if o.initFail != nil {
			what = "failed: " + o.initFail.Error()
		}
		if o.init.signal != 0 {
			v.exitCode, v.signal = 128+int(o.init.signal), unix.SignalName(o.init.signal)
			what = "was killed by " + v.signal
		}
		v.reason = "the jail's init " + what + " after the command started; the command may have run and changed files, and its exit status is unknown"
	default:
		v = verdict{StatusSetupError, ExitSetup, "", fmt.Sprintf("the jail's init ended without a status (%s)", o.init.desc)}
		if o.initFail != nil {
			v.reason = o.initFail.Error()
		}
	}
	return v
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
	reason := fmt.Sprintf("memory limit %s reached", units.FormatSize(limit))
	if st.MemoryPeak != nil {
		reason += fmt.Sprintf(" (peak %s)", units.FormatSize(*st.MemoryPeak))
	}
	n := *st.OOMKills
	plural := "es"
	if n == 1 {
		plural = ""
	}
	return reason + fmt.Sprintf("; %d process%s killed by the OOM killer; the whole jail was stopped", n, plural)
}

func signalReason(sig unix.Signal, l *Limits) string {
	switch sig {
	case unix.SIGXCPU:
		return fmt.Sprintf("CPU time limit %s reached (SIGXCPU)", l.CPUTime)
	case unix.SIGXFSZ:
		return fmt.Sprintf("file size limit %s reached (SIGXFSZ)", units.FormatSize(l.FSize))
	case unix.SIGSYS:
		// Only the monitor sees a non-native call (an "arch" violation);
		// without it the filter's kill and a sent SIGSYS look the same.
		return "killed by SIGSYS: a system call the filter kills (a non-native x32 or i386 entry), or a SIGSYS sent to it"
	}
	return "the command was killed by " + unix.SignalName(sig)
}

func reportLimits(l *Limits) ReportLimits {
	return ReportLimits{
		MemoryBytes:      l.Memory,
		CPUs:             l.CPUs,
		Pids:             l.Pids,
		TimeoutMs:        ms(l.Timeout),
		CPUTimeMs:        ms(l.CPUTime),
		NoFile:           l.NoFile,
		FSizeBytes:       l.FSize,
		OutputLimitBytes: l.OutputLimit,
		MaxViolations:    l.MaxViolations,
	}
}
