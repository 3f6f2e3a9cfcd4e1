package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) values the proxy reads.
const (
	socksVersion    = 5
	socksNoAuth     = 0x00
	socksNoMethod   = 0xff
	socksCmdConnect = 0x01
	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04
)

var errBadAddrType = errors.New("unknown SOCKS5 address type")

// readSOCKSAddr reads DST.ADDR and DST.PORT of a request whose ATYP was
// atyp. A domain is returned as sent, to be judged as a name or an IP
// literal like any other host.
func readSOCKSAddr(r io.Reader, atyp byte) (string, int, error) {
	var host string
	switch atyp {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		host = netip.AddrFrom4(b).String()
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		host = netip.AddrFrom16(b).String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", 0, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return "", 0, err
		}
		host = string(b)
	default:
		return "", 0, errBadAddrType
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return "", 0, err
	}
	return host, int(p[0])<<8 | int(p[1]), nil
}

// socksReply is a reply with code rep. The bound address is always
// 0.0.0.0:0: clients of CONNECT do not use it, and the supervisor's own
// address is nothing the jail needs to know.
func socksReply(rep byte) []byte {
	return []byte{socksVersion, rep, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// refuseSOCKS answers a refused request and records the refusal.
func (s *session) refuseSOCKS(rep byte, reason string) {
	s.ev.Reason = reason
	s.c.SetWriteDeadline(time.Now().Add(s.p.lim.HeaderTimeout))
	if _, err := s.c.Write(socksReply(rep)); err == nil {
		lingerClose(s.c)
	}
}

func (s *session) serveSOCKS5() {
	s.cr.setDeadline(s.ev.Time.Add(s.p.lim.HeaderTimeout))
	// A request is at most 262 bytes; a larger buffer would only hold
	// the tunnel's first bytes, which Read passes through anyway.
	br := bufio.NewReaderSize(s.cr, 512)
	if !s.socksGreeting(br) {
		return
	}
	t, ok := s.socksRequest(br)
	if !ok {
		return
	}
	if reason := s.open(t); reason != "" {
		s.refuseSOCKS(socksCode(reason, s.dialErr), reason)
		return
	}
	if _, err := s.write(s.c, socksReply(socksOK)); err != nil {
		s.ev.Reason = ReasonBadRequest
		return
	}
	s.cr.setDeadline(time.Time{})
	s.tunnel(t, buffered(br))
}

// socksGreeting reads the client's greeting and agrees on no
// authentication, the one method served; false after recording why not.
func (s *session) socksGreeting(br *bufio.Reader) bool {
	var greet [2]byte
	if n, err := io.ReadFull(br, greet[:]); err != nil {
		s.silent = n == 0 && !isTimeout(err)
		s.ev.Reason = ReasonBadRequest
		return false
	}
	if greet[0] != socksVersion {
		// Not SOCKS5 (SOCKS4, or HTTP sent to the wrong port): there is
		// no reply it would understand.
		s.ev.Reason = ReasonBadRequest
		return false
	}
	methods := make([]byte, greet[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		s.ev.Reason = ReasonBadRequest
		return false
	}
	s.c.SetWriteDeadline(time.Now().Add(s.p.lim.HeaderTimeout))
	if bytes.IndexByte(methods, socksNoAuth) < 0 {
		s.ev.Reason = ReasonBadRequest
		if _, err := s.c.Write([]byte{socksVersion, socksNoMethod}); err == nil {
			lingerClose(s.c)
		}
		return false
	}
	if _, err := s.c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		s.ev.Reason = ReasonBadRequest
		return false
	}
	return true
}

// socksRequest reads the request and its target, which the event names;
// false after refusing it: only CONNECT is served.
func (s *session) socksRequest(br *bufio.Reader) (target, bool) {
	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(br, req[:]); err != nil {
		s.ev.Reason = ReasonBadRequest
		return target{}, false
	}
	if req[0] != socksVersion || req[2] != 0 {
		s.refuseSOCKS(socksGeneralFailure, ReasonBadRequest)
		return target{}, false
	}
	host, port, err := readSOCKSAddr(br, req[3])
	switch {
	case errors.Is(err, errBadAddrType):
		s.refuseSOCKS(socksBadAddrType, ReasonBadRequest)
		return target{}, false
	case err != nil:
		s.ev.Reason = ReasonBadRequest
		return target{}, false
	}
	t := newTarget(host, port)
	s.ev.Host, s.ev.Port = t.host, t.port
	if req[1] != socksCmdConnect {
		// BIND and UDP ASSOCIATE would open the jail to the outside.
		s.refuseSOCKS(socksBadCommand, ReasonBadRequest)
		return target{}, false
	}
	return t, true
}
