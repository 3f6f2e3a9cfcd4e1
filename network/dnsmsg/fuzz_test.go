package dnsmsg

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseQuery: ParseQuery never panics or reads past len(b); an error
// is ErrNoReply (and gets no reply) or an *Error whose reply is a
// well-formed response under MaxUDP; an accepted query has a clean name,
// survives re-encoding, and its Answer and Refused replies read back with
// its question, within their limits.
//
//	go test -run '^$' -fuzz FuzzParseQuery -fuzztime 20s ./network/dnsmsg/
func FuzzParseQuery(f *testing.F) {
	f.Add(query(1, 0x0100, encName("Example.COM"), TypeA, 1, nil))
	f.Add(query(2, 0, encName("pypi.org"), TypeAAAA, 1, optRR(1232, 0, slices.Concat(be16(10), be16(8), make([]byte, 8)))))
	f.Add(query(3, 0, []byte{1, 'a', 0xc0, 12}, TypeA, 1, nil))
	f.Add(query(4, 0, encName("version.bind"), 16, 3, nil))
	f.Add(query(5, 0, encName("a.b"), TypeA, 1, optRR(512, 1, nil)))
	f.Add(query(6, 5<<11, encName("a.b"), 6, 1, nil))
	f.Add([]byte{0, 1, 0x81, 0x80, 0, 1})

	v4 := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	var v6 []netip.Addr
	for i := 0; i < 30; i++ {
		v6 = append(v6, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	addrs := append(v4, v6...)

	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:len(b):len(b)]
		q, err := ParseQuery(b)

		// Bytes past len(b) in memory change nothing.
		buf := make([]byte, len(b), len(b)+32)
		copy(buf, b)
		for i := len(b); i < cap(buf); i++ {
			buf[:cap(buf)][i] = 0xc0
		}
		q2, err2 := ParseQuery(buf)
		if !reflect.DeepEqual(q, q2) || errString(err) != errString(err2) {
			t.Fatalf("result depends on memory past len(b): %+v %v vs %+v %v", q, err, q2, err2)
		}

		if err != nil {
			reply := ReplyTo(q, err)
			var e *Error
			switch {
			case errors.Is(err, ErrNoReply):
				if reply != nil {
					t.Fatalf("reply to %v", err)
				}
			case errors.As(err, &e):
				if e.RCode != RCodeFormErr && e.RCode != RCodeRefused && e.RCode != RCodeBadVers {
					t.Fatalf("rcode %v", e.RCode)
				}
				r, derr := decode(reply)
				if derr != nil || r.id != q.ID || r.rcode != e.RCode || len(reply) > MaxUDP {
					t.Fatalf("reply % x to %v: %+v, %v", reply, err, r, derr)
				}
			default:
				t.Fatalf("undocumented error %v", err)
			}
			return
		}

		if len(q.Name) > 253 {
			t.Fatalf("name of %d bytes", len(q.Name))
		}
		if q.Name != "" {
			for _, l := range strings.Split(q.Name, ".") {
				if l == "" || len(l) > maxLabel || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
					t.Fatalf("name %q has the label %q", q.Name, l)
				}
			}
		}

		// Encoded again, the query parses to the same Query.
		flags := 0
		if q.RD {
			flags = 0x0100
		}
		var opt []byte
		if q.EDNS {
			opt = optRR(int(q.UDPSize), 0, nil)
		}
		again, err := ParseQuery(query(int(q.ID), flags, encName(q.Name), q.Type, 1, opt))
		again.wire, q.wire = nil, nil
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("re-encoded: %+v, %v; want %+v", again, err, q)
		}

		for _, limit := range []int{MaxUDP, MaxTCP} {
			reply := Answer(q, addrs, time.Minute, limit)
			r, derr := decode(reply)
			if derr != nil || len(reply) > limit || r.id != q.ID || r.rcode != RCodeSuccess || r.qname != q.Name || r.qtype != q.Type || r.opt != q.EDNS {
				t.Fatalf("Answer % x: %+v, %v", reply, r, derr)
			}
			var want []netip.Addr
			switch q.Type {
			case TypeA:
				want = v4
			case TypeAAAA:
				want = v6
			}
			if !slices.Equal(r.answers, want[:len(r.answers)]) || r.tc != (len(r.answers) < len(want)) {
				t.Fatalf("Answer over %d bytes: %d answers, tc %v, want %d", limit, len(r.answers), r.tc, len(want))
			}
		}
		r, derr := decode(Refused(q))
		if derr != nil || r.rcode != RCodeRefused || r.qname != q.Name || r.id != q.ID {
			t.Fatalf("Refused: %+v, %v", r, derr)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
