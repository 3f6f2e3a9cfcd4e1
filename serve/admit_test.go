package serve

import (
	"fmt"
	"io"
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
