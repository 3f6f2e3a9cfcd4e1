package resolver

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// encName is a test-side name encoder, independent of dnsmessage.
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

// rawMsg builds a query with one question; opt, when not nil, is added as
// the one additional record.
func rawMsg(id, flags int, name []byte, qtype dnsmessage.Type, class int, opt []byte) []byte {
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

func TestParseQuery(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	for _, c := range []struct {
		name string
		b    []byte
		want query // the question echoed is not compared
	}{
		{"A, RD, mixed case", rawMsg(0x1234, 0x0100, encName("Example.COM"), dnsmessage.TypeA, 1, nil),
			query{id: 0x1234, name: "example.com", typ: dnsmessage.TypeA, rd: true}},
		{"AAAA with EDNS and a cookie", rawMsg(7, 0x0120, encName("pypi.org"), dnsmessage.TypeAAAA, 1, optRR(1232, 0, slices.Concat(be16(10), be16(8), make([]byte, 8)))),
			query{id: 7, name: "pypi.org", typ: dnsmessage.TypeAAAA, rd: true, edns: true, udpSize: 1232}},
		{"root NS", rawMsg(1, 0, []byte{0}, dnsmessage.TypeNS, 1, nil), query{id: 1, name: "", typ: dnsmessage.TypeNS}},
		{"underscores, TXT", rawMsg(2, 0, encName("_dmarc.example.com"), dnsmessage.TypeTXT, 1, nil), query{id: 2, name: "_dmarc.example.com", typ: dnsmessage.TypeTXT}},
		{"253-byte name", rawMsg(3, 0, encName(name253), dnsmessage.TypeA, 1, nil), query{id: 3, name: name253, typ: dnsmessage.TypeA}},
		{"TC and AD bits ignored", rawMsg(4, 0x0220, encName("a.b"), dnsmessage.TypeA, 1, nil), query{id: 4, name: "a.b", typ: dnsmessage.TypeA}},
		{"EDNS DO bit and no options", rawMsg(5, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat([]byte{0}, be16(41), be16(4096), []byte{0, 0, 0x80, 0}, be16(0))),
			query{id: 5, name: "a.b", typ: dnsmessage.TypeA, edns: true, udpSize: 4096}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := parseQuery(c.b[:len(c.b):len(c.b)])
			if err != nil {
				t.Fatal(err)
			}
			if !q.hasQuestion {
				t.Fatal("no question to echo")
			}
			q.question, q.hasQuestion = dnsmessage.Question{}, false
			if q != c.want {
				t.Fatalf("got %+v, want %+v", q, c.want)
			}
		})
	}
}

func TestParseQueryRejects(t *testing.T) {
	a := func(name []byte) []byte { return rawMsg(9, 0x0100, name, dnsmessage.TypeA, 1, nil) }
	withCounts := func(b []byte, qd, an, ns, ar int) []byte {
		b = slices.Clone(b)
		copy(b[4:], slices.Concat(be16(qd), be16(an), be16(ns), be16(ar)))
		return b
	}
	good := a(encName("example.com"))
	const (
		noReply = 0
		formErr = dnsmessage.RCodeFormatError
		refused = dnsmessage.RCodeRefused
	)
	for _, c := range []struct {
		name     string
		b        []byte
		rcode    dnsmessage.RCode // noReply: errNoReply
		qname    string           // the name parseQuery reports, when it got that far
		question bool             // the reply echoes the question, class included
	}{
		{"empty", nil, noReply, "", false},
		{"11 bytes", good[:11], noReply, "", false},
		{"a response", rawMsg(9, 0x8180, encName("example.com"), dnsmessage.TypeA, 1, nil), noReply, "", false},
		{"opcode STATUS", rawMsg(9, 2<<11, encName("example.com"), dnsmessage.TypeA, 1, nil), refused, "", false},
		{"opcode UPDATE", rawMsg(9, 5<<11, encName("example.com"), dnsmessage.TypeSOA, 1, nil), refused, "", false},
		{"no question", withCounts(good[:12], 0, 0, 0, 0), formErr, "", false},
		{"two questions", withCounts(slices.Concat(good, encName("example.org"), be16(1), be16(1)), 2, 0, 0, 0), formErr, "", false},
		{"question count past the data", withCounts(good, 3, 0, 0, 0), formErr, "", false},
		{"answer count past the data", withCounts(good, 1, 1, 0, 0), formErr, "example.com", false},
		{"authority count", withCounts(good, 1, 0, 2, 0), formErr, "example.com", false},
		{"additional count past the data", withCounts(good, 1, 0, 0, 5), formErr, "example.com", false},
		{"additional record missing", withCounts(good, 1, 0, 0, 1), formErr, "example.com", false},
		{"question cut off", good[:20], formErr, "", false},
		{"type and class cut off", good[:len(good)-1], formErr, "", false},
		{"no root label", a([]byte{3, 'c', 'o', 'm'})[:16], formErr, "", false},
		{"label past the end", slices.Concat(good[:12], []byte{40, 'a'}), formErr, "", false},
		{"label type 0x40", a([]byte{0x41, 'a', 0}), formErr, "", false},
		{"label type 0x80", a([]byte{0x81, 'a', 0}), formErr, "", false},
		{"pointer to itself", a([]byte{0xc0, 12}), formErr, "", false},
		{"pointer loop after a label", a([]byte{1, 'a', 0xc0, 12}), formErr, "", false},
		{"pointer forward", a([]byte{1, 'a', 0xc0, 16, 1, 'b', 0}), formErr, "a.b", false},
		{"pointer into the header", a([]byte{0xc0, 2}), formErr, `\000`, false},
		{"pointer cut off", slices.Concat(good[:12], []byte{1, 'a', 0xc0}), formErr, "", false},
		{"name of 256 bytes", a(encName(strings.Repeat("abcdefg.", 31) + "abcdef")), formErr, "", false},
		{"four labels of 63", a(encName(strings.Repeat(strings.Repeat("x", 63)+".", 3) + strings.Repeat("x", 63))), formErr, "", false},
		{"trailing byte", append(slices.Clone(good), 0), formErr, "example.com", false},
		{"type OPT", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeOPT, 1, nil), formErr, "a.b", false},
		{"class CH", rawMsg(9, 0, encName("version.bind"), dnsmessage.TypeTXT, 3, nil), refused, "version.bind", true},
		{"class ANY", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 255, nil), refused, "a.b", true},
		// dnsmessage does not read a name with a dot inside a label, so
		// the refusal has neither the name nor the question.
		{"dot inside a label", a([]byte{5, 'a', '.', 'c', 'o', 'm', 0}), refused, "", false},
		{"space", a(encName("a b.example")), refused, `a\032b.example`, true},
		{"non-ASCII", a(encName("b\xfccher.example")), refused, `b\252cher.example`, true},
		{"NUL", a([]byte{3, 'a', 0, 'b', 3, 'c', 'o', 'm', 0}), refused, `a\000b.com`, true},
		{"OPT with a name", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat([]byte{1, 'x', 0}, be16(41), be16(512), []byte{0, 0, 0, 0}, be16(0))), formErr, "a.b", false},
		{"OPT named by a pointer to the root", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat([]byte{0xc0, 16}, be16(41), be16(512), []byte{0, 0, 0, 0}, be16(0))), formErr, "a.b", false},
		{"additional A record", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat([]byte{0}, be16(1), be16(1), []byte{0, 0, 0, 0}, be16(0))), formErr, "a.b", false},
		{"OPT data past the end", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat(optRR(512, 0, nil)[:9], be16(4))), formErr, "a.b", false},
		{"option past the OPT data", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, optRR(512, 0, slices.Concat(be16(10), be16(9), make([]byte, 4)))), formErr, "a.b", false},
		{"option past the OPT data, within the message", withCounts(slices.Concat(rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, optRR(512, 0, slices.Concat(be16(10), be16(4)))), make([]byte, 4)), 1, 0, 0, 1), formErr, "a.b", false},
		{"option header cut off", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, optRR(512, 0, []byte{0, 10})), formErr, "a.b", false},
		{"two OPT records", withCounts(rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, slices.Concat(optRR(512, 0, nil), optRR(512, 0, nil))), 1, 0, 0, 2), formErr, "a.b", false},
		{"EDNS version 1", rawMsg(9, 0, encName("a.b"), dnsmessage.TypeA, 1, optRR(512, 1, nil)), rcodeBadVers, "a.b", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := parseQuery(c.b[:len(c.b):len(c.b)])
			var e *queryError
			switch {
			case c.rcode == noReply && !errors.Is(err, errNoReply):
				t.Fatalf("got %v, want errNoReply", err)
			case c.rcode != noReply && (!errors.As(err, &e) || e.rcode != c.rcode):
				t.Fatalf("got %v, want %v", err, c.rcode)
			case q.name != c.qname:
				t.Fatalf("name %q, want %q (%v)", q.name, c.qname, err)
			}
			if len(c.b) >= headerLen && q.id != 9 {
				t.Fatalf("ID %d, want 9", q.id)
			}
			out := replyTo(q, err)
			if c.rcode == noReply {
				if out != nil {
					t.Fatalf("a reply % x to what must not be answered", out)
				}
				return
			}
			r := parseReply(t, out)
			if r.id != 9 || r.rcode != int(c.rcode) || len(out) > maxUDP || (r.qd == 1) != c.question || (c.question && r.qclass != uint16(q.question.Class)) {
				t.Fatalf("reply % x: %+v to %v", out, r, err)
			}
		})
	}
}

// TestDotInLabel pins the text isDotInLabel matches: dnsmessage exports
// no value for its refusal of a dot inside a label.
func TestDotInLabel(t *testing.T) {
	var p dnsmessage.Parser
	if _, err := p.Start(rawMsg(1, 0, []byte{3, 'a', '.', 'b', 0}, dnsmessage.TypeA, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Question(); !isDotInLabel(err) {
		t.Fatalf("dnsmessage says %v for a dot inside a label; isDotInLabel does not know it", err)
	}
	for _, err := range []error{nil, errors.New("segment length too long"), dnsmessage.ErrSectionDone} {
		if isDotInLabel(err) {
			t.Errorf("isDotInLabel(%v)", err)
		}
	}
}

// TestReplyBytes pins whole replies, checked by hand against RFC 1035
// section 4.1 and RFC 6891 section 6.1 (the same bytes network/dnsmsg,
// the hand-written encoder before dnsmessage, wrote).
func TestReplyBytes(t *testing.T) {
	q, err := parseQuery(rawMsg(0x1234, 0x0100, encName("Example.COM"), dnsmessage.TypeA, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	question := []byte{7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'C', 'O', 'M', 0, 0, 1, 0, 1}
	got := answer(q, []netip.Addr{netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("2001:db8::1")}, 90*time.Second, maxUDP)
	want := slices.Concat(
		[]byte{0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0}, // QR RD RA, NOERROR, 1 question, 1 answer
		question, // case kept
		[]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 90, 0, 4, 1, 2, 3, 4})
	if !bytes.Equal(got, want) {
		t.Fatalf("answer:\n got % x\nwant % x", got, want)
	}

	q, err = parseQuery(rawMsg(0xbeef, 0, encName("x.test"), dnsmessage.TypeAAAA, 1, optRR(1232, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Concat(
		[]byte{0xbe, 0xef, 0x80, 0x85, 0, 1, 0, 0, 0, 0, 0, 1}, // QR RA, REFUSED, 1 question, 1 additional
		[]byte{1, 'x', 4, 't', 'e', 's', 't', 0, 0, 28, 0, 1},
		[]byte{0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0}) // OPT: our size 512, version 0
	if got := refusedReply(q); !bytes.Equal(got, want) {
		t.Fatalf("refusedReply:\n got % x\nwant % x", got, want)
	}
	want[3] = 0x82
	if got := servFail(q); !bytes.Equal(got, want) {
		t.Fatalf("servFail:\n got % x\nwant % x", got, want)
	}

	want = []byte{0xbe, 0xef, 0x80, 0x80, 0, 1, 0, 1, 0, 0, 0, 1, // RD was not set
		1, 'x', 4, 't', 'e', 's', 't', 0, 0, 28, 0, 1,
		0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 0, 0, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0}
	if got := answer(q, []netip.Addr{netip.MustParseAddr("2001:db8::1")}, 0, maxUDP); !bytes.Equal(got, want) {
		t.Fatalf("answer with EDNS:\n got % x\nwant % x", got, want)
	}

	if got, want := formErrReply(0xabcd), []byte{0xab, 0xcd, 0x80, 0x81, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("formErrReply:\n got % x\nwant % x", got, want)
	}

	// BADVERS is 16: 0 in the header, 1 in the OPT's extended RCODE.
	q, err = parseQuery(rawMsg(1, 0, encName("x.test"), dnsmessage.TypeA, 1, optRR(512, 2, nil)))
	want = slices.Concat([]byte{0, 1, 0x80, 0x80, 0, 1, 0, 0, 0, 0, 0, 1},
		[]byte{1, 'x', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1},
		[]byte{0, 0, 41, 2, 0, 1, 0, 0, 0, 0, 0})
	if got := replyTo(q, err); !bytes.Equal(got, want) {
		t.Fatalf("BADVERS:\n got % x\nwant % x", got, want)
	}

	// An opcode refusal echoes the opcode and has no question.
	q, err = parseQuery(rawMsg(2, 4<<11|0x0100, encName("x.test"), dnsmessage.TypeSOA, 1, nil))
	if got, want := replyTo(q, err), []byte{0, 2, 0xa1, 0x85, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("opcode NOTIFY:\n got % x\nwant % x", got, want)
	}
}

func TestAnswer(t *testing.T) {
	mk := func(qtype dnsmessage.Type, edns bool) query {
		var opt []byte
		if edns {
			opt = optRR(4096, 0, nil)
		}
		q, err := parseQuery(rawMsg(1, 0x0100, encName("host.example"), qtype, 1, opt))
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
		q     query
		addrs []netip.Addr
		limit int
		want  []netip.Addr
		tc    bool
	}{
		{"A from mixed", mk(dnsmessage.TypeA, false), mixed, maxUDP, []netip.Addr{mixed[0], mixed[6]}, false},
		{"AAAA from mixed", mk(dnsmessage.TypeAAAA, false), mixed, maxUDP,
			[]netip.Addr{mixed[1], mixed[3], netip.MustParseAddr("fe80::1")}, false},
		{"TXT: NODATA", mk(dnsmessage.TypeTXT, false), mixed, maxUDP, nil, false},
		{"A, none", mk(dnsmessage.TypeA, false), nil, maxUDP, nil, false},
		{"100 A over UDP", mk(dnsmessage.TypeA, false), addrs(100, false), maxUDP, addrs(30, false), true},
		{"100 A over UDP with EDNS", mk(dnsmessage.TypeA, true), addrs(100, false), maxUDP, addrs(29, false), true},
		{"100 A over TCP", mk(dnsmessage.TypeA, false), addrs(100, false), maxTCP, addrs(100, false), false},
		{"100 AAAA over UDP", mk(dnsmessage.TypeAAAA, false), addrs(100, true), maxUDP, addrs(17, true), true},
		{"limit below 512 counts as 512", mk(dnsmessage.TypeA, false), addrs(100, false), 0, addrs(30, false), true},
		{"5000 AAAA over TCP", mk(dnsmessage.TypeAAAA, true), addrs(5000, true), 1 << 20, addrs(2339, true), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := answer(c.q, c.addrs, time.Minute, c.limit)
			r := parseReply(t, b)
			if len(b) > max(c.limit, maxUDP) || len(b) > maxTCP {
				t.Fatalf("%d bytes for a limit of %d", len(b), c.limit)
			}
			if r.rcode != 0 || r.tc != c.tc || !r.rd || !r.ra || r.edns != c.q.edns || r.qname != "host.example" || r.qtype != c.q.typ {
				t.Fatalf("reply %+v", r)
			}
			if !slices.Equal(r.addrs, c.want) {
				t.Fatalf("%d answers %v, want %d %v", len(r.addrs), r.addrs, len(c.want), c.want)
			}
			for i := range r.addrs {
				if r.types[i] != c.q.typ || r.ttls[i] != 60 {
					t.Fatalf("answer %d: %v ttl %d", i, r.types[i], r.ttls[i])
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

func TestReplyToOtherErrors(t *testing.T) {
	if got := replyTo(query{id: 1}, errors.New("read: connection reset")); got != nil {
		t.Fatalf("reply % x to an error not from parseQuery", got)
	}
	if got := replyTo(query{id: 1}, nil); got != nil {
		t.Fatalf("reply % x to no error", got)
	}
}

func TestAppendTCP(t *testing.T) {
	two, err := appendTCP(nil, []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	two, _ = appendTCP(two, nil)
	if want := []byte{0, 3, 1, 2, 3, 0, 0}; !bytes.Equal(two, want) {
		t.Fatalf("appendTCP: % x, want % x", two, want)
	}
	if _, err := appendTCP(nil, make([]byte, maxTCP+1)); err == nil {
		t.Fatal("appendTCP took a message over 65535 bytes")
	}
	if b, err := appendTCP(nil, make([]byte, maxTCP)); err != nil || len(b) != maxTCP+2 || b[0] != 0xff || b[1] != 0xff {
		t.Fatalf("appendTCP of 65535 bytes: %d bytes, %v", len(b), err)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{TypeName(dnsmessage.TypeA), "A"}, {TypeName(65), "HTTPS"}, {TypeName(255), "ANY"}, {TypeName(1234), "TYPE1234"},
		{rcodeName(dnsmessage.RCodeRefused), "REFUSED"}, {rcodeName(rcodeBadVers), "BADVERS"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
