package allow

import (
	"net/netip"
	"sync"
)

// The reasons Check gives for a refusal. They are stable: the report
// carries them and users and tests match on them.
const (
	// ReasonInvalid: the zero netip.Addr.
	ReasonInvalid = "invalid address"
	// ReasonZoned: an IPv6 address with a zone (fe80::1%eth0). A zone
	// picks a local interface, which no pattern can name.
	ReasonZoned = "zoned address"
	// ReasonBadPort: a port outside 1..65535.
	ReasonBadPort = "invalid port"
	// ReasonUnspecified: 0.0.0.0 and ::, which Linux connects to the
	// local host.
	ReasonUnspecified = "unspecified address"
	// ReasonLoopback: 127.0.0.0/8 and ::1.
	ReasonLoopback = "loopback address"
	// ReasonPrivate: RFC 1918 (10/8, 172.16/12, 192.168/16), shared
	// address space (CGNAT, 100.64/10), unique local fc00::/7, the
	// deprecated site-local fec0::/10 and the local-use NAT64 prefix
	// 64:ff9b:1::/48, whose IPv4 destinations only the local operator
	// knows.
	ReasonPrivate = "private address"
	// ReasonLinkLocal: 169.254/16 and fe80::/10.
	ReasonLinkLocal = "link-local address"
	// ReasonMetadata: the cloud instance metadata services, which hand
	// out credentials: 169.254.169.254 (AWS, GCP, Azure, OCI...),
	// fd00:ec2::254 (AWS over IPv6), 100.100.100.200 (Alibaba) and
	// 168.63.129.16 (Azure WireServer).
	ReasonMetadata = "metadata address"
	// ReasonMulticast: 224/4 and ff00::/8.
	ReasonMulticast = "multicast address"
	// ReasonBroadcast: 255.255.255.255.
	ReasonBroadcast = "broadcast address"
	// ReasonReserved: the rest of the special-purpose space, never a
	// public server: 0/8 ("this network"), 240/4, 192.0.0/24 (IETF
	// protocol assignments), 192.88.99/24 (6to4 relays), documentation
	// (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20)
	// and benchmarking ranges (198.18/15, 2001:2::/48), IPv4-compatible
	// ::/96, discard-only 100::/64, 2001::/23 (IETF protocol
	// assignments, Teredo 2001::/32 among them: its tunnel endpoint is
	// obfuscated and cannot be checked), and every IPv6 address outside
	// global unicast 2000::/3 (SRv6 5f00::/16 among them).
	ReasonReserved = "reserved address"
)

// special is one range Check refuses. Ranges nest (169.254.169.254 in
// 169.254/16); the longest one containing an address decides.
type special struct {
	prefix netip.Prefix
	reason string
	// embedsIPv4: the 32 bits after the prefix are an IPv4 address the
	// packet ends up at (NAT64 64:ff9b::/96, 6to4 2002::/16); that
	// address decides, a public one passes.
	embedsIPv4 bool
}

// specials is built on first use, not in init: parsing the prefixes cost
// every tooljail command, most of which never check an address.
var specials = sync.OnceValue(func() []special {
	s := []special{}
	add := func(reason string, prefixes ...string) {
		for _, p := range prefixes {
			s = append(s, special{prefix: netip.MustParsePrefix(p), reason: reason})
		}
	}
	add(ReasonUnspecified, "0.0.0.0/32", "::/128")
	add(ReasonLoopback, "127.0.0.0/8", "::1/128")
	add(ReasonPrivate, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
		"fc00::/7", "fec0::/10", "64:ff9b:1::/48")
	add(ReasonLinkLocal, "169.254.0.0/16", "fe80::/10")
	add(ReasonMetadata, "169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32")
	add(ReasonMulticast, "224.0.0.0/4", "ff00::/8")
	add(ReasonBroadcast, "255.255.255.255/32")
	add(ReasonReserved,
		"0.0.0.0/8", "240.0.0.0/4", "192.0.0.0/24", "192.88.99.0/24",
		"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15",
		// IPv6 outside 2000::/3, then the special ranges inside it.
		"::/3", "4000::/2", "8000::/1",
		"::/96", "100::/64", "2001::/23", "2001:db8::/32", "3fff::/20")
	for _, p := range []string{"64:ff9b::/96", "2002::/16"} {
		s = append(s, special{prefix: netip.MustParsePrefix(p), embedsIPv4: true})
	}
	return s
})

// classify returns why ip (unmapped, no zone) is refused and the refused
// range it falls in, or "" for an ordinary public address.
func classify(ip netip.Addr) (string, netip.Prefix) {
	best := -1
	all := specials()
	for i, s := range all {
		if s.prefix.Contains(ip) && (best < 0 || s.prefix.Bits() > all[best].prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		return "", netip.Prefix{}
	}
	s := all[best]
	if !s.embedsIPv4 {
		return s.reason, s.prefix
	}
	b := ip.As16()
	at := s.prefix.Bits() / 8
	reason, r4 := classify(netip.AddrFrom4([4]byte(b[at : at+4])))
	if reason == "" {
		return "", netip.Prefix{}
	}
	// The refused IPv4 range, written inside this prefix: 6to4 of
	// 10.0.0.0/8 is 2002:a00::/24.
	r6, _ := ip.Prefix(s.prefix.Bits() + r4.Bits())
	return reason, r6
}

// Check decides whether the supervisor may connect to ip on port, an
// address a name on the list resolved to (or an IP the client gave that
// AllowAddr allowed). Public addresses pass. Loopback, private,
// link-local, metadata, multicast and reserved addresses (see the Reason
// constants) are refused unless an IP or CIDR pattern for port names
// the address and lies inside the refused range: 10.1.2.3 or
// 10.0.0.0/8 opens 10.1.2.3, but 0.0.0.0/0 opens no private address and
// 169.254.0.0/16 does not open 169.254.169.254, so a metadata address is
// reached only when it is named itself. A broad range written to mean
// "any public server" must not open the local network by accident.
//
// IPv4-mapped IPv6 is checked as the IPv4 it maps; NAT64 (64:ff9b::/96)
// and 6to4 (2002::/16) by the IPv4 address they embed. An address with
// a zone is refused. ok is true with an empty reason, and false with one
// of the Reason constants.
func Check(ip netip.Addr, port int, l List) (ok bool, reason string) {
	switch {
	case !ip.IsValid():
		return false, ReasonInvalid
	case ip.Zone() != "":
		return false, ReasonZoned
	case port < 1 || port > 65535:
		return false, ReasonBadPort
	}
	ip = ip.Unmap()
	reason, refused := classify(ip)
	if reason == "" {
		return true, ""
	}
	for _, p := range l {
		if p.allowsPort(port) && p.matchAddr(ip) && p.prefix.Bits() >= refused.Bits() {
			return true, ""
		}
	}
	return false, reason
}
