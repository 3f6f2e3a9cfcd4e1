package jail

import (
	"sync"
	"time"
)

// staleEvery is how often a long-lived process cleans up the cgroups of
// dead supervisors alongside its runs. A CLI run is a process of its own
// and always cleans; a server or an embedder running many jails a second
// would otherwise list every cgroup hierarchy's base for each of them
// (about 0.2 ms of CPU per run on a quiet v1 host, more with many groups).
const staleEvery = 30 * time.Second

// stale is the process's clean-up of dead supervisors' cgroups.
var stale staleCleanup

type staleCleanup struct {
	mu      sync.Mutex
	running bool
	last    time.Time // when the last clean-up ended; zero: never
}

// begin says whether a run started at now should clean up, and if so
// marks a clean-up as running; end must follow.
func (s *staleCleanup) begin(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !cleanupDue(s.running, s.last, now) {
		return false
	}
	s.running = true
	return true
}

// end records a finished clean-up.
func (s *staleCleanup) end(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.last = false, now
}

// cleanupDue is the decision: never two at once, the first one always,
// then one per staleEvery.
func cleanupDue(running bool, last, now time.Time) bool {
	switch {
	case running:
		return false
	case last.IsZero():
		return true
	default:
		return now.Sub(last) >= staleEvery || now.Before(last)
	}
}
