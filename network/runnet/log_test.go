package runnet

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/tooljail/tooljail/network/proxy"
	"github.com/tooljail/tooljail/network/resolver"
)

func TestProxyEntry(t *testing.T) {
	a := netip.MustParseAddr("169.254.169.254")
	for _, c := range []struct {
		ev   proxy.Event
		want Entry
	}{
		{proxy.Event{Proto: "connect", Host: "pypi.org", Port: 443, Addr: netip.MustParseAddr("151.101.0.223"), BytesUp: 10, BytesDown: 20, Allowed: true},
			Entry{Proto: "connect", Host: "pypi.org", Port: 443, Address: "151.101.0.223", BytesUp: 10, BytesDown: 20, Decision: "allowed", Count: 1}},
		{proxy.Event{Proto: "http", Host: "meta.example", Port: 80, Addr: a, Reason: "metadata address"},
			Entry{Proto: "http", Host: "meta.example", Port: 80, Address: "169.254.169.254", Decision: "metadata address", Count: 1}},
		{proxy.Event{Proto: "socks5", Host: "x.org", Port: 443, Addr: a, Allowed: true, Reason: proxy.ReasonByteLimit, BytesDown: 5},
			Entry{Proto: "socks5", Host: "x.org", Port: 443, Address: "169.254.169.254", BytesDown: 5, Decision: "allowed", Cut: "byte limit", Count: 1}},
		{proxy.Event{Proto: "http", Reason: proxy.ReasonBadRequest},
			Entry{Proto: "http", Decision: "bad request", Count: 1}},
	} {
		if got := proxyEntry(c.ev); got != c.want {
			t.Errorf("%+v:\n got %+v\nwant %+v", c.ev, got, c.want)
		}
	}
}

func TestDNSEntry(t *testing.T) {
	pub, priv := netip.MustParseAddr("151.101.0.223"), netip.MustParseAddr("10.1.2.3")
	for _, c := range []struct {
		ev   resolver.Event
		want Entry
	}{
		{resolver.Event{Name: "evil.example", Type: dnsmessage.TypeA, Reason: resolver.ReasonDNSRefused, Count: 3},
			Entry{Proto: "dns", Host: "evil.example", DNSType: "A", Decision: "dns refused", Count: 3}},
		{resolver.Event{Name: "pypi.org", Type: dnsmessage.TypeA, Allowed: true, Answered: []netip.Addr{pub}, Count: 1},
			Entry{Proto: "dns", Host: "pypi.org", DNSType: "A", Address: "151.101.0.223", Decision: "allowed", Count: 1}},
		{resolver.Event{Name: "internal.example", Type: dnsmessage.TypeA, Dropped: []netip.Addr{priv}, Reason: "private address", Count: 1},
			Entry{Proto: "dns", Host: "internal.example", DNSType: "A", Address: "10.1.2.3", Decision: "private address", Count: 1}},
		{resolver.Event{Name: "pypi.org", Type: dnsmessage.TypeAAAA, Allowed: true, Reason: resolver.ReasonLookupFailed, Count: 1},
			Entry{Proto: "dns", Host: "pypi.org", DNSType: "AAAA", Decision: "lookup failed", Count: 1}},
		{resolver.Event{Reason: resolver.ReasonBusy},
			Entry{Proto: "dns", Decision: "resolver busy", Count: 1}},
	} {
		if got := dnsEntry(c.ev); got != c.want {
			t.Errorf("%+v:\n got %+v\nwant %+v", c.ev, got, c.want)
		}
	}
}

// Identical entries add up; past maxNetEntries distinct ones, new kinds
// are counted under host "other" per proto and decision, so a flood of
// names costs bounded memory.
func TestNetLogBounded(t *testing.T) {
	l := newNetLog()
	for i := 0; i < 3; i++ {
		l.proxyEvent(proxy.Event{Proto: "connect", Host: "pypi.org", Port: 443, Addr: netip.MustParseAddr("151.101.0.223"), BytesUp: 1, BytesDown: 2, Allowed: true})
	}
	for i := 0; i < 10*maxNetEntries; i++ {
		l.proxyEvent(proxy.Event{Proto: "http", Host: fmt.Sprintf("h%d.example", i), Port: 80, Reason: proxy.ReasonNotAllowed})
		l.dnsEvent(resolver.Event{Name: fmt.Sprintf("d%d.example", i), Type: dnsmessage.TypeA, Reason: resolver.ReasonDNSRefused, Count: 1})
	}
	got := l.entries()
	if len(got) > maxNetEntries+2 {
		t.Fatalf("%d entries, want at most %d", len(got), maxNetEntries+2)
	}
	if got[0].Count != 3 || got[0].BytesUp != 3 || got[0].BytesDown != 6 {
		t.Errorf("first entry %+v, want 3 connections, 3 up, 6 down", got[0])
	}
	total := map[string]int{}
	others := 0
	for _, e := range got {
		total[e.Proto] += e.Count
		if e.Host == "other" {
			others++
			if e.Port != 0 || e.Address != "" || e.DNSType != "" {
				t.Errorf("other entry keeps details: %+v", e)
			}
		}
	}
	if total["http"] != 10*maxNetEntries || total["dns"] != 10*maxNetEntries || others != 2 {
		t.Errorf("counts %v, %d other entries; want every event counted, in 2 other entries", total, others)
	}
}

func TestLoopbackPort(t *testing.T) {
	for _, c := range []struct {
		a    net.Addr
		port int
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128}, 3128, true},
		{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}, 53, true},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3129}, 3128, false},
		{&net.TCPAddr{IP: net.IPv4(0, 0, 0, 0), Port: 3128}, 3128, false},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 53}, 53, false},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, 53, false},
	} {
		if got := loopbackPort(c.a, c.port); got != c.want {
			t.Errorf("loopbackPort(%v, %d) = %v", c.a, c.port, got)
		}
	}
}
