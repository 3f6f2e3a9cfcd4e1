package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// tlsGet makes one HTTPS request over c and returns the body.
func tlsGet(t *testing.T, c net.Conn, cfg *tls.Config, path string) (string, error) {
	t.Helper()
	tc := tls.Client(c, cfg)
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, cfg.ServerName)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestConnectTLS(t *testing.T) {
	srv := startServers(t)
	port := portOf(t, srv.tls.Listener.Addr().String())
	res := newResolver().add("secure.test", "127.0.0.1")
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("secure.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port)),
		Resolver: res,
	})
	hostport := fmt.Sprintf("secure.test:%d", port)
	want := Event{Proto: "connect", Host: "secure.test", Port: port, Addr: loopback, BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true}

	c, br, resp := connect(t, p.http, hostport)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	body, err := tlsGet(t, bufConn{c, br}, &tls.Config{ServerName: "secure.test", RootCAs: srv.cert.pool}, "/a")
	if err != nil || body != "secure secure.test /a" {
		t.Fatalf("through CONNECT: %q, %v", body, err)
	}
	checkEvent(t, p.events.next(t), want)

	// Go's own proxy clients, HTTP CONNECT and SOCKS5 with the name sent
	// to the proxy.
	for _, proxyURL := range []string{"http://" + p.http, "socks5://" + p.socks} {
		u, _ := url.Parse(proxyURL)
		tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: srv.cert.pool}}
		resp, err := (&http.Client{Transport: tr}).Get("https://" + hostport + "/b")
		if err != nil {
			t.Fatalf("http.Transport via %s: %v", proxyURL, err)
		}
		body := bodyOf(t, resp)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if body != "secure "+hostport+" /b" {
			t.Errorf("http.Transport via %s: %q", proxyURL, body)
		}
		w := want
		w.Proto = u.Scheme
		if u.Scheme == "http" {
			w.Proto = "connect"
		}
		checkEvent(t, p.events.next(t), w)
	}
	if n := res.count("secure.test"); n != 3 {
		t.Errorf("%d lookups for 3 connections, want one each", n)
	}
	p.events.none(t)
}

func TestConnectRefused(t *testing.T) {
	srv := startServers(t)
	port := portOf(t, srv.tls.Listener.Addr().String())
	closed := listen(t, "127.0.0.1:0")
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()
	res := newResolver().
		add("secure.test", "127.0.0.1").
		add("meta.test", "169.254.169.254").
		add("priv.test", "10.1.2.3").
		add("ula.test", "fd00::1").
		add("closed.test", "127.0.0.1")
	pat := func(host string, port int) string { return fmt.Sprintf("%s:%d", host, port) }

	tests := []struct {
		name   string
		allow  []string
		target string
		status int
		want   Event // Proto "connect" and Allowed false implied
		lookup bool  // the name is looked up (once)
	}{
		{"name not in the list", []string{pat("secure.test", port)}, pat("other.test", port), 403,
			Event{Host: "other.test", Port: port, Reason: ReasonNotAllowed}, false},
		{"allowed port only", []string{pat("secure.test", port)}, pat("secure.test", 22), 403,
			Event{Host: "secure.test", Port: 22, Reason: ReasonNotAllowed}, false},
		{"name resolving to metadata", []string{pat("meta.test", port)}, pat("meta.test", port), 403,
			Event{Host: "meta.test", Port: port, Addr: netip.MustParseAddr("169.254.169.254"), Reason: "metadata address"}, true},
		{"name resolving to loopback without an IP entry", []string{pat("secure.test", port)}, pat("secure.test", port), 403,
			Event{Host: "secure.test", Port: port, Addr: loopback, Reason: "loopback address"}, true},
		{"name resolving to 10.x", []string{pat("priv.test", port)}, pat("priv.test", port), 403,
			Event{Host: "priv.test", Port: port, Addr: netip.MustParseAddr("10.1.2.3"), Reason: "private address"}, true},
		{"name resolving to fd00::/8", []string{pat("ula.test", port)}, pat("ula.test", port), 403,
			Event{Host: "ula.test", Port: port, Addr: netip.MustParseAddr("fd00::1"), Reason: "private address"}, true},
		{"IP literal not in the list", []string{pat("secure.test", port)}, pat("127.0.0.1", port), 403,
			Event{Host: "127.0.0.1", Port: port, Reason: ReasonNotAllowed}, false},
		{"IP literal in a range that does not name metadata", []string{pat("169.254.0.0/16", port)}, pat("169.254.169.254", port), 403,
			Event{Host: "169.254.169.254", Port: port, Addr: netip.MustParseAddr("169.254.169.254"), Reason: "metadata address"}, false},
		{"no such name", []string{pat("nx.test", port)}, pat("nx.test", port), 502,
			Event{Host: "nx.test", Port: port, Reason: ReasonDNS}, true},
		{"nothing listening", []string{pat("closed.test", closedPort), pat("127.0.0.1", closedPort)}, pat("closed.test", closedPort), 502,
			Event{Host: "closed.test", Port: closedPort, Addr: loopback, Reason: ReasonConnect}, true},
		{"no port", []string{pat("secure.test", port)}, "secure.test", 400,
			Event{Reason: ReasonBadRequest}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, _, _ := net.SplitHostPort(tt.target)
			before := res.count(name)
			p := startProxy(t, Config{Allow: mustList(t, tt.allow...), Resolver: res})
			c, _, resp := connect(t, p.http, tt.target)
			body := bodyOf(t, resp)
			c.Close()
			if resp.StatusCode != tt.status || !strings.HasSuffix(body, ": "+tt.want.Reason+"\n") || strings.Count(body, "\n") != 1 {
				t.Errorf("CONNECT %s: %s %q; want %d and a line naming %q", tt.target, resp.Status, body, tt.status, tt.want.Reason)
			}
			tt.want.Proto = "connect"
			checkEvent(t, p.events.next(t), tt.want)
			want := 0
			if tt.lookup {
				want = 1
			}
			if n := res.count(name) - before; n != want {
				t.Errorf("%d lookups of %q, want %d", n, name, want)
			}
		})
	}
}

func TestConnectTLSRefused(t *testing.T) {
	srv := startServers(t)
	tlsAddr := srv.tls.Listener.Addr().String()
	port := portOf(t, tlsAddr)
	res := newResolver().add("secure.test", "127.0.0.1")
	// Port 443 of 127.0.0.1 is the TLS server, wherever it listens.
	d := &testDialer{redirect: map[string]string{"127.0.0.1:443": tlsAddr}}
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("secure.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port), "secure.test:443", "127.0.0.1:443"),
		Resolver: res,
		Dialer:   d,
	})
	good := &tls.Config{ServerName: "secure.test", RootCAs: srv.cert.pool}
	noSNI := &tls.Config{InsecureSkipVerify: true}
	tests := []struct {
		name   string
		target string
		send   func(net.Conn) error
		want   Event
	}{
		{"SNI of another host", fmt.Sprintf("secure.test:%d", port), tlsHandshake(&tls.Config{ServerName: "other.test", RootCAs: srv.cert.pool}),
			Event{Host: "secure.test", Port: port, Addr: loopback, Reason: ReasonSNIMismatch}},
		{"no SNI in TLS to a name", fmt.Sprintf("secure.test:%d", port), tlsHandshake(noSNI),
			Event{Host: "secure.test", Port: port, Addr: loopback, Reason: ReasonNoSNI}},
		{"no SNI on 443", "secure.test:443", tlsHandshake(noSNI),
			Event{Host: "secure.test", Port: 443, Addr: loopback, Reason: ReasonNoSNI}},
		{"not TLS on 443", "secure.test:443", sendText("GET / HTTP/1.0\r\n\r\n"),
			Event{Host: "secure.test", Port: 443, Addr: loopback, Reason: ReasonNoSNI}},
		{"ECH", fmt.Sprintf("secure.test:%d", port), tlsHandshake(&tls.Config{
			ServerName: "secure.test", RootCAs: srv.cert.pool, MinVersion: tls.VersionTLS13,
			EncryptedClientHelloConfigList: echConfigList(t, "secure.test"),
		}), Event{Host: "secure.test", Port: port, Addr: loopback, Reason: ReasonECH}},
		{"a malformed ClientHello", fmt.Sprintf("secure.test:%d", port),
			sendText("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"),
			Event{Host: "secure.test", Port: port, Addr: loopback, Reason: ReasonBadRequest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br, resp := connect(t, p.http, tt.target)
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			if err := tt.send(bufConn{c, br}); err == nil {
				t.Error("the exchange succeeded")
			}
			c.Close()
			tt.want.Proto = "connect"
			checkEvent(t, p.events.next(t), tt.want)
		})
	}

	// The same proxy lets a good hello through, on 443 too.
	for _, target := range []string{"secure.test:443", fmt.Sprintf("secure.test:%d", port)} {
		c, br, resp := connect(t, p.http, target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s: %s", target, resp.Status)
		}
		if body, err := tlsGet(t, bufConn{c, br}, good, "/ok"); err != nil || body != "secure secure.test /ok" {
			t.Errorf("CONNECT %s: %q, %v", target, body, err)
		}
		_, p2, _ := net.SplitHostPort(target)
		checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "secure.test", Port: portOf(t, ":"+p2), Addr: loopback,
			BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})
	}
	if got := d.addrs(); len(got) != len(tests)+2 {
		t.Errorf("dialed %v: want one address per connection", got)
	}
}

// tlsHandshake sends a ClientHello made with cfg and waits for the
// handshake's end.
func tlsHandshake(cfg *tls.Config) func(net.Conn) error {
	return func(c net.Conn) error { return tls.Client(c, cfg).Handshake() }
}

// sendText sends s and reads until the proxy closes: an error if it
// closed before anything came back.
func sendText(s string) func(net.Conn) error {
	return func(c net.Conn) error {
		if _, err := io.WriteString(c, s); err != nil {
			return err
		}
		b, err := io.ReadAll(c)
		if err == nil && len(b) == 0 {
			return io.EOF
		}
		return err
	}
}

func TestConnectIPLiteral(t *testing.T) {
	srv := startServers(t)
	port := portOf(t, srv.tls.Listener.Addr().String())
	p := startProxy(t, Config{Allow: mustList(t, fmt.Sprintf("127.0.0.1:%d", port)), Resolver: newResolver()})
	// Any server name goes to an address the list names: none is checked.
	target := fmt.Sprintf("127.0.0.1:%d", port)
	c, br, resp := connect(t, p.http, target)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %s", target, resp.Status)
	}
	if body, err := tlsGet(t, bufConn{c, br}, &tls.Config{ServerName: "secure.test", RootCAs: srv.cert.pool}, "/ip"); err != nil || body != "secure secure.test /ip" {
		t.Errorf("CONNECT %s: %q, %v", target, body, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "127.0.0.1", Port: port, Addr: loopback,
		BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})
}

func TestConnectNotTLS(t *testing.T) {
	srv := startServers(t)
	echoPort, helloPort := portOf(t, srv.echo), portOf(t, srv.hello)
	res := newResolver().add("echo.test", "127.0.0.1").add("hello.test", "127.0.0.1")
	p := startProxy(t, Config{
		Allow: mustList(t, fmt.Sprintf("echo.test:%d", echoPort), fmt.Sprintf("127.0.0.1:%d", echoPort),
			fmt.Sprintf("hello.test:%d", helloPort), fmt.Sprintf("127.0.0.1:%d", helloPort)),
		Resolver: res,
	})

	// An echo: the first bytes sent along with CONNECT, before its answer.
	c := dial(t, p.http)
	fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\nping\n", echoPort)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if line, err := br.ReadString('\n'); line != "ping\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	io.WriteString(c, "more\n")
	if line, err := br.ReadString('\n'); line != "more\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Addr: loopback, BytesUp: 10, BytesDown: 10, Allowed: true})

	// A server that speaks first is heard before the client says a word.
	c, br, resp = connect(t, p.http, fmt.Sprintf("hello.test:%d", helloPort))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	if line, err := br.ReadString('\n'); line != "220 hello\r\n" {
		t.Fatalf("banner: %q, %v", line, err)
	}
	io.WriteString(c, "x\n")
	if line, err := br.ReadString('\n'); line != "x\n" {
		t.Fatalf("echo after the banner: %q, %v", line, err)
	}
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Errorf("after half-close: %q, %v; want a clean end", rest, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "hello.test", Port: helloPort, Addr: loopback, BytesUp: 2, BytesDown: 13, Allowed: true})
}
