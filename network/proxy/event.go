package proxy

import (
	"net/netip"
	"time"

	"github.com/tooljail/tooljail/network/allow"
)

// Event is one client connection as the report shows it: delivered once,
// when the connection has ended or been refused.
//
// Allowed says the request passed every check and was forwarded upstream.
// Reason is empty for a connection that ended on its own (either side
// closed it, or it was idle for Limits.IdleTimeout, or the Proxy was
// closed). Otherwise it is one of the reasons Reasons lists: with Allowed
// false the request was refused (nothing went upstream; for a tunnel
// refused at its ClientHello, the server may have sent bytes first); with
// Allowed true the connection was forwarded and then cut, which only
// ReasonByteLimit does.
type Event struct {
	// Time is when the proxy accepted the connection.
	Time time.Time
	// Proto is "http" (a plain request in absolute form, or a
	// connection to the HTTP proxy refused before its request was read),
	// "connect" (an HTTP CONNECT tunnel) or "socks5".
	Proto string
	// Host is the host the client asked for: a lower-case name without a
	// trailing dot, or an IP address; "" when the request never got as
	// far as naming one. A name that is not a valid host name is kept as
	// sent, cut to 253 bytes, invalid UTF-8 replaced by "?".
	Host string
	// Port is the port asked for, 0 when none was.
	Port int
	// Addr is the address the decision was about: the one connected to,
	// or, when every resolved address was refused, the first of them (so
	// "metadata address" comes with 169.254.169.254). The zero Addr when
	// the request was refused before a lookup.
	Addr netip.Addr
	// BytesUp and BytesDown count what was forwarded, client to upstream
	// and back: the tunnel's payload for CONNECT and SOCKS5, the request
	// as sent upstream and the response as received for plain HTTP.
	BytesUp, BytesDown int64
	Allowed            bool
	Reason             string
}

// The reasons an Event gives. They are stable: the report carries them and
// users and tests match on them. A refusal for an address is the reason
// allow.Check gave (allow.ReasonPrivate "private address",
// allow.ReasonMetadata "metadata address", allow.ReasonLoopback ...).
const (
	// ReasonNotAllowed: no allowlist pattern names the host and port (for
	// an IP literal, no IP or CIDR pattern names it).
	ReasonNotAllowed = "not in allowlist"
	// ReasonSNIMismatch: the TLS ClientHello names another server than
	// the host the client asked the proxy for.
	ReasonSNIMismatch = "sni mismatch"
	// ReasonNoSNI: the tunnel is to a name, and its first bytes are a TLS
	// ClientHello without a server name, or the port is 443 and they are
	// not TLS at all.
	ReasonNoSNI = "no sni"
	// ReasonNoHello: the tunnel is to a name, and its first bytes are a
	// TLS record of another type than handshake (a ChangeCipherSpec, an
	// alert, application data...) where the ClientHello must come first.
	ReasonNoHello = "no client hello"
	// ReasonECH: the ClientHello carries Encrypted Client Hello (or ESNI),
	// which hides the real server name.
	ReasonECH = "ech refused"
	// ReasonHostMismatch: a plain HTTP request whose Host header names
	// another host or port than its URL.
	ReasonHostMismatch = "host mismatch"
	// ReasonDNS: the name did not resolve (no such name, no address, or
	// the lookup failed or timed out).
	ReasonDNS = "dns failed"
	// ReasonConnect: no address that passed the checks accepted the
	// connection in time.
	ReasonConnect = "connect failed"
	// ReasonConnLimit: Limits.MaxConns connections were already open.
	ReasonConnLimit = "connection limit"
	// ReasonByteLimit: Limits.MaxBytes were forwarded: a new connection
	// is refused, a running one cut where the limit fell.
	ReasonByteLimit = "byte limit"
	// ReasonBadRequest: the client broke the protocol (malformed or
	// oversized HTTP head, a SOCKS5 command other than CONNECT, a
	// malformed ClientHello or, to a name, a handshake record that does
	// not start one, a port of 0) or did not finish its request within
	// Limits.HeaderTimeout.
	ReasonBadRequest = "bad request"
)

// Reasons lists every reason an Event can carry, those of allow.Check
// included (an invalid or zoned address can come from the resolver; the
// port is checked before Check sees it), for a caller that documents or
// validates them.
func Reasons() []string {
	return []string{
		ReasonNotAllowed,
		allow.ReasonInvalid, allow.ReasonZoned, allow.ReasonUnspecified,
		allow.ReasonLoopback, allow.ReasonPrivate, allow.ReasonLinkLocal, allow.ReasonMetadata,
		allow.ReasonMulticast, allow.ReasonBroadcast, allow.ReasonReserved,
		ReasonSNIMismatch, ReasonNoSNI, ReasonNoHello, ReasonECH, ReasonHostMismatch,
		ReasonDNS, ReasonConnect, ReasonConnLimit, ReasonByteLimit, ReasonBadRequest,
	}
}
