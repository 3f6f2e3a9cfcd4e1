package tools

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Rate is a tool's resolved rate limits; 0 is no limit.
type Rate struct {
	PerMinute   int // calls admitted in any sliding minute
	PerHour     int // calls admitted in any sliding hour
	Concurrency int // calls running at once
}

// Defaults is what a tool gets for what its file leaves unset: the
// server-wide default.
type Defaults struct {
	// Profile, ReadOnlyWorkdir and Network apply to a tool that names no
	// profile; one that names a profile takes all three from it.
	Profile         string
	ReadOnlyWorkdir bool
	Network         string // a profile's network mode: "none"
	// Limits lie over the profile's [limits]; a tool's own limits lie
	// over both.
	Limits map[string]string
	// Rate fills each rate key a tool leaves unset.
	Rate Rate
}

// ServerDefaults are the starting point the practice suggests: 10 calls
// a minute, a read-only working directory, no network, a 10 s timeout.
var ServerDefaults = Defaults{
	Profile:         "default",
	ReadOnlyWorkdir: true,
	Network:         "none",
	Limits:          map[string]string{"timeout": "10s"},
	Rate:            Rate{PerMinute: 10, Concurrency: 4},
}

// Policy is what one tool runs under, the file's keys over Defaults.
type Policy struct {
	Profile         string
	ReadOnlyWorkdir bool
	Network         string // "" when the profile decides
	Limits          map[string]string
	Rate            Rate
}

// For resolves t's policy: its own keys over d.
func (d Defaults) For(t *Tool) Policy {
	p := Policy{Profile: t.Profile, Limits: maps.Clone(d.Limits), Rate: d.Rate}
	if p.Profile == "" {
		p.Profile, p.ReadOnlyWorkdir, p.Network = d.Profile, d.ReadOnlyWorkdir, d.Network
	}
	if p.Limits == nil {
		p.Limits = map[string]string{}
	}
	maps.Copy(p.Limits, t.Limits)
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Rate.PerMinute, t.Rate.PerMinute)
	set(&p.Rate.PerHour, t.Rate.PerHour)
	set(&p.Rate.Concurrency, t.Rate.Concurrency)
	return p
}

// Rates returns the rate of each tool of f under d, for NewLimiter.
func (d Defaults) Rates(f *File) map[string]Rate {
	out := make(map[string]Rate, len(f.Tools))
	for _, t := range f.Tools {
		out[t.Name] = d.For(t).Rate
	}
	return out
}

// Limiter admits calls per tool under its Rate, across all callers. One
// mutex orders every decision, so a burst of concurrent calls is admitted
// exactly up to the limits. Time is the caller's (now), so that tests and
// the server decide with the same clock.
type Limiter struct {
	mu    sync.Mutex
	tools map[string]*toolState
}

type toolState struct {
	rate    Rate
	starts  []time.Time // admissions within the longest limited window, oldest first
	running int
}

// NewLimiter returns a limiter for the tools of rates.
func NewLimiter(rates map[string]Rate) *Limiter {
	l := &Limiter{tools: make(map[string]*toolState, len(rates))}
	for name, r := range rates {
		l.tools[name] = &toolState{rate: r}
	}
	return l
}

// LimitError is a call refused by a rate limit.
type LimitError struct {
	Tool  string
	Limit string // "per_minute", "per_hour" or "concurrency"
	Max   int
	// RetryAfter is the time until a call would be admitted; 0 for
	// concurrency, which frees when a running call ends.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	if e.Limit == "concurrency" {
		return fmt.Sprintf("tool %s: rate limit concurrency = %d reached: %d calls running; retry when one ends", e.Tool, e.Max, e.Max)
	}
	return fmt.Sprintf("tool %s: rate limit %s = %d reached; retry after %s", e.Tool, e.Limit, e.Max, e.RetryAfter)
}

// Admit admits one call of tool at now, or refuses it with a
// *LimitError. An admitted call counts in its windows from now on and
// runs until release is called (release is safe to call more than once).
// A refused call counts nowhere.
func (l *Limiter) Admit(tool string, now time.Time) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.tools[tool]
	if s == nil {
		return nil, fmt.Errorf("tool %s: not declared", tool)
	}
	s.prune(now)
	var refusal *LimitError
	for _, w := range []struct {
		key    string
		max    int
		window time.Duration
	}{{"per_minute", s.rate.PerMinute, time.Minute}, {"per_hour", s.rate.PerHour, time.Hour}} {
		if w.max <= 0 {
			continue
		}
		in := s.inWindow(now, w.window)
		if len(in) < w.max {
			continue
		}
		// The call after this one is admitted when the oldest admission
		// that keeps the window full leaves it.
		retry := roundUp(in[len(in)-w.max].Add(w.window).Sub(now))
		if refusal == nil || retry > refusal.RetryAfter {
			refusal = &LimitError{Tool: tool, Limit: w.key, Max: w.max, RetryAfter: retry}
		}
	}
	if refusal != nil {
		return nil, refusal
	}
	if c := s.rate.Concurrency; c > 0 && s.running >= c {
		return nil, &LimitError{Tool: tool, Limit: "concurrency", Max: c}
	}
	s.running++
	if s.rate.PerMinute > 0 || s.rate.PerHour > 0 {
		// Kept in order even if callers' clocks interleave.
		i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i].After(now) })
		s.starts = slices.Insert(s.starts, i, now)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			s.running--
			l.mu.Unlock()
		})
	}, nil
}

// inWindow returns the admissions in (now-window, now], and any later
// one a caller's earlier clock reading recorded, which counts too.
func (s *toolState) inWindow(now time.Time, window time.Duration) []time.Time {
	from := now.Add(-window)
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i].After(from) })
	return s.starts[i:]
}

// prune drops admissions older than every limited window.
func (s *toolState) prune(now time.Time) {
	keep := time.Minute
	if s.rate.PerHour > 0 {
		keep = time.Hour
	}
	from := now.Add(-keep)
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i].After(from) })
	s.starts = slices.Delete(s.starts, 0, i)
}

// roundUp rounds d up to a tenth of a second, so that "retry after 12.3s"
// is never too early.
func roundUp(d time.Duration) time.Duration {
	const step = 100 * time.Millisecond
	if d <= 0 {
		return 0
	}
	return (d + step - 1) / step * step
}
