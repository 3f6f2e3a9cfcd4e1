package resolver

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
)

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
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"answer", rawQuery(1, "allowed.example", 1, true)},
		{"refused", rawQuery(2, "denied.example", 1, true)},
	} {
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
