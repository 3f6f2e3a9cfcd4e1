// Package serve is tooljail's server: a long-lived supervisor that runs
// jails for clients on a unix socket (`tooljail serve`), and the Go client
// of its protocol. One connection carries one call: the client writes a
// request line, the server answers with optional stream lines and then
// the run's report (exactly what `tooljail run --json` prints) or an
// error line; docs/serve.md has the protocol.
//
// Each call builds its jail from the named profile as `tooljail run`
// does; there is no pool of jails built ahead of time yet. Admission
// (admit.go) bounds the runs at once and the connections still waiting
// for their request line, and refuses rather than queues.
package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/serve/internal/sockfile"
	"github.com/tooljail/tooljail/serve/internal/warmpool"
)

// Timeouts of a connection: a client gets this long from its connection
// to send its whole request line (Server.RequestTimeout), and each write
// to it may take this long (Server.WriteTimeout), so that one slow or
// stuck client holds up only its own call.
const (
	RequestTimeout = 10 * time.Second
	WriteTimeout   = 30 * time.Second
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("serve: server closed")

// Reasons of a cancelled run.
const (
	reasonClientGone = "client went away"
	reasonShutdown   = "the server shut down before the run ended"
)

// Server serves jailed runs on a listener. Set the fields, then Serve; a
// Server is not copied after first use.
type Server struct {
	// Profiles are the profiles served, shipped names or files, loaded
	// when Serve starts; a request names one by the same string. The first
	// is the default; none means "default".
	Profiles []string
	// AuditLog is a file that gets one JSON line per run (report.AppendAudit,
	// with the client's uid, gid and pid, and its request id), and one per
	// refused request (status "refused"); "" for none. It is opened for
	// appending when Serve starts.
	AuditLog string
	// MaxRuns is how many runs may go at once, across all clients; a
	// call beyond that waits for a slot (QueueTimeout), fairly between
	// clients (queue.go). It also bounds the connections that have not
	// sent their request line yet (PendingPerRun × MaxRuns, shared
	// fairly between clients: admit.go). 0 means DefaultMaxRuns; at most
	// MaxRunsCeiling.
	MaxRuns int
	// QueueTimeout is how long a call that finds all MaxRuns slots busy
	// waits for one before it is refused: 0 means DefaultQueueTimeout, a
	// negative value refuses it at once. At most MaxQueueTimeout.
	QueueTimeout time.Duration
	// RequestTimeout is how long a client has, from its connection, to
	// send its whole request line; 0 means RequestTimeout.
	RequestTimeout time.Duration
	// WriteTimeout bounds each write to a client; 0 means WriteTimeout. A
	// client that does not read its stream for this long gets its run
	// cancelled.
	WriteTimeout time.Duration
	// ErrorLog gets what the server cannot tell a client (a failed audit
	// write); nil discards it.
	ErrorLog *log.Logger
	// AllowClientProfiles lets a request send a profile of its own
	// (profile_toml, clientprofile.go); without it that is refused.
	AllowClientProfiles bool
	// Warm is how many jails the server keeps built ahead of their calls
	// for each shape of call it sees (a served profile and a workdir;
	// package serve/internal/warmpool); 0 builds every jail when its call arrives. The CLI's
	// default is DefaultWarm. At most MaxWarm.
	Warm int
	// Tools are tool files whose tools requests may call ("tool",
	// tools.go), joined by tools.Merge; none for none.
	Tools []string
	// ChangesDir is the store of the clients' change sets (a request's
	// changes, changes.go): a server run by root keeps each client's in
	// ChangesDir/uid-UID ("" for root's default store); a server of one
	// user keeps them in ChangesDir ("" for that user's default store).
	ChangesDir string

	loadOnce sync.Once
	pool     *warmpool.Pool // nil without warm jails
	loadErr  error
	profiles map[string]*profiles.Profile
	first    string
	audit    *os.File
	auditMu  sync.Mutex
	tools    *servedTools // nil without Tools

	mu        sync.Mutex
	hidden    hiddenSet // what no jail may see: the sockets, the audit log
	listeners map[net.Listener]struct{}
	runs      map[*jail.Cmd]struct{}
	running   int                 // runs admitted and not yet ended (MaxRuns)
	pending   pendingSet          // connections still reading their request line
	queue     runQueue            // the run slots, and the calls waiting for one
	drain     chan struct{}       // closed by Shutdown: queued calls are refused
	budget    *semaphore.Weighted // RequestBudget (budget.go)
	closing   bool
	forced    bool           // Shutdown's grace period ended: runs are cancelled
	calls     sync.WaitGroup // runs in progress
	sessions  map[string]*session
}

// Load loads the profiles and opens the audit log; Serve does it when it
// has not been done. A caller loads first to fail before it touches the
// socket.
func (s *Server) Load() error {
	s.loadOnce.Do(func() {
		if s.MaxRuns != 0 {
			if err := CheckMaxRuns(s.MaxRuns); err != nil {
				s.loadErr = fmt.Errorf("max runs %d: %v (--max-runs)", s.MaxRuns, err)
				return
			}
		}
		if err := CheckQueueTimeout(s.QueueTimeout); s.QueueTimeout > 0 && err != nil {
			s.loadErr = fmt.Errorf("queue timeout %v: %v (--queue-timeout)", s.QueueTimeout, err)
			return
		}
		s.mu.Lock()
		s.queue.max = s.maxRuns()
		if s.drain == nil {
			s.drain = make(chan struct{})
		}
		s.mu.Unlock()
		s.budget = semaphore.NewWeighted(RequestBudget)
		if err := CheckWarm(s.Warm); err != nil {
			s.loadErr = fmt.Errorf("warm %d: %v (--warm)", s.Warm, err)
			return
		}
		names := s.Profiles
		if len(names) == 0 {
			names = []string{"default"}
		}
		s.profiles = map[string]*profiles.Profile{}
		for _, n := range names {
			if _, dup := s.profiles[n]; dup {
				continue
			}
			p, err := profiles.Load(n)
			if err != nil {
				s.loadErr = err
				return
			}
			s.profiles[n] = p
		}
		s.first = names[0]
		if s.AuditLog != "" {
			f, err := os.OpenFile(s.AuditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if err != nil {
				s.loadErr = fmt.Errorf("audit log: %w", err)
				return
			}
			s.audit = f
		}
		if s.loadErr = s.loadTools(); s.loadErr != nil {
			return
		}
		if s.Warm > 0 {
			s.pool = warmpool.New(s.Warm)
		}
	})
	return s.loadErr
}

// Serve accepts connections on l and serves each in its own goroutine. It
// returns ErrServerClosed after Shutdown, or the error that ended it (a
// profile that does not load, a failed Accept); l is closed either way:
// after Shutdown, by Shutdown, which keeps the lock of a listener from
// Listen until the drain is over.
func (s *Server) Serve(l net.Listener) error {
	if err := s.Load(); err != nil {
		l.Close()
		return err
	}
	if err := s.addListener(l); err != nil {
		l.Close()
		return err
	}
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		// Once closing, Shutdown has taken l (under this lock) and closes
		// it after the drain.
		shutdown := s.closing
		s.mu.Unlock()
		if !shutdown {
			l.Close()
		}
	}()
	// The cgroups a killed server left behind go now, not at the first
	// call: a host that restarts its server finds it clean.
	cgroup.CleanupStale()
	var backoff time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if s.shuttingDown() {
				return ErrServerClosed
			}
			if !acceptPassing(err) {
				return err
			}
			// Out of descriptors for a moment: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		pc, e := s.pend(conn)
		if e != nil {
			go s.refuseConn(conn, e)
			continue
		}
		go s.serveConn(pc)
	}
}

// addListener takes l among the server's listeners, with its path
// hidden from jails, unless the server is closing (ErrServerClosed).
func (s *Server) addListener(l net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrServerClosed
	}
	if s.hidden == nil {
		s.hidden = hiddenSet{}
	}
	if err := s.hideLocked(l); err != nil {
		return err
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
	}
	s.listeners[l] = struct{}{}
	return nil
}

// acceptPassing says whether an Accept error passes (a timeout, or out
// of descriptors for a moment): Serve waits and accepts again.
func acceptPassing(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}

// LongestTimeout is the longest wall-clock limit of the served profiles,
// the grace period that lets every run end on its own at Shutdown; 0 when
// one of them has none. Call it after Load.
func (s *Server) LongestTimeout() time.Duration {
	var longest time.Duration
	for _, p := range s.profiles {
		d, err := units.ParseDuration(p.Limits["timeout"])
		if err != nil || d == 0 {
			return 0
		}
		longest = max(longest, d)
	}
	if t := s.tools; t != nil {
		if t.longest == 0 {
			return 0
		}
		longest = max(longest, t.longest)
	}
	return longest
}

// hideLocked records l's socket, its lock file and the audit log in
// s.hidden.
func (s *Server) hideLocked(l net.Listener) error {
	if a, ok := l.Addr().(*net.UnixAddr); ok && a.Name != "" && a.Name[0] != '@' {
		if err := s.hidden.add(a.Name, "socket"); err != nil {
			return err
		}
	}
	if ll, ok := l.(*sockfile.Listener); ok {
		if err := s.hidden.add(ll.LockPath(), "lock file"); err != nil {
			return err
		}
	}
	if s.AuditLog != "" {
		if err := s.hidden.add(s.AuditLog, "audit log"); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops the server: it closes the listeners, refuses the requests
// that come after, and waits for the runs in progress to end. When ctx
// ends first, the runs left are cancelled (status cancelled) and Shutdown
// returns ctx's error once they have ended. The audit log is closed. A
// listener from Listen stops accepting at once (its socket file goes) but
// keeps its lock until the drain is over, so that no second server starts
// on the socket while this one still runs.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing && s.drain != nil {
		close(s.drain)
	}
	s.closing = true
	var locked []*sockfile.Listener
	for l := range s.listeners {
		if ll, ok := l.(*sockfile.Listener); ok {
			ll.StopAccepting()
			locked = append(locked, ll)
		} else {
			l.Close()
		}
	}
	s.mu.Unlock()
	defer func() {
		for _, l := range locked {
			l.Close()
		}
	}()
	if s.pool != nil {
		// No call takes a warm jail from now on: the parked ones go.
		s.pool.Close()
	}

	done := make(chan struct{})
	go func() {
		s.calls.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		s.forced = true
		for cmd := range s.runs {
			cmd.Cancel(reasonShutdown)
		}
		if s.tools != nil {
			s.tools.cancel()
		}
		s.mu.Unlock()
		<-done
	}
	// Sessions end with the server, after their calls have drained, and
	// are audited before the log closes.
	s.stopSessions()
	s.auditMu.Lock()
	if s.audit != nil {
		s.audit.Close()
		s.audit = nil
	}
	s.auditMu.Unlock()
	// No tool call runs now, and track refuses new ones.
	s.tools.close()
	return err
}

// pend counts a new connection as waiting for its request line, or
// refuses it when too many already are (admit.go: a client over its share
// may lose its oldest waiting connection to another client instead).
func (s *Server) pend(conn net.Conn) (*pendingConn, *Error) {
	p := peerOf(conn)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending.add(conn, peerKey{p.UID, p.PID}, PendingPerRun*s.maxRuns())
}

func (s *Server) unpend(pc *pendingConn) {
	s.mu.Lock()
	s.pending.remove(pc)
	s.mu.Unlock()
}

// waitSlot takes one of the MaxRuns run slots for peer, waiting for one
// (QueueTimeout) when none is free; release gives it back.
func (s *Server) waitSlot(peer peerKey) (release func(), e *Error) {
	timeout := s.QueueTimeout
	if timeout == 0 {
		timeout = DefaultQueueTimeout
	}
	s.mu.Lock()
	w, e := s.queue.take(peer, timeout > 0)
	drain := s.drain
	s.mu.Unlock()
	if e != nil {
		return nil, e
	}
	release = func() {
		s.mu.Lock()
		s.queue.release(peer)
		s.mu.Unlock()
	}
	if w == nil {
		return release, nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var why *Error
	select {
	case <-w.ready:
		return release, nil
	case <-timer.C:
		why = queueRefusal(s.maxRuns(), timeout)
	case <-drain:
		why = refuseShutdown()
	}
	s.mu.Lock()
	granted := s.queue.leave(w)
	s.mu.Unlock()
	if granted {
		// The slot came as the wait ended: the call runs.
		return release, nil
	}
	return nil, why
}

func (s *Server) maxRuns() int {
	if s.MaxRuns == 0 {
		return DefaultMaxRuns
	}
	return s.MaxRuns
}

func (s *Server) writer(conn net.Conn) *connWriter {
	out := &connWriter{conn: conn, timeout: s.WriteTimeout}
	if out.timeout == 0 {
		out.timeout = WriteTimeout
	}
	return out
}

// refuseConn refuses a connection before reading anything of it.
func (s *Server) refuseConn(conn net.Conn, e *Error) {
	defer conn.Close()
	s.refuseCall(s.writer(conn), peerOf(conn), nil, e)
}

// refuseCall audits a refused request (req is nil when none was read) and
// sends the client its error line. The audit line comes first, as a run's
// comes before its report.
func (s *Server) refuseCall(out *connWriter, peer *report.Peer, req *Request, e *Error) {
	profile := ""
	if req != nil {
		name := req.Profile
		if name == "" {
			name = s.first
		}
		if _, ok := s.profiles[name]; ok {
			profile = name
		}
		if req.ProfileTOML != "" {
			profile = ClientProfileName
		}
		if checkID(req.ID) == nil {
			p := *peer
			p.RequestID = req.ID
			peer = &p
		}
	}
	s.writeAudit(refusedResult(e, profile, time.Now()), peer)
	out.writeError(e)
}

// serveConn serves the one call of pc's connection, counted as pending
// (pend) until its request line is read.
func (s *Server) serveConn(pc *pendingConn) {
	conn := pc.conn
	defer conn.Close()
	unpend := sync.OnceFunc(func() { s.unpend(pc) })
	defer unpend()
	defer pc.cancel()
	defer s.recoverCall()
	peer := peerOf(conn)
	out := s.writer(conn)
	timeout := s.requestTimeout()
	var after []byte
	line, held, err := s.readRequestLine(pc, timeout, &after)
	defer func() { s.budget.Release(held) }()
	// Nothing keeps the line's bytes once it is decoded (the request's
	// fields are copies), but the call's end is the simple place.
	defer putChunk(line)
	unpend()
	s.mu.Lock()
	evicted := pc.evicted
	s.mu.Unlock()
	if e, stop := lineVerdict(line, err, evicted, timeout, s.maxRuns()); stop {
		if e != nil {
			s.refuseCall(out, peer, nil, e)
		}
		return
	}
	conn.SetReadDeadline(time.Time{})
	// What is left of the connection is watched for the client's end (or
	// read as an interactive call's input), from what came after the line.
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(after), conn), 512)
	req, err := s.admitLine(line, &held)
	if err != nil {
		s.refuseErr(out, peer, req, err)
		return
	}
	s.route(conn, br, out, req, peer)
}

// recoverCall logs a panic of one call: a bug in one call must not end
// the others' runs.
func (s *Server) recoverCall() {
	if v := recover(); v != nil {
		if s.ErrorLog != nil {
			s.ErrorLog.Printf("panic serving a call: %v\n%s", v, debug.Stack())
		}
	}
}

// requestTimeout is how long a client has to send its request line.
func (s *Server) requestTimeout() time.Duration {
	if s.RequestTimeout == 0 {
		return RequestTimeout
	}
	return s.RequestTimeout
}

// readRequestLine reads the request line within timeout, holding its
// bytes against the server's budget (held); after gets what came after.
func (s *Server) readRequestLine(pc *pendingConn, timeout time.Duration, after *[]byte) (line []byte, held int64, err error) {
	deadline := time.Now().Add(timeout)
	pc.conn.SetReadDeadline(deadline)
	ctx, cancel := context.WithDeadline(pc.ctx, deadline)
	defer cancel()
	return readLine(ctx, pc.conn, s.budget, after)
}

// lineVerdict says whether the call ends at its request line (stop), and
// with which refusal (e, nil for a client that sent nothing): a read cut
// short because the connection was evicted from the pending places
// (PendingPerRun per run slot) says so, then a full budget, then what
// lineRefusal says of the line.
func lineVerdict(line []byte, err error, evicted bool, timeout time.Duration, maxRuns int) (e *Error, stop bool) {
	if evicted && err != nil {
		return evictedRefusal(PendingPerRun * maxRuns), true
	}
	if err == errBudget {
		return budgetRefusal(), true
	}
	return lineRefusal(line, err, timeout)
}

// admitLine decodes the request line and checks what every kind of call
// must pass; from here the call holds its decoded request, not its line,
// against the budget. req is nil if the line does not decode.
func (s *Server) admitLine(line []byte, held *int64) (*Request, error) {
	d, err := decodeLine(line)
	if err != nil {
		return nil, err
	}
	req := d.Request
	var ok bool
	if *held, ok = resize(s.budget, *held, d.held+chunkSize); !ok {
		return req, budgetRefusal()
	}
	if e := checkID(req.ID); e != nil {
		return req, e
	}
	if s.shuttingDown() {
		return req, refuseShutdown()
	}
	return req, nil
}

// refuseErr refuses the call with err, as an *Error when it is one.
func (s *Server) refuseErr(out *connWriter, peer *report.Peer, req *Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = refuse("%v", err)
	}
	s.refuseCall(out, peer, req, e)
}

// route serves an admitted request by its kind: a change set's or a
// session's operation, a session's call, a tool's call, or a run.
func (s *Server) route(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer) {
	switch {
	case req.ChangesOp != nil:
		s.serveChangesOp(out, req, peer)
	case req.SessionOp != nil:
		s.serveSessionOp(conn, br, out, req, peer)
	case req.Session != "":
		cmd, e := s.sessionCall(req, peer)
		if e != nil {
			s.refuseCall(out, peer, req, e)
			return
		}
		s.inSlot(out, req, peer, func() {
			peer.RequestID = req.ID
			s.runCmd(conn, br, out, req, peer, func() *jail.Cmd { return cmd })
		})
	case req.Tool != "":
		s.inSlot(out, req, peer, func() { s.serveTool(conn, br, out, req, peer) })
	default:
		s.serveRun(conn, br, out, req, peer)
	}
}

// serveRun runs a request's command once its profile gives a spec that
// shows none of the server's hidden files.
func (s *Server) serveRun(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer) {
	spec, err := s.spec(req, peer)
	if err == nil {
		s.mu.Lock()
		err = s.hidden.check(spec)
		s.mu.Unlock()
	}
	if err != nil {
		s.refuseErr(out, peer, req, err)
		return
	}
	s.inSlot(out, req, peer, func() {
		peer.RequestID = req.ID
		s.run(conn, br, out, req, spec, peer)
	})
}

// inSlot runs call once the client has one of the run slots (waitSlot),
// and refuses the request when it gets none.
func (s *Server) inSlot(out *connWriter, req *Request, peer *report.Peer, call func()) {
	release, e := s.waitSlot(peerKey{peer.UID, peer.PID})
	if e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	defer release()
	call()
}

// spec picks the request's profile, served or its own (profile_toml),
// and builds the Spec.
func (s *Server) spec(r *Request, peer *report.Peer) (*jail.Spec, error) {
	var p *profiles.Profile
	if r.ProfileTOML != "" {
		var err error
		if p, err = clientProfile(r, s.AllowClientProfiles, s.profiles); err != nil {
			return nil, err
		}
	} else {
		name := r.Profile
		if name == "" {
			name = s.first
		}
		var ok bool
		if p, ok = s.profiles[name]; !ok {
			return nil, refuse("profile %q: not served here (served: %s); ask for one of those, or start the server with --profile %s", name, s.servedNames(), name)
		}
	}
	sp, err := spec(p, r, peer)
	if err != nil {
		return nil, err
	}
	if e := s.changesSpec(sp, peer); e != nil {
		return nil, e
	}
	return sp, nil
}

// changesSpec makes a run's change set its client's (changes.go): kept
// in the client's store, with the client as its owner.
func (s *Server) changesSpec(sp *jail.Spec, peer *report.Peer) *Error {
	if !sp.Changes.Overlay() {
		return nil
	}
	uid := -1
	if peer != nil {
		uid = peer.UID
	}
	dir, e := peerStore(os.Geteuid(), uid, s.ChangesDir)
	if e != nil {
		return e
	}
	sp.ChangesDir, sp.ChangesOwner = dir, uid
	return nil
}

func (s *Server) servedNames() string {
	names := s.Profiles
	if len(names) == 0 {
		names = []string{"default"}
	}
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

// run runs the call and writes its report. While it runs, the connection
// is read: its end means the client went away, and the run is cancelled.
func (s *Server) run(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, spec *jail.Spec, peer *report.Peer) {
	// Only an admitted call takes a warm jail: one it took runs.
	s.runCmd(conn, br, out, req, peer, func() *jail.Cmd { return s.command(req, spec) })
}

// runCmd is run with the Cmd newCmd makes once the call is admitted.
func (s *Server) runCmd(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer, newCmd func() *jail.Cmd) {
	if e := s.track(); e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	cmd := newCmd()
	defer s.untrack(cmd)
	stdinR, stdinW := callStdio(cmd, out, req)
	if stdinR != nil {
		defer stdinR.Close() // a writer still waiting is let go
	}
	var watch, told sync.WaitGroup
	ended := make(chan struct{})
	if cmd.Start() == nil {
		s.started(cmd)
		watch.Add(1)
		go func() {
			defer watch.Done()
			watchClient(br, cmd, stdinW, req.TTY, ended)
		}()
		if req.ExecEvent {
			told.Add(1)
			go func() {
				defer told.Done()
				if cmd.WaitExec() == nil {
					out.writeRaw(execLine)
				}
			}()
		}
	}
	// The report goes out once it is final; the run's cgroup is removed
	// after (Wait), before the call stops counting against --max-runs.
	res, _ := cmd.WaitResult()
	close(ended)
	// The exec line, if any, before the final line.
	told.Wait()
	s.writeAudit(res, peer)
	if res != nil && req.Stream && !req.ExecEvent && res.ExecFailed() {
		// As `tooljail run` writes it to its stderr: a client that shows
		// only the streams (a shell tool) gets the reason too. One that
		// asked for the exec line reports the failure itself.
		out.writeLine(streamLine{Stream: "stderr", Data: []byte(res.ReasonLine())})
	}
	if res != nil {
		out.writeReport(res)
	}
	if _, err := cmd.Wait(); err != nil && s.ErrorLog != nil && res != nil {
		// The client has its report; what the jail left is the host's.
		s.ErrorLog.Printf("run %s: %v", res.ID, err)
	}
	// Closing ends the watcher's read.
	conn.Close()
	watch.Wait()
}

// callStdio gives cmd the call's stdio: captured or streamed to out, the
// terminal, and stdin from the request or, for an interactive call, a
// pipe fed from the connection as it is typed (its ends are returned;
// nil otherwise).
func callStdio(cmd *jail.Cmd, out *connWriter, req *Request) (*io.PipeReader, *io.PipeWriter) {
	// A streamed run's output went to the client as it came: the report
	// counts it, as `tooljail run` without --json does, rather than send
	// it twice and hold it here meanwhile.
	cmd.CaptureOutput = !req.Stream
	cmd.MergeStderr = req.MergeStderr
	if req.TTY {
		cmd.TTY = &jail.TTY{Rows: req.TTYRows, Cols: req.TTYCols}
	}
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	var stdinR *io.PipeReader
	var stdinW *io.PipeWriter
	if req.StdinStream {
		stdinR, stdinW = io.Pipe()
		cmd.Stdin = stdinR
	}
	if req.Stream {
		cmd.Stdout = &streamWriter{out: out, name: "stdout", cancel: cmd.Cancel}
		if !req.MergeStderr && !req.TTY {
			cmd.Stderr = &streamWriter{out: out, name: "stderr", cancel: cmd.Cancel}
		}
	}
	return stdinR, stdinW
}

// watchClient reads the connection while cmd runs: the input lines of an
// interactive call (stdinW not nil), then anything until the client's
// end, which cancels a run that has not ended yet.
func watchClient(br *bufio.Reader, cmd *jail.Cmd, stdinW *io.PipeWriter, tty bool, ended <-chan struct{}) {
	if stdinW != nil {
		// Input lines until the client's end; a line that is not
		// one cancels the run.
		if err := readInput(br, input{stdin: stdinW, resize: cmd.Resize, tty: tty}); err != nil {
			cmd.Cancel("cancelled: the client sent " + err.Error())
		}
	}
	// Nothing more is expected from the client: any end of its
	// side, EOF or error, is the client gone.
	drain(br)
	select {
	case <-ended:
	default:
		cmd.Cancel(reasonClientGone)
	}
}

// command is the Cmd of a call: a warm jail's when the pool has one for
// its shape, else one built now.
func (s *Server) command(req *Request, spec *jail.Spec) *jail.Cmd {
	// A run with a change set is never warm: its set is made for its
	// client when it starts.
	if s.pool != nil && !spec.Changes.Overlay() {
		name := req.Profile
		if name == "" {
			name = s.first
		}
		if cmd := s.pool.Take(poolKeyOf(req, name), spec); cmd != nil {
			return cmd
		}
	}
	return jail.Command(spec)
}

// track counts a call that is about to run, unless the server is
// shutting down or already runs MaxRuns calls.
func (s *Server) track() *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return refuseShutdown()
	}
	if e := admitRun(s.running, s.maxRuns()); e != nil {
		return e
	}
	s.running++
	s.calls.Add(1)
	return nil
}

// started registers a started run for Shutdown to cancel, or cancels it
// at once when Shutdown's grace period has already ended.
func (s *Server) started(cmd *jail.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forced {
		cmd.Cancel(reasonShutdown)
		return
	}
	if s.runs == nil {
		s.runs = map[*jail.Cmd]struct{}{}
	}
	s.runs[cmd] = struct{}{}
}

func (s *Server) untrack(cmd *jail.Cmd) {
	s.mu.Lock()
	delete(s.runs, cmd)
	s.running--
	s.mu.Unlock()
	s.calls.Done()
}

func (s *Server) writeAudit(r *jail.Result, peer *report.Peer) {
	if r == nil {
		return
	}
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	if s.audit == nil {
		return
	}
	if err := report.AppendAuditPeer(s.audit, r, peer); err != nil && s.ErrorLog != nil {
		s.ErrorLog.Printf("audit log: %v", err)
	}
}

// peerOf is the client's identity as the kernel recorded it when it
// connected (SO_PEERCRED); -1s when it cannot be had.
func peerOf(conn net.Conn) *report.Peer {
	p := &report.Peer{UID: -1, GID: -1, PID: -1}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return p
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return p
	}
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			p.UID, p.GID, p.PID = int(cred.Uid), int(cred.Gid), int(cred.Pid)
		}
	})
	return p
}

// connWriter writes lines to the connection, one at a time (the stream
// relays and the final line share it), each write under its timeout. The
// first failed write is kept: nothing more is sent after it.
type connWriter struct {
	conn    net.Conn
	timeout time.Duration
	mu      sync.Mutex
	err     error
}

func (w *connWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.conn.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// writeLine writes v as one compact JSON line.
func (w *connWriter) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.writeRaw(append(b, '\n'))
}

// writeRaw writes line, a whole line with its newline.
func (w *connWriter) writeRaw(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.Write(line)
	return err
}

func (w *connWriter) writeError(e *Error) {
	w.writeLine(struct {
		Error *Error `json:"error"`
	}{e})
}

// writeReport writes the report line as report.EncodeReport does: the
// captured output is escaped into it a piece at a time, never held whole
// in its encoded form (up to six times the output).
func (w *connWriter) writeReport(r *jail.Result) error {
	rep, err := report.EncodeReport(r, "")
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = rep.WriteTo(w)
	return err
}

// streamWriter sends a command's output as stream lines. A client that
// does not take them gets its run cancelled, rather than holding up the
// command (Server.WriteTimeout); the output is still
// counted and captured.
type streamWriter struct {
	out    *connWriter
	name   string
	cancel func(reason string)
	line   []byte // the last line, its buffer reused: one relay writes through w
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.line = appendStreamLine(w.line[:0], w.name, p)
	if err := w.out.writeRaw(w.line); err != nil {
		w.cancel(reasonClientGone)
		return 0, err
	}
	return len(p), nil
}

// appendStreamLine appends the stream line of data and its newline: what
// json.Marshal makes of streamLine{name, data}, name being "stdout" or
// "stderr", without its allocations (a chunk's base64, then the line
// again), which for a large output cost more than the copy itself.
func appendStreamLine(dst []byte, name string, data []byte) []byte {
	dst = append(dst, `{"stream":"`...)
	dst = append(dst, name...)
	dst = append(dst, `","data":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, "\"}\n"...)
}

// execLine is the line of Request.ExecEvent.
var execLine = []byte("{\"exec\":true}\n")

// streamLine is one stream line of the protocol.
type streamLine struct {
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
}
