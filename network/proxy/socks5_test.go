package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
)

// socksRequest is a CONNECT (or cmd) request for a domain or an address.
func socksRequest(cmd byte, host string, port int) []byte {
	b := []byte{5, cmd, 0}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is4() {
			b = append(b, socksAtypIPv4)
		} else {
			b = append(b, socksAtypIPv6)
		}
		b = append(b, ip.AsSlice()...)
	} else {
		b = append(b, socksAtypDomain, byte(len(host)))
		b = append(b, host...)
	}
	return binary.BigEndian.AppendUint16(b, uint16(port))
}

// socks greets the proxy with no authentication, sends req and returns
// the reply code.
func socks(t testing.TB, proxy string, req []byte) (net.Conn, *bufio.Reader, byte) {
	t.Helper()
	c := dial(t, proxy)
	c.Write([]byte{5, 1, 0})
	br := bufio.NewReader(c)
	var sel [2]byte
	if _, err := io.ReadFull(br, sel[:]); err != nil || sel != [2]byte{5, 0} {
		t.Fatalf("method selection: % x, %v", sel, err)
	}
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if rep[0] != 5 || rep[2] != 0 || rep[3] != socksAtypIPv4 {
		t.Fatalf("reply % x: not a SOCKS5 reply with an IPv4 bound address", rep)
	}
	return c, br, rep[1]
}

func TestSOCKS5(t *testing.T) {
	srv := startServers(t)
	tlsPort, echoPort := portOf(t, srv.tls.Listener.Addr().String()), portOf(t, srv.echo)
	echo6 := serveTCP(t, "[::1]:0", func(c net.Conn) { io.Copy(c, c) })
	echo6Port := portOf(t, echo6)
	res := newResolver().add("secure.test", "127.0.0.1").add("meta.test", "169.254.169.254").add("echo.test", "127.0.0.1")
	p := startProxy(t, Config{
		Allow: mustList(t,
			fmt.Sprintf("secure.test:%d", tlsPort), fmt.Sprintf("127.0.0.1:%d", tlsPort),
			fmt.Sprintf("127.0.0.1:%d", echoPort), fmt.Sprintf("[::1]:%d", echo6Port),
			fmt.Sprintf("meta.test:%d", echoPort), fmt.Sprintf("[fd00::/8]:%d", echoPort)),
		Resolver: res,
	})

	// A domain, resolved by the proxy, TLS with its name.
	c, br, rep := socks(t, p.socks, socksRequest(1, "secure.test", tlsPort))
	if rep != socksOK {
		t.Fatalf("domain: reply %#x", rep)
	}
	if body, err := tlsGet(t, bufConn{c, br}, &tls.Config{ServerName: "secure.test", RootCAs: srv.cert.pool}, "/s"); err != nil || body != "secure secure.test /s" {
		t.Errorf("domain: %q, %v", body, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: "secure.test", Port: tlsPort, Addr: loopback,
		BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})

	// The same with another server name.
	c, br, rep = socks(t, p.socks, socksRequest(1, "secure.test", tlsPort))
	if rep != socksOK {
		t.Fatalf("domain: reply %#x", rep)
	}
	if err := tlsHandshake(&tls.Config{ServerName: "other.test", RootCAs: srv.cert.pool})(bufConn{c, br}); err == nil {
		t.Error("SNI mismatch: the handshake succeeded")
	}
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: "secure.test", Port: tlsPort, Addr: loopback, Reason: ReasonSNIMismatch})

	// IPv4 and IPv6 literals, named by the list.
	for _, tt := range []struct {
		host string
		port int
	}{{"127.0.0.1", echoPort}, {"::1", echo6Port}} {
		c, br, rep := socks(t, p.socks, socksRequest(1, tt.host, tt.port))
		if rep != socksOK {
			t.Fatalf("%s: reply %#x", tt.host, rep)
		}
		io.WriteString(c, "ping\n")
		if line, err := br.ReadString('\n'); line != "ping\n" {
			t.Fatalf("%s: echo %q, %v", tt.host, line, err)
		}
		c.Close()
		ip := netip.MustParseAddr(tt.host)
		checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: tt.host, Port: tt.port, Addr: ip, BytesUp: 5, BytesDown: 5, Allowed: true})
	}

	refused := []struct {
		name string
		req  []byte
		rep  byte
		want Event
	}{
		{"IPv6 literal not in the list", socksRequest(1, "2001:db8::1", echoPort), socksNotAllowed,
			Event{Host: "2001:db8::1", Port: echoPort, Reason: ReasonNotAllowed}},
		{"IPv6 metadata in an allowed range", socksRequest(1, "fd00:ec2::254", echoPort), socksNotAllowed,
			Event{Host: "fd00:ec2::254", Port: echoPort, Addr: netip.MustParseAddr("fd00:ec2::254"), Reason: "metadata address"}},
		{"domain resolving to metadata", socksRequest(1, "meta.test", echoPort), socksNotAllowed,
			Event{Host: "meta.test", Port: echoPort, Addr: netip.MustParseAddr("169.254.169.254"), Reason: "metadata address"}},
		{"domain not in the list", socksRequest(1, "evil.test", 443), socksNotAllowed,
			Event{Host: "evil.test", Port: 443, Reason: ReasonNotAllowed}},
		// The name is looked up and compared without the dot; the client
		// closes without a word.
		{"domain with a trailing dot", socksRequest(1, "secure.test.", tlsPort), socksOK,
			Event{Host: "secure.test", Port: tlsPort, Addr: loopback, Allowed: true}},
		{"BIND", socksRequest(2, "127.0.0.1", echoPort), socksBadCommand,
			Event{Host: "127.0.0.1", Port: echoPort, Reason: ReasonBadRequest}},
		{"UDP ASSOCIATE", socksRequest(3, "127.0.0.1", echoPort), socksBadCommand,
			Event{Host: "127.0.0.1", Port: echoPort, Reason: ReasonBadRequest}},
		{"unknown address type", []byte{5, 1, 0, 9, 1, 2}, socksBadAddrType, Event{Reason: ReasonBadRequest}},
		{"port 0", socksRequest(1, "127.0.0.1", 0), socksGeneralFailure,
			Event{Host: "127.0.0.1", Reason: ReasonBadRequest}},
	}
	for _, tt := range refused {
		c, _, rep := socks(t, p.socks, tt.req)
		if rep != tt.rep {
			t.Errorf("%s: reply %#x, want %#x", tt.name, rep, tt.rep)
		}
		c.Close()
		tt.want.Proto = "socks5"
		checkEvent(t, p.events.next(t), tt.want)
	}
	p.events.none(t)
}

func TestSOCKS5Failures(t *testing.T) {
	closed := listen(t, "127.0.0.1:0")
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()
	res := newResolver().add("closed.test", "127.0.0.1")
	p := startProxy(t, Config{
		Allow:    mustList(t, "nx.test", fmt.Sprintf("closed.test:%d", closedPort), fmt.Sprintf("127.0.0.1:%d", closedPort)),
		Resolver: res,
	})
	c, _, rep := socks(t, p.socks, socksRequest(1, "nx.test", 443))
	if rep != socksHostUnreachable {
		t.Errorf("no such name: reply %#x", rep)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: "nx.test", Port: 443, Reason: ReasonDNS})

	c, _, rep = socks(t, p.socks, socksRequest(1, "closed.test", closedPort))
	if rep != socksRefused {
		t.Errorf("nothing listening: reply %#x", rep)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: "closed.test", Port: closedPort, Addr: loopback, Reason: ReasonConnect})

	// Only username/password offered: no acceptable method.
	c = dial(t, p.socks)
	c.Write([]byte{5, 1, 2})
	if b, err := io.ReadAll(c); string(b) != "\x05\xff" {
		t.Errorf("no acceptable method: % x, %v", b, err)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Reason: ReasonBadRequest})

	// SOCKS4 gets no answer.
	c = dial(t, p.socks)
	c.Write([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
	if b, err := io.ReadAll(c); len(b) != 0 {
		t.Errorf("SOCKS4: % x, %v", b, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Reason: ReasonBadRequest})
}
