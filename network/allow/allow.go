// Package allow is the decision core of the network allow mode
// (DESIGN.md section 11): the allowlist patterns a profile or
// --allow-host names, matching a requested host and port against them,
// and the check every resolved address passes before the supervisor
// connects to it. It does no I/O, so each decision is a pure function the
// proxies and the DNS resolver share and the tests pin down.
//
// A pattern is one of
//
//	pypi.org              a host name: that name only
//	*.pythonhosted.org    a wildcard: any name one or more labels below it
//	10.1.2.3, 2001:db8::1 an IP address
//	10.0.0.0/8            a CIDR range (normalised to its first address)
//
// each with an optional :port (IPv6 in brackets then: [2001:db8::1]:443).
// Without a port a pattern allows ports 80 and 443, the two a package
// index or an API needs.
//
// Names match only name patterns and addresses only IP and CIDR
// patterns: allowing a name says nothing about what it resolves to, and
// allowing an address says nothing about which names may point at it.
package allow

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind says what a Pattern names.
type Kind uint8

const (
	// KindName is an exact host name.
	KindName Kind = iota + 1
	// KindWildcard is "*." and a domain: the names strictly below it.
	KindWildcard
	// KindAddr is one IP address.
	KindAddr
	// KindPrefix is a CIDR range.
	KindPrefix
)

// Pattern is one parsed allowlist entry. Patterns are comparable: two
// that allow the same hosts and ports written the same way are ==. The
// zero Pattern matches nothing.
type Pattern struct {
	kind Kind
	// name is the lower-case host name without a trailing dot; for a
	// wildcard, the domain after "*.".
	name string
	// prefix is the range for KindPrefix and the single address (/32 or
	// /128) for KindAddr; IPv4-mapped IPv6 is stored as IPv4.
	prefix netip.Prefix
	// port is 0 for the default ports.
	port uint16
}

// Kind says whether p is a name, a wildcard, an address or a range.
func (p Pattern) Kind() Kind { return p.kind }

// Ports are the ports p allows: its own, or 80 and 443.
func (p Pattern) Ports() []int {
	if p.kind == 0 {
		return nil
	}
	if p.port == 0 {
		return []int{80, 443}
	}
	return []int{int(p.port)}
}

// String is p in the canonical form Parse accepts and returns p for.
func (p Pattern) String() string {
	var host string
	switch p.kind {
	case KindName:
		host = p.name
	case KindWildcard:
		host = "*." + p.name
	case KindAddr:
		host = p.prefix.Addr().String()
	case KindPrefix:
		host = p.prefix.String()
	default:
		return ""
	}
	if p.port == 0 {
		return host
	}
	if p.prefix.Addr().Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(p.port))
}

func (p Pattern) allowsPort(port int) bool {
	if p.port == 0 {
		return port == 80 || port == 443
	}
	return port == int(p.port)
}

// matchName reports whether p allows name, which must already be a
// valid lower-case host name without a trailing dot.
func (p Pattern) matchName(name string) bool {
	switch p.kind {
	case KindName:
		return name == p.name
	case KindWildcard:
		// The label boundary matters: *.example.com must not allow
		// badexample.com, nor example.com itself.
		return len(name) > len(p.name)+1 && strings.HasSuffix(name, p.name) &&
			name[len(name)-len(p.name)-1] == '.'
	}
	return false
}

// matchAddr reports whether p names ip, which must be unmapped and have
// no zone.
func (p Pattern) matchAddr(ip netip.Addr) bool {
	return (p.kind == KindAddr || p.kind == KindPrefix) && p.prefix.Contains(ip)
}

// PatternError is a pattern Parse refused, and why.
type PatternError struct {
	Pattern string
	// Problem says what is wrong and what would be accepted instead.
	Problem string
}

func (e *PatternError) Error() string {
	s := e.Pattern
	// A pattern comes from a user; keep the message one readable line.
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("allow pattern %q: %s", s, e.Problem)
}

const (
	maxName = 253
	// maxPattern bounds the input before any work is done on it: the
	// longest valid pattern is a 253-byte name and ":65535".
	maxPattern = maxName + len(":65535")
	accepted   = "expected a host name (pypi.org), a wildcard (*.pythonhosted.org), an IP address or a CIDR range, optionally with :port"
)

// Parse reads one allowlist pattern. Host names are lower-cased and a
// trailing dot is dropped; IPv4-mapped IPv6 addresses and ranges are
// written as IPv4, and a range is normalised to its first address, so
// that String gives back one canonical form.
func Parse(s string) (Pattern, error) {
	p, problem := parse(s)
	if problem != "" {
		return Pattern{}, &PatternError{Pattern: s, Problem: problem}
	}
	return p, nil
}

func parse(s string) (Pattern, string) {
	if s == "" {
		return Pattern{}, "empty; " + accepted
	}
	if len(s) > maxPattern {
		return Pattern{}, fmt.Sprintf("longer than %d bytes, more than any host name and port", maxPattern)
	}
	if problem := checkASCII(s); problem != "" {
		return Pattern{}, problem
	}
	if strings.Contains(s, "://") {
		return Pattern{}, "is a URL; give the host only, as pypi.org or pypi.org:443"
	}
	host, portStr, hasPort, bracketed, problem := splitPort(s)
	if problem != "" {
		return Pattern{}, problem
	}
	var p Pattern
	if hasPort {
		port, problem := parsePort(portStr)
		if problem != "" {
			return Pattern{}, problem
		}
		p.port = port
	}
	if i := strings.IndexByte(host, '/'); i >= 0 && !bracketed && !strings.Contains(host, ":") && !looksIPv4(host[:i]) {
		return Pattern{}, "contains a path; give a host name without one (pypi.org), or a CIDR range such as 10.0.0.0/8"
	}
	switch {
	case bracketed || strings.Contains(host, ":") || strings.Contains(host, "/") || looksIPv4(host):
		p.kind, p.prefix, problem = parseIP(host, bracketed)
	case strings.HasPrefix(host, "*"):
		p.kind = KindWildcard
		p.name, problem = parseWildcard(host)
	default:
		p.kind = KindName
		p.name, problem = normaliseName(host)
	}
	if problem != "" {
		return Pattern{}, problem
	}
	return p, ""
}

// checkASCII refuses non-ASCII before anything is lower-cased: Unicode
// case folding maps some characters onto ASCII letters (the Kelvin sign
// onto k), which would let a name that is not on the list pass for one
// that is.
func checkASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf {
			continue
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		what := fmt.Sprintf("the non-ASCII character %q", r)
		if r == utf8.RuneError {
			what = fmt.Sprintf("the byte 0x%02x (not ASCII)", s[i])
		}
		return "contains " + what + "; write an internationalised name in its ASCII form (xn--...)"
	}
	return ""
}

// splitPort separates "host:port", "[v6]:port" and "[v6]". Two or more
// colons without brackets are an IPv6 address with no port: reading
// 2001:db8::1:443 as address and port would be a guess.
func splitPort(s string) (host, port string, hasPort, bracketed bool, problem string) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, false, "has \"[\" without \"]\"; write an IPv6 address with a port as [2001:db8::1]:443"
		}
		host, rest := s[1:end], s[end+1:]
		if rest != "" && rest[0] != ':' {
			return "", "", false, false, fmt.Sprintf("has %q after \"]\"; only :port may follow, as in [2001:db8::1]:443", rest)
		}
		return host, strings.TrimPrefix(rest, ":"), rest != "", true, ""
	}
	if strings.Count(s, ":") == 1 {
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], true, false, ""
	}
	return s, "", false, false, ""
}

func parsePort(s string) (uint16, string) {
	if s == "" {
		return 0, "has an empty port after \":\"; give a port from 1 to 65535, or none for 80 and 443"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Sprintf("has the port %q, which is not a number; give a port from 1 to 65535, or none for 80 and 443", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Sprintf("has the port %s; a port is from 1 to 65535 (none means 80 and 443)", s)
	}
	return uint16(n), ""
}

// looksIPv4 is true for digits and dots only: such a host is meant as an
// IPv4 address (a name cannot end in an all-numeric label), and an error
// about it should say so.
func looksIPv4(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return s != ""
}

func parseIP(s string, bracketed bool) (Kind, netip.Prefix, string) {
	if strings.Contains(s, "%") {
		return 0, netip.Prefix{}, "has an IPv6 zone (%...); a zone names a local interface, not a host: give the address without it"
	}
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil && strings.Contains(s[strings.IndexByte(s, '/'):], ":") {
			return 0, netip.Prefix{}, "has a port after an IPv6 range without brackets; write [2001:db8::/32]:443"
		}
		if err != nil {
			return 0, netip.Prefix{}, "is not a valid CIDR range; write one as 10.0.0.0/8 or 2001:db8::/32 (" + err.Error() + ")"
		}
		if bracketed && !pfx.Addr().Is6() {
			return 0, netip.Prefix{}, "has an IPv4 range in brackets; brackets are for IPv6, write 10.0.0.0/8:443"
		}
		pfx = pfx.Masked()
		// The mapped form is the same destination as the IPv4 one and is
		// matched as IPv4; writing it that way keeps one form per range.
		if a := pfx.Addr(); a.Is4In6() && pfx.Bits() >= 96 {
			pfx = netip.PrefixFrom(a.Unmap(), pfx.Bits()-96)
		}
		return KindPrefix, pfx, ""
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		if !bracketed && !strings.Contains(s, ":") {
			return 0, netip.Prefix{}, "is not a valid IPv4 address (four numbers 0-255 without leading zeros, as 10.1.2.3) and, ending in a number, not a host name either"
		}
		return 0, netip.Prefix{}, "is not a valid IPv6 address; write one as 2001:db8::1, or [2001:db8::1]:443 with a port (" + err.Error() + ")"
	}
	if bracketed && !ip.Is6() {
		return 0, netip.Prefix{}, "has an IPv4 address in brackets; brackets are for IPv6, write 10.1.2.3:443"
	}
	ip = ip.Unmap()
	return KindAddr, netip.PrefixFrom(ip, ip.BitLen()), ""
}

func parseWildcard(s string) (string, string) {
	if s == "*" {
		return "", "is a lone \"*\", which would allow every host; list the hosts, or use a wildcard such as *.pythonhosted.org"
	}
	if !strings.HasPrefix(s, "*.") || strings.Contains(s[2:], "*") {
		return "", "has a \"*\" that is not the whole first label; a wildcard is \"*.\" and a domain, as in *.pythonhosted.org"
	}
	name, problem := normaliseName(s[2:])
	if problem != "" {
		return "", problem
	}
	if !strings.Contains(name, ".") {
		return "", fmt.Sprintf("would allow every name under the top-level domain %q; a wildcard needs at least two labels after \"*.\", as in *.pythonhosted.org", name)
	}
	if len(name) > maxName-2 {
		return "", fmt.Sprintf("has a domain longer than %d bytes, which leaves no room for a name below it", maxName-2)
	}
	return name, ""
}

// normaliseName lower-cases an ASCII host name, drops one trailing dot
// and checks it against RFC 1123: labels of 1 to 63 letters, digits and
// hyphens, not starting or ending with a hyphen, 253 bytes in all. The
// last label must not be all digits (RFC 3696 section 2): many resolvers
// would read "10.1" or "127.1" as an IPv4 address.
func normaliseName(s string) (string, string) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", "has no host name; " + accepted
	}
	if len(s) > maxName {
		return "", fmt.Sprintf("is a host name longer than %d bytes", maxName)
	}
	b := []byte(s)
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != '.' {
			c := b[i]
			switch {
			case 'A' <= c && c <= 'Z':
				b[i] = c + 'a' - 'A'
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
			case c == '*':
				return "", "has a \"*\" that is not the whole first label; a wildcard is \"*.\" and a domain, as in *.pythonhosted.org"
			default:
				return "", fmt.Sprintf("contains %q; a host name has only letters, digits, hyphens and dots", rune(c))
			}
			continue
		}
		label := b[start:i]
		switch {
		case len(label) == 0:
			return "", "has an empty label (\"..\" or a leading dot); " + accepted
		case len(label) > 63:
			return "", fmt.Sprintf("has a label of %d bytes; a label is at most 63", len(label))
		case label[0] == '-' || label[len(label)-1] == '-':
			return "", fmt.Sprintf("has the label %q, which starts or ends with a hyphen", label)
		}
		start = i + 1
	}
	name := string(b)
	if looksIPv4(name[strings.LastIndexByte(name, '.')+1:]) {
		return "", "ends in an all-numeric label, which is not a host name and not a valid IPv4 address either"
	}
	return name, ""
}

// List is a parsed allowlist. A connection is allowed when any one
// pattern allows it.
type List []Pattern

// ParseList parses every entry and reports every bad one at once (joined
// errors, each a *PatternError), so a profile is fixed in one pass.
func ParseList(patterns []string) (List, error) {
	l := make(List, 0, len(patterns))
	var errs []error
	for _, s := range patterns {
		p, err := Parse(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l = append(l, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// AllowName reports whether the host and port a client asked for are on
// the list. host is a name, matched case-insensitively with any trailing
// dot ignored against name and wildcard patterns; a name that is not a
// valid host name is never allowed. An IP literal (IPv6 with or without
// brackets) is matched only against IP and CIDR patterns, as AllowAddr.
//
// AllowName decides on the name alone: every address the name resolves
// to must still pass Check.
func (l List) AllowName(host string, port int) bool {
	if ip, ok := ipLiteral(host); ok {
		return l.AllowAddr(ip, port)
	}
	if port < 1 || port > 65535 || len(host) > maxName+1 || checkASCII(host) != "" {
		return false
	}
	name, problem := normaliseName(host)
	if problem != "" {
		return false
	}
	for _, p := range l {
		if p.allowsPort(port) && p.matchName(name) {
			return true
		}
	}
	return false
}

func ipLiteral(host string) (netip.Addr, bool) {
	s := host
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
		if !strings.Contains(s, ":") {
			return netip.Addr{}, false
		}
	}
	ip, err := netip.ParseAddr(s)
	return ip, err == nil
}

// AllowAddr reports whether an IP or CIDR pattern names ip on port.
// IPv4-mapped addresses are matched as IPv4; an address with a zone is
// never allowed (a zone picks a local interface, which no pattern names).
//
// An address the list allows must still pass Check, which refuses
// private and special addresses unless a pattern names them closely.
func (l List) AllowAddr(ip netip.Addr, port int) bool {
	if !ip.IsValid() || ip.Zone() != "" || port < 1 || port > 65535 {
		return false
	}
	ip = ip.Unmap()
	for _, p := range l {
		if p.allowsPort(port) && p.matchAddr(ip) {
			return true
		}
	}
	return false
}
