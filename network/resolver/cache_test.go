package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"
)

func testCache(up *fakeUpstream, max int) (*AddrCache, *clock) {
	c := NewAddrCache(up, 0, max)
	clk := newClock()
	c.now = clk.now
	return c, clk
}

func TestCacheTTL(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{"a.example": addrs("1.2.3.4", "2606:4700::1")})
	c, clk := testCache(up, 0)
	ctx := context.Background()
	t0 := clk.now()

	got, exp, err := c.Resolve(ctx, "ip4", "A.Example.")
	if err != nil || !reflect.DeepEqual(got, addrs("1.2.3.4")) || !exp.Equal(t0.Add(DefaultTTL)) {
		t.Fatalf("first: %v %v %v", got, exp, err)
	}
	got[0] = netip.MustParseAddr("9.9.9.9") // the caller's copy

	clk.advance(DefaultTTL - time.Second)
	got, exp, err = c.Resolve(ctx, "ip4", "a.example")
	if err != nil || !reflect.DeepEqual(got, addrs("1.2.3.4")) || !exp.Equal(t0.Add(DefaultTTL)) || up.callsFor("a.example") != 1 {
		t.Fatalf("within the TTL: %v %v %v, %d lookups; want the cached answer", got, exp, err, up.callsFor("a.example"))
	}

	clk.advance(time.Second)
	_, exp, err = c.Resolve(ctx, "ip4", "a.example")
	if err != nil || !exp.Equal(clk.now().Add(DefaultTTL)) || up.callsFor("a.example") != 2 {
		t.Fatalf("at expiry: %v %v, %d lookups; want a new lookup", exp, err, up.callsFor("a.example"))
	}

	// The families are kept apart.
	got, _, err = c.Resolve(ctx, "ip6", "a.example")
	if err != nil || !reflect.DeepEqual(got, addrs("2606:4700::1")) || up.callsFor("a.example") != 3 {
		t.Fatalf("ip6: %v %v, %d lookups", got, err, up.callsFor("a.example"))
	}
}

// TestLookupNetIP: a proxy that resolves through the cache gets what the
// DNS answer came from, without a second upstream lookup.
func TestLookupNetIP(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{"a.example": addrs("2606:4700::1", "1.2.3.4")})
	c, _ := testCache(up, 0)
	var proxySide Lookup = c
	ctx := context.Background()
	v4, _, err := c.Resolve(ctx, "ip4", "a.example")
	if err != nil {
		t.Fatal(err)
	}
	got, err := proxySide.LookupNetIP(ctx, "ip", "a.example.")
	if err != nil || !reflect.DeepEqual(got, addrs("1.2.3.4", "2606:4700::1")) || !reflect.DeepEqual(got[:1], v4) {
		t.Fatalf("LookupNetIP: %v %v", got, err)
	}
	if n := up.callsFor("a.example"); n != 2 {
		t.Errorf("%d upstream lookups; want one per family", n)
	}
}

func TestCacheNegativeAndErrors(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{"v4.example": addrs("1.2.3.4")})
	up.fail["broken.example"] = errors.New("upstream timed out")
	c, _ := testCache(up, 0)
	ctx := context.Background()

	for range 3 {
		if _, _, err := c.Resolve(ctx, "ip6", "v4.example"); !isNotFound(err) {
			t.Fatalf("AAAA of a v4-only name: %v, want not found", err)
		}
	}
	if n := up.callsFor("v4.example"); n != 1 {
		t.Errorf("not found looked up %d times; want it kept for the TTL", n)
	}
	for range 3 {
		if _, exp, err := c.Resolve(ctx, "ip4", "broken.example"); err == nil || isNotFound(err) || !exp.IsZero() {
			t.Fatalf("failing upstream: %v %v", exp, err)
		}
	}
	if n := up.callsFor("broken.example"); n != 3 {
		t.Errorf("a failure looked up %d times in 3 requests; want it not kept", n)
	}
	if _, _, err := c.Resolve(ctx, "tcp", "v4.example"); err == nil {
		t.Error("network tcp accepted")
	}
}

func TestCacheBoth(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{
		"dual.example": addrs("2606:4700::1", "1.2.3.4"),
		"v6.example":   addrs("2606:4700::2"),
	})
	up.fail["broken.example"] = errors.New("SERVFAIL")
	c, clk := testCache(up, 0)
	ctx := context.Background()
	if got, exp, err := c.Resolve(ctx, "ip", "dual.example"); err != nil || !reflect.DeepEqual(got, addrs("1.2.3.4", "2606:4700::1")) || !exp.Equal(clk.now().Add(DefaultTTL)) {
		t.Errorf("dual: %v %v %v; want IPv4 first", got, exp, err)
	}
	if got, _, err := c.Resolve(ctx, "ip", "v6.example"); err != nil || !reflect.DeepEqual(got, addrs("2606:4700::2")) {
		t.Errorf("v6 only: %v %v", got, err)
	}
	if _, _, err := c.Resolve(ctx, "ip", "none.example"); !isNotFound(err) {
		t.Errorf("unknown: %v, want not found", err)
	}
	if _, _, err := c.Resolve(ctx, "ip", "broken.example"); err == nil || isNotFound(err) {
		t.Errorf("broken: %v, want the upstream's failure", err)
	}
}

// TestCacheShared: concurrent requests for one name share one lookup.
func TestCacheShared(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{"a.example": addrs("1.2.3.4")})
	up.started, up.hold = make(chan string, 1), make(chan struct{})
	c, _ := testCache(up, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			got, _, err := c.Resolve(context.Background(), "ip4", "a.example")
			if err == nil && !reflect.DeepEqual(got, addrs("1.2.3.4")) {
				err = fmt.Errorf("got %v", got)
			}
			errs <- err
		})
	}
	<-up.started
	close(up.hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := up.callsFor("a.example"); n != 1 {
		t.Errorf("%d lookups for 20 concurrent requests; want 1", n)
	}
}

// TestCacheAbandoned: a lookup that ends with its caller's context is not
// kept, and another caller with time left looks up again.
func TestCacheAbandoned(t *testing.T) {
	up := newUpstream(map[string][]netip.Addr{"a.example": addrs("1.2.3.4")})
	up.started, up.hold = make(chan string), make(chan struct{})
	c, _ := testCache(up, 0)

	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, _, err := c.Resolve(ctx, "ip4", "a.example")
		leader <- err
	}()
	<-up.started
	waiter := make(chan error, 1)
	go func() {
		got, _, err := c.Resolve(context.Background(), "ip4", "a.example")
		if err == nil && !reflect.DeepEqual(got, addrs("1.2.3.4")) {
			err = fmt.Errorf("got %v", got)
		}
		waiter <- err
	}()
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want its context's error", err)
	}
	<-up.started // the waiter's own lookup
	up.hold <- struct{}{}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if n := up.callsFor("a.example"); n != 2 {
		t.Errorf("%d lookups; want 2", n)
	}
}

func TestCacheBounded(t *testing.T) {
	names := map[string][]netip.Addr{}
	for i := range 100 {
		names[fmt.Sprintf("n%d.example", i)] = addrs(fmt.Sprintf("1.2.3.%d", i))
	}
	up := newUpstream(names)
	c, clk := testCache(up, 8)
	for i := range 100 {
		got, _, err := c.Resolve(context.Background(), "ip4", fmt.Sprintf("n%d.example", i))
		if err != nil || !reflect.DeepEqual(got, names[fmt.Sprintf("n%d.example", i)]) {
			t.Fatalf("n%d: %v %v", i, got, err)
		}
		clk.advance(time.Millisecond)
		if len(c.m) > 8 {
			t.Fatalf("%d entries after %d names; want at most 8", len(c.m), i+1)
		}
	}
	// The newest stay: the oldest expire first and went first.
	if _, _, _, ok := c.cached(cacheKey{"ip4", "n99.example"}); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, _, _, ok := c.cached(cacheKey{"ip4", "n0.example"}); ok {
		t.Error("the oldest entry was kept")
	}
}

func TestNormalise(t *testing.T) {
	var many []netip.Addr
	for i := range 100 {
		many = append(many, netip.AddrFrom4([4]byte{1, 2, 3, byte(i)}))
	}
	for _, tc := range []struct {
		network string
		in      []netip.Addr
		want    []netip.Addr
	}{
		{"ip4", addrs("1.2.3.4", "::ffff:1.2.3.5", "2606:4700::1", "1.2.3.4", "::ffff:1.2.3.4"), addrs("1.2.3.4", "1.2.3.5")},
		{"ip6", addrs("1.2.3.4", "::ffff:1.2.3.5", "2606:4700::1", "fe80::1%eth0", "fe80::1"), addrs("::ffff:1.2.3.5", "2606:4700::1", "fe80::1")},
		{"ip4", append([]netip.Addr{{}}, many...), many[:MaxAddrs]},
		{"ip6", nil, []netip.Addr{}},
	} {
		if got := normalise(tc.in, tc.network); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("normalise(%v, %s) = %v, want %v", tc.in, tc.network, got, tc.want)
		}
	}
}
