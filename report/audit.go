package report

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// AuditLine is one line of the audit log: a run's, or of a served
// request refused before any run. A tool call's line (package tools/call)
// embeds it and adds its own fields.
type AuditLine struct {
	Time       time.Time `json:"time"`
	ID         string    `json:"id"`
	UID        int       `json:"uid"`
	User       string    `json:"user,omitempty"`
	Command    []string  `json:"command"`
	Workdir    string    `json:"workdir"`
	Profile    string    `json:"profile,omitempty"`
	Status     Status    `json:"status"`
	ExitCode   int       `json:"exit_code"`
	DurationMs int64     `json:"duration_ms"`
	Violations int       `json:"violations"`
	// Why the run ended as it did (the report's reason), or why a served
	// request was refused.
	Reason string `json:"reason,omitempty"`
	// Of a served run: who asked for it, and the id the request gave.
	Peer      *Peer  `json:"peer,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// SessionID names the session a call ran in.
	SessionID string `json:"session_id,omitempty"`
	// Session is a stopped session's final report, on its own line
	// (status "session").
	Session *SessionResult `json:"session,omitempty"`
}

// Peer is the client of a served run, as the kernel identified its
// connection (SO_PEERCRED), and the id its request carried.
type Peer struct {
	UID       int    `json:"uid"`
	GID       int    `json:"gid"`
	PID       int    `json:"pid"`
	RequestID string `json:"-"`
}

// AppendAudit appends one JSON line for r to f, an audit log opened for
// appending (an Output with Append, opened by Start, so that no path is
// looked up after the run). The line goes out in a single write(2) on the
// O_APPEND descriptor under an exclusive flock, so concurrent runs never
// interleave within a line. The caller closes f.
func AppendAudit(f *os.File, r *Result) error { return AppendAuditPeer(f, r, nil) }

// AppendAuditPeer is AppendAudit for a served run: the line also names the
// client (peer) and its request id. A nil peer is AppendAudit.
func AppendAuditPeer(f *os.File, r *Result, peer *Peer) error {
	return AppendAuditLine(f, NewAuditLine(r, os.Getuid(), peer))
}

// AppendAuditLine appends line, any value that encodes to a JSON object
// (an AuditLine, or a struct that embeds one), to f as one line, in the
// way AppendAudit does: one write(2) on the O_APPEND descriptor under an
// exclusive flock.
func AppendAuditLine(f *os.File, line any) error {
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode the audit line: %w", err)
	}
	b = append(b, '\n')
	fd := int(f.Fd())
	// Without O_APPEND a concurrent writer's line could be overwritten.
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if flags&unix.O_APPEND == 0 {
		return fmt.Errorf("%s: not opened for appending; open the audit log with O_APPEND (jail.Output.Append)", f.Name())
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	// unix.Write, not f.Write: os.File would go on after a short write
	// with a second write(2), which another run's line could come between.
	var n int
	for {
		n, err = unix.Write(fd, b)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", f.Name(), err)
	}
	return nil
}

// NewAuditLine is the audit line for r, for a caller with uid, and of a
// served run the client's peer (nil for none).
func NewAuditLine(r *Result, uid int, peer *Peer) AuditLine {
	l := AuditLine{
		Time: r.StartedAt, ID: r.ID, UID: uid, Command: r.Command, Workdir: r.Workdir,
		Profile: r.Profile, Status: r.Status, ExitCode: r.ExitCode, DurationMs: r.WallTimeMs,
		Reason: r.Reason,
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		l.User = u.Username
	}
	if peer != nil {
		l.Peer, l.RequestID = peer, peer.RequestID
	}
	for _, v := range r.Violations {
		l.Violations += v.Count
	}
	if r.Session != nil {
		l.SessionID = r.Session.ID
	}
	return l
}

// NewSessionAuditLine is a stopped session's line: a row of its own
// (status "session", the session's id, its life as the duration, the
// denied calls of what its calls kept), with its final report.
func NewSessionAuditLine(r *SessionResult, uid int, profile, workdir string) AuditLine {
	l := AuditLine{
		Time: r.StartedAt, ID: r.ID, UID: uid, Command: []string{"(session)"}, Workdir: workdir, Profile: profile,
		Status: StatusSession, DurationMs: r.WallTimeMs, SessionID: r.ID, Session: r,
		Reason: fmt.Sprintf("session stopped (%s) after %d calls", r.StoppedFor, r.Calls),
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		l.User = u.Username
	}
	for _, v := range r.Violations {
		l.Violations += v.Count
	}
	return l
}
