package tools

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func limitOf(err error) (string, time.Duration) {
	var le *LimitError
	if !errors.As(err, &le) {
		return "", -1
	}
	return le.Limit, le.RetryAfter
}

func TestLimiterMinuteWindow(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {PerMinute: 3}})
	for i, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		if _, err := l.Admit("t", t0.Add(at)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := l.Admit("t", t0.Add(47700*time.Millisecond))
	if lim, retry := limitOf(err); lim != "per_minute" || retry != 12300*time.Millisecond {
		t.Fatalf("4th call: %v", err)
	}
	if want := "tool t: rate limit per_minute = 3 reached; retry after 12.3s"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	// Just before the first call leaves the window: still full.
	if _, err := l.Admit("t", t0.Add(time.Minute-time.Nanosecond)); err == nil {
		t.Error("admitted before the window moved")
	} else if _, retry := limitOf(err); retry != 100*time.Millisecond {
		t.Errorf("retry %v rounds up to a tenth", retry)
	}
	// Exactly a minute after the first call, it has left.
	if _, err := l.Admit("t", t0.Add(time.Minute)); err != nil {
		t.Errorf("at the window's edge: %v", err)
	}
	if _, err := l.Admit("t", t0.Add(time.Minute)); err == nil {
		t.Error("a refused call's slot was reused")
	} else if _, retry := limitOf(err); retry != 10*time.Second {
		t.Errorf("next retry %v, want 10s (the second call leaves)", retry)
	}
}

func TestLimiterHourWindow(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {PerMinute: 2, PerHour: 3}})
	for _, at := range []time.Duration{0, time.Second, 2 * time.Minute} {
		if _, err := l.Admit("t", t0.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.Admit("t", t0.Add(10*time.Minute))
	if lim, retry := limitOf(err); lim != "per_hour" || retry != 50*time.Minute {
		t.Fatalf("hour: %v", err)
	}
	if err.Error() != "tool t: rate limit per_hour = 3 reached; retry after 50m0s" {
		t.Errorf("message %q", err)
	}
	// Both windows full: the longer wait is the one reported.
	_, err = l.Admit("t", t0.Add(2*time.Minute+time.Second))
	if lim, _ := limitOf(err); lim != "per_hour" {
		t.Errorf("both full: %v", err)
	}
	if _, err := l.Admit("t", t0.Add(time.Hour)); err != nil {
		t.Errorf("after the hour: %v", err)
	}
}

func TestLimiterConcurrency(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {Concurrency: 2}, "u": {}})
	r1, err := l.Admit("t", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit("t", t0); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit("t", t0)
	if lim, retry := limitOf(err); lim != "concurrency" || retry != 0 {
		t.Fatalf("third: %v", err)
	}
	if err.Error() != "tool t: rate limit concurrency = 2 reached: 2 calls running; retry when one ends" {
		t.Errorf("message %q", err)
	}
	r1()
	r1() // a second release frees nothing more
	if _, err := l.Admit("t", t0); err != nil {
		t.Errorf("after a release: %v", err)
	}
	if _, err := l.Admit("t", t0); err == nil {
		t.Error("a double release freed two slots")
	}
	// No limits at all: always admitted, nothing recorded.
	for i := 0; i < 1000; i++ {
		if _, err := l.Admit("u", t0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.tools["u"].starts); n != 0 {
		t.Errorf("an unlimited tool recorded %d starts", n)
	}
	if _, err := l.Admit("nope", t0); err == nil {
		t.Error("an undeclared tool was admitted")
	}
}

func TestLimiterPrunes(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {PerMinute: 5}})
	for i := 0; i < 100; i++ {
		if _, err := l.Admit("t", t0.Add(time.Duration(i)*13*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.tools["t"].starts); n > 5 {
		t.Errorf("%d starts kept for a one-minute window of 5", n)
	}
}

// A burst of goroutines, all at the same instant, admits exactly the
// limit: per_minute, and concurrency while none has ended.
func TestLimiterBurst(t *testing.T) {
	for _, tc := range []struct {
		rate Rate
		want int
	}{
		{Rate{PerMinute: 10}, 10},
		{Rate{PerMinute: 100, PerHour: 37}, 37},
		{Rate{Concurrency: 7}, 7},
		{Rate{PerMinute: 500, Concurrency: 999}, 500},
	} {
		l := NewLimiter(map[string]Rate{"t": tc.rate})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := l.Admit("t", t0); err == nil {
					admitted.Add(1)
				} else if lim, _ := limitOf(err); lim == "" {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := admitted.Load(); got != int64(tc.want) {
			t.Errorf("%+v: 1000 concurrent calls admitted %d, want %d", tc.rate, got, tc.want)
		}
	}
}

// Calls that end while others arrive never run more than the cap at once.
func TestLimiterConcurrencyChurn(t *testing.T) {
	const limit = 3
	l := NewLimiter(map[string]Rate{"t": {Concurrency: limit}})
	var running, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := l.Admit("t", t0)
			if err != nil {
				return
			}
			admitted.Add(1)
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			running.Add(-1)
			release()
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > limit || admitted.Load() < 1 {
		t.Errorf("peak %d running (cap %d), %d admitted", p, limit, admitted.Load())
	}
	if r := l.tools["t"].running; r != 0 {
		t.Errorf("%d still counted running after every release", r)
	}
}

// queued waits until tool has n calls in line.
func queued(t *testing.T, l *Limiter, tool string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		got := l.Waiting(tool)
		if got == n {
			return
		}
		if i > 100000 {
			t.Fatalf("%d calls in line, want %d", got, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func clock() time.Time { return t0 }

// Calls over the concurrency wait in line and start in order of arrival,
// each when a running call ends; the windows count them from their start.
func TestLimiterQueueInOrder(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {Concurrency: 2, Queue: time.Hour}})
	var first []func()
	for i := 0; i < 2; i++ {
		r, waited, err := l.Acquire(context.Background(), "t", clock)
		if err != nil || waited != 0 {
			t.Fatalf("call %d: %v, waited %v", i, err, waited)
		}
		first = append(first, r)
	}
	type started struct {
		i       int
		release func()
	}
	order := make(chan started, 3)
	for i := 0; i < 3; i++ {
		go func() {
			r, _, err := l.Acquire(context.Background(), "t", clock)
			if err != nil {
				t.Error(err)
				return
			}
			order <- started{i, r}
		}()
		queued(t, l, "t", i+1)
	}
	// An Admit behind the line is refused, even with a slot about to free.
	if _, err := l.Admit("t", t0); err == nil {
		t.Error("Admit jumped the line")
	}
	first[0]()
	s := <-order
	if s.i != 0 {
		t.Fatalf("call %d started first, want 0", s.i)
	}
	first[1]()
	first[1]() // twice frees nothing more
	if s = <-order; s.i != 1 {
		t.Fatalf("call %d started second, want 1", s.i)
	}
	select {
	case s := <-order:
		t.Fatalf("call %d started with 2 running", s.i)
	default:
	}
	s.release()
	if s = <-order; s.i != 2 {
		t.Fatalf("call %d started third, want 2", s.i)
	}
	if st := l.tools["t"]; st.running != 2 || len(st.queue) != 0 {
		t.Errorf("running %d, queue %d; want 2 and 0", st.running, len(st.queue))
	}
}

// A call that waits out rate.queue is refused with the concurrency limit
// and leaves the line; with no queue it is refused at once.
func TestLimiterQueueTimeout(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {Concurrency: 1, Queue: time.Millisecond}, "u": {Concurrency: 1}})
	r, _, err := l.Acquire(context.Background(), "t", clock)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = l.Acquire(context.Background(), "t", clock)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "concurrency" || le.Queued != time.Millisecond {
		t.Fatalf("after the queue time: %v", err)
	}
	if want := "tool t: rate limit concurrency = 1 reached: 1 calls running, and none ended within the 1ms this call waited (rate.queue); retry when one ends"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if n := len(l.tools["t"].queue); n != 0 {
		t.Errorf("%d calls left in line", n)
	}
	r()
	if l.tools["t"].running != 0 {
		t.Error("the release went to a call that had left")
	}
	ru, _, err := l.Acquire(context.Background(), "u", clock)
	if err != nil {
		t.Fatal(err)
	}
	defer ru()
	if _, _, err := l.Acquire(context.Background(), "u", clock); !errors.As(err, &le) || le.Queued != 0 {
		t.Errorf("queue 0: %v", err)
	}
}

// A queued call whose context ends (its client went away, or cancelled
// it) leaves the line at once and counts nowhere.
func TestLimiterQueueCancel(t *testing.T) {
	l := NewLimiter(map[string]Rate{"t": {PerMinute: 3, Concurrency: 1, Queue: time.Hour}})
	r, _, err := l.Acquire(context.Background(), "t", clock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := l.Acquire(ctx, "t", clock)
		done <- err
	}()
	queued(t, l, "t", 1)
	go func() {
		_, _, err := l.Acquire(context.Background(), "t", clock)
		done <- err
	}()
	queued(t, l, "t", 2)
	// The window counts the two in line: a fourth call is refused at
	// once, a full window from now at the earliest.
	_, _, err = l.Acquire(context.Background(), "t", clock)
	if lim, retry := limitOf(err); lim != "per_minute" || retry != time.Minute {
		t.Errorf("a call past the window with two in line: %v", err)
	}
	cancel()
	err = <-done
	var qe *QueueError
	if !errors.As(err, &qe) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "in the queue for a concurrency slot (context canceled); it never ran") {
		t.Fatalf("cancelled in line: %v", err)
	}
	queued(t, l, "t", 1)
	// Its place in the window is free again: a call may queue.
	go func() {
		_, _, err := l.Acquire(context.Background(), "t", clock)
		done <- err
	}()
	queued(t, l, "t", 2)
	r()
	if err := <-done; err != nil {
		t.Fatalf("the call behind the cancelled one: %v", err)
	}
	if n := len(l.tools["t"].starts); n != 2 {
		t.Errorf("%d starts recorded, want 2 (the cancelled call counts nowhere)", n)
	}
}

// A burst far over the concurrency, with a queue, runs every call, never
// more than the cap at once.
func TestLimiterQueueBurst(t *testing.T) {
	const limit = 7
	l := NewLimiter(map[string]Rate{"t": {Concurrency: limit, Queue: time.Hour}})
	var running, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			release, _, err := l.Acquire(context.Background(), "t", clock)
			if err != nil {
				t.Error(err)
				return
			}
			admitted.Add(1)
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			running.Add(-1)
			release()
		}()
	}
	close(start)
	wg.Wait()
	if p, a := peak.Load(), admitted.Load(); p > limit || a != 1000 {
		t.Errorf("peak %d running (cap %d), %d of 1000 admitted", p, limit, a)
	}
	if st := l.tools["t"]; st.running != 0 || len(st.queue) != 0 {
		t.Errorf("after the burst: %d running, %d in line", st.running, len(st.queue))
	}
}
