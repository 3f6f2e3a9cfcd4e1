// Package proxy is the supervisor's side of the network allow mode
// (DESIGN.md section 11): an HTTP proxy (CONNECT and plain HTTP) and a
// SOCKS5 proxy that serve listeners they are given and let through only
// what an allow.List allows. It knows nothing of jails: the supervisor
// hands it the listeners the jail's init created on 127.0.0.1 inside the
// jail's network namespace, and turns its Events into the report.
//
// Every decision is made on the host and port the client asked for:
//
//   - A name must match a name or wildcard pattern for the port
//     (allow.List.AllowName); an IP literal an IP or CIDR pattern
//     (AllowAddr).
//   - The proxy resolves a name itself, once per connection, and checks
//     every address with allow.Check; it connects only to an address that
//     passed, trying them in the resolver's order, and never looks the
//     name up again (a second answer could point elsewhere: DNS
//     rebinding).
//   - A tunnel (CONNECT, SOCKS5) is opened before the client's first
//     bytes are seen, so a server that speaks first (SSH, SMTP) is heard;
//     what the client sends first is held until it is judged: when it is
//     a TLS ClientHello (hello.IsTLS) or the port is 443, it must be a
//     complete ClientHello, without Encrypted Client Hello, whose server
//     name is the host asked for. For a tunnel to a name, first bytes
//     that start a TLS record of any type (hello.IsRecord: a content type
//     of 20 to 24 and version 3) must be that ClientHello too: a first
//     record of another type (a ChangeCipherSpec, an alert) is refused,
//     and nothing is looked for behind it. Other first bytes (plain HTTP,
//     SSH) go through to any port but 443. The first byte may take as
//     long as the client likes (Limits.IdleTimeout); from it, the whole
//     ClientHello must arrive within Limits.HeaderTimeout, in as many
//     reads and records as the client likes (up to hello.MaxLen bytes).
//     For a tunnel to an IP literal the server name is not checked: the
//     pattern that allowed the address allowed whatever is served there,
//     and RFC 6066 forbids IP literals in SNI. Only the first bytes are
//     judged: a protocol that starts TLS later (STARTTLS, PostgreSQL) is
//     not looked into.
//   - Plain HTTP is a request in absolute form ("GET http://host/path");
//     its Host header, when present, must name the host and port of the
//     URL. The request goes upstream in origin form with Connection:
//     close and the hop-by-hop fields (Proxy-Authorization among them)
//     removed: one request per client connection, so a client that keeps
//     the connection for a second request finds it closed and opens
//     another. The response is passed on as the server sent it, until the
//     server closes. An https:// URL in absolute form is refused (it
//     would need the proxy to speak TLS); TLS goes through CONNECT, never
//     intercepted.
//
// Refusals: an HTTP client gets a status and a one-line body naming the
// reason (403 for the allowlist and address checks and a host mismatch,
// 502 for dns failed and connect failed, 429 for the connection limit,
// 503 for the byte limit, 400 for a bad request, 431 for a head over
// Limits.MaxHeaderBytes, 408 for one not complete within
// Limits.HeaderTimeout). A SOCKS5 client gets the reply code: 0x02 "not
// allowed by ruleset" for the policy refusals and the byte limit, 0x04
// for dns failed, 0x05, 0x03 or 0x04 for connect failed as the error
// says, 0x01 for the connection limit and a bad request, 0x07 for a
// command other than CONNECT, 0x08 for an unknown address type. A tunnel
// refused at its ClientHello is closed: its 200 or success reply was sent
// already.
//
// Every connection that sent a byte gives one Event; a connection that
// closed (or was closed by Close) before sending anything asked for
// nothing and gives none.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/network/allow"
)

// Resolver looks names up. *net.Resolver satisfies it; the proxy always
// passes network "ip".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects upstream. *net.Dialer satisfies it; the proxy always
// passes network "tcp" and the text of a netip.AddrPort that passed
// allow.Check: never a name, so nothing resolves it again.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures a Proxy.
type Config struct {
	// Allow is what may be reached; an empty list allows nothing.
	Allow allow.List
	// Resolver resolves names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dialer connects; nil is a zero net.Dialer (Limits.ConnectTimeout
	// bounds it).
	Dialer Dialer
	Limits Limits
	// Events receives one Event per connection (see Event). Calls are
	// serialised, so it need not lock; it must return promptly, and it
	// must not call Close, which waits for every connection's event. Nil
	// drops them.
	Events func(Event)
}

// Limits bound what the jailed command can make the supervisor do. A zero
// field takes the default next to it.
type Limits struct {
	// MaxConns is how many client connections, of both proxies, are
	// served at once. Up to as many more are read and refused with
	// "connection limit"; past that a connection is closed at once (and
	// still gives an event). Default 128.
	MaxConns int
	// MaxBytes caps the bytes forwarded, both directions, all
	// connections, over the Proxy's life (a run). Zero is no cap.
	MaxBytes int64
	// IdleTimeout ends a connection when nothing has moved either way
	// for that long (to within an eighth of it), and bounds each write to
	// a client or server that does not read. Default 5 minutes.
	IdleTimeout time.Duration
	// HeaderTimeout is how long a client has, from accepting, to send
	// its whole HTTP head or SOCKS5 request, and then, in a tunnel, from
	// its first byte to the end of its ClientHello. Default 10 seconds.
	HeaderTimeout time.Duration
	// MaxHeaderBytes caps an HTTP request's head (request line and
	// header fields). Default 64 KiB.
	MaxHeaderBytes int
	// ConnectTimeout bounds the lookup and the connection attempts of
	// one request together. Default 30 seconds.
	ConnectTimeout time.Duration
}

// The defaults of Limits.
const (
	DefaultMaxConns       = 128
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	DefaultConnectTimeout = 30 * time.Second
)

func (l Limits) withDefaults() (Limits, error) {
	for _, f := range []struct {
		name string
		neg  bool
	}{
		{"MaxConns", l.MaxConns < 0}, {"MaxBytes", l.MaxBytes < 0},
		{"IdleTimeout", l.IdleTimeout < 0}, {"HeaderTimeout", l.HeaderTimeout < 0},
		{"MaxHeaderBytes", l.MaxHeaderBytes < 0}, {"ConnectTimeout", l.ConnectTimeout < 0},
	} {
		if f.neg {
			return l, fmt.Errorf("proxy: Limits.%s is negative; give a positive value, or zero for the default", f.name)
		}
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.HeaderTimeout, DefaultHeaderTimeout)
	def(&l.ConnectTimeout, DefaultConnectTimeout)
	return l, nil
}

// ErrClosed is what ServeHTTP and ServeSOCKS5 return once Close was called.
var ErrClosed = errors.New("proxy: closed")

// Proxy serves the HTTP and SOCKS5 proxies for one run. Its methods are
// safe for concurrent use.
type Proxy struct {
	cfg      Config
	lim      Limits
	resolver Resolver
	dialer   Dialer
	ctx      context.Context
	cancel   context.CancelFunc
	// used counts the bytes forwarded (and, once MaxBytes is passed,
	// the bytes refused) against MaxBytes.
	used atomic.Int64

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	active    int // connections being served
	refusing  int // connections over MaxConns being read and refused
	wg        sync.WaitGroup

	emitMu sync.Mutex
}

// New checks cfg's limits and returns a Proxy serving nothing yet.
func New(cfg Config) (*Proxy, error) {
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		cfg:       cfg,
		lim:       lim,
		resolver:  cfg.Resolver,
		dialer:    cfg.Dialer,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dialer == nil {
		p.dialer = &net.Dialer{}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// ServeHTTP serves the HTTP proxy on l until Close, or until l fails. It
// closes l when it returns, and returns ErrClosed after Close.
func (p *Proxy) ServeHTTP(l net.Listener) error {
	return p.serve(l, "http", (*session).serveHTTP)
}

// ServeSOCKS5 serves the SOCKS5 proxy on l, as ServeHTTP does.
func (p *Proxy) ServeSOCKS5(l net.Listener) error {
	return p.serve(l, "socks5", (*session).serveSOCKS5)
}

// Close stops serving: it closes every listener and connection, and
// returns once every connection's handler has returned and its Event was
// delivered. It returns what closing the listeners returned, if anything
// but net.ErrClosed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	var errs []error
	if !p.closed {
		p.closed = true
		for l := range p.listeners {
			if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for c := range p.conns {
			c.Close()
		}
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return errors.Join(errs...)
}

func (p *Proxy) serve(l net.Listener, proto string, handle func(*session)) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
		l.Close()
	}()

	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return ErrClosed
			}
			if !retryAccept(err) {
				return fmt.Errorf("proxy: accepting %s connections: %w", proto, err)
			}
			// Out of descriptors or memory: wait for connections to end,
			// as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
			case <-p.ctx.Done():
			}
			continue
		}
		delay = 0
		p.start(c, proto, handle)
	}
}

func retryAccept(err error) bool {
	return isTimeout(err) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// start counts c against MaxConns and serves it, or refuses it.
func (p *Proxy) start(c net.Conn, proto string, handle func(*session)) {
	s := &session{p: p, c: c, ev: Event{Time: time.Now(), Proto: proto}}
	s.act.init(p.lim.IdleTimeout)
	s.cr = &connReader{c: c, act: &s.act}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		c.Close()
		return
	case p.active < p.lim.MaxConns:
		p.active++
	case p.refusing < p.lim.MaxConns:
		p.refusing++
		s.over = true
	default:
		p.mu.Unlock()
		c.Close()
		s.ev.Reason = ReasonConnLimit
		p.emit(s.ev)
		return
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.finish(s)
		handle(s)
	}()
}

// finish closes what s opened, releases its slot and delivers its event.
func (p *Proxy) finish(s *session) {
	s.c.Close()
	if s.up != nil {
		s.up.Close()
	}
	p.mu.Lock()
	delete(p.conns, s.c)
	if s.up != nil {
		delete(p.conns, s.up)
	}
	if s.over {
		p.refusing--
	} else {
		p.active--
	}
	p.mu.Unlock()
	if !s.silent {
		p.emit(s.ev)
	}
	p.wg.Done()
}

// track registers an upstream connection so Close closes it; false when
// the Proxy is closing already.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) emit(ev Event) {
	if p.cfg.Events == nil {
		return
	}
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	p.cfg.Events(ev)
}

// reserve accounts n bytes about to be forwarded against MaxBytes and
// says how many of them may go.
func (p *Proxy) reserve(n int) int {
	if p.lim.MaxBytes == 0 {
		return n
	}
	total := p.used.Add(int64(n))
	if total <= p.lim.MaxBytes {
		return n
	}
	over := total - p.lim.MaxBytes
	if over >= int64(n) {
		return 0
	}
	return n - int(over)
}

// exhausted reports whether MaxBytes have been forwarded already.
func (p *Proxy) exhausted() bool {
	return p.lim.MaxBytes > 0 && p.used.Load() >= p.lim.MaxBytes
}
