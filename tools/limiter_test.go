package tools

import (
	"errors"
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
