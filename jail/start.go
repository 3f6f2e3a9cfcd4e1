package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/jail/internal/fit"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/internal/relay"
	"github.com/tooljail/tooljail/landlock"
)

// Start's work, in the order it happens: the layers' host side is
// prepared in the background (setUpLayers) while the cgroup is made and the
// init's stdio is plumbed (childStdio), the way os/exec prepares a child's
// descriptors before it forks; then launch forks the init, hands it the
// host side, and lets it go.

func (c *Cmd) start() (retErr error) {
	layers := c.setUpLayers()
	// Runs after layers.close (deferred below), which waits for the
	// host side: a run that never started leaves no change set.
	defer func() {
		if retErr != nil {
			layers.hs.chg.Abort()
		} else {
			c.chg = layers.hs.chg
		}
	}()
	// Whatever the layers opened is closed on every return; what the
	// init needs it has by then.
	defer layers.close(c)
	if err := c.openGroup(); err != nil {
		return err
	}
	var stdio *childStdio
	var err error
	if c.warm != nil || c.sessionInit() {
		// A warm jail's command, or a session's call, brings its stdio
		// with its call.
		stdio, err = placeholderStdio()
	} else {
		stdio, err = c.childStdio()
	}
	if err != nil {
		return err
	}
	defer stdio.close()
	if err := layers.join(c); err != nil {
		return err
	}
	return c.launch(layers.hs, stdio)
}

// layerSetup is the layers' host side being prepared: the audit socket for
// Landlock denials, and the host paths, identity and seccomp filter
// (hostside.go). Both run while the cgroup is made.
type layerSetup struct {
	hs       *hostSide
	prepared chan error       // nil once joined
	watch    chan watchResult // nil once joined, or when there is no Landlock
}

type watchResult struct {
	w   *landlock.Watcher
	err error
}

func (c *Cmd) setUpLayers() *layerSetup {
	l := &layerSetup{hs: &hostSide{root: c.plan.root}, prepared: make(chan error, 1)}
	// The host side first: the longer of the two, it then gets the
	// other processor while the caller makes the cgroup, and the watcher
	// runs when the caller waits for them (BENCHMARKS.md).
	go func() { l.prepared <- l.hs.prepare(c, c.plan) }()
	if c.plan.landlock != nil {
		l.watch = make(chan watchResult, 1)
		go func() {
			w, err := landlock.WatchDenials()
			l.watch <- watchResult{w, err}
		}()
	}
	return l
}

// join waits for both; the host side's error fails the run, the watcher's
// only says in the report that denials are not reported.
func (l *layerSetup) join(c *Cmd) error {
	var err error
	if l.prepared != nil {
		err = <-l.prepared
		l.prepared = nil
	}
	if l.watch != nil {
		r := <-l.watch
		l.watch = nil
		if r.err != nil {
			c.res.Enforcement.LandlockDenials = r.err.Error()
		} else {
			c.watcher = r.w // cleanup stops it
			c.res.Enforcement.LandlockDenials = "reported"
		}
	}
	return err
}

// close joins what an early return left running, so that what it opened
// is closed too.
func (l *layerSetup) close(c *Cmd) {
	l.join(c)
	l.hs.close()
}

// childStdio is what becomes the init's stdin, stdout and stderr: stdin
// is /dev/null or a pipe fed from Cmd.Stdin, the outputs are pipes whose
// read ends the relays own. The supervisor closes its copies once the
// init is forked.
type childStdio struct {
	stdin *os.File
	out   [2]*os.File
}

func (c *Cmd) childStdio() (*childStdio, error) {
	if c.MergeStderr && c.Stderr != nil && !sameWriter(c.Stderr, c.Stdout) {
		return nil, errors.New("Cmd.MergeStderr sends the command's stderr to Stdout: leave Stderr nil")
	}
	limit := int64(-1) // none
	if n := c.Spec.Limits.OutputLimit; n > 0 {
		limit = n
	}
	budget := relay.NewBudget(limit)
	if c.TTY != nil {
		return c.ttyStdio(budget)
	}
	s := &childStdio{}
	var err error
	if s.stdin, err = c.stdinFile(); err != nil {
		return nil, err
	}
	if c.MergeStderr {
		// One pipe for both, as os/exec's Stdout == Stderr: the kernel
		// keeps the order of the command's writes to fd 1 and fd 2.
		r, w, err := os.Pipe()
		if err != nil {
			s.close()
			return nil, err
		}
		growPipe(w)
		s.out[0], s.out[1] = w, w
		c.relays[0] = relay.New(r, c.Stdout, budget, c.CaptureOutput)
		return s, nil
	}
	for i, dst := range []io.Writer{c.Stdout, c.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			s.close()
			return nil, err
		}
		growPipe(w)
		s.out[i] = w
		c.relays[i] = relay.New(r, dst, budget, c.CaptureOutput)
	}
	return s, nil
}

// outputPipeSize is the buffer asked for an output pipe: the command
// writes on while the relay copies, and a large output takes a quarter of
// the reads and wake-ups of the default 64 KiB (16 MiB through `run -q`
// to a pipe: about half the time). More is not faster here, and the
// pages count against the user's pipe budget
// (/proc/sys/fs/pipe-user-pages-soft, 64 MiB: past it the user's new
// pipes get two pages): 256 KiB a pipe leaves room for 64 runs at once
// and the pipes of their commands.
const outputPipeSize = relay.PipeSize

// growPipe asks for outputPipeSize; a refusal (a user over its pipe
// budget) keeps the default.
func growPipe(f *os.File) {
	unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, outputPipeSize)
}

// sameWriter says whether a and b are the same writer; writers of a type
// that cannot be compared are different (os/exec's interfaceEqual).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { recover() }()
	return a == b
}

func (s *childStdio) close() {
	for i, f := range []*os.File{s.stdin, s.out[0], s.out[1]} {
		if f != nil && !(i == 2 && f == s.out[0]) { // merged: one file
			f.Close()
		}
	}
}

// launch forks the init, which waits on the sync pipe until the
// supervisor has written its id maps and handed over the host side; if
// the supervisor gives up first, the pipe's end ends the init.
func (c *Cmd) launch(hs *hostSide, stdio *childStdio) error {
	lf, err := c.openLaunch(stdio)
	if err != nil {
		return err
	}
	defer lf.close()
	st2 := c.stage2Config()
	ip, err := newInitPlan(c.Spec, c.plan, lf.files, lf.cgroupFD, &st2)
	if err != nil {
		return err
	}
	// The init has a copy of the plan from the fork on.
	defer ip.free()
	c.initPlan = ip
	if err := c.startInit(ip); err != nil {
		return err
	}
	lf.syncR.Close()
	if err := c.handOver(hs, ip); err != nil {
		return err
	}
	// Nothing in the jail has run yet: the init is in its cgroup and waits
	// for this byte.
	if _, err := lf.syncW.Write([]byte{0}); err != nil {
		return fmt.Errorf("start the jail's init: %w", err)
	}
	c.supervise()
	return nil
}

// launchFiles is what a launch hands the process it forks (the init, or
// the reaper of a run without namespaces): the other end of the record
// socket, the read end of the sync pipe, the run's cgroup and the stdio.
type launchFiles struct {
	child, syncR, syncW *os.File
	cgroupFD            int // -1: none
	files               initFiles
}

func (c *Cmd) openLaunch(stdio *childStdio) (*launchFiles, error) {
	child, err := c.openSocket()
	if err != nil {
		return nil, err
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		child.Close()
		return nil, err
	}
	l := &launchFiles{child: child, syncR: syncR, syncW: syncW, cgroupFD: -1}
	if c.group != nil {
		l.cgroupFD = c.group.DirFD()
	}
	l.files = initFiles{
		stdin: int(stdio.stdin.Fd()), stdout: int(stdio.out[0].Fd()), stderr: int(stdio.out[1].Fd()),
		sock: int(child.Fd()), sync: int(syncR.Fd()),
	}
	return l, nil
}

// close closes the supervisor's copies once the launch is over (closing
// twice, after an early close of syncR, is harmless).
func (l *launchFiles) close() {
	l.child.Close()
	l.syncR.Close()
	l.syncW.Close()
}

// stage2Config is the plan's stage 2 with what only the running
// supervisor knows: whether to wait for its ack, a warm jail, and its own
// huge page setting (startInit turns it off only around the fork).
func (c *Cmd) stage2Config() stage2Config {
	st2 := c.plan.stage2
	st2.WaitAck = c.watcher != nil
	st2.Warm = c.warm != nil || c.sessionInit()
	st2.Session = c.sessionInit()
	st2.NoHugePages = thpDisabled()
	st2.Ignore, _ = signalMask(c.IgnoredSignals) // checked by Start
	if c.TTY != nil {
		st2.TTY = true
		st2.Rows, st2.Cols = ttySize(*c.TTY)
	}
	return st2
}

// openSocket makes the socket pair the init and stage 2 send their
// records on; the supervisor keeps one end (c.sock, closed by cleanup),
// the init gets the other.
func (c *Cmd) openSocket() (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	c.sock = fds[0]
	// The kernel stamps each message with the sender's pid in our PID
	// namespace: how the Landlock watcher learns stage 2's host pid.
	if err := unix.SetsockoptInt(c.sock, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("socket credentials: %w", err)
	}
	return os.NewFile(uintptr(fds[1]), "jail-socket"), nil
}

// handOver gives the forked init its identity and the host side: the id
// maps, the host paths' descriptors (opened in the init's mount namespace
// when unprivileged, where it may clone them), and the plan's late part.
func (c *Cmd) handOver(hs *hostSide, ip *initPlan) error {
	if err := writeIDMaps(c.proc.PID, hs.id, hs.root); err != nil {
		return err
	}
	if !hs.root {
		if err := hs.resolveIn(c, fmt.Sprintf("/proc/%d/root", c.proc.PID)); err != nil {
			return err
		}
	}
	if err := hs.finish(c); err != nil {
		return err
	}
	if err := hs.chg.OpenLayers(fmt.Sprintf("/proc/%d/root", c.proc.PID)); err != nil {
		return err
	}
	defer hs.chg.CloseLayers()
	c.res.Enforcement.HostUID, c.res.Enforcement.HostGID = &hs.id.UID, &hs.id.GID
	c.res.Enforcement.Idmapped = hs.idmapped
	c.res.Enforcement.Protected = hs.protectedDests
	if hs.tree != nil {
		c.res.Enforcement.Root = hs.tree.Path
	}
	c.res.Enforcement.Caches = cacheBinds(c.plan.mounts)
	if c.warm != nil {
		c.warm.workdir = fit.WorkdirID(c.plan.mounts, hs.sources, c.Spec.Dir)
		c.warm.protected = fit.ProtectedIDs(c.res.Enforcement.Protected, hs.protected)
	}
	fdList, err := ip.fillLate(hs.sources, hs.template, hs.over, hs.prog, hs.chg)
	if err != nil {
		return err
	}
	return initlink.SendFDs(c.sock, fdList)
}

// supervise starts watching the running jail: its records, the wall
// clock, and the caller's context.
func (c *Cmd) supervise() {
	c.msgDone = make(chan struct{})
	c.exitSeen = make(chan struct{})
	c.execDone = make(chan struct{})
	go c.readMessages()
	if c.warm == nil && !c.sessionInit() {
		c.superviseCommand()
	}
}

// superviseCommand starts the command's clocks: the wall-clock limit and
// the caller's context. A warm jail's start with its call.
func (c *Cmd) superviseCommand() {
	s := c.Spec
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
}

// writeIDMaps maps uid and gid 0 of the init's user namespace to the
// jail's host identity: the supervisor's own, or for a root supervisor an
// unprivileged one (Spec.HostUser). Unprivileged user namespaces must deny
// setgroups; real root keeps it, for the init to drop its supplementary
// groups.
func writeIDMaps(pid int, id HostID, root bool) error {
	files := [][2]string{{"uid_map", fmt.Sprintf("0 %d 1\n", id.UID)}}
	if !root {
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
	if !capped && hostprobe.Probe().Cgroup.Mode == cgroup.ModeNone {
		return nil
	}
	// Groups of dead supervisors are no business of this run: clean them
	// up alongside it (cleanup waits for it before the run ends), at most
	// once per staleEvery in a long-lived process.
	c.staleDone = make(chan struct{})
	if stale.begin(time.Now()) {
		go func() {
			defer close(c.staleDone)
			cgroup.CleanupStale()
			stale.end(time.Now())
		}()
	} else {
		close(c.staleDone)
	}
	// A run with namespaces is one PID namespace: its init takes the rest
	// along when it dies, so v1 needs no freezer for the kill.
	r.OwnPIDNamespace = c.plan.nons == nil
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
		proc *initlink.Proc
		err  error
	}
	startCh := make(chan started, 1)
	c.waitCh = make(chan initlink.End, 1)
	intoGroup := ip.cp.IntoCgroup()
	joined := false
	go func() {
		runtime.LockOSThread()
		leave, err := c.joinGroupThread(intoGroup)
		if err != nil {
			// Stuck in the group: this thread forks nothing
			// and ends with this goroutine (it stays locked).
			startCh <- started{err: err}
			return
		}
		var proc *initlink.Proc
		proc, intoGroup, err = forkInitFallback(ip, intoGroup)
		if leave != nil {
			if lerr := leave(); lerr != nil {
				// This thread is stuck in the run's group: end the init,
				// and the thread with this goroutine (it stays locked).
				if err == nil {
					proc.Kill()
					proc.Wait()
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
		c.waitCh <- proc.Wait()
	}()
	st := <-startCh
	if st.err != nil {
		return fmt.Errorf("start the jail's init: %w (are unprivileged user namespaces allowed? see `tooljail check`)", st.err)
	}
	c.proc = st.proc
	if c.group != nil && !intoGroup && !joined {
		if err := c.group.AddProc(c.proc.PID); err != nil {
			return fmt.Errorf("move the jail into its cgroup: %w", err)
		}
	}
	return nil
}

// joinGroupThread is for a group the init is not cloned into. v1: this
// thread joins the group and forks the init there (see
// cgroup.Group.JoinThread); when it cannot, AddProc in startInit. leave
// takes the thread out again (nil: it did not join); an error says the
// thread is stuck in the group.
func (c *Cmd) joinGroupThread(intoGroup bool) (leave func() error, err error) {
	if c.group == nil || intoGroup {
		return nil, nil
	}
	if leave, err = c.group.JoinThread(); err != nil {
		if leave != nil {
			return nil, err
		}
		// Not joined: AddProc in startInit.
		return nil, nil
	}
	return leave, nil
}

// forkInitFallback forks the init with transparent huge pages off, and
// again outside the cgroup if cloning into it failed; it returns whether
// the init was still cloned into the group.
func forkInitFallback(ip *initPlan, intoGroup bool) (*initlink.Proc, bool, error) {
	restoreTHP := noHugePagesForChildren()
	proc, err := ip.forkInit()
	if err != nil && intoGroup {
		// Clone into the cgroup can be refused (clone3 blocked by an
		// outer seccomp profile, a v1 host): AddProc in startInit.
		intoGroup = false
		ip.cp.NoCgroup()
		proc, err = ip.forkInit()
	}
	restoreTHP()
	return proc, intoGroup, err
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
