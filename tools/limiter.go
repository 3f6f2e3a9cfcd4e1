package tools

import (
	"context"
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
	// Queue is how long a call that finds Concurrency calls running
	// waits for one to end (in order of arrival) before it is refused; 0
	// refuses it at once. The windows never queue: a call they refuse is
	// refused at once, with the time until the next would be admitted.
	Queue time.Duration
}

// MaxQueue bounds rate.queue: a queued call holds its client's request
// open, and a host's own request timeout is of the order of minutes.
const MaxQueue = 10 * time.Minute

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
// a minute, 4 at once (a fifth waits up to 10 s for one to end), a
// read-only working directory, no network, a 10 s timeout.
var ServerDefaults = Defaults{
	Profile:         "default",
	ReadOnlyWorkdir: true,
	Network:         "none",
	Limits:          map[string]string{"timeout": "10s"},
	Rate:            Rate{PerMinute: 10, Concurrency: 4, Queue: DefaultQueue},
}

// DefaultQueue is rate.queue when no file sets it: an MCP host sends the
// tool calls of one model turn at once, and a few seconds lets a burst
// above the concurrency run instead of failing.
const DefaultQueue = 10 * time.Second

// Policy is what one tool runs under, the file's keys over Defaults.
type Policy struct {
	Profile         string
	ReadOnlyWorkdir bool
	Network         string // "" when the profile decides
	Limits          map[string]string
	Rate            Rate
	// Changes is the tool's change mode; "" when its profile decides.
	Changes string
}

// For resolves t's policy: its own keys over d.
func (d Defaults) For(t *Tool) Policy {
	p := Policy{Profile: t.Profile, Limits: maps.Clone(d.Limits), Rate: d.Rate, Changes: t.Changes}
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
	if t.Rate.Queue != nil {
		p.Rate.Queue = *t.Rate.Queue
	}
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
// the server decide with the same clock; only the wait of a queued call
// is measured on the real clock.
type Limiter struct {
	mu    sync.Mutex
	tools map[string]*toolState
}

type toolState struct {
	rate    Rate
	starts  []time.Time // admissions within the longest limited window, oldest first
	running int
	// queue are the calls waiting for a concurrency slot, oldest first.
	// Each counts in the windows already: a call behind them is refused
	// at once when they would fill a window.
	queue []*waiter
}

// waiter is a queued call. A release hands its slot to the first waiter
// (running stays the same) and closes ready.
type waiter struct {
	now     func() time.Time
	ready   chan struct{}
	release func() // set before ready is closed
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
	// Queued is how long a concurrency refusal waited in the queue
	// (rate.queue); 0 when it was refused at once.
	Queued time.Duration
}

func (e *LimitError) Error() string {
	if e.Limit == "concurrency" && e.Queued > 0 {
		return fmt.Sprintf("tool %s: rate limit concurrency = %d reached: %d calls running, and none ended within the %s this call waited (rate.queue); retry when one ends", e.Tool, e.Max, e.Max, e.Queued)
	}
	if e.Limit == "concurrency" {
		return fmt.Sprintf("tool %s: rate limit concurrency = %d reached: %d calls running; retry when one ends", e.Tool, e.Max, e.Max)
	}
	return fmt.Sprintf("tool %s: rate limit %s = %d reached; retry after %s", e.Tool, e.Limit, e.Max, e.RetryAfter)
}

// QueueError is a call that left the queue because its context ended
// (its client went away or cancelled it) before a slot freed.
type QueueError struct {
	Tool   string
	Queued time.Duration
	Err    error // the context's error
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("tool %s: cancelled after %s in the queue for a concurrency slot (%v); it never ran", e.Tool, e.Queued.Round(time.Millisecond), e.Err)
}

func (e *QueueError) Unwrap() error { return e.Err }

// Admit admits one call of tool at now, or refuses it with a
// *LimitError, at once: it never queues. An admitted call counts in its
// windows from now on and runs until release is called (release is safe
// to call more than once). A refused call counts nowhere.
func (l *Limiter) Admit(tool string, now time.Time) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.tools[tool]
	if s == nil {
		return nil, fmt.Errorf("tool %s: not declared", tool)
	}
	if err := s.windows(tool, now); err != nil {
		return nil, err
	}
	if !s.free() {
		return nil, &LimitError{Tool: tool, Limit: "concurrency", Max: s.rate.Concurrency}
	}
	return l.start(s, now), nil
}

// Acquire is Admit, except that a call that finds the tool's concurrency
// reached waits in line for a running call to end, up to the tool's
// rate.queue, and leaves the line when ctx ends (a *QueueError). The
// windows are decided when the call arrives, counting the calls in line
// before it; an admitted call's windows count from when it starts (now(),
// read then). The time it waited is returned with release.
func (l *Limiter) Acquire(ctx context.Context, tool string, now func() time.Time) (release func(), waited time.Duration, err error) {
	l.mu.Lock()
	s := l.tools[tool]
	if s == nil {
		l.mu.Unlock()
		return nil, 0, fmt.Errorf("tool %s: not declared", tool)
	}
	t := now()
	if err := s.windows(tool, t); err != nil {
		l.mu.Unlock()
		return nil, 0, err
	}
	if s.free() {
		release = l.start(s, t)
		l.mu.Unlock()
		return release, 0, nil
	}
	if s.rate.Queue <= 0 {
		l.mu.Unlock()
		return nil, 0, &LimitError{Tool: tool, Limit: "concurrency", Max: s.rate.Concurrency}
	}
	w := &waiter{now: now, ready: make(chan struct{})}
	s.queue = append(s.queue, w)
	l.mu.Unlock()

	began := time.Now()
	timer := time.NewTimer(s.rate.Queue)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ready:
		return w.release, time.Since(began), nil
	case <-timer.C:
	case <-ctx.Done():
		cause = ctx.Err()
	}
	l.mu.Lock()
	select {
	case <-w.ready:
		// A slot came as the wait ended: a timed-out call takes it, a
		// cancelled one gives it to the next.
		l.mu.Unlock()
		if cause != nil {
			w.release()
			return nil, 0, &QueueError{Tool: tool, Queued: time.Since(began), Err: cause}
		}
		return w.release, time.Since(began), nil
	default:
	}
	s.queue = slices.DeleteFunc(s.queue, func(x *waiter) bool { return x == w })
	l.mu.Unlock()
	if cause != nil {
		return nil, 0, &QueueError{Tool: tool, Queued: time.Since(began), Err: cause}
	}
	return nil, 0, &LimitError{Tool: tool, Limit: "concurrency", Max: s.rate.Concurrency, Queued: s.rate.Queue}
}

// Waiting is how many calls of tool wait in line for a slot now.
func (l *Limiter) Waiting(tool string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.tools[tool]; s != nil {
		return len(s.queue)
	}
	return 0
}

// windows refuses a call at now that per_minute or per_hour would not
// admit, counting the calls in line (each will count when it starts).
func (s *toolState) windows(tool string, now time.Time) *LimitError {
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
		if len(in)+len(s.queue) < w.max {
			continue
		}
		// The call after this one is admitted when the oldest admission
		// that keeps the window full leaves it; with calls in line, a
		// line's worth later at the earliest.
		retry := time.Duration(0)
		if k := len(in) - w.max + len(s.queue); k < len(in) {
			retry = roundUp(in[k].Add(w.window).Sub(now))
		} else {
			retry = roundUp(w.window)
		}
		if refusal == nil || retry > refusal.RetryAfter {
			refusal = &LimitError{Tool: tool, Limit: w.key, Max: w.max, RetryAfter: retry}
		}
	}
	return refusal
}

// free says whether a call may start now: a concurrency slot is free and
// no call waits for one before it.
func (s *toolState) free() bool {
	c := s.rate.Concurrency
	return c <= 0 || s.running < c && len(s.queue) == 0
}

// start counts a call that starts at now, and returns its release. Call
// with l.mu held.
func (l *Limiter) start(s *toolState, now time.Time) func() {
	s.running++
	s.record(now)
	return l.releaser(s)
}

// record counts an admission at now in the windows.
func (s *toolState) record(now time.Time) {
	if s.rate.PerMinute > 0 || s.rate.PerHour > 0 {
		// Kept in order even if callers' clocks interleave.
		i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i].After(now) })
		s.starts = slices.Insert(s.starts, i, now)
	}
}

// releaser ends a running call once: its slot goes to the first call in
// line, which starts then, or is freed.
func (l *Limiter) releaser(s *toolState) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(s.queue) == 0 {
				s.running--
				return
			}
			w := s.queue[0]
			s.queue = s.queue[1:]
			s.record(w.now())
			w.release = l.releaser(s)
			close(w.ready)
		})
	}
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
