package jail

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/fit"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/internal/initlink"
)

// A warm jail is built ahead of its command, for a caller that runs many
// commands in jails of one shape (tooljail serve): Prepare does all that
// Start does before the command's execve (cgroup, namespaces, mounts,
// stage 2 with its capabilities dropped, rlimits, Landlock and seccomp
// applied), and stage 2 parks (stage2.c, tj_wait_for_call). The command's
// arguments, environment and stdio come with Command and Start: one
// message, after which stage 2 only execs. A warm jail runs one command,
// never a second; Close ends an unused one.

// Warm is a jail built ahead of its command.
type Warm struct {
	c    *Cmd
	born time.Time

	mu     sync.Mutex
	taken  bool
	closed bool
}

// warmState is a warm Cmd's part of the state.
type warmState struct {
	parked   chan struct{} // closed at the init's parked record
	isParked bool          // under Cmd.mu
	taken    bool          // Command gave the Cmd its call
	workdir  *fit.FileID   // the workdir bind's source as opened, or nil
	// protected is what the jail binds read-only (Spec.Protect), as
	// "DEST dev:ino" lines: a call whose binds hold other ones (a hook
	// added, a repository cloned since) runs cold.
	protected []string
}

// ErrWarmUnfit is Command's error for a Spec that the warm jail was not
// built for, or a jail that can no longer run one (its init is gone, or
// the workdir was replaced since): run the command cold.
var ErrWarmUnfit = errors.New("jail: the warm jail does not fit this command")

// maxCallBytes and maxCallStrings bound a call: one message on the jail's
// socket, read into stage 2's fixed buffers. A larger call runs cold.
const (
	maxCallBytes   = initc.MaxCallBytes
	maxCallStrings = initc.MaxCallStrings
)

// Prepare builds spec's jail and returns once it is parked, waiting for
// Command. spec's Args and Env are not used: Command's Spec brings them.
// An error is the setup error a cold run of spec would have had.
func Prepare(spec *Spec) (*Warm, error) {
	s := *spec
	if len(s.Args) == 0 {
		s.Args = []string{"(warm)"}
	}
	c := Command(&s)
	c.warm = &warmState{parked: make(chan struct{})}
	if err := c.Start(); err != nil {
		return nil, err
	}
	w := &Warm{c: c, born: time.Now()}
	select {
	case <-c.warm.parked:
		return w, nil
	case <-c.msgDone:
	}
	w.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.setupErr != nil {
		return nil, c.setupErr
	}
	return nil, errors.New("jail: the warm jail's init ended before it was ready")
}

// Age is how long ago the jail was built.
func (w *Warm) Age() time.Duration { return time.Since(w.born) }

// Command takes the warm jail for spec, which must be the Spec it was
// prepared with but for Args and Env, and returns the Cmd that runs it:
// set its Stdin, Stdout, Stderr, MergeStderr and CaptureOutput, then Start and Wait
// (or Run) as with a Cmd of Command. ErrWarmUnfit (wrapped) means the caller should run spec cold; the warm
// jail is then closed.
func (w *Warm) Command(spec *Spec) (*Cmd, error) {
	w.mu.Lock()
	if w.taken || w.closed {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: already taken or closed", ErrWarmUnfit)
	}
	w.taken = true
	w.mu.Unlock()
	c := w.c
	if err := spec.Validate(); err != nil {
		w.end()
		return nil, err
	}
	size, n := callSize(spec)
	why := fit.Warm(c.Spec, spec, c.warm.workdir, size, n)
	if why == "" {
		why = protectChanged(spec, c.plan.mounts, c.warm.protected)
	}
	if why == "" {
		select {
		case <-c.msgDone:
			why = "its init is gone"
		default:
		}
	}
	if why != "" {
		w.end()
		return nil, fmt.Errorf("%w: %s", ErrWarmUnfit, why)
	}
	call := *c.Spec
	call.Args, call.Env, call.EnvDropped = spec.Args, spec.Env, spec.EnvDropped
	c.Spec = &call
	c.res.EnvDropped = spec.EnvDropped // Start set the warmed Spec's
	c.warm.taken = true
	return c, nil
}

// Close ends a warm jail that no command took; nothing ran in it.
func (w *Warm) Close() {
	w.mu.Lock()
	if w.taken || w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.end()
}

// end kills the unused jail's init and removes what it had.
func (w *Warm) end() {
	c := w.c
	c.proc.Kill()
	<-c.waitCh
	<-c.msgDone
	c.cleanup()
}

// callSize is the size of spec's call message, and its number of strings.
func callSize(s *Spec) (bytes, strings int) {
	bytes = initc.CallHeaderSize
	for _, l := range [][]string{s.Args, s.Env, execCandidates(s.Args[0], s.Env, s.Dir)} {
		strings += len(l)
		for _, a := range l {
			bytes += len(a) + 1
		}
	}
	return bytes, strings
}

// forgeCall, set only by this package's tests (ForgeWarmCalls in
// export_test.go), rewrites a call's message and descriptors before they
// are sent: what a stage 2 receives is its only input once confined.
var forgeCall func(msg []byte, fds []int) ([]byte, []int)

// callMsg is what a call's message (stage2.c's tj_call_parse) carries.
type callMsg struct {
	args, env, paths []string
	dir              string // "": the plan's
	tty              *TTY   // nil: no terminal
	keep             bool   // a session's call that keeps what it leaves running
}

// encodeCall is the call message stage 2 reads (initc.EncodeCall).
func encodeCall(m callMsg) []byte {
	c := initc.Call{Args: m.args, Env: m.env, Paths: m.paths, Dir: m.dir, Keep: m.keep}
	if m.tty != nil {
		c.TTY = true
		c.Rows, c.Cols = ttySize(*m.tty)
	}
	return initc.EncodeCall(c)
}

// placeholderStdio is a warm init's stdio until its call: /dev/null.
func placeholderStdio() (*childStdio, error) {
	s := &childStdio{}
	var err error
	if s.stdin, err = os.Open(os.DevNull); err != nil {
		return nil, err
	}
	for i := range s.out {
		if s.out[i], err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// startCall gives the parked init its command: the stdio the Cmd's
// fields ask for, the strings, and the clocks start.
func (c *Cmd) startCall() error {
	if c.warm.taken && c.relays[0] != nil {
		return errors.New("jail: Cmd already started")
	}
	c.mu.Lock()
	c.started = time.Now()
	c.res.StartedAt = c.started.UTC()
	c.res.Command = c.Spec.Args
	c.mu.Unlock()
	err := c.giveCall(&c.mu, callMsg{tty: c.TTY}, "the warm jail")
	if err != nil {
		c.proc.Kill()
		<-c.waitCh
		<-c.msgDone
		c.proc = nil
		c.cleanup()
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	c.superviseCommand()
	return nil
}

// giveCall sends the jail that runs the call (a warm jail's parked stage
// 2, a session's init) its message, m with the Cmd's strings and the
// paths found for them, and the stdio the Cmd's fields ask for. mu is the
// lock under which the messages' reader names the command in a failure.
func (c *Cmd) giveCall(mu *sync.Mutex, m callMsg, to string) error {
	m.args, m.env = c.Spec.Args, c.Spec.Env
	m.paths = execCandidates(c.Spec.Args[0], c.Spec.Env, c.Spec.Dir)
	mu.Lock()
	cfg := c.plan.stage2
	cfg.Args, cfg.Env = m.args, m.env
	if m.dir != "" {
		cfg.Dir = m.dir
	}
	c.initPlan.stage2.cfg = &cfg
	c.initPlan.stage2.paths = m.paths
	mu.Unlock()
	stdio, err := c.childStdio()
	if err != nil {
		return err
	}
	defer stdio.close()
	msg := encodeCall(m)
	if len(msg) > maxCallBytes {
		return fmt.Errorf("the call's arguments and environment are %d bytes, more than %s takes (%d)", len(msg), to, maxCallBytes)
	}
	fds := []int{int(stdio.stdin.Fd()), int(stdio.out[0].Fd()), int(stdio.out[1].Fd())}
	if forgeCall != nil {
		msg, fds = forgeCall(msg, fds)
	}
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	if err := initlink.SendPacket(c.sock, msg, rights); err != nil {
		return fmt.Errorf("give %s its command: %w", to, err)
	}
	return nil
}

// protectChanged says why what want's writable binds hold to protect is no
// longer what the warm jail binds read-only (have), or "". It opens the
// binds' sources again: the names are looked up as for a cold run.
func protectChanged(want *Spec, mounts []Mount, have []string) string {
	if len(want.Protect) == 0 {
		return ""
	}
	writable := make([]hostside.Mount, len(mounts))
	for i, m := range hostMounts(mounts) {
		if m.Kind == hostside.Bind && m.Writable {
			writable[i] = m
		}
	}
	root, err := openRoot("/")
	if err != nil {
		return "the host's root cannot be opened"
	}
	defer root.Close()
	srcs, err := hostside.Resolve(root, nil, writable, want.Dir)
	if err != nil {
		return "a read-write bind cannot be opened again: " + err.Error()
	}
	defer hostside.CloseSources(srcs)
	objs, dests, err := hostside.ProtectIn(want.Protect, writable, srcs)
	if err != nil {
		return err.Error()
	}
	now := fit.ProtectedIDs(dests, objs)
	for _, o := range objs {
		o.Close()
	}
	if !slices.Equal(now, have) {
		return "the protected paths of its read-write binds changed since it was built"
	}
	return ""
}
