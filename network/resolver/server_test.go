package resolver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
	"golang.org/x/net/dns/dnsmessage"
)

// The names the tests' upstream knows. Public addresses are made up and
// never dialled; nothing leaves the loopback.
var upstreamNames = map[string][]netip.Addr{
	"allowed.example": addrs("1.2.3.4", "2606:4700::1"),
	"mixed.example":   addrs("10.0.0.1", "1.2.3.5", "169.254.169.254", "fd00::1", "2606:4700::2"),
	"private.example": addrs("10.1.2.3", "192.168.1.1", "fd12::1"),
	"meta.example":    addrs("169.254.169.254"),
	"v4only.example":  addrs("1.2.3.6"),
	"a.wild.example":  addrs("1.2.3.7"),
	"denied.example":  addrs("1.2.3.8"),
	"many.example":    manyAddrs(40),
}

// manyAddrs are n made-up public addresses, more than a UDP reply holds.
func manyAddrs(n int) []netip.Addr {
	var out []netip.Addr
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{1, 2, 4, byte(i + 1)}))
	}
	return out
}

var testAllow = []string{"allowed.example", "mixed.example", "private.example", "meta.example",
	"v4only.example", "*.wild.example", "missing.example", "1.2.3.8", "many.example"}

type testServer struct {
	s        *Server
	up       *fakeUpstream
	clock    *clock
	log      *eventLog
	udp, tcp string
	errs     chan error
}

// start serves testAllow on 127.0.0.1, a random UDP and TCP port each.
// Close runs at cleanup, and checks that both Serve calls returned
// ErrServerClosed.
func start(t *testing.T, lim Limits) *testServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{up: newUpstream(upstreamNames), clock: newClock(), log: &eventLog{},
		udp: pc.LocalAddr().String(), tcp: ln.Addr().String(), errs: make(chan error, 2)}
	cache := NewAddrCache(ts.up, 0, 0)
	cache.now = ts.clock.now
	l, err := allow.ParseList(testAllow)
	if err != nil {
		t.Fatal(err)
	}
	ts.s = New(Config{Allow: l, Cache: cache, Limits: lim, Events: ts.log.add})
	go func() { ts.errs <- ts.s.ServeUDP(pc) }()
	go func() { ts.errs <- ts.s.ServeTCP(ln) }()
	t.Cleanup(func() { ts.close(t) })
	return ts
}

func (ts *testServer) close(t *testing.T) {
	t.Helper()
	if ts.errs == nil {
		return
	}
	closed := make(chan struct{})
	go func() {
		ts.s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatalf("Close has not returned after a minute:\n%s", strings.Join(ourGoroutines(), "\n\n"))
	}
	for range 2 {
		if err := <-ts.errs; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	}
	ts.errs = nil
}

func (ts *testServer) goResolver(network string) *net.Resolver {
	addr := ts.udp
	if network == "tcp" {
		addr = ts.tcp
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// udpConn is a client socket with a deadline that only keeps a broken
// test from hanging.
func (ts *testServer) udpConn(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("udp", ts.udp)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

func (ts *testServer) tcpConn(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.tcp)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
}

func recvUDP(t *testing.T, c net.Conn) reply {
	t.Helper()
	buf := make([]byte, 1<<16)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return parseReply(t, buf[:n])
}

func ask(t *testing.T, c net.Conn, id uint16, name string, typ dnsmessage.Type) reply {
	t.Helper()
	send(t, c, rawQuery(id, name, typ, true))
	r := recvUDP(t, c)
	if r.id != id {
		t.Fatalf("reply to %d for query %d", r.id, id)
	}
	return r
}

func recvTCP(t *testing.T, c net.Conn) reply {
	t.Helper()
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, binary.BigEndian.Uint16(hdr[:]))
	if _, err := io.ReadFull(c, msg); err != nil {
		t.Fatal(err)
	}
	return parseReply(t, msg)
}

func framed(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out, _ = appendTCP(out, m)
	}
	return out
}

func sorted(a []netip.Addr) []netip.Addr {
	a = slices.Clone(a)
	slices.SortFunc(a, netip.Addr.Compare)
	return a
}

// TestGoResolver: Go's own resolver, over UDP and over TCP, gets the
// addresses that pass for allowed names and an error for the rest.
func TestGoResolver(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			ts := start(t, Limits{})
			r := ts.goResolver(network)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			for name, want := range map[string][]netip.Addr{
				"allowed.example.": addrs("1.2.3.4", "2606:4700::1"),
				"MIXED.example.":   addrs("1.2.3.5", "2606:4700::2"),
				"a.wild.example.":  addrs("1.2.3.7"),
			} {
				got, err := r.LookupNetIP(ctx, "ip", name)
				if err != nil || !reflect.DeepEqual(sorted(got), want) {
					t.Errorf("%s: %v %v, want %v", name, got, err, want)
				}
			}

			for _, name := range []string{"private.example.", "meta.example.", "denied.example.", "x.allowed.example."} {
				_, err := r.LookupNetIP(ctx, "ip4", name)
				var de *net.DNSError
				if !errors.As(err, &de) || de.IsNotFound {
					t.Errorf("%s: %v, want a server error (REFUSED)", name, err)
				}
				// With both families, Go reports whichever error came
				// first: REFUSED for A, or NODATA for meta.example's AAAA.
				if got, err := r.LookupNetIP(ctx, "ip", name); err == nil {
					t.Errorf("%s: %v, want an error", name, got)
				}
			}
			for _, name := range []string{"denied.example", "x.allowed.example"} {
				if n := ts.up.callsFor(name); n != 0 {
					t.Errorf("%s: %d upstream lookups; want none for a name not on the list", name, n)
				}
			}

			// NODATA: an allowed name without the type, or unknown.
			for _, q := range []struct{ network, name string }{{"ip6", "v4only.example."}, {"ip", "missing.example."}} {
				if _, err := r.LookupNetIP(ctx, q.network, q.name); !isNotFound(err) {
					t.Errorf("%s %s: %v, want not found", q.network, q.name, err)
				}
			}
			if _, err := r.LookupTXT(ctx, "allowed.example."); !isNotFound(err) {
				t.Errorf("TXT allowed.example: %v, want not found", err)
			}

			ts.close(t)
			for _, want := range []struct {
				name, reason string
				allowed      bool
			}{
				{"denied.example", ReasonDNSRefused, false},
				{"x.allowed.example", ReasonDNSRefused, false},
				{"private.example", allow.ReasonPrivate, false},
				{"meta.example", allow.ReasonMetadata, false},
				{"mixed.example", allow.ReasonPrivate, true},
				{"allowed.example", "", true},
				{"missing.example", "", true},
			} {
				if ts.log.count(named(want.name, want.reason, want.allowed)) == 0 {
					t.Errorf("no event %+v in %v", want, ts.log)
				}
			}
		})
	}
}

// TestRawAnswers checks each reply to hand-built queries.
func TestRawAnswers(t *testing.T) {
	ts := start(t, Limits{})
	c := ts.udpConn(t)

	r := ask(t, c, 1, "allowed.example", dnsmessage.TypeA)
	if r.rcode != 0 || !reflect.DeepEqual(r.addrs, addrs("1.2.3.4")) || r.ttls[0] != 30 || !r.edns {
		t.Errorf("A allowed.example: %+v", r)
	}
	r = ask(t, c, 2, "mixed.example", dnsmessage.TypeAAAA)
	if r.rcode != 0 || !reflect.DeepEqual(r.addrs, addrs("2606:4700::2")) {
		t.Errorf("AAAA mixed.example: %+v, want only the public address", r)
	}
	for _, q := range []struct {
		name string
		typ  dnsmessage.Type
	}{{"private.example", dnsmessage.TypeA}, {"private.example", dnsmessage.TypeAAAA}, {"meta.example", dnsmessage.TypeA},
		{"denied.example", dnsmessage.TypeA}, {"denied.example", dnsmessage.TypeTXT}, {"1.2.3.8", dnsmessage.TypeA}, {"", dnsmessage.TypeA}} {
		if r := ask(t, c, 3, q.name, q.typ); r.rcode != 5 || len(r.addrs) != 0 || r.qname != q.name {
			t.Errorf("%v %q: %+v, want REFUSED", q.typ, q.name, r)
		}
	}
	// meta.example has no IPv6 address: NODATA, not a refusal.
	if r := ask(t, c, 4, "meta.example", dnsmessage.TypeAAAA); r.rcode != 0 || len(r.addrs) != 0 {
		t.Errorf("AAAA meta.example: %+v, want NODATA", r)
	}
	before := ts.up.totalCalls()
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeTXT, dnsmessage.TypeMX, 65, 255} {
		if r := ask(t, c, 5, "allowed.example", typ); r.rcode != 0 || len(r.addrs) != 0 || r.qtype != typ {
			t.Errorf("%v allowed.example: %+v, want NODATA", typ, r)
		}
	}
	if n := ts.up.totalCalls() - before; n != 0 {
		t.Errorf("%d upstream lookups for other types; want none", n)
	}

	// The TTL is what is left of the cached answer.
	ts.clock.advance(10 * time.Second)
	if r := ask(t, c, 6, "allowed.example", dnsmessage.TypeA); r.ttls[0] != 20 || ts.up.callsFor("allowed.example") != 1 {
		t.Errorf("10 s later: TTL %d, %d lookups; want 20 and the cached answer", r.ttls[0], ts.up.callsFor("allowed.example"))
	}
	ts.clock.advance(20 * time.Second)
	if r := ask(t, c, 7, "allowed.example", dnsmessage.TypeA); r.ttls[0] != 30 || ts.up.callsFor("allowed.example") != 2 {
		t.Errorf("30 s later: TTL %d, %d lookups; want 30 and a new lookup", r.ttls[0], ts.up.callsFor("allowed.example"))
	}
}

// TestTruncated: an answer that does not fit 512 bytes is cut and
// flagged TC over UDP, and whole over TCP; Go's resolver, given both,
// goes on to TCP and gets every address.
func TestTruncated(t *testing.T) {
	ts := start(t, Limits{})
	r := ask(t, ts.udpConn(t), 1, "many.example", dnsmessage.TypeA)
	if r.rcode != 0 || !r.tc || !reflect.DeepEqual(r.addrs, manyAddrs(29)) {
		t.Errorf("over UDP: %+v, want the first 29 addresses and TC", r)
	}
	c := ts.tcpConn(t)
	send(t, c, framed(rawQuery(2, "many.example", dnsmessage.TypeA, true)))
	if r := recvTCP(t, c); r.rcode != 0 || r.tc || !reflect.DeepEqual(r.addrs, manyAddrs(40)) {
		t.Errorf("over TCP: %+v, want all 40 addresses; %v", r, ts.log)
	}
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := ts.udp
		if network == "tcp" {
			addr = ts.tcp
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, err := res.LookupNetIP(ctx, "ip4", "many.example."); err != nil || !reflect.DeepEqual(sorted(got), manyAddrs(40)) {
		t.Errorf("Go's resolver: %d addresses, %v; want 40", len(got), err)
	}
}

// TestMalformed: FORMERR where the ID can be read, nothing where it cannot
// or the message is a response. The replies come back in order on one
// socket, so a missing one shows without waiting for a timeout.
func TestMalformed(t *testing.T) {
	ts := start(t, Limits{})
	c := ts.udpConn(t)
	send(t, c, []byte{1, 2, 3, 4, 5}) // no header: nothing
	resp := rawQuery(10, "allowed.example", dnsmessage.TypeA, false)
	resp[2] |= 0x80
	send(t, c, resp) // a response: nothing
	two := rawQuery(11, "allowed.example", dnsmessage.TypeA, false)
	two[5] = 2
	send(t, c, two) // two questions: FORMERR
	trailing := append(rawQuery(12, "allowed.example", dnsmessage.TypeA, false), 0)
	send(t, c, trailing) // a byte after the question: FORMERR
	odd := rawQuery(13, "axb", dnsmessage.TypeA, false)
	// "a.b" as one label: REFUSED. dnsmessage does not read a name with
	// a dot in a label, so the reply is the header alone, like FORMERR's.
	odd[14] = '.'
	send(t, c, odd)
	send(t, c, rawQuery(14, "denied.example", dnsmessage.TypeA, false))

	for _, want := range []struct {
		id     uint16
		rcode  int
		header bool
	}{{11, 1, true}, {12, 1, true}, {13, 5, true}, {14, 5, false}} {
		if r := recvUDP(t, c); r.id != want.id || r.rcode != want.rcode || r.header != want.header {
			t.Errorf("reply %+v, want ID %d rcode %d", r, want.id, want.rcode)
		}
	}
	if n := ts.up.totalCalls(); n != 0 {
		t.Errorf("%d upstream lookups", n)
	}
	ts.close(t)
	if n := ts.log.count(func(ev Event) bool { return ev.Reason == ReasonMalformed }); n != 4 {
		t.Errorf("%d malformed counted, want 4: %v", n, ts.log)
	}
}

// TestExfiltration: 10,000 queries for distinct made-up names, the way
// data leaves over DNS, are all REFUSED without one upstream lookup, and
// the events and the memory behind them stay bounded.
func TestExfiltration(t *testing.T) {
	const queries = 10000
	ts := start(t, Limits{})
	c := ts.udpConn(t)
	label := make([]byte, 24)
	for i := range queries {
		rand.Read(label)
		name := hex.EncodeToString(label) + ".exfil.example"
		typ := []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA, dnsmessage.TypeTXT}[i%3]
		if r := ask(t, c, uint16(i), name, typ); r.rcode != 5 || r.qname != name {
			t.Fatalf("query %d: %+v, want REFUSED", i, r)
		}
	}
	if n := ts.up.totalCalls(); n != 0 {
		t.Errorf("%d upstream lookups; want none", n)
	}
	bound := 2*DefaultEventNames + 1
	if k := ts.s.events.kinds(); k > bound {
		t.Errorf("%d event kinds remembered; want at most %d", k, bound)
	}
	if n := len(ts.s.cache.m); n != 0 {
		t.Errorf("%d cache entries; want none", n)
	}
	ts.close(t)
	evs := ts.log.all()
	if len(evs) > 2*bound {
		t.Errorf("%d events for %d queries; want at most %d", len(evs), queries, 2*bound)
	}
	if n := ts.log.count(func(ev Event) bool { return ev.Reason == ReasonDNSRefused && !ev.Allowed }); n != queries {
		t.Errorf("refusals counted %d, want %d", n, queries)
	}
	if n := ts.log.count(named("*.exfil.example", ReasonDNSRefused, false)); n < queries-DefaultEventNames {
		t.Errorf("%d counted under *.exfil.example, want at least %d", n, queries-DefaultEventNames)
	}
}

// TestTCP: several queries on one connection, sent at once and answered
// in order; a malformed one does not end it, a zero-length one does.
func TestTCP(t *testing.T) {
	ts := start(t, Limits{})
	c := ts.tcpConn(t)
	two := rawQuery(4, "allowed.example", dnsmessage.TypeA, false)
	two[5] = 2
	send(t, c, framed(
		rawQuery(1, "allowed.example", dnsmessage.TypeA, false),
		rawQuery(2, "allowed.example", dnsmessage.TypeAAAA, true),
		rawQuery(3, "denied.example", dnsmessage.TypeA, false),
		two,
	))
	for _, want := range []struct {
		id    uint16
		rcode int
		addrs []netip.Addr
	}{{1, 0, addrs("1.2.3.4")}, {2, 0, addrs("2606:4700::1")}, {3, 5, nil}, {4, 1, nil}} {
		if r := recvTCP(t, c); r.id != want.id || r.rcode != want.rcode || !reflect.DeepEqual(r.addrs, want.addrs) {
			t.Errorf("reply %+v, want ID %d rcode %d %v", r, want.id, want.rcode, want.addrs)
		}
	}
	send(t, c, framed(rawQuery(5, "mixed.example", dnsmessage.TypeA, false)))
	if r := recvTCP(t, c); r.id != 5 || !reflect.DeepEqual(r.addrs, addrs("1.2.3.5")) {
		t.Errorf("a later query: %+v", r)
	}
	send(t, c, []byte{0, 0})
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after a zero-length message: %d bytes, %v; want the connection closed", n, err)
	}
}

// TestTCPLimit: a connection over the limit is closed at once, unserved.
func TestTCPLimit(t *testing.T) {
	ts := start(t, Limits{TCPConns: 1})
	first := ts.tcpConn(t)
	send(t, first, framed(rawQuery(1, "denied.example", dnsmessage.TypeA, false)))
	recvTCP(t, first) // served: it holds the one slot until the end
	second := ts.tcpConn(t)
	second.Write(framed(rawQuery(2, "denied.example", dnsmessage.TypeA, false)))
	if n, err := second.Read(make([]byte, 1)); err == nil {
		t.Errorf("a second connection over a limit of 1 got %d bytes", n)
	}
	ts.close(t)
	if ts.log.count(named("", ReasonBusy, false)) != 1 {
		t.Errorf("want one busy event: %v", ts.log)
	}
}

// TestTCPIdle: an idle connection is closed after IdleTimeout, and so is
// one that sends half a message.
func TestTCPIdle(t *testing.T) {
	ts := start(t, Limits{IdleTimeout: 100 * time.Millisecond})
	idle := ts.tcpConn(t)
	send(t, idle, framed(rawQuery(1, "denied.example", dnsmessage.TypeA, false)))
	recvTCP(t, idle)
	partial := ts.tcpConn(t)
	send(t, partial, []byte{0, 40, 1})
	for _, c := range []net.Conn{idle, partial} {
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("idle connection: %v, want it closed", err)
		}
	}
}

// TestInFlight: with every slot waiting for upstream, another lookup gets
// SERVFAIL at once; refusals and cached answers still work.
func TestInFlight(t *testing.T) {
	ts := start(t, Limits{InFlight: 1})
	c := ts.udpConn(t)
	ask(t, c, 1, "allowed.example", dnsmessage.TypeA) // cached from now on

	ts.up.mu.Lock()
	ts.up.started, ts.up.hold = make(chan string), make(chan struct{})
	ts.up.mu.Unlock()
	send(t, c, rawQuery(2, "mixed.example", dnsmessage.TypeA, false))
	<-ts.up.started
	if r := ask(t, c, 3, "a.wild.example", dnsmessage.TypeA); r.rcode != 2 {
		t.Errorf("over the limit: %+v, want SERVFAIL", r)
	}
	if r := ask(t, c, 4, "allowed.example", dnsmessage.TypeA); r.rcode != 0 || len(r.addrs) != 1 {
		t.Errorf("cached while busy: %+v", r)
	}
	if r := ask(t, c, 5, "denied.example", dnsmessage.TypeA); r.rcode != 5 {
		t.Errorf("refused while busy: %+v", r)
	}
	close(ts.up.hold)
	if r := recvUDP(t, c); r.id != 2 || !reflect.DeepEqual(r.addrs, addrs("1.2.3.5")) {
		t.Errorf("the waiting query: %+v", r)
	}
	ts.close(t)
	if ts.log.count(named("a.wild.example", ReasonBusy, true)) != 1 {
		t.Errorf("no busy event: %v", ts.log)
	}
}

// TestUpstreamFailure: SERVFAIL, not kept; a lookup past QueryTimeout
// also fails.
func TestUpstreamFailure(t *testing.T) {
	ts := start(t, Limits{QueryTimeout: 100 * time.Millisecond})
	ts.up.mu.Lock()
	ts.up.fail["allowed.example"] = errors.New("upstream unreachable")
	ts.up.mu.Unlock()
	c := ts.udpConn(t)
	for i := range 2 {
		if r := ask(t, c, uint16(i), "allowed.example", dnsmessage.TypeA); r.rcode != 2 {
			t.Errorf("failing upstream: %+v, want SERVFAIL", r)
		}
	}
	if n := ts.up.callsFor("allowed.example"); n != 2 {
		t.Errorf("%d lookups for 2 queries; want the failure not kept", n)
	}
	ts.up.mu.Lock()
	ts.up.hold = make(chan struct{}) // never released: the timeout ends it
	ts.up.mu.Unlock()
	if r := ask(t, c, 3, "mixed.example", dnsmessage.TypeA); r.rcode != 2 {
		t.Errorf("slow upstream: %+v, want SERVFAIL", r)
	}
	ts.close(t)
	if ts.log.count(named("allowed.example", ReasonLookupFailed, true)) != 2 || ts.log.count(named("mixed.example", ReasonLookupFailed, true)) != 1 {
		t.Errorf("events: %v", ts.log)
	}
}

// TestClose: lookups in progress, open connections and both Serve calls
// end; no goroutine of the server is left, and it serves nothing after.
func TestClose(t *testing.T) {
	ts := start(t, Limits{})
	ts.up.mu.Lock()
	ts.up.started, ts.up.hold = make(chan string, 2), make(chan struct{})
	ts.up.mu.Unlock()

	u := ts.udpConn(t)
	send(t, u, rawQuery(1, "allowed.example", dnsmessage.TypeA, false))
	busyTCP := ts.tcpConn(t)
	send(t, busyTCP, framed(rawQuery(2, "mixed.example", dnsmessage.TypeA, false)))
	<-ts.up.started
	<-ts.up.started
	idle := ts.tcpConn(t)
	send(t, idle, framed(rawQuery(3, "denied.example", dnsmessage.TypeA, false)))
	recvTCP(t, idle)
	partial := ts.tcpConn(t)
	send(t, partial, []byte{0, 40, 1, 2}) // a message that never finishes

	ts.close(t)
	for _, c := range []net.Conn{busyTCP, idle, partial} {
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a TCP connection still open after Close")
		}
	}
	noGoroutinesLeft(t)
	ts.s.Close() // again: nothing to do

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.s.ServeUDP(pc); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ServeUDP after Close: %v", err)
	}
	if _, err := pc.WriteTo([]byte{0}, pc.LocalAddr()); err == nil {
		t.Error("ServeUDP after Close left the socket open")
	}
	noGoroutinesLeft(t)
}
