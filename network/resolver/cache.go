package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Lookup is the upstream the supervisor resolves allowed names with;
// *net.Resolver (net.DefaultResolver) is one. network is "ip4" or "ip6".
// LookupNetIP must return once ctx is done: Server.Close waits for the
// lookups in progress. A name with no address of the family is a
// *net.DNSError with IsNotFound, as net.Resolver reports it.
type Lookup interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Cache defaults.
const (
	// DefaultTTL is how long an answer is kept. Upstream TTLs are not
	// visible through Lookup; 30 s is short enough to follow a moving
	// service and long enough that a command's lookup and its connection
	// a moment later see the same addresses.
	DefaultTTL = 30 * time.Second
	// DefaultCacheEntries bounds the entries (a name and a family each)
	// kept at once.
	DefaultCacheEntries = 2048
	// MaxAddrs bounds the addresses kept per name and family; more are
	// dropped, the first ones kept. Real names have a handful.
	MaxAddrs = 64
)

// AddrCache resolves names through an upstream Lookup and keeps each
// answer for a fixed TTL, keyed by name and family. The DNS Server and
// the proxies share one, so the addresses the command got in a DNS answer
// are the ones the proxy finds for the same name while the answer is
// valid (the Server gives the command the entry's remaining lifetime as
// TTL), and a proxy connects to exactly the address it checked.
//
// The cache makes no policy decision: callers resolve only names the
// allowlist allows and check every address with allow.Check for the port
// they connect to.
//
// Concurrent requests for one name and family share one upstream lookup.
// An answer and "no such name" (IsNotFound) are kept for the TTL; other
// failures are not kept, so the next request asks again. When the cache
// is full, expired entries go first, then the entry closest to expiry, so
// a flood of distinct names costs bounded memory; an evicted name is
// simply looked up again (and a proxy checks whatever it then gets).
type AddrCache struct {
	up  Lookup
	ttl time.Duration
	max int
	now func() time.Time // time.Now; tests move it

	mu sync.Mutex
	m  map[cacheKey]*cacheEntry
}

type cacheKey struct{ network, name string }

type cacheEntry struct {
	// done is closed when the lookup has finished, whatever its outcome.
	done chan struct{}
	// ready: addrs, err and expires hold the outcome. abandoned: the
	// lookup ended with its caller's context, and a waiter must look up
	// again itself.
	ready, abandoned bool
	addrs            []netip.Addr
	err              error
	expires          time.Time
}

// NewAddrCache makes a cache over up (nil: net.DefaultResolver) keeping
// answers for ttl (0 or less: DefaultTTL), at most maxEntries of them
// (0 or less: DefaultCacheEntries).
func NewAddrCache(up Lookup, ttl time.Duration, maxEntries int) *AddrCache {
	if up == nil {
		up = net.DefaultResolver
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	return &AddrCache{up: up, ttl: ttl, max: maxEntries, now: time.Now, m: make(map[cacheKey]*cacheEntry)}
}

// Resolve returns name's addresses for network "ip4", "ip6" or "ip"
// (both, IPv4 first), and when they stop being valid. name is compared
// without case and a trailing dot. The slice is the caller's. A name
// without addresses of the family gives the upstream's IsNotFound error;
// with "ip", an error only when both families failed.
func (c *AddrCache) Resolve(ctx context.Context, network, name string) ([]netip.Addr, time.Time, error) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	switch network {
	case "ip4", "ip6":
		return c.resolve(ctx, cacheKey{network, name})
	case "ip":
		return c.resolveBoth(ctx, name)
	}
	return nil, time.Time{}, fmt.Errorf("resolving %q: network %q; use ip4, ip6 or ip", name, network)
}

// LookupNetIP is Resolve without the expiry: the method of
// *net.Resolver, so that a proxy configured with a resolver of that shape
// can be given the cache the DNS Server answers from.
func (c *AddrCache) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, _, err := c.Resolve(ctx, network, host)
	return addrs, err
}

func (c *AddrCache) resolveBoth(ctx context.Context, name string) ([]netip.Addr, time.Time, error) {
	var (
		wg  sync.WaitGroup
		a6  []netip.Addr
		x6  time.Time
		e6  error
		key = cacheKey{"ip6", name}
	)
	wg.Go(func() { a6, x6, e6 = c.resolve(ctx, key) })
	a4, x4, e4 := c.resolve(ctx, cacheKey{"ip4", name})
	wg.Wait()
	switch {
	case e4 != nil && e6 != nil:
		// Prefer the error that is not "no such host": it says more.
		if isNotFound(e4) && !isNotFound(e6) {
			return nil, time.Time{}, e6
		}
		return nil, time.Time{}, e4
	case e4 != nil:
		return a6, x6, nil
	case e6 != nil:
		return a4, x4, nil
	}
	if x6.Before(x4) {
		x4 = x6
	}
	return append(a4, a6...), x4, nil
}

// cached returns a fresh entry's outcome without waiting or looking up.
func (c *AddrCache) cached(k cacheKey) (addrs []netip.Addr, expires time.Time, err error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil || !e.ready || !c.now().Before(e.expires) {
		return nil, time.Time{}, nil, false
	}
	return slices.Clone(e.addrs), e.expires, e.err, true
}

func (c *AddrCache) resolve(ctx context.Context, k cacheKey) ([]netip.Addr, time.Time, error) {
	for {
		c.mu.Lock()
		now := c.now()
		e := c.m[k]
		if e != nil && e.ready && now.Before(e.expires) {
			c.mu.Unlock()
			return slices.Clone(e.addrs), e.expires, e.err
		}
		if e != nil && !e.ready {
			c.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, time.Time{}, ctx.Err()
			}
			c.mu.Lock()
			abandoned := e.abandoned
			addrs, expires, err := slices.Clone(e.addrs), e.expires, e.err
			c.mu.Unlock()
			if abandoned {
				continue
			}
			return addrs, expires, err
		}
		// Missing or expired: this caller looks it up.
		delete(c.m, k)
		c.evictLocked(now)
		e = &cacheEntry{done: make(chan struct{})}
		c.m[k] = e
		c.mu.Unlock()
		return c.lead(ctx, k, e)
	}
}

func (c *AddrCache) lead(ctx context.Context, k cacheKey, e *cacheEntry) ([]netip.Addr, time.Time, error) {
	addrs, err := c.up.LookupNetIP(ctx, k.network, k.name)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(e.done)
	keep := err == nil || isNotFound(err)
	if !keep || ctx.Err() != nil && err != nil {
		if c.m[k] == e {
			delete(c.m, k)
		}
		if ctx.Err() != nil {
			// Waiters have contexts of their own; the lookup ended with
			// this caller's.
			e.abandoned = true
			return nil, time.Time{}, ctx.Err()
		}
		e.ready, e.err = true, err
		return nil, time.Time{}, err
	}
	if err == nil {
		addrs = normalise(addrs, k.network)
	} else {
		addrs = nil
	}
	e.ready, e.addrs, e.err, e.expires = true, addrs, err, c.now().Add(c.ttl)
	return slices.Clone(addrs), e.expires, err
}

// evictLocked makes room for one entry: expired ones go, then, if the
// cache is still full, the one closest to expiry. Entries being looked up
// stay; their number is bounded by the callers'.
func (c *AddrCache) evictLocked(now time.Time) {
	if len(c.m) < c.max {
		return
	}
	var soonest *cacheKey
	var at time.Time
	for k, e := range c.m {
		if !e.ready {
			continue
		}
		if !now.Before(e.expires) {
			delete(c.m, k)
			continue
		}
		if soonest == nil || e.expires.Before(at) {
			soonest, at = &k, e.expires
		}
	}
	if len(c.m) >= c.max && soonest != nil {
		delete(c.m, *soonest)
	}
}

// normalise keeps the addresses of network's family (IPv4 unmapped for
// ip4; IPv6, IPv4-mapped included, for ip6), without zones, each once,
// at most MaxAddrs, in the upstream's order.
func normalise(addrs []netip.Addr, network string) []netip.Addr {
	out := make([]netip.Addr, 0, min(len(addrs), MaxAddrs))
	for _, a := range addrs {
		a = a.WithZone("")
		switch {
		case !a.IsValid():
			continue
		case network == "ip4" && a.Unmap().Is4():
			a = a.Unmap()
		case network == "ip6" && a.Is6():
		default:
			continue
		}
		if slices.Contains(out, a) {
			continue
		}
		if len(out) == MaxAddrs {
			break
		}
		out = append(out, a)
	}
	return out
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
