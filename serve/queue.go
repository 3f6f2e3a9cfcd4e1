package serve

import (
	"time"
)

// DefaultQueueTimeout is how long a call that finds every run slot busy
// waits for one when Server.QueueTimeout is 0 (--queue-timeout).
const DefaultQueueTimeout = 5 * time.Second

// MaxQueueTimeout bounds Server.QueueTimeout: a waiting call holds its
// connection and its request (stdin included) in the server.
const MaxQueueTimeout = 10 * time.Minute

// peerKey is a client as the kernel names its connection (SO_PEERCRED):
// the share of waiting connections and queued calls is per process.
type peerKey struct{ uid, pid int }

// runQueue hands out the server's run slots (Server.MaxRuns). A call that
// finds none free waits, for a bounded time, in a queue that is fair
// between clients: a freed slot goes to the waiting call whose client
// runs the fewest calls, the oldest first among equals, so that a client
// with many calls waiting does not starve one with a single call.
type runQueue struct {
	max     int
	running int
	perPeer map[peerKey]int // running calls per client
	waiting []*waiter
}

type waiter struct {
	peer    peerKey
	ready   chan struct{} // closed when granted
	granted bool
}

// MaxQueued is how many calls per run slot may wait in the queue; beyond
// that a call is refused at once.
const MaxQueued = PendingPerRun

// take grants a slot to peer now, or queues it: w is nil when granted,
// else the waiter to wait on; e refuses the call at once. The caller
// holds the server's lock.
func (q *runQueue) take(peer peerKey, wait bool) (w *waiter, e *Error) {
	if q.perPeer == nil {
		q.perPeer = map[peerKey]int{}
	}
	if q.running < q.max && len(q.waiting) == 0 {
		q.grant(peer)
		return nil, nil
	}
	if !wait {
		return nil, admitRun(q.running, q.max)
	}
	if len(q.waiting) >= MaxQueued*q.max {
		return nil, refuse("the server already runs %d calls, its --max-runs, and %d more wait for a slot; retry later, or start the server with a higher --max-runs", q.running, len(q.waiting))
	}
	w = &waiter{peer: peer, ready: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	return w, nil
}

// leave takes w out of the queue after its wait ended without a grant; it
// says whether the slot was granted meanwhile (then the call runs).
func (q *runQueue) leave(w *waiter) bool {
	if w.granted {
		return true
	}
	for i, x := range q.waiting {
		if x == w {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			break
		}
	}
	return false
}

func (q *runQueue) grant(peer peerKey) {
	q.running++
	q.perPeer[peer]++
}

// release frees peer's slot and hands free slots to the fairest waiters.
func (q *runQueue) release(peer peerKey) {
	q.running--
	if q.perPeer[peer]--; q.perPeer[peer] <= 0 {
		delete(q.perPeer, peer)
	}
	for q.running < q.max && len(q.waiting) > 0 {
		best := 0
		for i, w := range q.waiting {
			if q.perPeer[w.peer] < q.perPeer[q.waiting[best].peer] {
				best = i
			}
		}
		w := q.waiting[best]
		q.waiting = append(q.waiting[:best], q.waiting[best+1:]...)
		q.grant(w.peer)
		w.granted = true
		close(w.ready)
	}
}

// queueRefusal is the error of a call that waited timeout for a slot.
func queueRefusal(max int, timeout time.Duration) *Error {
	return refuse("the server runs %d calls, its --max-runs, and none ended within %v while this call waited; retry later, or start the server with a higher --max-runs or --queue-timeout", max, timeout)
}

// CheckQueueTimeout is nil when d is a valid Server.QueueTimeout.
func CheckQueueTimeout(d time.Duration) error {
	if d < 0 || d > MaxQueueTimeout {
		return errorf("want a duration from 0 (refuse at once) to %v", MaxQueueTimeout)
	}
	return nil
}
