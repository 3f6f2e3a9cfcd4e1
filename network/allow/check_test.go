package allow

import (
	"net/netip"
	"testing"
)

// checkCases are written out by hand, independently of the specials
// table: the first and last address of every range, the addresses just
// outside it, and the mapped and embedded forms. "" is a public address.
var checkCases = []struct{ ip, want string }{
	// IPv4.
	{"0.0.0.0", ReasonUnspecified},
	{"0.0.0.1", ReasonReserved},
	{"0.255.255.255", ReasonReserved},
	{"1.0.0.0", ""},
	{"1.1.1.1", ""},
	{"8.8.8.8", ""},
	{"151.101.0.223", ""},
	{"9.255.255.255", ""},
	{"10.0.0.0", ReasonPrivate},
	{"10.255.255.255", ReasonPrivate},
	{"11.0.0.0", ""},
	{"100.63.255.255", ""},
	{"100.64.0.0", ReasonPrivate},
	{"100.127.255.255", ReasonPrivate},
	{"100.128.0.0", ""},
	{"100.100.100.199", ReasonPrivate},
	{"100.100.100.200", ReasonMetadata},
	{"100.100.100.201", ReasonPrivate},
	{"126.255.255.255", ""},
	{"127.0.0.0", ReasonLoopback},
	{"127.0.0.1", ReasonLoopback},
	{"127.255.255.255", ReasonLoopback},
	{"128.0.0.0", ""},
	{"168.63.129.15", ""},
	{"168.63.129.16", ReasonMetadata},
	{"168.63.129.17", ""},
	{"169.253.255.255", ""},
	{"169.254.0.0", ReasonLinkLocal},
	{"169.254.255.255", ReasonLinkLocal},
	{"169.255.0.0", ""},
	{"169.254.169.253", ReasonLinkLocal},
	{"169.254.169.254", ReasonMetadata},
	{"169.254.169.255", ReasonLinkLocal},
	{"172.15.255.255", ""},
	{"172.16.0.0", ReasonPrivate},
	{"172.31.255.255", ReasonPrivate},
	{"172.32.0.0", ""},
	{"191.255.255.255", ""},
	{"192.0.0.0", ReasonReserved},
	{"192.0.0.255", ReasonReserved},
	{"192.0.1.0", ""},
	{"192.0.2.0", ReasonReserved},
	{"192.0.2.255", ReasonReserved},
	{"192.0.3.0", ""},
	{"192.88.98.255", ""},
	{"192.88.99.0", ReasonReserved},
	{"192.88.99.255", ReasonReserved},
	{"192.88.100.0", ""},
	{"192.167.255.255", ""},
	{"192.168.0.0", ReasonPrivate},
	{"192.168.255.255", ReasonPrivate},
	{"192.169.0.0", ""},
	{"198.17.255.255", ""},
	{"198.18.0.0", ReasonReserved},
	{"198.19.255.255", ReasonReserved},
	{"198.20.0.0", ""},
	{"198.51.99.255", ""},
	{"198.51.100.0", ReasonReserved},
	{"198.51.100.255", ReasonReserved},
	{"198.51.101.0", ""},
	{"203.0.112.255", ""},
	{"203.0.113.0", ReasonReserved},
	{"203.0.113.255", ReasonReserved},
	{"203.0.114.0", ""},
	{"223.255.255.255", ""},
	{"224.0.0.0", ReasonMulticast},
	{"239.255.255.255", ReasonMulticast},
	{"240.0.0.0", ReasonReserved},
	{"255.255.255.254", ReasonReserved},
	{"255.255.255.255", ReasonBroadcast},

	// IPv4-mapped: the IPv4 inside decides.
	{"::ffff:0.0.0.0", ReasonUnspecified},
	{"::ffff:10.1.2.3", ReasonPrivate},
	{"::ffff:127.0.0.1", ReasonLoopback},
	{"::ffff:169.254.169.254", ReasonMetadata},
	{"::ffff:8.8.8.8", ""},
	{"::ffff:255.255.255.255", ReasonBroadcast},

	// IPv6 outside global unicast, and IPv4-compatible.
	{"::", ReasonUnspecified},
	{"::1", ReasonLoopback},
	{"::2", ReasonReserved},
	{"::10.1.2.3", ReasonReserved},
	{"::8.8.8.8", ReasonReserved},
	{"::255.255.255.255", ReasonReserved},
	{"::1:0:0", ReasonReserved},
	{"::fffe:ffff:ffff", ReasonReserved},
	{"::1:ffff:0:0", ReasonReserved},
	{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"4000::", ReasonReserved},
	{"7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"8000::", ReasonReserved},
	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"fe00::", ReasonReserved},
	{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},

	// NAT64 well-known prefix: the embedded IPv4 decides.
	{"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"64:ff9b::", ReasonUnspecified},
	{"64:ff9b::8.8.8.8", ""},
	{"64:ff9b::10.1.2.3", ReasonPrivate},
	{"64:ff9b::127.0.0.1", ReasonLoopback},
	{"64:ff9b::169.254.169.254", ReasonMetadata},
	{"64:ff9b::100.100.100.200", ReasonMetadata},
	{"64:ff9b::224.0.0.1", ReasonMulticast},
	{"64:ff9b::ffff:ffff", ReasonBroadcast},
	{"64:ff9b::1:0:0", ReasonReserved},
	// Local-use NAT64: where the IPv4 sits is the operator's choice.
	{"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"64:ff9b:1::", ReasonPrivate},
	{"64:ff9b:1::808:808", ReasonPrivate},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", ReasonPrivate},
	{"64:ff9b:2::", ReasonReserved},
	{"100::", ReasonReserved},
	{"100::ffff:ffff:ffff:ffff", ReasonReserved},

	// Global unicast and its special ranges.
	{"2000::", ""},
	{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001::", ReasonReserved},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ReasonReserved}, // Teredo
	{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"2001:2::", ReasonReserved},
	{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"2001:200::", ""},
	{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001:db8::", ReasonReserved},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"2001:db9::", ""},
	{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	// 6to4: the embedded IPv4 decides.
	{"2002::", ReasonUnspecified},
	{"2002:808:808::1", ""},
	{"2002:a01:203::1", ReasonPrivate},
	{"2002:7f00:1::", ReasonLoopback},
	{"2002:a9fe:a9fe::", ReasonMetadata},
	{"2002:c000:204::", ReasonReserved},
	{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonBroadcast},
	{"2003::", ""},
	{"2606:4700:4700::1111", ""},
	{"2a04:4e42::223", ""},
	{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"3fff::", ReasonReserved},
	{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonReserved},
	{"3fff:1000::", ""},
	{"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},

	// Above global unicast.
	{"fc00::", ReasonPrivate},
	{"fd12:3456::1", ReasonPrivate},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonPrivate},
	{"fd00:ec2::253", ReasonPrivate},
	{"fd00:ec2::254", ReasonMetadata},
	{"fd00:ec2::255", ReasonPrivate},
	{"fe80::", ReasonLinkLocal},
	{"fe80::1", ReasonLinkLocal},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonLinkLocal},
	{"fec0::", ReasonPrivate},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonPrivate},
	{"ff00::", ReasonMulticast},
	{"ff02::1", ReasonMulticast},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ReasonMulticast},
}

func TestCheckRanges(t *testing.T) {
	for _, tc := range checkCases {
		ok, reason := Check(netip.MustParseAddr(tc.ip), 443, nil)
		if ok != (tc.want == "") || reason != tc.want {
			t.Errorf("Check(%s) = %v, %q; want %q", tc.ip, ok, reason, tc.want)
		}
	}
}

// TestCheckCasesCoverEveryRange fails when a range is added to specials
// without its first and last address in checkCases.
func TestCheckCasesCoverEveryRange(t *testing.T) {
	have := map[netip.Addr]bool{}
	for _, tc := range checkCases {
		have[netip.MustParseAddr(tc.ip)] = true
	}
	for _, s := range specials() {
		first := s.prefix.Addr()
		b := first.AsSlice()
		for i := range b {
			if bit := i * 8; bit+8 > s.prefix.Bits() {
				keep := max(s.prefix.Bits()-bit, 0)
				b[i] |= byte(0xff >> keep)
			}
		}
		last, _ := netip.AddrFromSlice(b)
		if !have[first] || !have[last] {
			t.Errorf("range %s: checkCases lacks its first (%s) or last (%s) address", s.prefix, first, last)
		}
	}
}

func TestCheckInputs(t *testing.T) {
	tests := []struct {
		ip     netip.Addr
		port   int
		reason string
	}{
		{netip.Addr{}, 443, ReasonInvalid},
		{netip.MustParseAddr("fe80::1%eth0"), 443, ReasonZoned},
		{netip.MustParseAddr("2606:4700::1%eth0"), 443, ReasonZoned},
		{netip.MustParseAddr("8.8.8.8"), 0, ReasonBadPort},
		{netip.MustParseAddr("8.8.8.8"), 65536, ReasonBadPort},
		{netip.MustParseAddr("8.8.8.8"), -1, ReasonBadPort},
	}
	// Not even a pattern naming the address opens these.
	l := mustList(t, "fe80::/10", "2606:4700::/32", "8.8.8.8")
	for _, tc := range tests {
		if ok, reason := Check(tc.ip, tc.port, l); ok || reason != tc.reason {
			t.Errorf("Check(%v, %d) = %v, %q; want %q", tc.ip, tc.port, ok, reason, tc.reason)
		}
	}
	if ok, reason := Check(netip.MustParseAddr("8.8.8.8"), 65535, nil); !ok || reason != "" {
		t.Errorf("Check(8.8.8.8, 65535) = %v, %q; want allowed", ok, reason)
	}
}

func TestCheckExplicitAllow(t *testing.T) {
	tests := []struct {
		list []string
		ip   string
		port int
		want string
	}{
		// The test setup: loopback upstreams allowed by IP and port.
		{[]string{"127.0.0.1:8080"}, "127.0.0.1", 8080, ""},
		{[]string{"127.0.0.1:8080"}, "127.0.0.1", 80, ReasonLoopback},
		{[]string{"127.0.0.1:8080"}, "127.0.0.2", 8080, ReasonLoopback},
		{[]string{"127.0.0.1"}, "127.0.0.1", 443, ""},
		{[]string{"127.0.0.1"}, "127.0.0.1", 8080, ReasonLoopback},
		{[]string{"127.0.0.0/8:8080"}, "127.1.2.3", 8080, ""},
		{[]string{"::1:8080"}, "::1", 443, ReasonLoopback}, // that is the address ::1:8080
		{[]string{"[::1]:8080"}, "::1", 8080, ""},
		{nil, "127.0.0.1", 80, ReasonLoopback},
		{[]string{"pypi.org", "localhost"}, "127.0.0.1", 443, ReasonLoopback},

		// A range opens what lies inside the refused range, not more.
		{[]string{"10.0.0.0/8"}, "10.1.2.3", 443, ""},
		{[]string{"10.1.0.0/16"}, "10.1.2.3", 443, ""},
		{[]string{"10.1.2.3"}, "10.1.2.3", 443, ""},
		{[]string{"10.1.2.3/32"}, "10.1.2.3", 443, ""},
		{[]string{"10.1.2.4"}, "10.1.2.3", 443, ReasonPrivate},
		{[]string{"10.0.0.0/7"}, "10.1.2.3", 443, ReasonPrivate},
		{[]string{"0.0.0.0/0"}, "10.1.2.3", 443, ReasonPrivate},
		{[]string{"0.0.0.0/0"}, "127.0.0.1", 443, ReasonLoopback},
		{[]string{"0.0.0.0/0"}, "169.254.169.254", 80, ReasonMetadata},
		{[]string{"::ffff:0:0/96"}, "10.1.2.3", 443, ReasonPrivate},
		{[]string{"::ffff:10.1.2.3"}, "10.1.2.3", 443, ""},
		{[]string{"10.1.2.3"}, "::ffff:10.1.2.3", 443, ""},
		{[]string{"100.64.0.0/10"}, "100.64.0.1", 443, ""},
		{[]string{"172.16.0.0/12"}, "172.31.255.255", 443, ""},
		{[]string{"192.168.0.0/16:5432"}, "192.168.1.1", 5432, ""},

		// A metadata address opens only when named itself.
		{[]string{"169.254.0.0/16"}, "169.254.169.254", 80, ReasonMetadata},
		{[]string{"169.254.0.0/16"}, "169.254.1.1", 80, ""},
		{[]string{"169.254.169.254"}, "169.254.169.254", 80, ""},
		{[]string{"169.254.169.254/32"}, "169.254.169.254", 80, ""},
		{[]string{"100.64.0.0/10"}, "100.100.100.200", 80, ReasonMetadata},
		{[]string{"fc00::/7"}, "fd00:ec2::254", 80, ReasonMetadata},
		{[]string{"fd00:ec2::254"}, "fd00:ec2::254", 80, ""},
		{[]string{"168.63.129.0/24"}, "168.63.129.16", 80, ReasonMetadata},
		{[]string{"8.8.8.8"}, "168.63.129.16", 80, ReasonMetadata},

		// IPv6.
		{[]string{"fc00::/7"}, "fd12::1", 443, ""},
		{[]string{"::/0"}, "fd12::1", 443, ReasonPrivate},
		{[]string{"fe80::/10"}, "fe80::1", 443, ""},
		{[]string{"ff00::/8"}, "ff02::1", 443, ""},
		{[]string{"224.0.0.0/4"}, "224.0.0.251", 443, ""},
		{[]string{"240.0.0.0/4"}, "255.255.255.255", 443, ReasonBroadcast},
		{[]string{"255.255.255.255"}, "255.255.255.255", 443, ""},

		// Embedded IPv4: the pattern must name the form that is dialled,
		// inside the refused range it maps.
		{[]string{"10.1.2.3"}, "64:ff9b::10.1.2.3", 443, ReasonPrivate},
		{[]string{"64:ff9b::10.1.2.3"}, "64:ff9b::10.1.2.3", 443, ""},
		{[]string{"64:ff9b::a00:0/104"}, "64:ff9b::10.1.2.3", 443, ""},
		{[]string{"64:ff9b::/96"}, "64:ff9b::10.1.2.3", 443, ReasonPrivate},
		{[]string{"2002:a00::/24"}, "2002:a01:203::1", 443, ""},
		{[]string{"2002::/16"}, "2002:a01:203::1", 443, ReasonPrivate},
		{[]string{"64:ff9b:1::/48"}, "64:ff9b:1::1", 443, ""},

		// Public addresses pass whatever the list says: the name was
		// checked before them.
		{nil, "8.8.8.8", 443, ""},
		{[]string{"10.0.0.0/8"}, "2606:4700:4700::1111", 8080, ""},
	}
	for _, tc := range tests {
		ok, reason := Check(netip.MustParseAddr(tc.ip), tc.port, mustList(t, tc.list...))
		if ok != (tc.want == "") || reason != tc.want {
			t.Errorf("Check(%s, %d, %q) = %v, %q; want %q", tc.ip, tc.port, tc.list, ok, reason, tc.want)
		}
	}
}
