package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
	"unicode/utf8"

	"github.com/tooljail/tooljail/jail"
)

// Admission: what a server lets in, and how it says no. A call over
// MaxRuns waits for a slot for a bounded time (queue.go), fairly between
// clients; connections that have not sent their request yet are bounded
// too, with a share per client (pendingSet). So a flood of calls, or of
// connections that say nothing, from one client costs the others at most
// a wait, never their share.
const (
	// DefaultMaxRuns is how many runs a server lets go at once when
	// Server.MaxRuns is 0 (--max-runs).
	DefaultMaxRuns = 64
	// MaxRunsCeiling is the highest Server.MaxRuns: each run holds a jail
	// (processes, a cgroup, descriptors), and a server is one process.
	MaxRunsCeiling = 1024
	// PendingPerRun is how many connections per allowed run may be open
	// without having sent their request line yet.
	PendingPerRun = 4
	// MaxID is the longest request id, in bytes: it goes into the audit
	// log as it is.
	MaxID = 256
	// maxAuditReason bounds the reason a refused request's audit line
	// carries: a message can quote what the client sent.
	maxAuditReason = 1024
)

// DefaultWarm is the CLI's --warm: warm jails per shape of call.
const DefaultWarm = 2

// MaxWarm bounds Server.Warm.
const MaxWarm = 16

// CheckWarm is nil when n is a valid Server.Warm.
func CheckWarm(n int) error {
	if n < 0 || n > MaxWarm {
		return fmt.Errorf("want a number of warm jails per shape of call from 0 to %d", MaxWarm)
	}
	return nil
}

// CheckMaxRuns is nil when n is a valid Server.MaxRuns other than 0.
func CheckMaxRuns(n int) error {
	if n < 1 || n > MaxRunsCeiling {
		return fmt.Errorf("want a number of runs at once from 1 to %d", MaxRunsCeiling)
	}
	return nil
}

// admitRun refuses a run when max runs already go.
func admitRun(running, max int) *Error {
	if running < max {
		return nil
	}
	return refuse("the server already runs %d calls, its --max-runs; retry later, or start the server with a higher --max-runs", max)
}

// admitPending refuses a connection when as many as PendingPerRun × max
// are open and have not sent their request line yet.
func admitPending(pending, max int) *Error {
	if pending < PendingPerRun*max {
		return nil
	}
	return refuse("%d connections are already waiting to send their request (%d × --max-runs); send the request as soon as you connect, retry later, or start the server with a higher --max-runs", pending, PendingPerRun)
}

// pendingConn is a connection that has not sent its request line yet.
type pendingConn struct {
	conn net.Conn
	peer peerKey
	// evicted is set (under the server's lock) when another client took
	// its place: its read is then cut short and it is refused.
	evicted bool
	cancel  context.CancelFunc // ends the wait for the request budget
	ctx     context.Context
}

// pendingSet is the connections waiting for their request line, per
// client (SO_PEERCRED uid and pid). When the set is full, a connection of
// a client with fewer waiting than the client with the most takes the
// place of that client's oldest: each client keeps at least an equal
// share of the places, and one client's idle connections cannot lock the
// others out.
type pendingSet struct {
	n      int
	byPeer map[peerKey][]*pendingConn
}

func (ps *pendingSet) add(conn net.Conn, peer peerKey, limit int) (*pendingConn, *Error) {
	if ps.byPeer == nil {
		ps.byPeer = map[peerKey][]*pendingConn{}
	}
	if ps.n >= limit {
		victim := evictFrom(ps.byPeer, peer)
		if victim == nil {
			return nil, admitPending(ps.n, limit/PendingPerRun)
		}
		victim.evicted = true
		victim.cancel()
		// Cuts the victim's read short: serveConn sees evicted.
		victim.conn.SetReadDeadline(time.Now())
		ps.remove(victim)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pc := &pendingConn{conn: conn, peer: peer, ctx: ctx, cancel: cancel}
	ps.byPeer[peer] = append(ps.byPeer[peer], pc)
	ps.n++
	return pc, nil
}

// evictFrom picks the oldest waiting connection of the client with the
// most, when that is more than one over what peer has; nil when peer
// already has its share.
func evictFrom(byPeer map[peerKey][]*pendingConn, peer peerKey) *pendingConn {
	var most []*pendingConn
	for _, l := range byPeer {
		if len(l) > len(most) {
			most = l
		}
	}
	if len(most) <= len(byPeer[peer])+1 {
		return nil
	}
	return most[0]
}

func (ps *pendingSet) remove(pc *pendingConn) {
	l := ps.byPeer[pc.peer]
	for i, x := range l {
		if x == pc {
			l = append(l[:i], l[i+1:]...)
			ps.n--
			break
		}
	}
	if len(l) == 0 {
		delete(ps.byPeer, pc.peer)
	} else {
		ps.byPeer[pc.peer] = l
	}
}

// evictedRefusal is the error of a connection that lost its place.
func evictedRefusal(limit int) *Error {
	return refuse("this connection waited for its request line while its client held the most of the %d places for waiting connections, and another client needed one; send the request as soon as you connect, and open fewer connections at once", limit)
}

// lineRefusal is what the server does after reading a request line: line
// and err are what the read returned, within timeout. stop is true when
// the call ends here: with e, the error line to send and audit, or
// without one for a connection closed before a byte of a request (a
// client checking that the server answers, as Dial does).
func lineRefusal(line []byte, err error, timeout time.Duration) (e *Error, stop bool) {
	switch {
	case len(line) > MaxRequest || errors.Is(err, errTooLong):
		return refuse("request line longer than %d MiB; send large input as a file in the workdir", MaxRequest>>20), true
	case err == nil:
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		return refuse("no request within %v; send the whole request line as soon as you connect", timeout), true
	case len(line) == 0:
		return nil, true
	default:
		return refuse("the request line did not end with a newline before %v", err), true
	}
}

// checkID refuses an id longer than MaxID.
func checkID(id string) *Error {
	if len(id) <= MaxID {
		return nil
	}
	return refuse("id: %d bytes, longer than %d; send a shorter id", len(id), MaxID)
}

// refusedResult is the Result a refused request is audited as: status
// refused, exit code 125, the error message as its reason, and the
// profile asked for when it is one the server serves. The command and
// workdir are left out: a refused request may be malformed or huge, and
// its line says who asked and why, not what.
func refusedResult(e *Error, profile string, at time.Time) *jail.Result {
	return &jail.Result{
		Command:   []string{},
		Profile:   profile,
		StartedAt: at,
		Status:    jail.StatusRefused,
		ExitCode:  e.Code,
		Reason:    clip(e.Message, maxAuditReason),
	}
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
