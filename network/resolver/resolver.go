// Package resolver is the DNS server of the network allow mode
// (DESIGN.md section 11). The jail's init binds a UDP and a TCP socket to
// 127.0.0.1:53 inside the jail's network namespace and hands them to the
// supervisor, which serves them with a Server; the jailed command's
// resolv.conf points there. The package knows nothing of jails: it
// answers DNS queries on the sockets it is given, by the allowlist, so
// that DNS cannot carry data out of the jail, and so that a program that
// resolves a name before connecting through the proxy gets the addresses
// the proxy will accept.
//
// The answers:
//   - A name the list allows on any port (a name or wildcard pattern with
//     any port; IP and CIDR patterns allow addresses, not names) is
//     resolvable. The query does not say which port the command will
//     use, and the proxy checks the port on every connection.
//   - A or AAAA for an allowed name: the supervisor looks the name up
//     (through an AddrCache) and answers with the addresses allow.Check
//     passes on at least one of the name's ports. When the upstream gave
//     addresses of the type and none passed, the reply is REFUSED, the
//     same as for a name not on the list: the refusal is the policy's,
//     and NOERROR without records would read as "this name has no such
//     address". The TTL is what is left of the cached answer, so the
//     command forgets it no later than the proxy does.
//   - An allowed name without addresses of the type asked, or unknown
//     upstream, gets NOERROR without records (NODATA), never NXDOMAIN:
//     Lookup cannot tell "no such name" from "no address of this family",
//     and an NXDOMAIN for AAAA would make a caching client forget the
//     name's A records too.
//   - Any other type (TXT, MX, HTTPS, SRV...) for an allowed name gets
//     NODATA, without an upstream lookup.
//   - A name not on the list, a query outside what the resolver serves
//     (message.go: another class or opcode, a byte other than a letter,
//     digit, '-' or '_' in the name), and an IPv4 literal written as a
//     name get REFUSED; malformed messages FORMERR or nothing (replyTo).
//     None of these reaches the upstream.
//   - An upstream failure or timeout, or the limit of queries waiting for
//     upstream, gives SERVFAIL: the client may ask again.
//
// Names under an allowed wildcard are looked up upstream, so the
// nameservers of that domain see them: a wildcard trusts its domain with
// the names the command makes up under it, as the proxy trusts it with
// connections.
//
// Every outcome is an Event, coalesced so that a flood of queries gives
// a bounded number of events and bounded memory (see Limits.EventNames).
package resolver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/network/allow"
	"golang.org/x/net/dns/dnsmessage"
)

// Limits bound what a Server spends. A zero field takes its default.
type Limits struct {
	// InFlight is how many queries may wait for an upstream lookup at
	// once; another one that needs a lookup gets SERVFAIL. Default 64.
	InFlight int
	// TCPConns is how many TCP connections are served at once; another
	// one is closed as soon as it is accepted. Default 16.
	TCPConns int
	// QueryTimeout bounds one upstream lookup. Default 5 s, the stub
	// resolvers' own timeout per try.
	QueryTimeout time.Duration
	// IdleTimeout is how long a TCP connection has to deliver each whole
	// query, and to take its reply, before it is closed. Default 10 s.
	IdleTimeout time.Duration
	// EventNames is how many distinct (name, type, outcome) kinds are
	// reported one by one; past it, outcomes are counted per domain (up
	// to as many kinds again) and then as one kind per reason.
	// Default DefaultEventNames.
	EventNames int
}

func (l Limits) withDefaults() Limits {
	if l.InFlight <= 0 {
		l.InFlight = 64
	}
	if l.TCPConns <= 0 {
		l.TCPConns = 16
	}
	if l.QueryTimeout <= 0 {
		l.QueryTimeout = 5 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 10 * time.Second
	}
	if l.EventNames <= 0 {
		l.EventNames = DefaultEventNames
	}
	return l
}

// Config is what a Server serves.
type Config struct {
	// Allow is the allowlist; an empty one refuses every name.
	Allow allow.List
	// Cache resolves allowed names. Share it with the proxies so that
	// they dial the addresses the command was given. nil: a new
	// AddrCache over net.DefaultResolver.
	Cache  *AddrCache
	Limits Limits
	// Events receives the coalesced outcomes, one call at a time, from
	// the goroutines serving queries and, for the counted repeats, from
	// Close. It must return promptly (a query waits for it); nil drops
	// them.
	Events func(Event)
}

// ErrServerClosed is what ServeUDP and ServeTCP return after Close.
var ErrServerClosed = errors.New("DNS resolver closed")

// Server answers DNS queries on the sockets given to ServeUDP and
// ServeTCP until Close.
type Server struct {
	policy policy
	cache  *AddrCache
	lim    Limits
	events *coalescer

	ctx    context.Context // ends at Close, and with it every lookup
	cancel context.CancelFunc

	inflight chan struct{} // a slot per query waiting for upstream
	tcpSlots chan struct{} // a slot per TCP connection

	mu      sync.Mutex
	closed  bool
	closers map[io.Closer]struct{} // sockets, listeners and connections
	wg      sync.WaitGroup         // every goroutine the server runs or serves on
	once    sync.Once
}

// New makes a Server; it serves nothing until ServeUDP or ServeTCP.
func New(cfg Config) *Server {
	lim := cfg.Limits.withDefaults()
	cache := cfg.Cache
	if cache == nil {
		cache = NewAddrCache(nil, 0, 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		policy:   newPolicy(cfg.Allow),
		cache:    cache,
		lim:      lim,
		events:   newCoalescer(lim.EventNames, cfg.Events),
		ctx:      ctx,
		cancel:   cancel,
		inflight: make(chan struct{}, lim.InFlight),
		tcpSlots: make(chan struct{}, lim.TCPConns),
		closers:  make(map[io.Closer]struct{}),
	}
}

// Cache is the AddrCache the server resolves through, for a proxy to
// share.
func (s *Server) Cache() *AddrCache { return s.cache }

// add registers c, to be closed by Close, and counts one goroutine in
// wg. After Close it closes c and reports false.
func (s *Server) add(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.closers[c] = struct{}{}
	s.wg.Add(1)
	return true
}

// done closes c and ends the goroutine add counted.
func (s *Server) done(c io.Closer) {
	s.mu.Lock()
	delete(s.closers, c)
	s.mu.Unlock()
	c.Close()
	s.wg.Done()
}

func (s *Server) closing() bool { return s.ctx.Err() != nil }

// ServeUDP answers the queries that arrive on pc until Close or a read
// error, and closes pc when it returns. Decisions that need no upstream
// lookup (refusals, cached answers) are made in this goroutine; a lookup
// gets a goroutine of its own, at most Limits.InFlight at once.
func (s *Server) ServeUDP(pc net.PacketConn) error {
	if !s.add(pc) {
		return ErrServerClosed
	}
	defer s.done(pc)
	// The largest UDP payload: a datagram is never cut short, so what
	// ParseQuery sees is what was sent.
	buf := make([]byte, 1<<16)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			return fmt.Errorf("DNS resolver: reading UDP on %v: %w", pc.LocalAddr(), err)
		}
		t0 := time.Now()
		st := s.decide(buf[:n], maxUDP, t0)
		if st.lookup {
			if out := s.fromCache(st, maxUDP, t0); out != nil {
				st.reply, st.lookup = out, false
			} else if !s.acquire() {
				st.reply, st.lookup = s.busy(st, t0), false
			}
		}
		if !st.lookup {
			if st.reply != nil {
				// A write error is the client's problem; the next query
				// comes from someone else.
				pc.WriteTo(st.reply, from)
			}
			continue
		}
		s.wg.Add(1) // ServeUDP's own count keeps wg above zero here
		go func() {
			defer s.wg.Done()
			out := s.lookup(st, maxUDP, t0)
			// The slot is for waiting on upstream, as in serveConn: free
			// before the reply, so that a client that asks again as soon
			// as it has it finds the slot free, not busy.
			s.release()
			if out != nil {
				pc.WriteTo(out, from)
			}
		}()
	}
}

// ServeTCP accepts connections on l until Close or an accept error, and
// closes l when it returns. Each connection carries length-framed queries
// (RFC 1035 section 4.2.2, RFC 7766), answered in order, until the client
// closes it, sends a message that gets no reply, or is idle for
// Limits.IdleTimeout.
func (s *Server) ServeTCP(l net.Listener) error {
	if !s.add(l) {
		return ErrServerClosed
	}
	defer s.done(l)
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			if !transientAccept(err) {
				return fmt.Errorf("DNS resolver: accepting TCP on %v: %w", l.Addr(), err)
			}
			// Out of descriptors or memory, or a connection reset
			// before it was accepted: wait a little, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		delay = 0
		select {
		case s.tcpSlots <- struct{}{}:
		default:
			c.Close()
			s.events.record(Event{Time: time.Now(), Reason: ReasonBusy})
			continue
		}
		if !s.add(c) {
			<-s.tcpSlots
			return ErrServerClosed
		}
		go s.serveConn(c)
	}
}

func transientAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Server) serveConn(c net.Conn) {
	// The slot goes first: after done, Close may return.
	defer s.done(c)
	defer func() { <-s.tcpSlots }()
	var (
		hdr [2]byte
		buf []byte
		out []byte
	)
	for {
		// One deadline for the whole message: a client sending a byte
		// at a time cannot hold the connection longer.
		c.SetReadDeadline(time.Now().Add(s.lim.IdleTimeout))
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<8 | int(hdr[1])
		if n > cap(buf) {
			buf = make([]byte, n)
		}
		msg := buf[:n]
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		t0 := time.Now()
		st := s.decide(msg, maxTCP, t0)
		reply := st.reply
		if st.lookup {
			reply = s.fromCache(st, maxTCP, t0)
			switch {
			case reply != nil:
			case s.acquire():
				reply = s.lookup(st, maxTCP, t0)
				s.release()
			default:
				reply = s.busy(st, t0)
			}
		}
		if reply == nil {
			// Not a query to answer (a zero-length message, a
			// response) or the server is closing: the stream is no
			// longer a conversation.
			return
		}
		var err error
		if out, err = appendTCP(out[:0], reply); err != nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(s.lim.IdleTimeout))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (s *Server) acquire() bool {
	select {
	case s.inflight <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) release() { <-s.inflight }

// Close stops serving: it closes every socket, listener and connection
// the server holds, ends the lookups in progress, waits for every
// goroutine it started and for ServeUDP and ServeTCP to return, then
// sends the counted repeats as events. Later calls do nothing.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.cancel()
		for c := range s.closers {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.events.flush()
	})
	return nil
}

// step is what decide makes of one message: a reply (nil: none) or a
// lookup still to do.
type step struct {
	reply  []byte
	lookup bool
	q      query
	ports  []int
}

// decide answers everything that needs no upstream lookup and records
// the outcome; see the package comment for the answers.
func (s *Server) decide(msg []byte, limit int, t0 time.Time) step {
	q, err := parseQuery(msg)
	if err != nil {
		reason := ReasonMalformed
		var e *queryError
		if errors.As(err, &e) && e.rcode == dnsmessage.RCodeRefused {
			reason = ReasonDNSRefused
		}
		s.events.record(Event{Time: t0, Name: q.name, Type: q.typ, Reason: reason})
		return step{reply: replyTo(q, err)}
	}
	ports := s.policy.namePorts(q.name)
	if len(ports) == 0 {
		s.events.record(Event{Time: t0, Name: q.name, Type: q.typ, Reason: ReasonDNSRefused})
		return step{reply: refusedReply(q)}
	}
	if q.typ != dnsmessage.TypeA && q.typ != dnsmessage.TypeAAAA {
		s.events.record(Event{Time: t0, Name: q.name, Type: q.typ, Allowed: true})
		return step{reply: answer(q, nil, 0, limit)}
	}
	return step{lookup: true, q: q, ports: ports}
}

func family(t dnsmessage.Type) string {
	if t == dnsmessage.TypeA {
		return "ip4"
	}
	return "ip6"
}

// fromCache is the reply from a fresh cache entry, or nil without one.
func (s *Server) fromCache(st step, limit int, t0 time.Time) []byte {
	addrs, expires, err, ok := s.cache.cached(cacheKey{family(st.q.typ), st.q.name})
	if !ok {
		return nil
	}
	return s.finish(st, addrs, expires, err, limit, t0)
}

// lookup resolves through the cache, waiting for upstream; nil when the
// server closed meanwhile.
func (s *Server) lookup(st step, limit int, t0 time.Time) []byte {
	ctx, cancel := context.WithTimeout(s.ctx, s.lim.QueryTimeout)
	defer cancel()
	addrs, expires, err := s.cache.Resolve(ctx, family(st.q.typ), st.q.name)
	if s.closing() {
		return nil
	}
	return s.finish(st, addrs, expires, err, limit, t0)
}

func (s *Server) busy(st step, t0 time.Time) []byte {
	s.events.record(Event{Time: t0, Name: st.q.name, Type: st.q.typ, Allowed: true, Reason: ReasonBusy})
	return servFail(st.q)
}

// finish turns a lookup's outcome into the reply and its event.
func (s *Server) finish(st step, addrs []netip.Addr, expires time.Time, err error, limit int, t0 time.Time) []byte {
	q := st.q
	ev := Event{Time: t0, Name: q.name, Type: q.typ, Allowed: true}
	var out []byte
	if err != nil && !isNotFound(err) {
		ev.Reason = ReasonLookupFailed
		out = servFail(q)
	} else {
		pass, dropped, why := screen(addrs, st.ports, s.policy.list)
		ev.Answered, ev.Dropped, ev.Reason = pass, dropped, why
		if len(pass) == 0 && len(dropped) > 0 {
			ev.Allowed = false
			out = refusedReply(q)
		} else {
			out = answer(q, pass, expires.Sub(s.cache.now()), limit)
		}
	}
	s.events.record(ev)
	return out
}
