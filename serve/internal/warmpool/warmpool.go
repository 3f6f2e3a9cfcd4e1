// Package warmpool keeps the jails a server builds ahead of its calls
// (jail.Prepare), so that a call finds its namespaces, mounts, cgroup,
// Landlock ruleset and seccomp filter made and only starts its command.
// A key is a jail shape, which the caller names (package serve: the
// served profile, the workdir and the network mode of a call that brings
// no limits and no profile of its own). A call takes a parked jail of its
// key, or runs cold; either way its key is refilled in the background, up
// to the pool's size (Server.Warm). A warm jail runs one call, never a
// second: nothing of one call is visible to the next. It imports jail
// alone.
package warmpool

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/tooljail/tooljail/jail"
)

const (
	// warmMaxAge is how long a parked jail waits for a call before it is
	// closed: the host paths it bound were opened when it was built.
	warmMaxAge = time.Minute
	// warmMaxKeys bounds the shapes kept warm; the least recently used
	// goes first.
	warmMaxKeys = 8
	// warmRetryAfter is how long a shape whose jail failed to build waits
	// before the pool tries again (its calls run cold meanwhile, and say
	// why).
	warmRetryAfter = 10 * time.Second
)

// Pool is a server's warm jails, by key.
type Pool struct {
	size int // warm jails per key

	mu      sync.Mutex
	keys    map[string]*poolKey
	closed  bool
	janitor *time.Timer
	wg      sync.WaitGroup // builders and closers
}

type poolKey struct {
	spec     *jail.Spec // the shape, from a call of this key
	ready    []*jail.Warm
	building int
	used     time.Time
	failed   time.Time // the last Prepare that failed, or unfit take
	stale    bool      // spec is to be replaced by the next call's
}

// New is a pool of size jails a key, swept of old ones in the background.
func New(size int) *Pool {
	p := &Pool{size: size, keys: map[string]*poolKey{}}
	p.janitor = time.AfterFunc(warmMaxAge/4, p.sweep)
	return p
}

// Take returns a Cmd of a parked jail for spec, or nil (run it cold); it
// refills key in the background either way.
func (p *Pool) Take(key string, spec *jail.Spec) *jail.Cmd {
	if key == "" {
		return nil
	}
	var cmd *jail.Cmd
	for {
		w := p.pop(key, spec)
		if w == nil {
			break
		}
		if w.Age() > warmMaxAge {
			p.closeLater(w)
			continue
		}
		c, err := w.Command(spec)
		if err == nil {
			cmd = c
			break
		}
		if !errors.Is(err, jail.ErrWarmUnfit) {
			break
		}
		// Unfit (a workdir replaced, another shape under the same key):
		// the jail is closed; the rest of the key was built alike, and
		// the key rests as after a failed build, so that a shape that
		// never fits does not cost a build per call.
		p.cool(key)
		break
	}
	p.refill(key)
	return cmd
}

// pop takes the oldest parked jail of key, registering the key (with
// spec as its shape) when it is new.
func (p *Pool) pop(key string, spec *jail.Spec) *jail.Warm {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	k := p.keys[key]
	if k == nil {
		p.evict()
		k = &poolKey{spec: spec}
		p.keys[key] = k
	}
	k.used = time.Now()
	if k.stale && time.Since(k.failed) >= warmRetryAfter {
		k.spec, k.stale = spec, false
	}
	if len(k.ready) == 0 {
		return nil
	}
	w := k.ready[0]
	k.ready = k.ready[1:]
	return w
}

// refill builds jails of key until it has size of them, parked or being
// built, unless its last build failed recently.
func (p *Pool) refill(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.keys[key]
	if p.closed || k == nil || time.Since(k.failed) < warmRetryAfter {
		return
	}
	for len(k.ready)+k.building < p.size {
		k.building++
		p.wg.Add(1)
		go p.build(key, k, k.spec)
	}
}

func (p *Pool) build(key string, k *poolKey, spec *jail.Spec) {
	defer p.wg.Done()
	w, err := jail.Prepare(spec)
	p.mu.Lock()
	defer p.mu.Unlock()
	k.building--
	if err != nil {
		k.failed = time.Now()
		return
	}
	if p.closed || p.keys[key] != k || k.stale {
		p.closeLater(w)
		return
	}
	k.ready = append(k.ready, w)
}

// cool closes key's parked jails and keeps it from being refilled for
// warmRetryAfter; its next call after that sets its shape anew.
func (p *Pool) cool(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := p.keys[key]; k != nil {
		for _, w := range k.ready {
			p.closeLater(w)
		}
		k.ready = nil
		k.failed = time.Now()
		k.stale = true
	}
}

// evict makes room for a new key: the least recently used goes. Under p.mu.
func (p *Pool) evict() {
	if len(p.keys) < warmMaxKeys {
		return
	}
	names := make([]string, 0, len(p.keys))
	for n := range p.keys {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return p.keys[names[i]].used.Before(p.keys[names[j]].used) })
	k := p.keys[names[0]]
	delete(p.keys, names[0])
	for _, w := range k.ready {
		p.closeLater(w)
	}
}

// closeLater closes w off the caller's path: killing an init and removing
// its cgroup takes a while.
func (p *Pool) closeLater(w *jail.Warm) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		w.Close()
	}()
}

// sweep closes jails parked too long and forgets keys no call used for
// as long.
func (p *Pool) sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	for name, k := range p.keys {
		keep := k.ready[:0]
		for _, w := range k.ready {
			if w.Age() > warmMaxAge {
				p.closeLater(w)
			} else {
				keep = append(keep, w)
			}
		}
		k.ready = keep
		if time.Since(k.used) > warmMaxAge && len(k.ready) == 0 && k.building == 0 {
			delete(p.keys, name)
		}
	}
	p.janitor.Reset(warmMaxAge / 4)
}

// Close ends every parked jail and waits for the builders: what they
// finish is closed too.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.janitor.Stop()
	for name, k := range p.keys {
		for _, w := range k.ready {
			p.closeLater(w)
		}
		delete(p.keys, name)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
