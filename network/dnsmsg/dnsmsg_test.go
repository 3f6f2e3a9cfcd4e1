package dnsmsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// encName is a test-side name encoder, independent of the package's.
func encName(name string) []byte {
	var b []byte
	if name != "" {
		for _, l := range strings.Split(name, ".") {
			b = append(b, byte(len(l)))
			b = append(b, l...)
		}
	}
	return append(b, 0)
}

func be16(v int) []byte { return []byte{byte(v >> 8), byte(v)} }

// query builds a query with one question; opt, when not nil, is added as
// the one additional record.
func query(id, flags int, name []byte, qtype Type, class int, opt []byte) []byte {
	ar := 0
	if opt != nil {
		ar = 1
	}
	b := slices.Concat(be16(id), be16(flags), be16(1), be16(0), be16(0), be16(ar), name, be16(int(qtype)), be16(class))
	return append(b, opt...)
}

// optRR is an OPT record with the root name.
func optRR(size int, version byte, opts []byte) []byte {
	return slices.Concat([]byte{0}, be16(41), be16(size), []byte{0, version, 0, 0}, be16(len(opts)), opts)
}

// response is a decoded reply, read strictly by the test.
type response struct {
	id, flags    uint16
	rcode        RCode // with the OPT's upper bits
	qd, an       int
	qname        string
	qwire        []byte
	qtype        Type
	answers      []netip.Addr
	ttls         []uint32
	opt          bool
	optSize      uint16
	tc, rd, ra   bool
	opcode       uint8
	answerTypes  []Type
	answerOwners []string
}

func decode(b []byte) (response, error) {
	var r response
	if len(b) < headerLen {
		return r, fmt.Errorf("reply of %d bytes", len(b))
	}
	r.id, r.flags = u16(b), u16(b[2:])
	if r.flags&flagQR == 0 {
		return r, errors.New("QR not set")
	}
	r.tc, r.rd, r.ra = r.flags&flagTC != 0, r.flags&flagRD != 0, r.flags&flagRA != 0
	r.opcode = uint8(r.flags>>11) & 0xf
	r.rcode = RCode(r.flags & 0xf)
	r.qd, r.an = int(u16(b[4:])), int(u16(b[6:]))
	ns, ar := u16(b[8:]), u16(b[10:])
	if r.qd > 1 || ns != 0 || ar > 1 {
		return r, fmt.Errorf("counts %d/%d/%d/%d", r.qd, r.an, ns, ar)
	}
	off := headerLen
	if r.qd == 1 {
		wire, name, _, next, err := readName(b, off)
		if err != nil {
			return r, err
		}
		if len(b)-next < 4 || u16(b[next+2:]) != classIN {
			return r, errors.New("bad question")
		}
		r.qwire, r.qname, r.qtype = wire, name, Type(u16(b[next:]))
		off = next + 4
	}
	for i := 0; i < r.an; i++ {
		_, owner, _, next, err := readName(b, off)
		if err != nil {
			return r, fmt.Errorf("answer %d: %w", i, err)
		}
		if len(b)-next < 10 {
			return r, fmt.Errorf("answer %d cut off", i)
		}
		typ, class := Type(u16(b[next:])), u16(b[next+2:])
		ttl := uint32(u16(b[next+4:]))<<16 | uint32(u16(b[next+6:]))
		n := int(u16(b[next+8:]))
		if class != classIN || len(b)-next-10 < n {
			return r, fmt.Errorf("answer %d: class %d, %d bytes", i, class, n)
		}
		ip, ok := netip.AddrFromSlice(b[next+10 : next+10+n])
		if !ok || (typ == TypeA) != (n == 4) || (typ == TypeAAAA) != (n == 16) {
			return r, fmt.Errorf("answer %d: type %v with %d bytes", i, typ, n)
		}
		r.answers, r.ttls = append(r.answers, ip), append(r.ttls, ttl)
		r.answerTypes, r.answerOwners = append(r.answerTypes, typ), append(r.answerOwners, owner)
		off = next + 10 + n
	}
	if ar == 1 {
		if len(b)-off != optLen || b[off] != 0 || Type(u16(b[off+1:])) != typeOPT || u16(b[off+9:]) != 0 {
			return r, fmt.Errorf("bad OPT record % x", b[off:])
		}
		r.opt, r.optSize = true, u16(b[off+3:])
		r.rcode |= RCode(b[off+5]) << 4
		off += optLen
	}
	if off != len(b) {
		return r, fmt.Errorf("%d bytes after the reply", len(b)-off)
	}
	return r, nil
}

// resolver is a DNS server built on this package, for Go's resolver.
type resolver struct {
	names map[string][]netip.Addr
	mu    sync.Mutex
	log   []string
	wg    sync.WaitGroup
}

func (s *resolver) handle(network string, msg []byte) []byte {
	limit := MaxUDP
	if network == "tcp" {
		limit = MaxTCP
	}
	q, err := ParseQuery(msg)
	var out []byte
	switch addrs, ok := s.names[q.Name]; {
	case err != nil:
		out = ReplyTo(q, err)
	case ok:
		out = Answer(q, addrs, time.Minute, limit)
	default:
		out = Refused(q)
	}
	r, derr := decode(out)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("%s %v %s %v an=%d tc=%v err=%v", network, q.Type, q.Name, r.rcode, r.an, r.tc, derr))
	return out
}

func (s *resolver) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *resolver) logged(substr string) bool {
	return slices.ContainsFunc(s.lines(), func(l string) bool { return strings.Contains(l, substr) })
}

// packetConn is a UDP "connection" to the resolver: a Write is a query,
// the next Read its reply. Go's resolver speaks datagrams to a net.Conn
// that is also a net.PacketConn.
type packetConn struct {
	s       *resolver
	mu      sync.Mutex
	replies [][]byte
}

func (c *packetConn) Write(p []byte) (int, error) {
	out := c.s.handle("udp", p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if out != nil {
		c.replies = append(c.replies, out)
	}
	return len(p), nil
}

func (c *packetConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replies) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.replies[0])
	c.replies = c.replies[1:]
	return n, nil
}

func (c *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, err := c.Read(p)
	return n, c.RemoteAddr(), err
}
func (c *packetConn) WriteTo(p []byte, _ net.Addr) (int, error) { return c.Write(p) }
func (c *packetConn) Close() error                              { return nil }
func (c *packetConn) LocalAddr() net.Addr                       { return &net.UDPAddr{} }
func (c *packetConn) RemoteAddr() net.Addr                      { return &net.UDPAddr{Port: 53} }
func (c *packetConn) SetDeadline(time.Time) error               { return nil }
func (c *packetConn) SetReadDeadline(time.Time) error           { return nil }
func (c *packetConn) SetWriteDeadline(time.Time) error          { return nil }

// serveTCP answers framed queries on c until the client closes it.
func (s *resolver) serveTCP(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	var buf []byte
	chunk := make([]byte, 512)
	for {
		n, err := c.Read(chunk)
		if err != nil {
			return
		}
		buf = append(buf, chunk[:n]...)
		for {
			msg, rest, err := ReadTCP(buf)
			if err != nil {
				break
			}
			out, err := AppendTCP(nil, s.handle("tcp", msg))
			if err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
			buf = rest
		}
	}
}

func (s *resolver) goResolver(t *testing.T) *net.Resolver {
	t.Cleanup(s.wg.Wait)
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		switch network {
		case "udp":
			return &packetConn{s: s}, nil
		case "tcp":
			client, server := net.Pipe()
			s.wg.Add(1)
			go s.serveTCP(server)
			return client, nil
		}
		return nil, fmt.Errorf("network %q", network)
	}}
}

// TestGoResolver round-trips through Go's own resolver: its queries (with
// EDNS, over UDP and TCP) go through ParseQuery, and its parser reads our
// replies, truncation and retry over TCP included.
func TestGoResolver(t *testing.T) {
	var many []netip.Addr
	for i := 1; i <= 40; i++ {
		many = append(many, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
	}
	s := &resolver{names: map[string][]netip.Addr{
		"allowed.test":      {netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")},
		"many.allowed.test": many,
		"v4only.test":       {netip.MustParseAddr("192.0.2.11")},
	}}
	r := s.goResolver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	got, err := r.LookupNetIP(ctx, "ip", "allowed.test.")
	slices.SortFunc(got, netip.Addr.Compare)
	if want := s.names["allowed.test"]; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("allowed.test: %v, %v; want %v", got, err, want)
	}

	got, err = r.LookupNetIP(ctx, "ip4", "Many.Allowed.TEST.")
	slices.SortFunc(got, netip.Addr.Compare)
	if err != nil || !reflect.DeepEqual(got, many) {
		t.Fatalf("many.allowed.test: %d addresses, %v; want 40", len(got), err)
	}
	if !s.logged("udp A many.allowed.test NOERROR an=29 tc=true err=<nil>") || !s.logged("tcp A many.allowed.test NOERROR an=40 tc=false err=<nil>") {
		t.Fatalf("want a truncated UDP reply, then TCP; log:\n%s", strings.Join(s.lines(), "\n"))
	}

	// NODATA: the name is there, the type is not.
	_, err = r.LookupNetIP(ctx, "ip6", "v4only.test.")
	if de := (*net.DNSError)(nil); !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("AAAA of v4only.test: %v, want not found", err)
	}
	_, err = r.LookupTXT(ctx, "allowed.test.")
	if de := (*net.DNSError)(nil); !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("TXT of allowed.test: %v, want not found", err)
	}

	_, err = r.LookupNetIP(ctx, "ip4", "denied.test.")
	if de := (*net.DNSError)(nil); !errors.As(err, &de) || de.IsNotFound {
		t.Fatalf("denied.test: %v, want a server error", err)
	}
	if !s.logged("udp A denied.test REFUSED an=0 tc=false err=<nil>") {
		t.Fatalf("want REFUSED for denied.test; log:\n%s", strings.Join(s.lines(), "\n"))
	}
	for _, l := range s.lines() {
		if !strings.HasSuffix(l, "err=<nil>") {
			t.Errorf("a reply the test cannot read: %s", l)
		}
	}
	t.Logf("queries:\n%s", strings.Join(s.lines(), "\n"))
}

func TestParseQuery(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	for _, c := range []struct {
		name string
		b    []byte
		want Query // wire and noQuestion are not compared
	}{
		{"A, RD, mixed case", query(0x1234, 0x0100, encName("Example.COM"), TypeA, 1, nil),
			Query{ID: 0x1234, Name: "example.com", Type: TypeA, RD: true}},
		{"AAAA with EDNS and a cookie", query(7, 0x0120, encName("pypi.org"), TypeAAAA, 1, optRR(1232, 0, slices.Concat(be16(10), be16(8), make([]byte, 8)))),
			Query{ID: 7, Name: "pypi.org", Type: TypeAAAA, RD: true, EDNS: true, UDPSize: 1232}},
		{"root NS", query(1, 0, []byte{0}, 2, 1, nil), Query{ID: 1, Name: "", Type: 2}},
		{"underscores, TXT", query(2, 0, encName("_dmarc.example.com"), 16, 1, nil), Query{ID: 2, Name: "_dmarc.example.com", Type: 16}},
		{"253-byte name", query(3, 0, encName(name253), TypeA, 1, nil), Query{ID: 3, Name: name253, Type: TypeA}},
		{"TC and AD bits ignored", query(4, 0x0220, encName("a.b"), TypeA, 1, nil), Query{ID: 4, Name: "a.b", Type: TypeA}},
		{"EDNS DO bit and no options", query(5, 0, encName("a.b"), TypeA, 1, slices.Concat([]byte{0}, be16(41), be16(4096), []byte{0, 0, 0x80, 0}, be16(0))),
			Query{ID: 5, Name: "a.b", Type: TypeA, EDNS: true, UDPSize: 4096}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := ParseQuery(c.b[:len(c.b):len(c.b)])
			if err != nil {
				t.Fatal(err)
			}
			q.wire, q.noQuestion = nil, false
			if !reflect.DeepEqual(q, c.want) {
				t.Fatalf("got %+v, want %+v", q, c.want)
			}
		})
	}
}

func TestParseQueryRejects(t *testing.T) {
	a := func(name []byte) []byte { return query(9, 0x0100, name, TypeA, 1, nil) }
	withCounts := func(b []byte, qd, an, ns, ar int) []byte {
		b = slices.Clone(b)
		copy(b[4:], slices.Concat(be16(qd), be16(an), be16(ns), be16(ar)))
		return b
	}
	good := a(encName("example.com"))
	for _, c := range []struct {
		name  string
		b     []byte
		rcode RCode // 0: ErrNoReply
		text  string
		qname string // the name ParseQuery reports, when it got that far
	}{
		{"empty", nil, 0, "0 bytes", ""},
		{"11 bytes", good[:11], 0, "11 bytes", ""},
		{"a response", query(9, 0x8180, encName("example.com"), TypeA, 1, nil), 0, "QR=1", ""},
		{"opcode STATUS", query(9, 2<<11, encName("example.com"), TypeA, 1, nil), RCodeRefused, "opcode 2", ""},
		{"opcode UPDATE", query(9, 5<<11, encName("example.com"), 6, 1, nil), RCodeRefused, "opcode 5", ""},
		{"no question", withCounts(good[:12], 0, 0, 0, 0), RCodeFormErr, "0 questions", ""},
		{"two questions", withCounts(slices.Concat(good, encName("example.org"), be16(1), be16(1)), 2, 0, 0, 0), RCodeFormErr, "2 questions", ""},
		{"question count past the data", withCounts(good, 3, 0, 0, 0), RCodeFormErr, "3 questions", ""},
		{"answer count past the data", withCounts(good, 1, 1, 0, 0), RCodeFormErr, "1 answer", "example.com"},
		{"authority count", withCounts(good, 1, 0, 2, 0), RCodeFormErr, "2 authority", "example.com"},
		{"additional count past the data", withCounts(good, 1, 0, 0, 5), RCodeFormErr, "5 additional", "example.com"},
		{"additional record missing", withCounts(good, 1, 0, 0, 1), RCodeFormErr, "additional record cut off", "example.com"},
		{"question cut off", good[:20], RCodeFormErr, "runs past the end", ""},
		{"type and class cut off", good[:len(good)-1], RCodeFormErr, "type and class cut off", ""},
		{"no root label", a([]byte{3, 'c', 'o', 'm'})[:16], RCodeFormErr, "runs past the end", ""},
		{"label past the end", slices.Concat(good[:12], []byte{40, 'a'}), RCodeFormErr, "label of 40 bytes", ""},
		{"label type 0x40", a([]byte{0x41, 'a', 0}), RCodeFormErr, "label type 0x40", ""},
		{"label type 0x80", a([]byte{0x81, 'a', 0}), RCodeFormErr, "label type 0x80", ""},
		{"pointer to itself", a([]byte{0xc0, 12}), RCodeFormErr, "a loop", ""},
		{"pointer loop after a label", a([]byte{1, 'a', 0xc0, 12}), RCodeFormErr, "a loop", ""},
		{"pointer forward", a([]byte{1, 'a', 0xc0, 16, 1, 'b', 0}), RCodeFormErr, "a loop", ""},
		{"pointer into the header", a([]byte{0xc0, 2}), RCodeFormErr, "into the header", ""},
		{"pointer cut off", slices.Concat(good[:12], []byte{1, 'a', 0xc0}), RCodeFormErr, "cut off", ""},
		{"name of 256 bytes", a(encName(strings.Repeat("abcdefg.", 31) + "abcdef")), RCodeFormErr, "longer than 255", ""},
		{"four labels of 63", a(encName(strings.Repeat(strings.Repeat("x", 63)+".", 3) + strings.Repeat("x", 63))), RCodeFormErr, "longer than 255", ""},
		{"trailing byte", append(slices.Clone(good), 0), RCodeFormErr, "1 bytes after", "example.com"},
		{"type OPT", query(9, 0, encName("a.b"), typeOPT, 1, nil), RCodeFormErr, "type OPT", "a.b"},
		{"class CH", query(9, 0, encName("version.bind"), 16, 3, nil), RCodeRefused, "class 3", "version.bind"},
		{"class ANY", query(9, 0, encName("a.b"), TypeA, 255, nil), RCodeRefused, "class 255", "a.b"},
		{"dot inside a label", a([]byte{5, 'a', '.', 'c', 'o', 'm', 0}), RCodeRefused, `a\\046com`, `a\046com`},
		{"space", a(encName("a b.example")), RCodeRefused, "name", `a\032b.example`},
		{"non-ASCII", a(encName("b\xfccher.example")), RCodeRefused, "name", `b\252cher.example`},
		{"NUL", a([]byte{3, 'a', 0, 'b', 3, 'c', 'o', 'm', 0}), RCodeRefused, "name", `a\000b.com`},
		{"OPT with a name", query(9, 0, encName("a.b"), TypeA, 1, slices.Concat([]byte{1, 'x', 0}, be16(41), be16(512), []byte{0, 0, 0, 0}, be16(0))), RCodeFormErr, "root name", "a.b"},
		{"additional A record", query(9, 0, encName("a.b"), TypeA, 1, slices.Concat([]byte{0}, be16(1), be16(1), []byte{0, 0, 0, 0}, be16(0))), RCodeFormErr, "type A", "a.b"},
		{"OPT data past the end", query(9, 0, encName("a.b"), TypeA, 1, slices.Concat(optRR(512, 0, nil)[:9], be16(4))), RCodeFormErr, "OPT data of 4 bytes, 0 left", "a.b"},
		{"option past the OPT data", query(9, 0, encName("a.b"), TypeA, 1, optRR(512, 0, slices.Concat(be16(10), be16(9), make([]byte, 4)))), RCodeFormErr, "option 10 of 9 bytes, 4 left", "a.b"},
		{"option header cut off", query(9, 0, encName("a.b"), TypeA, 1, optRR(512, 0, []byte{0, 10})), RCodeFormErr, "option header cut off", "a.b"},
		{"two OPT records", withCounts(query(9, 0, encName("a.b"), TypeA, 1, slices.Concat(optRR(512, 0, nil), optRR(512, 0, nil))), 1, 0, 0, 2), RCodeFormErr, "2 additional", "a.b"},
		{"EDNS version 1", query(9, 0, encName("a.b"), TypeA, 1, optRR(512, 1, nil)), RCodeBadVers, "EDNS version 1", "a.b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := ParseQuery(c.b[:len(c.b):len(c.b)])
			var e *Error
			switch {
			case c.rcode == 0 && !errors.Is(err, ErrNoReply):
				t.Fatalf("got %v, want ErrNoReply", err)
			case c.rcode != 0 && (!errors.As(err, &e) || e.RCode != c.rcode):
				t.Fatalf("got %v, want %v", err, c.rcode)
			case !strings.Contains(err.Error(), c.text):
				t.Fatalf("got %q, want it to contain %q", err, c.text)
			case q.Name != c.qname:
				t.Fatalf("Name %q, want %q", q.Name, c.qname)
			}
			if len(c.b) >= headerLen && q.ID != 9 {
				t.Fatalf("ID %d, want 9", q.ID)
			}
			reply := ReplyTo(q, err)
			if c.rcode == 0 {
				if reply != nil {
					t.Fatalf("a reply % x to what must not be answered", reply)
				}
				return
			}
			r, derr := decode(reply)
			if derr != nil || r.id != 9 || r.rcode != c.rcode || len(reply) > MaxUDP {
				t.Fatalf("reply % x: %+v, %v", reply, r, derr)
			}
		})
	}
}

// TestReplyBytes pins whole replies, checked by hand against RFC 1035
// section 4.1 and RFC 6891 section 6.1.
func TestReplyBytes(t *testing.T) {
	q, err := ParseQuery(query(0x1234, 0x0100, encName("Example.COM"), TypeA, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	question := []byte{7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'C', 'O', 'M', 0, 0, 1, 0, 1}
	answer := Answer(q, []netip.Addr{netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("2001:db8::1")}, 90*time.Second, MaxUDP)
	want := slices.Concat(
		[]byte{0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0}, // QR RD RA, NOERROR, 1 question, 1 answer
		question, // case kept
		[]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 90, 0, 4, 1, 2, 3, 4})
	if !bytes.Equal(answer, want) {
		t.Fatalf("Answer:\n got % x\nwant % x", answer, want)
	}

	q, err = ParseQuery(query(0xbeef, 0, encName("x.test"), TypeAAAA, 1, optRR(1232, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Concat(
		[]byte{0xbe, 0xef, 0x80, 0x85, 0, 1, 0, 0, 0, 0, 0, 1}, // QR RA, REFUSED, 1 question, 1 additional
		[]byte{1, 'x', 4, 't', 'e', 's', 't', 0, 0, 28, 0, 1},
		[]byte{0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0}) // OPT: our size 512, version 0
	if got := Refused(q); !bytes.Equal(got, want) {
		t.Fatalf("Refused:\n got % x\nwant % x", got, want)
	}

	want = []byte{0xbe, 0xef, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 1,
		1, 'x', 4, 't', 'e', 's', 't', 0, 0, 28, 0, 1,
		0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 0, 0, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0}
	want[2] = 0x80 // RD was not set
	if got := Answer(q, []netip.Addr{netip.MustParseAddr("2001:db8::1")}, 0, MaxUDP); !bytes.Equal(got, want) {
		t.Fatalf("Answer with EDNS:\n got % x\nwant % x", got, want)
	}

	if got, want := FormErr(0xabcd), []byte{0xab, 0xcd, 0x80, 0x81, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("FormErr:\n got % x\nwant % x", got, want)
	}

	// BADVERS is 16: 0 in the header, 1 in the OPT's extended RCODE.
	q, err = ParseQuery(query(1, 0, encName("x.test"), TypeA, 1, optRR(512, 2, nil)))
	want = slices.Concat([]byte{0, 1, 0x80, 0x80, 0, 1, 0, 0, 0, 0, 0, 1},
		[]byte{1, 'x', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1},
		[]byte{0, 0, 41, 2, 0, 1, 0, 0, 0, 0, 0})
	if got := ReplyTo(q, err); !bytes.Equal(got, want) {
		t.Fatalf("BADVERS:\n got % x\nwant % x", got, want)
	}

	// An opcode refusal echoes the opcode and has no question.
	q, err = ParseQuery(query(2, 4<<11|0x0100, encName("x.test"), 6, 1, nil))
	if got, want := ReplyTo(q, err), []byte{0, 2, 0xa1, 0x85, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("opcode NOTIFY:\n got % x\nwant % x", got, want)
	}
}

func TestAnswer(t *testing.T) {
	mk := func(qtype Type, edns bool) Query {
		var opt []byte
		if edns {
			opt = optRR(4096, 0, nil)
		}
		q, err := ParseQuery(query(1, 0x0100, encName("host.example"), qtype, 1, opt))
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	addrs := func(n int, v6 bool) []netip.Addr {
		var out []netip.Addr
		for i := 0; i < n; i++ {
			if v6 {
				out = append(out, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}))
			} else {
				out = append(out, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
			}
		}
		return out
	}
	mixed := []netip.Addr{
		netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.1"),
		netip.MustParseAddr("::ffff:192.0.2.2"), netip.MustParseAddr("fe80::1%eth0"), {}, netip.MustParseAddr("192.0.2.3"),
	}
	for _, c := range []struct {
		name  string
		q     Query
		addrs []netip.Addr
		ttl   time.Duration
		limit int
		want  []netip.Addr
		tc    bool
	}{
		{"A from mixed", mk(TypeA, false), mixed, time.Minute, MaxUDP, []netip.Addr{mixed[0], mixed[6]}, false},
		{"AAAA from mixed", mk(TypeAAAA, false), mixed, time.Minute, MaxUDP,
			[]netip.Addr{mixed[1], mixed[3], netip.MustParseAddr("fe80::1")}, false},
		{"TXT: NODATA", mk(16, false), mixed, time.Minute, MaxUDP, nil, false},
		{"A, none", mk(TypeA, false), nil, time.Minute, MaxUDP, nil, false},
		{"100 A over UDP", mk(TypeA, false), addrs(100, false), time.Minute, MaxUDP, addrs(30, false), true},
		{"100 A over UDP with EDNS", mk(TypeA, true), addrs(100, false), time.Minute, MaxUDP, addrs(29, false), true},
		{"100 A over TCP", mk(TypeA, false), addrs(100, false), time.Minute, MaxTCP, addrs(100, false), false},
		{"100 AAAA over UDP", mk(TypeAAAA, false), addrs(100, true), time.Minute, MaxUDP, addrs(17, true), true},
		{"limit below 512 counts as 512", mk(TypeA, false), addrs(100, false), time.Minute, 0, addrs(30, false), true},
		{"5000 AAAA over TCP", mk(TypeAAAA, true), addrs(5000, true), time.Minute, 1 << 20, addrs(2339, true), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Answer(c.q, c.addrs, c.ttl, c.limit)
			r, err := decode(b)
			if err != nil {
				t.Fatalf("% x: %v", b, err)
			}
			if len(b) > max(c.limit, MaxUDP) || len(b) > MaxTCP {
				t.Fatalf("%d bytes for a limit of %d", len(b), c.limit)
			}
			if r.rcode != RCodeSuccess || r.tc != c.tc || !r.rd || !r.ra || r.opt != c.q.EDNS || r.qname != "host.example" || r.qtype != c.q.Type {
				t.Fatalf("reply %+v", r)
			}
			if !slices.Equal(r.answers, c.want) {
				t.Fatalf("%d answers %v, want %d %v", len(r.answers), r.answers, len(c.want), c.want)
			}
			for i := range r.answers {
				if r.answerTypes[i] != c.q.Type || r.answerOwners[i] != "host.example" || r.ttls[i] != 60 {
					t.Fatalf("answer %d: %v %q ttl %d", i, r.answerTypes[i], r.answerOwners[i], r.ttls[i])
				}
			}
		})
	}
}

func TestTTL(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint32
	}{
		{-time.Second, 0}, {0, 0}, {1900 * time.Millisecond, 1}, {time.Hour, 3600},
		{(1<<31 - 1) * time.Second, 1<<31 - 1}, {100 * 365 * 24 * time.Hour, 1<<31 - 1},
	} {
		if got := ttlSeconds(c.d); got != c.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestHandBuiltQuery: a Query made without ParseQuery gets its name encoded.
func TestHandBuiltQuery(t *testing.T) {
	r, err := decode(Answer(Query{ID: 3, Name: "a.example", Type: TypeA}, []netip.Addr{netip.MustParseAddr("192.0.2.1")}, time.Second, MaxUDP))
	if err != nil || r.qname != "a.example" || len(r.answers) != 1 || r.answerOwners[0] != "a.example" {
		t.Fatalf("%+v, %v", r, err)
	}
	r, err = decode(Refused(Query{ID: 3, Name: "", Type: 2}))
	if err != nil || r.qd != 1 || r.qname != "" || r.rcode != RCodeRefused {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestReplyToOtherErrors(t *testing.T) {
	if got := ReplyTo(Query{ID: 1}, errors.New("read: connection reset")); got != nil {
		t.Fatalf("reply % x to an error not from ParseQuery", got)
	}
	if got := ReplyTo(Query{ID: 1}, nil); got != nil {
		t.Fatalf("reply % x to no error", got)
	}
}

func TestTCPFraming(t *testing.T) {
	two, err := AppendTCP(nil, []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	two, _ = AppendTCP(two, nil)
	two, _ = AppendTCP(two, []byte{4})
	if want := []byte{0, 3, 1, 2, 3, 0, 0, 0, 1, 4}; !bytes.Equal(two, want) {
		t.Fatalf("AppendTCP: % x, want % x", two, want)
	}
	for _, c := range []struct {
		b         []byte
		msg, rest []byte
		need      int
	}{
		{nil, nil, nil, 2},
		{[]byte{0}, nil, []byte{0}, 1},
		{[]byte{0, 5, 1, 2}, nil, []byte{0, 5, 1, 2}, 3},
		{[]byte{0xff, 0xff}, nil, []byte{0xff, 0xff}, 65535},
		{two, []byte{1, 2, 3}, two[5:], 0},
		{two[5:], []byte{}, two[7:], 0},
		{two[7:], []byte{4}, []byte{}, 0},
	} {
		msg, rest, err := ReadTCP(c.b)
		var se *ShortError
		if c.need > 0 {
			if !errors.As(err, &se) || !errors.Is(err, ErrShort) || se.Need != c.need || msg != nil || !bytes.Equal(rest, c.b) {
				t.Errorf("ReadTCP(% x) = % x, % x, %v; want Need %d", c.b, msg, rest, err, c.need)
			}
			continue
		}
		if err != nil || !bytes.Equal(msg, c.msg) || !bytes.Equal(rest, c.rest) {
			t.Errorf("ReadTCP(% x) = % x, % x, %v; want % x, % x", c.b, msg, rest, err, c.msg, c.rest)
		}
		if cap(msg) != len(msg) {
			t.Errorf("ReadTCP(% x): msg can grow into the next message", c.b)
		}
	}
	if _, err := AppendTCP(nil, make([]byte, MaxTCP+1)); err == nil {
		t.Fatal("AppendTCP took a message over 65535 bytes")
	}
	if b, err := AppendTCP(nil, make([]byte, MaxTCP)); err != nil || len(b) != MaxTCP+2 || b[0] != 0xff || b[1] != 0xff {
		t.Fatalf("AppendTCP of 65535 bytes: %d bytes, %v", len(b), err)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{TypeA.String(), "A"}, {Type(65).String(), "HTTPS"}, {Type(1234).String(), "TYPE1234"},
		{RCodeRefused.String(), "REFUSED"}, {RCode(9).String(), "RCODE9"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
