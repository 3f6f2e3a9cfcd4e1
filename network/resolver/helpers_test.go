package resolver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeUpstream answers from a table and counts the lookups it gets.
type fakeUpstream struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
	fail  map[string]error
	calls map[string]int
	// started, when set, gets each lookup's name as it begins; hold, when
	// set, keeps each lookup until it receives a value or its context ends.
	started chan string
	hold    chan struct{}
}

func newUpstream(names map[string][]netip.Addr) *fakeUpstream {
	return &fakeUpstream{names: names, fail: map[string]error{}, calls: map[string]int{}}
}

func (f *fakeUpstream) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	f.calls[host]++
	all, err, started, hold := f.names[host], f.fail[host], f.started, f.hold
	f.mu.Unlock()
	if started != nil {
		select {
		case started <- host:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range all {
		if (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (f *fakeUpstream) callsFor(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[host]
}

func (f *fakeUpstream) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// clock is a settable time for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// eventLog is an Events sink.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs...)
}

// String shows the first events, for failure messages.
func (l *eventLog) String() string {
	evs := l.all()
	var b strings.Builder
	fmt.Fprintf(&b, "%d events", len(evs))
	for i, ev := range evs {
		if i == 20 {
			b.WriteString("\n\t...")
			break
		}
		fmt.Fprintf(&b, "\n\t%s %s allowed=%v %q answered=%v dropped=%v count=%d", ev.Name, TypeName(ev.Type), ev.Allowed, ev.Reason, ev.Answered, ev.Dropped, ev.Count)
	}
	return b.String()
}

// count sums the Counts of the events match accepts.
func (l *eventLog) count(match func(Event) bool) int {
	n := 0
	for _, ev := range l.all() {
		if match(ev) {
			n += ev.Count
		}
	}
	return n
}

func named(name, reason string, allowed bool) func(Event) bool {
	return func(ev Event) bool { return ev.Name == name && ev.Reason == reason && ev.Allowed == allowed }
}

// rawQuery builds a query, test-side, independent of dnsmessage.
func rawQuery(id uint16, name string, t dnsmessage.Type, edns bool) []byte {
	b := []byte{byte(id >> 8), byte(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	if edns {
		b[11] = 1
	}
	for _, l := range strings.Split(name, ".") {
		if l != "" {
			b = append(b, byte(len(l)))
			b = append(b, l...)
		}
	}
	b = append(b, 0, byte(t>>8), byte(t), 0, 1)
	if edns {
		b = append(b, 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0)
	}
	return b
}

// reply is a decoded response.
type reply struct {
	id     uint16
	rcode  int // with the OPT record's upper bits
	tc     bool
	rd, ra bool
	opcode int
	qd     int
	qname  string
	qtype  dnsmessage.Type
	qclass uint16
	addrs  []netip.Addr
	types  []dnsmessage.Type
	ttls   []uint32
	edns   bool
	header bool // the reply is a header alone (FORMERR)
}

// parseReply decodes what the server sends: a question without
// compression, answers owned by a pointer to it, an optional OPT.
func parseReply(t *testing.T, b []byte) reply {
	t.Helper()
	var r reply
	short := func(n int) {
		if len(b) < n {
			t.Fatalf("reply cut off at %d bytes: % x", len(b), b)
		}
	}
	short(12)
	be := binary.BigEndian.Uint16
	r.id = be(b)
	flags := be(b[2:])
	if flags&0x8000 == 0 {
		t.Fatalf("not a response: % x", b)
	}
	r.rcode, r.tc = int(flags&0xf), flags&0x200 != 0
	r.rd, r.ra, r.opcode = flags&0x100 != 0, flags&0x80 != 0, int(flags>>11&0xf)
	qd, an, ns, ar := be(b[4:]), be(b[6:]), be(b[8:]), be(b[10:])
	if qd > 1 || ns != 0 || ar > 1 {
		t.Fatalf("counts %d/%d/%d/%d: % x", qd, an, ns, ar, b)
	}
	r.qd = int(qd)
	off := 12
	r.header = len(b) == 12
	if qd == 1 {
		var labels []string
		for {
			short(off + 1)
			n := int(b[off])
			off++
			if n == 0 {
				break
			}
			short(off + n)
			labels = append(labels, string(b[off:off+n]))
			off += n
		}
		short(off + 4)
		r.qclass = be(b[off+2:])
		r.qname, r.qtype = strings.Join(labels, "."), dnsmessage.Type(be(b[off:]))
		off += 4
	}
	for range an {
		// The owner is a pointer to the question name, or the root
		// itself, one byte, when the question is for the root.
		if qd == 1 && r.qname == "" {
			short(off + 1)
			if b[off] != 0 {
				t.Fatalf("answer owner is not the root: % x", b)
			}
			off--
		} else if short(off + 2); b[off] != 0xc0 || b[off+1] != 12 {
			t.Fatalf("answer owner is not a pointer to the question: % x", b)
		}
		short(off + 12)
		typ, n := dnsmessage.Type(be(b[off+2:])), int(be(b[off+10:]))
		short(off + 12 + n)
		ip, ok := netip.AddrFromSlice(b[off+12 : off+12+n])
		if !ok || (typ == dnsmessage.TypeA) != (n == 4) || (typ == dnsmessage.TypeAAAA) != (n == 16) || be(b[off+4:]) != 1 {
			t.Fatalf("answer of type %v, class %d with %d bytes", typ, be(b[off+4:]), n)
		}
		r.addrs, r.types = append(r.addrs, ip), append(r.types, typ)
		r.ttls = append(r.ttls, binary.BigEndian.Uint32(b[off+6:]))
		off += 12 + n
	}
	if ar == 1 {
		short(off + 11)
		if b[off] != 0 || be(b[off+1:]) != 41 || be(b[off+9:]) != 0 {
			t.Fatalf("additional record is not an OPT without options: % x", b[off:])
		}
		r.edns = true
		r.rcode |= int(b[off+5]) << 4
		off += 11
	}
	if off != len(b) {
		t.Fatalf("%d bytes after the reply: % x", len(b)-off, b)
	}
	return r
}

// ourGoroutines lists the goroutines running the server's or the cache's
// code.
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range []string{"resolver.(*Server)", "resolver.(*AddrCache)", "resolver.(*coalescer)"} {
			if strings.Contains(g, f) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// noGoroutinesLeft fails if any remain. A goroutine that has called
// wg.Done may still be on its way out, so it looks again for up to 2 s.
func noGoroutinesLeft(t *testing.T) {
	t.Helper()
	var left []string
	for range 200 {
		if left = ourGoroutines(); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
}
