package serve

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tooljail/tooljail/jail"
)

func TestCheckMaxRuns(t *testing.T) {
	for n, ok := range map[int]bool{-1: false, 0: false, 1: true, 64: true, 1024: true, 1025: false} {
		if err := CheckMaxRuns(n); (err == nil) != ok {
			t.Errorf("CheckMaxRuns(%d): %v, want ok %v", n, err, ok)
		}
	}
}

func TestAdmitRun(t *testing.T) {
	for _, c := range []struct {
		running, max int
		refused      bool
	}{{0, 1, false}, {1, 1, true}, {63, 64, false}, {64, 64, true}, {70, 64, true}} {
		e := admitRun(c.running, c.max)
		switch {
		case !c.refused && e != nil:
			t.Errorf("%d of %d: refused: %v", c.running, c.max, e)
		case c.refused && (e == nil || e.Code != 125 || !strings.Contains(e.Message, "--max-runs") || !strings.Contains(e.Message, "retry")):
			t.Errorf("%d of %d: %v, want a refusal (125) naming --max-runs and saying to retry", c.running, c.max, e)
		}
	}
}

func TestAdmitPending(t *testing.T) {
	for _, c := range []struct {
		pending, max int
		refused      bool
	}{{0, 1, false}, {3, 1, false}, {4, 1, true}, {255, 64, false}, {256, 64, true}} {
		e := admitPending(c.pending, c.max)
		switch {
		case !c.refused && e != nil:
			t.Errorf("%d waiting, max runs %d: refused: %v", c.pending, c.max, e)
		case c.refused && (e == nil || e.Code != 125 || !strings.Contains(e.Message, "--max-runs") || !strings.Contains(e.Message, "retry")):
			t.Errorf("%d waiting, max runs %d: %v, want a refusal (125) naming --max-runs and saying to retry", c.pending, c.max, e)
		}
	}
}

func TestLineRefusal(t *testing.T) {
	timeout := fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	for _, c := range []struct {
		name string
		line string
		err  error
		want string // the refusal's message holds it; "" for none
		stop bool
	}{
		{"a request", `{"argv":["x"]}` + "\n", nil, "", false},
		{"closed before a byte", "", io.EOF, "", true},
		{"closed mid-line", `{"argv"`, io.EOF, "did not end with a newline", true},
		{"nothing in time", "", timeout, "no request within 10s", true},
		{"half a line in time", `{"argv"`, timeout, "no request within 10s", true},
		{"too long", strings.Repeat("x", MaxRequest+1), nil, "longer than 64 MiB", true},
		{"too long, no newline", strings.Repeat("x", MaxRequest+1), io.EOF, "longer than 64 MiB", true},
	} {
		e, stop := lineRefusal([]byte(c.line), c.err, 10*time.Second)
		switch {
		case stop != c.stop:
			t.Errorf("%s: stop %v, want %v", c.name, stop, c.stop)
		case c.want == "" && e != nil:
			t.Errorf("%s: refused: %v", c.name, e)
		case c.want != "" && (e == nil || e.Code != 125 || !strings.Contains(e.Message, c.want)):
			t.Errorf("%s: %v, want a refusal with %q", c.name, e, c.want)
		}
	}
}

func TestCheckID(t *testing.T) {
	if e := checkID(strings.Repeat("é", MaxID/2)); e != nil {
		t.Errorf("an id of %d bytes: %v", MaxID, e)
	}
	e := checkID(strings.Repeat("x", MaxID+1))
	if e == nil || e.Code != 125 || !strings.HasPrefix(e.Message, "id: 257 bytes, longer than 256") {
		t.Errorf("an id of %d bytes: %v, want a refusal naming the field", MaxID+1, e)
	}
}

func TestRefusedResult(t *testing.T) {
	at := time.Now()
	for _, e := range []*Error{
		refuse("limits.memory: 2G is looser than the profile's 512M"),
		refuse("profile %q: not served here", strings.Repeat("é", 2000)),
	} {
		r := refusedResult(e, "default", at)
		if r.Status != "refused" || r.ExitCode != jail.ExitSetup || r.Profile != "default" || !r.StartedAt.Equal(at) || r.Command == nil || len(r.Command) != 0 {
			t.Errorf("%+v", r)
		}
		want := e.Message
		if len(want) > maxAuditReason {
			want = clip(want, maxAuditReason)
			if !strings.HasSuffix(want, "…") || len(want) > maxAuditReason || !utf8.ValidString(want) {
				t.Errorf("a long reason is cut to %q (%d bytes)", want, len(want))
			}
		}
		if r.Reason != want {
			t.Errorf("reason %q, want %q", r.Reason, want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ééééé", 8, "éé…"}, // a cut inside é moves back to its start
	} {
		if got := clip(c.s, c.n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestServerMaxRunsChecked: a Server refuses to start with a MaxRuns out
// of range, naming --max-runs.
func TestServerMaxRunsChecked(t *testing.T) {
	for _, n := range []int{-1, MaxRunsCeiling + 1} {
		s := &Server{MaxRuns: n}
		if err := s.Load(); err == nil || !strings.Contains(err.Error(), "--max-runs") {
			t.Errorf("MaxRuns %d: %v", n, err)
		}
	}
	if err := (&Server{MaxRuns: 1}).Load(); err != nil {
		t.Errorf("MaxRuns 1: %v", err)
	}
}

// A freed slot goes to the waiting call of the client that runs the
// fewest, the oldest first among equals.
func TestRunQueueFair(t *testing.T) {
	greedy, other := peerKey{1000, 1}, peerKey{1000, 2}
	q := runQueue{max: 2}
	for range 2 {
		if w, e := q.take(greedy, true); w != nil || e != nil {
			t.Fatalf("a free slot: %v %v", w, e)
		}
	}
	g1, _ := q.take(greedy, true)
	g2, _ := q.take(greedy, true)
	o1, _ := q.take(other, true)
	if g1 == nil || g2 == nil || o1 == nil {
		t.Fatal("calls over max are not queued")
	}
	q.release(greedy)
	if !o1.granted || g1.granted || g2.granted {
		t.Errorf("the other client's call waited behind the greedy one's: granted %v %v %v", g1.granted, g2.granted, o1.granted)
	}
	q.release(greedy)
	if !g1.granted || g2.granted {
		t.Errorf("among one client's calls the oldest goes first: %v %v", g1.granted, g2.granted)
	}
	if q.leave(g2) || len(q.waiting) != 0 {
		t.Errorf("a call that gave up stays queued")
	}
	if _, e := (&runQueue{max: 1, running: 1}).take(other, false); e == nil || !strings.Contains(e.Message, "--max-runs") {
		t.Errorf("no queue: %v, want the refusal at once", e)
	}
	full := runQueue{max: 1, running: 1, waiting: make([]*waiter, MaxQueued)}
	if _, e := full.take(other, true); e == nil || !strings.Contains(e.Message, "wait for a slot") {
		t.Errorf("a full queue: %v, want a refusal", e)
	}
}

// When the places for waiting connections are full, a client with fewer
// than the one with the most takes that one's oldest place; a client
// already at its share is refused.
func TestPendingShare(t *testing.T) {
	greedy, other := peerKey{1000, 1}, peerKey{1000, 2}
	var ps pendingSet
	var conns []*pendingConn
	for range 4 {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		pc, e := ps.add(a, greedy, 4)
		if e != nil {
			t.Fatal(e)
		}
		conns = append(conns, pc)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, e := ps.add(a, greedy, 4); e == nil {
		t.Fatal("a fifth connection of the same client was let in")
	}
	pc, e := ps.add(a, other, 4)
	if e != nil || pc == nil {
		t.Fatalf("another client was refused: %v", e)
	}
	if !conns[0].evicted || conns[1].evicted || ps.n != 4 || len(ps.byPeer[greedy]) != 3 {
		t.Errorf("want the greedy client's oldest evicted: %v, %d waiting", conns[0].evicted, ps.n)
	}
	if conns[0].ctx.Err() == nil {
		t.Error("the evicted connection's wait was not cancelled")
	}
	// 3 against 1: one more for the other client, then each has 2.
	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	if _, e := ps.add(c, other, 4); e != nil {
		t.Fatalf("the other client's second: %v", e)
	}
	if _, e := ps.add(c, other, 4); e == nil {
		t.Error("the other client took more than an equal share")
	}
	ps.remove(pc)
	ps.remove(pc) // twice is harmless
	if ps.n != 3 {
		t.Errorf("%d waiting after a removal, want 3", ps.n)
	}
}
