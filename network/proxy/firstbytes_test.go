package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// The first bytes of a tunnel to a name: when they start a TLS record
// they must be a handshake record carrying the ClientHello, however the
// client cuts and paces it; a record of another type first is refused,
// and the ClientHello behind it is never looked for.

// shapedHello is a TLS client's connection that sends prefix before the
// ClientHello (the client's first Write), recut into handshake records of
// at most recordSize bytes when recordSize > 0, and sends that in two
// parts, cut after split bytes with a pause between.
type shapedHello struct {
	net.Conn
	prefix     []byte
	recordSize int
	split      int
	pause      time.Duration
	sent       bool
}

func (c *shapedHello) Write(p []byte) (int, error) {
	if c.sent {
		return c.Conn.Write(p)
	}
	c.sent = true
	hello := p
	if c.recordSize > 0 {
		hello = recut(p, c.recordSize)
	}
	b := append(append([]byte{}, c.prefix...), hello...)
	if c.split > 0 {
		if _, err := c.Conn.Write(b[:c.split]); err != nil {
			return 0, err
		}
		time.Sleep(c.pause)
		b = b[c.split:]
	}
	if _, err := c.Conn.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// recut joins the handshake records in b and cuts them again into records
// of at most size bytes.
func recut(b []byte, size int) []byte {
	var msg []byte
	for len(b) >= 5 && b[0] == 22 {
		n := int(b[3])<<8 | int(b[4])
		msg = append(msg, b[5:5+n]...)
		b = b[5+n:]
	}
	var out []byte
	for len(msg) > 0 {
		n := min(size, len(msg))
		out = append(out, 22, 3, 1, byte(n>>8), byte(n))
		out = append(out, msg[:n]...)
		msg = msg[n:]
	}
	return out
}

var (
	ccsRecord   = []byte{20, 3, 3, 0, 1, 1}
	alertRecord = []byte{21, 3, 3, 0, 2, 1, 0} // warning close_notify
	appData     = []byte{23, 3, 3, 0, 5, 'h', 'e', 'l', 'l', 'o'}
)

func TestTunnelFirstBytes(t *testing.T) {
	srv := startServers(t)
	tlsAddr := srv.tls.Listener.Addr().String()
	port := portOf(t, tlsAddr)
	d := &testDialer{redirect: map[string]string{"127.0.0.1:443": tlsAddr}}
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("secure.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port), "secure.test:443", "127.0.0.1:443"),
		Resolver: newResolver().add("secure.test", "127.0.0.1"),
		Dialer:   d,
		Limits:   Limits{HeaderTimeout: 2 * time.Second},
	})
	good := &tls.Config{ServerName: "secure.test", RootCAs: srv.cert.pool}
	other := &tls.Config{ServerName: "other.test", RootCAs: srv.cert.pool}
	name := fmt.Sprintf("secure.test:%d", port)
	pause := 200 * time.Millisecond

	refused := []struct {
		name   string
		target string
		cfg    *tls.Config
		shape  shapedHello
		reason string
	}{
		{"ChangeCipherSpec first", name, other, shapedHello{prefix: ccsRecord}, ReasonNoHello},
		{"ChangeCipherSpec first, good name", name, good, shapedHello{prefix: ccsRecord}, ReasonNoHello},
		{"alert first", name, other, shapedHello{prefix: alertRecord}, ReasonNoHello},
		{"application data first", name, other, shapedHello{prefix: appData}, ReasonNoHello},
		{"ChangeCipherSpec first, on 443", "secure.test:443", other, shapedHello{prefix: ccsRecord}, ReasonNoHello},
		{"one byte of a ChangeCipherSpec, then the rest slowly", name, other, shapedHello{prefix: ccsRecord, split: 1, pause: pause}, ReasonNoHello},
		{"an empty handshake record first", name, other, shapedHello{prefix: []byte{22, 3, 3, 0, 0}}, ReasonBadRequest},
		{"a hello in two records, another name", name, other, shapedHello{recordSize: 64, split: 69, pause: pause}, ReasonSNIMismatch},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			c, br, resp := connect(t, p.http, tt.target)
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			shape := tt.shape
			shape.Conn = c
			if err := tls.Client(bufConn{&shape, br}, tt.cfg).Handshake(); err == nil {
				t.Error("the handshake succeeded")
			}
			c.Close()
			ev := p.events.next(t)
			want := Event{Proto: "connect", Host: "secure.test", Port: portOf(t, tt.target), Addr: loopback, Reason: tt.reason}
			checkEvent(t, ev, want) // BytesUp 0: nothing went upstream
		})
	}

	// One byte, then the connection closed: judged by the byte.
	for _, tt := range []struct {
		b      byte
		reason string
	}{{20, ReasonNoHello}, {21, ReasonNoHello}, {22, ReasonBadRequest}} {
		t.Run(fmt.Sprintf("one byte %d then close", tt.b), func(t *testing.T) {
			c, br, resp := connect(t, p.http, name)
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			c.Write([]byte{tt.b})
			c.(*net.TCPConn).CloseWrite()
			if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
				t.Errorf("after one byte: %q, %v; want the tunnel closed", b, err)
			}
			checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "secure.test", Port: port, Addr: loopback, Reason: tt.reason})
		})
	}

	// A good hello however it is cut and paced.
	for _, tt := range []struct {
		name  string
		shape shapedHello
	}{
		{"one byte, then the rest slowly", shapedHello{split: 1, pause: pause}},
		{"two bytes, then the rest slowly", shapedHello{split: 2, pause: pause}},
		{"in two records, two writes", shapedHello{recordSize: 64, split: 69, pause: pause}},
		{"in 1-byte records", shapedHello{recordSize: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, br, resp := connect(t, p.http, name)
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			shape := tt.shape
			shape.Conn = c
			if body, err := tlsGet(t, bufConn{&shape, br}, good, "/cut"); err != nil || body != "secure secure.test /cut" {
				t.Errorf("%q, %v", body, err)
			}
			checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "secure.test", Port: port, Addr: loopback,
				BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})
		})
	}

	// SOCKS5 is judged the same way.
	t.Run("SOCKS5, ChangeCipherSpec first", func(t *testing.T) {
		c, br, code := socks(t, p.socks, socksRequest(1, "secure.test", port))
		if code != socksOK {
			t.Fatalf("SOCKS5 reply %#x", code)
		}
		shape := shapedHello{Conn: c, prefix: ccsRecord}
		if err := tls.Client(bufConn{&shape, br}, other).Handshake(); err == nil {
			t.Error("the handshake succeeded")
		}
		c.Close()
		checkEvent(t, p.events.next(t), Event{Proto: "socks5", Host: "secure.test", Port: port, Addr: loopback, Reason: ReasonNoHello})
	})

	// To an IP literal no server name is checked, and the first bytes are
	// not judged beyond a ClientHello's: the pattern allowed the address.
	t.Run("IP literal, ChangeCipherSpec first", func(t *testing.T) {
		c, br, resp := connect(t, p.http, fmt.Sprintf("127.0.0.1:%d", port))
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %s", resp.Status)
		}
		shape := shapedHello{Conn: c, prefix: ccsRecord}
		tls.Client(bufConn{&shape, br}, good).Handshake() // the server decides
		c.Close()
		if ev := p.events.next(t); !ev.Allowed || ev.Reason != "" || ev.BytesUp == 0 {
			t.Errorf("event %+v: want the tunnel allowed and the bytes forwarded", ev)
		}
	})
}
