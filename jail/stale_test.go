package jail

import (
	"testing"
	"time"
)

func TestCleanupDue(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		running bool
		last    time.Time
		now     time.Time
		want    bool
	}{
		{"first run of the process", false, time.Time{}, t0, true},
		{"first run while one runs", true, time.Time{}, t0, false},
		{"just after one", false, t0, t0.Add(time.Second), false},
		{"just before the period", false, t0, t0.Add(staleEvery - time.Nanosecond), false},
		{"at the period", false, t0, t0.Add(staleEvery), true},
		{"long after", false, t0, t0.Add(time.Hour), true},
		{"long after but one runs", true, t0, t0.Add(time.Hour), false},
		{"clock went back", false, t0, t0.Add(-time.Minute), true},
	} {
		if got := cleanupDue(c.running, c.last, c.now); got != c.want {
			t.Errorf("%s: cleanupDue = %v, want %v", c.name, got, c.want)
		}
	}
}

// Runs at once share one clean-up, and the next is due only after it ended.
func TestStaleCleanupOnceAtATime(t *testing.T) {
	var s staleCleanup
	t0 := time.Now()
	if !s.begin(t0) {
		t.Fatal("the first run does not clean up")
	}
	if s.begin(t0) {
		t.Fatal("a second clean-up began while one runs")
	}
	s.end(t0)
	if s.begin(t0.Add(time.Second)) {
		t.Fatal("a clean-up began a second after the last")
	}
	if !s.begin(t0.Add(staleEvery)) {
		t.Fatal("no clean-up a period after the last")
	}
}
