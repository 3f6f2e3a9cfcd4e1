package allow

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParse: patterns come from users and profiles. Parse must not
// panic, String must give back the same pattern, and a parsed pattern
// must allow what it names on its own ports.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"pypi.org", "PyPI.org.:443", "*.pythonhosted.org:443", "*", "*.com", "a.*.b",
		"10.1.2.3:5432", "10.0.0.1/8", "[2001:db8::1]:443", "2001:db8::/32", "[2001:db8::/32]:1",
		"::ffff:10.0.0.0/104", "::ffff:1.2.3.4", "fe80::1%eth0", "[::1]", "[10.0.0.1]:80",
		"a..b", "-a.b", "example.123", "https://x.y", "x/y", "bücher.de", "\u212a.com", ":", "[]:",
		"host:0", "host:65536", "::ffff:0:0/95",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if p != (Pattern{}) {
				t.Fatalf("Parse(%q) returned %v with error %v", s, p, err)
			}
			if !strings.Contains(err.Error(), "allow pattern ") {
				t.Fatalf("Parse(%q) error %q does not name the pattern", s, err)
			}
			return
		}
		q, err := Parse(p.String())
		if err != nil || q != p {
			t.Fatalf("Parse(%q) = %q, which re-parses to %v, %v", s, p.String(), q, err)
		}
		l := List{p}
		for _, port := range p.Ports() {
			switch p.Kind() {
			case KindName:
				if !l.AllowName(p.name, port) || !l.AllowName(strings.ToUpper(p.name)+".", port) {
					t.Fatalf("%q does not allow its own name on port %d", p, port)
				}
			case KindWildcard:
				if !l.AllowName("x."+p.name, port) || l.AllowName(p.name, port) {
					t.Fatalf("%q: wrong match of the names it covers on port %d", p, port)
				}
			case KindAddr, KindPrefix:
				if !l.AllowAddr(p.prefix.Addr(), port) || !l.AllowName(p.prefix.Addr().String(), port) {
					t.Fatalf("%q does not allow its own address on port %d", p, port)
				}
			}
		}
	})
}

// FuzzCheck: every 16-byte address, read both as IPv6 and, when it maps
// one, as the IPv4 address: the two give the same answer, and the answer
// is one of the documented reasons.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"::ffff:10.1.2.3", "64:ff9b::a9fe:a9fe", "2002:a00:1::", "2606:4700::1", "fd00:ec2::254", "::1"} {
		f.Add(netip.MustParseAddr(s).AsSlice(), uint16(443))
	}
	known := map[string]bool{"": true, ReasonUnspecified: true, ReasonLoopback: true, ReasonPrivate: true,
		ReasonLinkLocal: true, ReasonMetadata: true, ReasonMulticast: true, ReasonBroadcast: true,
		ReasonReserved: true, ReasonBadPort: true}
	l := mustList(f, "10.0.0.0/8", "169.254.169.254:80", "[fd00::/8]:443", "::ffff:127.0.0.1")
	f.Fuzz(func(t *testing.T, b []byte, port uint16) {
		if len(b) != 16 {
			return
		}
		ip := netip.AddrFrom16([16]byte(b))
		ok, reason := Check(ip, int(port), l)
		if ok != (reason == "") || !known[reason] {
			t.Fatalf("Check(%s, %d) = %v, %q", ip, port, ok, reason)
		}
		if ip.Is4In6() {
			ok4, reason4 := Check(ip.Unmap(), int(port), l)
			if ok4 != ok || reason4 != reason {
				t.Fatalf("Check(%s) = %v, %q but Check(%s) = %v, %q", ip, ok, reason, ip.Unmap(), ok4, reason4)
			}
		}
	})
}
