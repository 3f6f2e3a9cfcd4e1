package proxy

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/hello"
)

// target is the host and port a client asked to reach.
type target struct {
	// host is a name, ASCII lower-cased without a trailing dot and cut
	// to maxHostLen bytes of valid UTF-8, or ip's text.
	host string
	// ip is valid when the client gave an IP literal; it is unmapped
	// (::ffff:10.1.2.3 is 10.1.2.3) and may carry a zone, which
	// AllowAddr refuses.
	ip   netip.Addr
	port int
}

// maxHostLen bounds the host an Event carries: no valid name is longer,
// and a hostile client must not fill the report.
const maxHostLen = 253

// newTarget reads host as an IP literal (IPv6 with or without brackets)
// or else as a name. Nothing is refused here: checkTarget decides.
func newTarget(host string, port int) target {
	s := host
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		ip = ip.Unmap()
		return target{host: ip.String(), ip: ip, port: port}
	}
	name := strings.TrimSuffix(asciiLower(host), ".")
	if len(name) > maxHostLen {
		name = name[:maxHostLen]
	}
	return target{host: strings.ToValidUTF8(name, "?"), port: port}
}

// asciiLower folds A-Z only: Unicode folding maps some characters onto
// ASCII letters (the Kelvin sign onto k), and the name compared with the
// server name of a ClientHello must be the bytes the client sent.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// checkTarget is the decision on what the client asked for, before any
// lookup: a name must match a name or wildcard pattern for the port, an
// IP literal an IP or CIDR pattern (its address is checked with the
// resolved ones, by selectAddrs).
func checkTarget(t target, l allow.List) string {
	switch {
	case t.port < 1 || t.port > 65535, t.host == "":
		return ReasonBadRequest
	case t.ip.IsValid():
		if !l.AllowAddr(t.ip, t.port) {
			return ReasonNotAllowed
		}
	case !l.AllowName(t.host, t.port):
		return ReasonNotAllowed
	}
	return ""
}

// selectAddrs checks every address a name resolved to (or the one an IP
// literal is) and keeps those allow.Check passes, in order and unmapped:
// the proxy connects only to one of them. With none passing, refused is
// the first address and reason what Check said about it.
func selectAddrs(addrs []netip.Addr, port int, l allow.List) (pass []netip.Addr, refused netip.Addr, reason string) {
	if len(addrs) == 0 {
		return nil, netip.Addr{}, ReasonDNS
	}
	for _, a := range addrs {
		ok, why := allow.Check(a, port, l)
		switch {
		case ok:
			pass = append(pass, a.Unmap())
		case reason == "":
			refused, reason = a, why
		}
	}
	if len(pass) > 0 {
		return pass, netip.Addr{}, ""
	}
	return nil, refused, reason
}

// checkHello is the decision on the ClientHello that opens a tunnel. ECH
// is refused always: the server would route on a name no one here can
// read. For a tunnel to a name, the server name must be present and be
// that name, or a server behind the same address (a CDN) would be
// reached by a name that is not on the list. For a tunnel to an IP
// literal the server name is not checked: the pattern that allowed the
// address allowed whatever is served there, and RFC 6066 forbids IP
// literals in SNI, so clients send none or a name of their choosing.
func checkHello(t target, h hello.Hello) string {
	switch {
	case h.ECH:
		return ReasonECH
	case t.ip.IsValid():
		return ""
	case !h.SNI:
		return ReasonNoSNI
	case h.ServerName != t.host:
		return ReasonSNIMismatch
	}
	return ""
}

// notTLS is the decision on a tunnel whose first bytes are not a TLS
// handshake: fine, except to port 443 of a name, where only TLS with a
// server name is expected and anything else could reach a TLS front by a
// route the proxy cannot see.
func notTLS(t target) string {
	if t.port == 443 && !t.ip.IsValid() {
		return ReasonNoSNI
	}
	return ""
}

// splitHostPort reads an authority: "host", "host:port", "[v6]",
// "[v6]:port", or an empty port ("host:"), which RFC 3986 reads as the
// default. def is the default port; 0 makes the port required. The port
// is decimal digits only, 1 to 65535.
func splitHostPort(s string, def int) (host string, port int, ok bool) {
	host, p := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, false
		}
		host, p = s[:end+1], s[end+1:]
		if p != "" {
			if p[0] != ':' {
				return "", 0, false
			}
			p = p[1:]
		}
	case strings.Count(s, ":") == 1:
		i := strings.IndexByte(s, ':')
		host, p = s[:i], s[i+1:]
	case strings.Contains(s, ":"):
		// An IPv6 address without brackets: no port can follow.
		return "", 0, false
	}
	if host == "" || host == "[]" {
		return "", 0, false
	}
	n := def
	if p != "" {
		n = 0
		for i := 0; i < len(p) && n <= 65535; i++ {
			if p[i] < '0' || p[i] > '9' {
				return "", 0, false
			}
			n = n*10 + int(p[i]-'0')
		}
	}
	if n < 1 || n > 65535 {
		return "", 0, false
	}
	return host, n, true
}

// sameHost reports whether the Host header of a plain HTTP request names
// the host and port its absolute URL names, after normalising both (case,
// a trailing dot, the default port 80, the text of an IP address).
func sameHost(url target, header string) bool {
	h, port, ok := splitHostPort(header, 80)
	if !ok {
		return false
	}
	t := newTarget(h, port)
	return t.host == url.host && t.port == url.port && t.ip == url.ip
}

// printable makes a host safe for the one-line body of a refusal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

// SOCKS5 reply codes (RFC 1928 section 6).
const (
	socksOK              = 0x00
	socksGeneralFailure  = 0x01
	socksNotAllowed      = 0x02
	socksNetUnreachable  = 0x03
	socksHostUnreachable = 0x04
	socksRefused         = 0x05
	socksBadCommand      = 0x07
	socksBadAddrType     = 0x08
)

// socksCode is the SOCKS5 reply for a decision: policy refusals are "not
// allowed by ruleset", a failed lookup "host unreachable", a failed
// connection what the last attempt's error says.
func socksCode(reason string, dialErr error) byte {
	switch reason {
	case "":
		return socksOK
	case ReasonDNS:
		return socksHostUnreachable
	case ReasonConnect:
		switch {
		case errors.Is(dialErr, syscall.ECONNREFUSED):
			return socksRefused
		case errors.Is(dialErr, syscall.ENETUNREACH):
			return socksNetUnreachable
		case errors.Is(dialErr, syscall.EHOSTUNREACH), isTimeout(dialErr):
			return socksHostUnreachable
		}
		return socksGeneralFailure
	case ReasonConnLimit, ReasonBadRequest:
		return socksGeneralFailure
	}
	return socksNotAllowed
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
