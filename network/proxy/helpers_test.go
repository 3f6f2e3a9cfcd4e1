package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
)

// All traffic in these tests stays on loopback: names are mapped to
// addresses by testResolver, and testDialer can send a connection meant
// for one address (a public one, or port 443) to a test server.

// testResolver answers from a table and counts the lookups of each name.
// A name with several answers gets them in turn, one per lookup, the
// last repeating: a rebinding server.
type testResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver() *testResolver {
	return &testResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
}

// add gives name the addresses of one answer; call again for the next.
func (r *testResolver) add(name string, addrs ...string) *testResolver {
	var a []netip.Addr
	for _, s := range addrs {
		a = append(a, netip.MustParseAddr(s))
	}
	r.mu.Lock()
	r.answers[name] = append(r.answers[name], a)
	r.mu.Unlock()
	return r
}

func (r *testResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if network != "ip" {
		return nil, fmt.Errorf("test resolver: network %q, the proxy asks for \"ip\"", network)
	}
	n := r.calls[host]
	r.calls[host]++
	ans, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return ans[min(n, len(ans)-1)], nil
}

func (r *testResolver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

// testDialer records every address it is asked for and connects to it,
// or to the test server redirect names for it.
type testDialer struct {
	mu       sync.Mutex
	redirect map[string]string
	dialed   []string
}

func (d *testDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(address); err != nil || network != "tcp" {
		return nil, fmt.Errorf("test dialer: asked for %s %q, want tcp and an IP address and port", network, address)
	}
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	to, ok := d.redirect[address]
	d.mu.Unlock()
	if !ok {
		to = address
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *testDialer) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// eventLog collects a Proxy's events.
type eventLog struct {
	ch  chan Event
	mu  sync.Mutex
	all []Event
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan Event, 1000)} }

func (l *eventLog) sink(ev Event) {
	l.mu.Lock()
	l.all = append(l.all, ev)
	l.mu.Unlock()
	l.ch <- ev
}

// next waits for the next event.
func (l *eventLog) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-l.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return Event{}
	}
}

// none checks that no event came besides those taken.
func (l *eventLog) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-l.ch:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

// anyBytes in a wanted event stands for "more than zero".
const anyBytes = -1

// checkEvent compares ev with want: every field, Time only for being set,
// and bytes of anyBytes for being positive.
func checkEvent(t *testing.T, ev, want Event) {
	t.Helper()
	if ev.Time.IsZero() || time.Since(ev.Time) > time.Minute {
		t.Errorf("event time %v, want the time of accept", ev.Time)
	}
	bytesOK := func(got, want int64) bool {
		if want == anyBytes {
			return got > 0
		}
		return got == want
	}
	if ev.Proto != want.Proto || ev.Host != want.Host || ev.Port != want.Port || ev.Addr != want.Addr ||
		ev.Allowed != want.Allowed || ev.Reason != want.Reason ||
		!bytesOK(ev.BytesUp, want.BytesUp) || !bytesOK(ev.BytesDown, want.BytesDown) {
		ev.Time, want.Time = time.Time{}, time.Time{}
		t.Errorf("event\n got %+v\nwant %+v (bytes -1: any but 0)", ev, want)
	}
}

type testProxy struct {
	*Proxy
	http, socks string // listening addresses
	events      *eventLog
}

// startProxy serves both proxies on loopback; the test's cleanup closes
// the Proxy.
func startProxy(t testing.TB, cfg Config) *testProxy {
	t.Helper()
	events := newEventLog()
	cfg.Events = events.sink
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hl := listen(t, "127.0.0.1:0")
	sl := listen(t, "127.0.0.1:0")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := p.ServeHTTP(hl); !errors.Is(err, ErrClosed) {
			t.Errorf("ServeHTTP: %v, want ErrClosed", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := p.ServeSOCKS5(sl); !errors.Is(err, ErrClosed) {
			t.Errorf("ServeSOCKS5: %v, want ErrClosed", err)
		}
	}()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		wg.Wait()
	})
	return &testProxy{Proxy: p, http: hl.Addr().String(), socks: sl.Addr().String(), events: events}
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustList(t testing.TB, patterns ...string) allow.List {
	t.Helper()
	l, err := allow.ParseList(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// connect sends CONNECT hostport and reads the proxy's response head.
func connect(t testing.TB, proxy, hostport string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c := dial(t, proxy)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", hostport, err)
	}
	return c, br, resp
}

// bodyOf reads a response's body whole.
func bodyOf(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bufConn reads through a bufio.Reader that may hold bytes already.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// testCert is a self-signed certificate for the TLS test servers.
type testCert struct {
	cert tls.Certificate
	pool *x509.CertPool
}

func newCert(t *testing.T, names ...string) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tooljail proxy test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		DNSNames:              names,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return testCert{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool: pool}
}

// servers are the upstreams of a test, all on 127.0.0.1.
type servers struct {
	cert  testCert
	web   *httptest.Server // plain HTTP: answers with what it received
	tls   *httptest.Server // HTTPS for secure.test
	echo  string           // TCP echo
	bulk  string           // after one line, sends bulkSize bytes and closes
	hello string           // speaks first: sends "220 hello\r\n", then echoes
}

const bulkSize = 1 << 20

// webHandler answers with the request as it arrived.
func webHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s host=%s conn=%q ua=%q proxyauth=%q body=%s",
		r.Method, r.RequestURI, r.Host, r.Header.Get("Connection"), r.Header.Get("User-Agent"),
		r.Header.Get("Proxy-Authorization"), body)
}

func startServers(t *testing.T) *servers {
	t.Helper()
	s := &servers{cert: newCert(t, "secure.test", "other.test")}
	s.web = httptest.NewServer(http.HandlerFunc(webHandler))
	t.Cleanup(s.web.Close)
	s.tls = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s %s", r.Host, r.URL.Path)
	}))
	s.tls.TLS = &tls.Config{Certificates: []tls.Certificate{s.cert.cert}}
	// Refused handshakes are what the tests make; the server need not
	// log them.
	s.tls.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.tls.StartTLS()
	t.Cleanup(s.tls.Close)
	s.echo = serveTCP(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
	s.bulk = serveTCP(t, "127.0.0.1:0", func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		c.Write(bytes.Repeat([]byte("x"), bulkSize))
	})
	s.hello = serveTCP(t, "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "220 hello\r\n")
		io.Copy(c, c)
	})
	return s
}

// serveTCP runs handle for each connection to a new listener on addr
// until the test ends, and returns the listener's address.
func serveTCP(t testing.TB, addr string, handle func(net.Conn)) string {
	t.Helper()
	l := listen(t, addr)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// echConfigList is an ECHConfigList (RFC 9849 section 4) with a fresh
// X25519 key, as network/hello's tests build it: crypto/tls then sends an
// ECH ClientHello whose outer name is publicName.
func echConfigList(t *testing.T, publicName string) []byte {
	t.Helper()
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u16 := func(v int) []byte { return []byte{byte(v >> 8), byte(v)} }
	vec16 := func(b ...[]byte) []byte { j := bytes.Join(b, nil); return append(u16(len(j)), j...) }
	vec8 := func(b []byte) []byte { return append([]byte{byte(len(b))}, b...) }
	contents := bytes.Join([][]byte{
		{7},       // config_id
		u16(0x20), // DHKEM(X25519, HKDF-SHA256)
		vec16(key.PublicKey().Bytes()),
		vec16(u16(1), u16(1)), // HKDF-SHA256, AES-128-GCM
		{0},                   // maximum_name_length
		vec8([]byte(publicName)),
		vec16(), // no extensions
	}, nil)
	return vec16(append(u16(0xfe0d), vec16(contents)...))
}
