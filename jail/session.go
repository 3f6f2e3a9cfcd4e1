package jail

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail/internal/fit"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/internal/verdict"
	"github.com/tooljail/tooljail/seccomp"
)

// A Session is one jail kept across calls, as an agent's shell keeps one
// environment for a task: its namespaces, mounts, /tmp, HOME, Landlock
// domain, seccomp filter and cgroup are built once (StartSession), and
// each call (Session.Command) is a new process in it, with its own
// arguments, environment, working directory, stdio, terminal, timeout,
// output limit and report. The session's init (init_session.c) starts
// each call as a new stage 2, confined as a run's command is.
//
// What one call leaves running is killed when it ends (it runs in a PID
// namespace of its own, whose PID 1 reaps it and kills the rest), unless
// the call keeps it (Cmd.KeepRunning): then it stays in the session until
// the session stops. The session's limits (memory, pids, CPU) are its
// totals; the kernel cannot tell one call's share of a cgroup from
// another's, so a call's report gives its own CPU time and the session's
// peaks (Result.Session).
//
// The trade-off is the session's, and plain: a call can change what the
// next call sees (files in /tmp and HOME, processes it kept, its binds'
// contents), as commands typed in one shell can. Nothing reaches another
// session, the server or the host beyond what one run may.
type Session struct {
	id     string
	spec   Spec
	init   *Cmd
	ready  chan struct{} // closed at the init's TJ_REC_SESSION
	ended  chan struct{} // closed when the init is gone
	end    initlink.End
	start  time.Time
	limits SessionLimits

	mu       sync.Mutex
	cur      *Cmd // the running call
	calls    int
	last     time.Time // the last call's end (or the start)
	stopped  bool
	stopOnce sync.Once
	// The memory cap as the kernel stored it, read once (memoryLimit).
	limitOnce sync.Once
	memLimit  *int64
	kept      []*seccomp.Monitor // of calls that kept their processes
	result    *SessionResult
	idle      *time.Timer
	maxLife   *time.Timer
}

// SessionLimits bound a session's life; zero is no bound.
type SessionLimits struct {
	// Idle stops the session when no call has run for this long.
	Idle time.Duration
	// MaxLife stops it this long after its start, a running call with it.
	MaxLife time.Duration
}

// newSessionID is an unguessable id: 128 random bits, in hex.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidSessionID reports whether id has the form of a session id, so
// that a caller can refuse anything else before looking it up.
func ValidSessionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// StartSession builds spec's jail and keeps it for calls. spec's Args are
// not run (each call brings its own); a change set (Spec.Changes) and the
// mode without namespaces are refused. The error is the setup error a run
// of spec would have had.
func StartSession(spec *Spec, limits SessionLimits) (*Session, error) {
	if spec.Changes != "" && spec.Changes != changes.Off {
		return nil, &SetupError{Code: ExitSetup, Err: errors.New("a session cannot record changes (--changes): each call of a session sees the last one's files; run the calls that need a change set without a session")}
	}
	s := &Session{id: newSessionID(), spec: *spec, ready: make(chan struct{}), ended: make(chan struct{}), limits: limits}
	init := s.spec
	if len(init.Args) == 0 {
		init.Args = []string{"(session)"}
	}
	c := Command(&init)
	c.sess = s
	s.init = c
	if err := c.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.end = <-c.waitCh
		close(s.ended)
	}()
	select {
	case <-s.ready:
	case <-s.ended:
		<-c.msgDone
		c.cleanup()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.setupErr != nil {
			return nil, c.setupErr
		}
		return nil, &SetupError{Code: ExitSetup, Err: fmt.Errorf("the session's init ended before it was ready (%s)", s.end.Desc)}
	}
	s.start = time.Now()
	s.last = s.start
	if limits.MaxLife > 0 {
		s.maxLife = time.AfterFunc(limits.MaxLife, func() { s.stop(StopMaxLife) })
	}
	s.armIdle()
	go func() {
		<-s.ended
		s.stop(StopEnded)
	}()
	return s, nil
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Spec is the Spec the session was started with.
func (s *Session) Spec() *Spec { sp := s.spec; return &sp }

// Done is closed when the session has stopped.
func (s *Session) Done() <-chan struct{} { return s.ended }

// Stopping reports whether the session's stop has begun (Stop, its idle
// or max-life limit, its init's end), finished or not: from then on it
// takes no call.
func (s *Session) Stopping() bool {
	select {
	case <-s.ended:
		return true
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// armIdle (re)starts the idle timer, under s.mu or before others see s.
func (s *Session) armIdle() {
	if s.limits.Idle <= 0 {
		return
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(s.limits.Idle, func() {
		s.mu.Lock()
		busy := s.cur != nil || time.Since(s.last) < s.limits.Idle
		s.mu.Unlock()
		if busy {
			// A call started or ended since: the timer is re-armed then.
			return
		}
		s.stop(StopIdle)
	})
}

// Command returns the Cmd of a call in the session: call must be the
// session's Spec (Session.Spec) but for Args, Env, EnvDropped, Dir (a
// directory inside the jail; chdir there decides), Limits.Timeout and
// Limits.OutputLimit. Set its stdio, TTY and KeepRunning, then Start and
// Wait (or Run) as with any Cmd. One call runs at a time.
func (s *Session) Command(call *Spec) (*Cmd, error) {
	if call == nil || len(call.Args) == 0 {
		return nil, errors.New("jail: a session's call needs a command")
	}
	if why := fit.SessionCall(&s.spec, call); why != "" {
		return nil, fmt.Errorf("jail: not a call of this session: %s", why)
	}
	sp := *call
	return &Cmd{Spec: &sp, ctx: s.init.ctx, sock: -1, sess: s}, nil
}

// sessionInit reports whether c is a session's init (not one of its calls).
func (c *Cmd) sessionInit() bool { return c.sess != nil && c.sess.init == c }

// sessionCall reports whether c is a call of a session.
func (c *Cmd) sessionCall() bool { return c.sess != nil && c.sess.init != c }

// current is the running call, or nil.
func (s *Session) current() *Cmd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// startSessionCall sends the call to the session's init: the clocks start
// now, as a warm call's.
func (c *Cmd) startSessionCall() error {
	s := c.sess
	if c.res != nil {
		return errors.New("jail: Cmd already started")
	}
	c.started = time.Now()
	c.res = &Result{Schema: Schema, Version: Version, ID: newID(), StartedAt: c.started.UTC(), Violations: []Violation{},
		Command: c.Spec.Args, Workdir: c.Spec.Dir, Profile: c.Spec.Profile, EnvDropped: c.Spec.EnvDropped}
	c.res.Limits = c.Spec.Limits.Report()
	init := s.init
	c.plan, c.initPlan, c.sock = init.plan, init.initPlan, init.sock
	c.res.Enforcement = init.res.Enforcement
	// The call's own: its context's watcher ends with it (callEnded).
	c.msgDone = make(chan struct{})
	c.exitSeen = make(chan struct{})
	c.execDone = make(chan struct{})
	s.mu.Lock()
	switch {
	case s.stopped:
		s.mu.Unlock()
		return c.fail(&SetupError{Code: ExitSetup, Err: fmt.Errorf("session %s has stopped; start a new one", s.id)})
	case s.cur != nil:
		s.mu.Unlock()
		return c.fail(&SetupError{Code: ExitSetup, Err: fmt.Errorf("session %s is running a call; one call runs at a time", s.id)})
	}
	s.cur = c
	s.calls++
	c.res.Session = &SessionCall{ID: s.id, Call: s.calls, KeepRunning: c.KeepRunning}
	s.mu.Unlock()
	if init.group != nil {
		c.groupStart = init.group.Figures(cgroup.Counters)
	}
	err := c.giveCall(&init.mu, callMsg{dir: c.Spec.Dir, tty: c.TTY, keep: c.KeepRunning}, "the session")
	if err != nil {
		if c.relays[0] != nil {
			c.relays[0].Attach(nil)
		}
		s.callEnded(c)
		return c.fail(&SetupError{Code: ExitSetup, Err: err})
	}
	c.proc = init.proc // Signal goes to the init, which passes it on
	c.superviseCommand()
	return nil
}

// callEnded frees the session for the next call.
func (s *Session) callEnded(c *Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == c {
		close(c.msgDone)
		s.cur = nil
		s.last = time.Now()
		if !s.stopped {
			s.armIdle()
		}
	}
}

// keep takes the monitor of a call that kept its processes: they may
// still make denied calls, which it answers until the session stops.
func (s *Session) keep(m *seccomp.Monitor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		m.Stop()
		return
	}
	s.kept = append(s.kept, m)
}

// killCall kills the running call c, and only it: the init kills its
// PID namespace (or its process group when it keeps its processes).
// Before stage 2's ready record the message would reach stage 2 as its
// ack, so it waits for that record (c.killPending).
func (c *Cmd) killCall() {
	s := c.sess
	// Under s.mu: the next call cannot start meanwhile, and the init
	// takes the kill before that call's message (one socket, in order),
	// so only this call can be hit.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != c {
		return
	}
	c.mu.Lock()
	send := c.ready
	if !send {
		c.killPending = true
	}
	c.mu.Unlock()
	if send {
		c.sendKill()
	}
}

func (c *Cmd) sendKill() {
	msg := binary.NativeEndian.AppendUint32(nil, initc.KillMagic)
	initlink.SendPacket(c.sock, msg, nil)
}

// memoryLimit is the session's memory cap as the kernel stored it: it
// does not change, so the first call reads it.
func (s *Session) memoryLimit() *int64 {
	s.limitOnce.Do(func() { s.memLimit = s.init.group.Figures(cgroup.Limit).MemoryLimit })
	return s.memLimit
}

// sessionCallStats is a call's share of the session's cgroup figures,
// from start (the call's start) to end: the counters' growth; the peaks
// are the session's (the kernel keeps one per cgroup); the CPU time is
// left to the call's own usage (its exit record).
func sessionCallStats(start, end cgroup.Stats) cgroup.Stats {
	delta := func(a, b *int64) *int64 {
		if b == nil {
			return nil
		}
		d := *b
		if a != nil {
			d -= *a
		}
		return &d
	}
	return cgroup.Stats{
		MemoryPeak:     end.MemoryPeak,
		MemoryLimit:    end.MemoryLimit,
		OOMKills:       delta(start.OOMKills, end.OOMKills),
		PidsPeak:       end.PidsPeak,
		PidsLimitHits:  delta(start.PidsLimitHits, end.PidsLimitHits),
		CPUThrottledUs: delta(start.CPUThrottledUs, end.CPUThrottledUs),
	}
}

// Stop ends the session: the running call, if any, and every process the
// calls kept are killed, the jail is taken down and its cgroup removed.
// It returns the session's final report; later calls return the same.
func (s *Session) Stop() *SessionResult {
	s.stop(StopAsked)
	return s.result
}

func (s *Session) stop(why string) {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		cur := s.cur
		kept := s.kept
		s.kept = nil
		for _, t := range []*time.Timer{s.idle, s.maxLife} {
			if t != nil {
				t.Stop()
			}
		}
		s.mu.Unlock()
		c := s.init
		if cur != nil {
			cur.kill(StatusSignaled, fmt.Sprintf("killed: the session stopped (%s)", why))
		}
		// The init's end of the socket: it kills everything and exits.
		c.mu.Lock()
		if c.sock >= 0 {
			unix.Shutdown(c.sock, unix.SHUT_WR)
		}
		c.mu.Unlock()
		select {
		case <-s.ended:
		case <-time.After(10 * time.Second):
			// It should have; the kernel does it for sure.
			c.proc.Kill()
			<-s.ended
		}
		<-c.msgDone
		r := &SessionResult{ID: s.id, StartedAt: s.start.UTC(), WallTimeMs: ms(time.Since(s.start)), StoppedFor: why,
			KilledRunning: cur != nil, Violations: []Violation{}}
		s.mu.Lock()
		r.Calls = s.calls
		s.mu.Unlock()
		for _, m := range kept {
			r.Violations = append(r.Violations, verdict.Violations(m.Stop(), nil)...)
		}
		if c.group != nil {
			st := c.group.Stats()
			r.MemoryPeakBytes, r.OOMKills, r.PidsPeak, r.PidsLimitHits = st.MemoryPeak, st.OOMKills, st.PidsPeak, st.PidsLimitHits
			if st.CPUUserUsec != nil {
				r.CPUUserMs = int64p(*st.CPUUserUsec / 1000)
			}
			if st.CPUSystemUsec != nil {
				r.CPUSystemMs = int64p(*st.CPUSystemUsec / 1000)
			}
		}
		if c.net != nil {
			c.net.Stop()
			c.net = nil
		}
		c.cleanup()
		s.result = r
	})
}
