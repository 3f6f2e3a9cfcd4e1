package resolver

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
)

// benchQueries are the benchmarks' two cases: an allowed name, with EDNS
// as Go's and glibc's resolvers send it, and a name not on the list.
var benchQueries = []struct {
	name string
	msg  []byte
}{
	{"answer", rawQuery(1, "allowed.example", 1, true)},
	{"refused", rawQuery(2, "denied.example", 1, true)},
}

// BenchmarkQuery is the server's own cost per query, without a socket or
// an upstream: the message read, the decision, the event and the reply,
// for an allowed name answered with two addresses and for a refusal.
func BenchmarkQuery(b *testing.B) {
	l, err := allow.ParseList([]string{"allowed.example"})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{Allow: l})
	defer s.Close()
	t0 := time.Now()
	addrs := []netip.Addr{netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("1.2.3.5")}
	for _, c := range benchQueries {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st := s.decide(c.msg, 512, t0)
				if st.lookup {
					st.reply = s.finish(st, addrs, t0.Add(time.Minute), nil, 512, t0)
				}
				if st.reply == nil {
					b.Fatal("no reply")
				}
			}
		})
	}
}

// BenchmarkUDP is one query's round trip over loopback UDP, as a jailed
// command asks: an allowed name answered from the cache, and a refusal.
func BenchmarkUDP(b *testing.B) {
	l, err := allow.ParseList([]string{"allowed.example"})
	if err != nil {
		b.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	up := newUpstream(map[string][]netip.Addr{"allowed.example": {netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("1.2.3.5")}})
	s := New(Config{Allow: l, Cache: NewAddrCache(up, time.Hour, 0)})
	defer s.Close()
	go s.ServeUDP(pc)
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<16)
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Write(q.msg); err != nil {
					b.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := c.Read(buf); err != nil || n < 12 || buf[1] != q.msg[1] {
					b.Fatalf("reply: %d bytes, %v", n, err)
				}
			}
		})
	}
}
