package resolver

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
	"golang.org/x/net/dns/dnsmessage"
)

// FuzzQuery feeds raw messages to the server's reading and answering:
// parseQuery never panics and its result does not depend on memory past
// the message; an error is errNoReply (no reply) or a *queryError whose
// reply is a well-formed response under maxUDP; an accepted query has a
// clean name, survives re-encoding, and its answer, REFUSED and SERVFAIL
// replies read back with its question, within their limits. decide never
// sends a name off the list upstream, and stays silent only for
// errNoReply.
//
//	go test -run '^$' -fuzz FuzzQuery -fuzztime 20s ./network/resolver/
func FuzzQuery(f *testing.F) {
	f.Add(rawMsg(1, 0x0100, encName("Example.COM"), dnsmessage.TypeA, 1, nil))
	f.Add(rawMsg(2, 0, encName("pypi.org"), dnsmessage.TypeAAAA, 1, optRR(1232, 0, slices.Concat(be16(10), be16(8), make([]byte, 8)))))
	f.Add(rawMsg(3, 0, []byte{1, 'a', 0xc0, 12}, dnsmessage.TypeA, 1, nil))
	f.Add(rawMsg(4, 0, encName("version.bind"), dnsmessage.TypeTXT, 3, nil))
	f.Add(rawMsg(5, 0, encName("a.b"), dnsmessage.TypeA, 1, optRR(512, 1, nil)))
	f.Add(rawMsg(6, 5<<11, encName("a.b"), dnsmessage.TypeSOA, 1, nil))
	f.Add(rawMsg(7, 0, encName("x.wild.example"), dnsmessage.TypeHTTPS, 1, nil))
	f.Add(rawMsg(8, 0, []byte{3, 'a', '.', 'b', 0}, dnsmessage.TypeA, 1, nil))
	f.Add([]byte{0, 1, 0x81, 0x80, 0, 1})

	v4 := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	var v6 []netip.Addr
	for i := 0; i < 30; i++ {
		v6 = append(v6, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	addrs := append(slices.Clone(v4), v6...)
	l, err := allow.ParseList([]string{"allowed.example", "*.wild.example"})
	if err != nil {
		f.Fatal(err)
	}
	s := New(Config{Allow: l})
	f.Cleanup(func() { s.Close() })

	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:len(b):len(b)]
		q, err := parseQuery(b)
		checkMemory(t, b, q, err)
		checkDecide(t, s, b, err)
		if err != nil {
			checkRejected(t, q, err)
			return
		}
		checkAccepted(t, q)
		for _, limit := range []int{maxUDP, maxTCP} {
			out := answer(q, addrs, time.Minute, limit)
			r := parseReply(t, out)
			if len(out) > limit || r.id != q.id || r.rcode != 0 || strings.ToLower(r.qname) != q.name || r.qtype != q.typ || r.edns != q.edns {
				t.Fatalf("answer % x: %+v", out, r)
			}
			var want []netip.Addr
			switch q.typ {
			case dnsmessage.TypeA:
				want = v4
			case dnsmessage.TypeAAAA:
				want = v6
			}
			if !slices.Equal(r.addrs, want[:len(r.addrs)]) || r.tc != (len(r.addrs) < len(want)) {
				t.Fatalf("answer over %d bytes: %d answers, tc %v, want %d", limit, len(r.addrs), r.tc, len(want))
			}
		}
		for rcode, out := range map[int][]byte{5: refusedReply(q), 2: servFail(q)} {
			if r := parseReply(t, out); r.rcode != rcode || strings.ToLower(r.qname) != q.name || r.id != q.id || len(r.addrs) != 0 {
				t.Fatalf("rcode %d reply: %+v", rcode, r)
			}
		}
	})
}

// checkMemory: bytes past len(b) in memory change nothing.
func checkMemory(t *testing.T, b []byte, q query, err error) {
	buf := make([]byte, len(b), len(b)+32)
	copy(buf, b)
	for i := len(b); i < cap(buf); i++ {
		buf[:cap(buf)][i] = 0xc0
	}
	q2, err2 := parseQuery(buf)
	if q != q2 || errString(err) != errString(err2) {
		t.Fatalf("result depends on memory past len(b): %+v %v vs %+v %v", q, err, q2, err2)
	}
}

// checkDecide: what the server does with b. A lookup is only for A or
// AAAA of a name on the list; no reply only where parseQuery said so.
func checkDecide(t *testing.T, s *Server, b []byte, err error) {
	st := s.decide(b, maxUDP, time.Now())
	switch {
	case st.lookup:
		if err != nil || (st.q.typ != dnsmessage.TypeA && st.q.typ != dnsmessage.TypeAAAA) || len(s.policy.namePorts(st.q.name)) == 0 {
			t.Fatalf("a lookup for %+v (%v)", st.q, err)
		}
	case st.reply == nil:
		if !errors.Is(err, errNoReply) {
			t.Fatalf("no reply, with %v", err)
		}
	case len(st.reply) > maxUDP:
		t.Fatalf("a reply of %d bytes over UDP", len(st.reply))
	}
}

func checkRejected(t *testing.T, q query, err error) {
	out := replyTo(q, err)
	var e *queryError
	switch {
	case errors.Is(err, errNoReply):
		if out != nil {
			t.Fatalf("reply to %v", err)
		}
	case errors.As(err, &e):
		if e.rcode != dnsmessage.RCodeFormatError && e.rcode != dnsmessage.RCodeRefused && e.rcode != rcodeBadVers {
			t.Fatalf("rcode %v", e.rcode)
		}
		r := parseReply(t, out)
		if r.id != q.id || r.rcode != int(e.rcode) || len(out) > maxUDP {
			t.Fatalf("reply % x to %v: %+v", out, err, r)
		}
	default:
		t.Fatalf("undocumented error %v", err)
	}
}

// checkAccepted: the name is clean and the query, encoded again, parses
// to the same query.
func checkAccepted(t *testing.T, q query) {
	if len(q.name) > 253 {
		t.Fatalf("name of %d bytes", len(q.name))
	}
	if q.name != "" {
		for _, l := range strings.Split(q.name, ".") {
			if l == "" || len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
				t.Fatalf("name %q has the label %q", q.name, l)
			}
		}
	}
	flags := 0
	if q.rd {
		flags = 0x0100
	}
	var opt []byte
	if q.edns {
		opt = optRR(int(q.udpSize), 0, nil)
	}
	again, err := parseQuery(rawMsg(int(q.id), flags, encName(q.name), q.typ, 1, opt))
	// The question echoed keeps the case sent; the rest is the same.
	again.question, q.question = dnsmessage.Question{}, dnsmessage.Question{}
	if err != nil || again != q {
		t.Fatalf("re-encoded: %+v, %v; want %+v", again, err, q)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
