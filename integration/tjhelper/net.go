package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// netAction runs the network allow mode's probes; false for another action.
//
//	httpget PROXY URL         GET URL through PROXY (http://..., socks5://..., or - for none):
//	                          value {"status", "body"}, with "bytes" read and "error" when
//	                          the body was cut, or the error
//	tunnel PROXY TARGET SNI [HEX]
//	                          CONNECT TARGET through the HTTP proxy PROXY (host:port), then
//	                          TLS with server name SNI (certificate not checked: the proxy
//	                          is under test) and GET /: value {"status", "body"} or the error;
//	                          HEX: bytes sent in the tunnel before the ClientHello
//	dns NAME TYPE [tcp]       one query (type A, AAAA or TXT) to 127.0.0.1:53, over UDP or
//	                          TCP: value {"rcode", "answers"} or the error
//	udp HOST:PORT             send a datagram and wait 2 s for a reply: ok or the error
//	icmp ping|raw IPV4        an ICMP echo request to IPV4 over a ping socket (SOCK_DGRAM)
//	                          or a raw one, then 2 s for a reply: ok or the first error
//	holdconn HOST:PORT        connect, send the start of an HTTP request and keep the
//	                          connection open until the helper exits: ok or the error
func netAction(a []string) bool {
	switch a[0] {
	case "httpget":
		httpGet(arg(a, 1), arg(a, 2))
	case "tunnel":
		var prefix []byte
		if len(a) > 4 {
			prefix, _ = hex.DecodeString(a[4])
		}
		tunnel(arg(a, 1), arg(a, 2), arg(a, 3), prefix)
	case "dns":
		dnsQuery(arg(a, 1), arg(a, 2), len(a) > 3 && a[3] == "tcp")
	case "udp":
		c, err := net.Dial("udp", arg(a, 1))
		if err == nil {
			defer c.Close()
			_, err = c.Write([]byte("x"))
		}
		if err == nil {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err = c.Read(make([]byte, 16))
		}
		result(err)
	case "icmp":
		result(icmpEcho(arg(a, 1), arg(a, 2)))
	case "holdconn":
		c, err := net.DialTimeout("tcp", arg(a, 1), 5*time.Second)
		if err == nil {
			held = append(held, c)
			_, err = c.Write([]byte("GET http://"))
		}
		result(err)
	default:
		return false
	}
	return true
}

// held are the connections holdconn keeps open.
var held []net.Conn

func httpGet(proxy, target string) {
	tr := &http.Transport{DisableKeepAlives: true}
	if proxy != "-" {
		p, err := url.Parse(proxy)
		if err != nil {
			result(err)
			return
		}
		tr.Proxy = http.ProxyURL(p)
	}
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := cl.Get(target)
	if err != nil {
		result(err)
		return
	}
	defer resp.Body.Close()
	// The whole body (at most 16 MiB), to see where a server or the
	// proxy cut it; the first 4 KiB of it is shown.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	v := map[string]any{"status": resp.StatusCode, "body": strings.TrimSpace(string(body[:min(len(body), 4096)]))}
	if err != nil {
		v["bytes"], v["error"] = len(body), err.Error()
	}
	value(v)
}

func tunnel(proxy, target, sni string, prefix []byte) {
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		result(err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		result(err)
		return
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		result(fmt.Errorf("CONNECT: %s: %s", resp.Status, strings.TrimSpace(string(body))))
		return
	}
	var tconn net.Conn = &bufConn{c, br}
	if len(prefix) > 0 {
		tconn = &prefixConn{Conn: tconn, prefix: prefix}
	}
	tc := tls.Client(tconn, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	req, _ := http.NewRequest("GET", "https://"+target+"/", nil)
	req.Close = true
	if err := req.Write(tc); err != nil {
		result(fmt.Errorf("tls: %w", err))
		return
	}
	r2, err := http.ReadResponse(bufio.NewReader(tc), req)
	if err != nil {
		result(fmt.Errorf("tls: %w", err))
		return
	}
	defer r2.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(r2.Body, 4096))
	value(map[string]any{"status": r2.StatusCode, "body": strings.TrimSpace(string(body))})
}

// bufConn reads what the proxy's reply left buffered first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// prefixConn sends prefix in front of the first Write.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Write(p []byte) (int, error) {
	if c.prefix != nil {
		b := append(c.prefix, p...)
		c.prefix = nil
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func dnsQuery(name, typ string, tcp bool) {
	types := map[string]uint16{"A": 1, "AAAA": 28, "TXT": 16}
	t, ok := types[typ]
	if !ok {
		result(fmt.Errorf("type %q: want A, AAAA or TXT", typ))
		return
	}
	// A query as RFC 1035 writes it: header (id, RD, one question), the
	// name as labels, type, class IN.
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	q = append(q, 0)
	q = binary.BigEndian.AppendUint16(q, t)
	q = binary.BigEndian.AppendUint16(q, 1)
	network := "udp"
	if tcp {
		// RFC 1035 4.2.2: a two-byte length before the message.
		network, q = "tcp", append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)
	}
	c, err := net.Dial(network, "127.0.0.1:53")
	if err != nil {
		result(err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(q); err != nil {
		result(err)
		return
	}
	b := make([]byte, 1500)
	var n int
	if tcp {
		var hdr [2]byte
		if _, err = io.ReadFull(c, hdr[:]); err == nil {
			n = int(binary.BigEndian.Uint16(hdr[:]))
			_, err = io.ReadFull(c, b[:min(n, len(b))])
		}
	} else {
		n, err = c.Read(b)
	}
	if err != nil {
		result(err)
		return
	}
	if n < 12 || b[0] != 0x12 || b[1] != 0x34 {
		result(errors.New("reply too short or for another query"))
		return
	}
	value(map[string]int{"rcode": int(b[3] & 0x0f), "answers": int(binary.BigEndian.Uint16(b[6:8]))})
}

// icmpEcho sends one ICMP echo request to addr over a ping socket (how
// ping(8) works without privileges) or a raw socket, and waits for a
// reply.
func icmpEcho(kind, addr string) error {
	typ := unix.SOCK_DGRAM
	if kind == "raw" {
		typ = unix.SOCK_RAW
	}
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return fmt.Errorf("icmp: %q is not an IPv4 address", addr)
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// Type 8 (echo request), code 0, checksum over the 8-byte header
	// (a ping socket fills in its own identifier and checksum).
	msg := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1}
	var sum uint32
	for i := 0; i < len(msg); i += 2 {
		sum += uint32(msg[i])<<8 | uint32(msg[i+1])
	}
	sum = (sum >> 16) + (sum & 0xffff)
	binary.BigEndian.PutUint16(msg[2:], ^uint16(sum+(sum>>16)))
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], ip)
	if err := unix.Sendto(fd, msg, 0, sa); err != nil {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 2000)
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("no reply within 2s")
	}
	return nil
}
