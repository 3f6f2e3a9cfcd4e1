package serve

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"time"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
)

// Sessions (docs/sessions.md): a jail the server keeps across one
// client's calls (jail.Session). A session_op request starts, lists or
// stops them; a run request with "session" runs a call in one. A session
// belongs to the uid that started it (SO_PEERCRED): no other client but
// root sees or uses it. Its id is 128 random bits.

// SessionOp is a session_op request's action.
type SessionOp struct {
	// Action is "start", "list" or "stop".
	Action string `json:"action"`
	// ID names the session to stop.
	ID string `json:"id,omitempty"`
	// Idle and MaxLife bound a started session ("10m", "8h"); absent:
	// DefaultSessionIdle and DefaultSessionMaxLife.
	Idle    string `json:"idle,omitempty"`
	MaxLife string `json:"max_life,omitempty"`
	// Detach keeps a started session after its connection ends; without
	// it the session stops when the client closes the connection the
	// start was answered on (as a `with` block's end or a crash does).
	Detach bool `json:"detach,omitempty"`
}

// A session's bounds when the start names none.
const (
	DefaultSessionIdle    = 10 * time.Minute
	DefaultSessionMaxLife = 8 * time.Hour
	// MaxSessionsPerUser bounds the sessions one uid keeps at once.
	MaxSessionsPerUser = 16
)

// SessionInfo is a session as session_op answers show it.
type SessionInfo struct {
	ID        string    `json:"id"`
	UID       int       `json:"uid"`
	Profile   string    `json:"profile"`
	Workdir   string    `json:"workdir,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Detached  bool      `json:"detached"`
	Idle      string    `json:"idle"`
	MaxLife   string    `json:"max_life"`
}

// session is a session the server keeps.
type session struct {
	s       *jail.Session
	info    SessionInfo
	profile *profiles.Profile
	start   Request // the start request: what each call's Spec is built from
}

// checkSessionOp refuses what a session_op request may not carry.
func checkSessionOp(r *Request) *Error {
	op := r.SessionOp
	switch op.Action {
	case "start":
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"argv", r.Argv != nil}, {"stdin", r.Stdin != nil}, {"env", r.Env != nil}, {"stream", r.Stream}, {"exec_event", r.ExecEvent},
			{"merge_stderr", r.MergeStderr}, {"tty", r.TTY || r.TTYRows != 0 || r.TTYCols != 0}, {"tool", r.Tool != ""},
			{"arguments", r.Arguments != nil}, {"changes", r.Changes != ""}, {"session", r.Session != ""},
			{"keep_running", r.KeepRunning}, {"cwd", r.Cwd != ""}, {"session_op.id", op.ID != ""},
		} {
			if f.set {
				return refuse("%s: not taken with a session start; a start is the jail (workdir, profile, limits, network, toolchains), each call brings its command", f.name)
			}
		}
		for _, t := range r.Toolchains {
			if t == "auto" {
				return refuse(`toolchains: "auto" finds the toolchain of a command, and a session start has none; name the prefixes`)
			}
		}
		for _, d := range []struct{ name, v string }{{"idle", op.Idle}, {"max_life", op.MaxLife}} {
			if d.v != "" {
				if _, err := sessionDuration(d.v); err != nil {
					return refuse("session_op.%s: %v", d.name, err)
				}
			}
		}
	case "list", "stop":
		if r.Argv != nil || r.Workdir != "" || r.Profile != "" || r.ProfileTOML != "" || r.Limits != nil || r.Session != "" ||
			op.Idle != "" || op.MaxLife != "" || op.Detach {
			return refuse("session_op %s: takes only %s", op.Action, map[string]string{"list": "the action", "stop": "the action and the session's id"}[op.Action])
		}
		if op.Action == "stop" && !jail.ValidSessionID(op.ID) {
			return refuse("session_op.id %q: not a session id (32 hex digits, as session_op start answered)", op.ID)
		}
	default:
		return refuse("session_op.action %q: want start, list or stop", op.Action)
	}
	return nil
}

// sessionDuration is a positive duration as profiles spell them.
func sessionDuration(v string) (time.Duration, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be more than 0", v)
	}
	return d, nil
}

// serveSessionOp answers a session_op request.
func (s *Server) serveSessionOp(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer) {
	if e := checkSessionOp(req); e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	switch req.SessionOp.Action {
	case "start":
		s.startSession(conn, br, out, req, peer)
	case "list":
		out.writeLine(struct {
			Sessions []SessionInfo `json:"sessions"`
		}{s.listSessions(peer.UID)})
	case "stop":
		res, e := s.stopSession(req.SessionOp.ID, peer.UID)
		if e != nil {
			out.writeError(e)
			return
		}
		out.writeLine(struct {
			Session *jail.SessionResult `json:"session"`
		}{res})
	}
}

// startSession builds the session's jail, answers with its id, and for
// an attached session keeps the connection until the client ends it.
func (s *Server) startSession(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer) {
	op := req.SessionOp
	base := *req
	base.SessionOp = nil
	base.Argv = []string{"(session)"}
	spec, err := s.spec(&base, peer)
	if err == nil {
		s.mu.Lock()
		err = s.hidden.check(spec)
		s.mu.Unlock()
	}
	if err != nil {
		s.refuseCall(out, peer, req, asError(err))
		return
	}
	p := s.profileOf(&base)
	limits := sessionLimits(op)
	if e := s.admitSession(peer.UID); e != nil {
		out.writeError(e)
		return
	}
	js, err := jail.StartSession(spec, limits)
	if err != nil {
		out.writeError(&Error{Code: jail.ExitSetup, Message: err.Error()})
		return
	}
	e := &session{s: js, profile: p, start: base, info: SessionInfo{ID: js.ID(), UID: peer.UID, Profile: s.sessionProfileName(&base), Workdir: spec.Dir,
		StartedAt: time.Now().UTC(), Detached: op.Detach, Idle: limits.Idle.String(), MaxLife: limits.MaxLife.String()}}
	if !s.registerSession(e) {
		s.endSession(e, nil)
		out.writeError(refuseShutdown())
		return
	}
	// However it stops (idle, max life, its init's end), it goes and is
	// audited.
	go func() {
		<-js.Done()
		s.endSession(e, nil)
	}()
	out.writeLine(struct {
		Session SessionInfo `json:"session"`
	}{e.info})
	if op.Detach {
		conn.Close()
		return
	}
	// Attached: the client's end of this connection is the session's.
	drain(br)
	s.stopSession(js.ID(), peer.UID)
	conn.Close()
}

// sessionLimits are the life limits a session_op start asks for, or the
// defaults (the request's durations were checked when it was decoded).
func sessionLimits(op *SessionOp) jail.SessionLimits {
	limits := jail.SessionLimits{Idle: DefaultSessionIdle, MaxLife: DefaultSessionMaxLife}
	if op.Idle != "" {
		limits.Idle, _ = sessionDuration(op.Idle)
	}
	if op.MaxLife != "" {
		limits.MaxLife, _ = sessionDuration(op.MaxLife)
	}
	return limits
}

// admitSession is why uid may not start a session now (the server is
// shutting down, or uid keeps the most sessions one user may), or nil.
func (s *Server) admitSession(uid int) *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return refuseShutdown()
	case s.sessionsOf(uid) >= MaxSessionsPerUser:
		return refuse("uid %d keeps %d sessions already, the most one user may; stop one (session_op stop)", uid, MaxSessionsPerUser)
	}
	return nil
}

// sessionProfileName is the profile a session's listing names: the
// request's, the server's first, or the client's own.
func (s *Server) sessionProfileName(base *Request) string {
	name := base.Profile
	if name == "" {
		name = s.first
	}
	if base.ProfileTOML != "" {
		name = ClientProfileName
	}
	return name
}

// registerSession lists e among the server's sessions, unless the server
// began shutting down while its jail was built (then it says false).
func (s *Server) registerSession(e *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.sessions == nil {
		s.sessions = map[string]*session{}
	}
	s.sessions[e.info.ID] = e
	return true
}

// asError is err as the protocol's error.
func asError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return refuse("%v", err)
}

// profileOf is the profile a request names (s.spec checked it).
func (s *Server) profileOf(r *Request) *profiles.Profile {
	if r.ProfileTOML != "" {
		p, _ := clientProfile(r, s.AllowClientProfiles, s.profiles)
		return p
	}
	name := r.Profile
	if name == "" {
		name = s.first
	}
	return s.profiles[name]
}

// sessionsOf counts uid's sessions, under s.mu.
func (s *Server) sessionsOf(uid int) int {
	n := 0
	for _, e := range s.sessions {
		if e.info.UID == uid {
			n++
		}
	}
	return n
}

// mayUse: a session is its starter's, and root's.
func mayUse(e *session, uid int) bool { return uid == 0 || e.info.UID == uid }

// lookupSession finds a session uid may use; one it may not is not found,
// in the same words, so that ids cannot be probed.
func (s *Server) lookupSession(id string, uid int) (*session, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[id]
	if !ok || !mayUse(e, uid) {
		return nil, noSuchSession(id, uid)
	}
	return e, nil
}

// noSuchSession is the answer for a session that is not there for uid:
// another's, one that stopped (or is stopping, for a call), or none.
func noSuchSession(id string, uid int) *Error {
	return refuse("session %s: no such session of uid %d here (it stopped, or was never started on this server); start one with session_op start", id, uid)
}

// listSessions is the sessions uid may use that take calls: one whose
// stop has begun stays in s.sessions until the stop has finished (so
// that a second stop gets its report), but is not listed.
func (s *Server) listSessions(uid int) []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []SessionInfo{}
	for _, e := range s.sessions {
		if mayUse(e, uid) && !e.s.Stopping() {
			out = append(out, e.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

func (s *Server) stopSession(id string, uid int) (*jail.SessionResult, *Error) {
	e, err := s.lookupSession(id, uid)
	if err != nil {
		return nil, err
	}
	res := e.s.Stop()
	s.endSession(e, res)
	return res, nil
}

// endSession forgets a stopped session and writes its audit line, once.
func (s *Server) endSession(e *session, res *jail.SessionResult) {
	if res == nil {
		res = e.s.Stop()
	}
	s.mu.Lock()
	cur, ok := s.sessions[e.info.ID]
	if ok && cur == e {
		delete(s.sessions, e.info.ID)
	}
	s.mu.Unlock()
	if ok && cur == e {
		s.writeSessionAudit(e, res)
	}
}

func (s *Server) writeSessionAudit(e *session, res *jail.SessionResult) {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	if s.audit == nil {
		return
	}
	line := report.NewSessionAuditLine(res, e.info.UID, e.info.Profile, e.info.Workdir)
	if err := report.AppendAuditLine(s.audit, line); err != nil && s.ErrorLog != nil {
		s.ErrorLog.Printf("audit log: %v", err)
	}
}

// stopSessions stops every session (Shutdown, after the calls drained).
func (s *Server) stopSessions() {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, e := range s.sessions {
		list = append(list, e)
	}
	s.mu.Unlock()
	for _, e := range list {
		s.endSession(e, nil)
	}
}

// sessionCall builds the Cmd of a run request in a session: the session's
// jail with the request's command, environment (the profile's rules, as
// for a run), working directory, timeout and output limit.
func (s *Server) sessionCall(req *Request, peer *report.Peer) (*jail.Cmd, *Error) {
	if e := checkSessionCall(req); e != nil {
		return nil, e
	}
	e, err := s.lookupSession(req.Session, peer.UID)
	if err != nil {
		return nil, err
	}
	if e.s.Stopping() {
		// Not listed any more, and answered as listed: as one that
		// stopped (a stop still finds it, to answer with its report).
		return nil, noSuchSession(req.Session, peer.UID)
	}
	// The call's Spec from the start's request with the call's part: the
	// same profile rules, so the environment is built as a run's is,
	// against the session's mounts.
	r := e.start
	r.Argv, r.Env = req.Argv, req.Env
	r.Limits = map[string]string{}
	for k, v := range e.start.Limits {
		r.Limits[k] = v
	}
	for k, v := range req.Limits {
		r.Limits[k] = v
	}
	call, ferr := callSpec(e.profile, &r, e.s.Spec())
	if ferr != nil {
		return nil, asError(ferr)
	}
	if req.Cwd != "" {
		call.Dir = req.Cwd
	}
	cmd, cerr := e.s.Command(call)
	if cerr != nil {
		return nil, refuse("%v", cerr)
	}
	cmd.KeepRunning = req.KeepRunning
	return cmd, nil
}

// checkSessionCall refuses what a call in a session may not carry: the
// jail is the session's.
func checkSessionCall(r *Request) *Error {
	if !jail.ValidSessionID(r.Session) {
		return refuse("session %q: not a session id (32 hex digits, as session_op start answered)", r.Session)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"workdir", r.Workdir != ""}, {"profile", r.Profile != ""}, {"profile_toml", r.ProfileTOML != ""},
		{"network", r.Network != ""}, {"toolchains", r.Toolchains != nil}, {"changes", r.Changes != ""},
	} {
		if f.set {
			return refuse("%s: not taken with session; the session's start decided it (use cwd for a working directory)", f.name)
		}
	}
	for k := range r.Limits {
		if k != "timeout" && k != "output_limit" {
			return refuse("limits.%s: a session's call may set only timeout and output_limit; the others are the session's", k)
		}
	}
	if r.Cwd != "" && !filepath.IsAbs(r.Cwd) {
		return refuse("cwd %q: must be an absolute path in the session's jail", r.Cwd)
	}
	return nil
}
