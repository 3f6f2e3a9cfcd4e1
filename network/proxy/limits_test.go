package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHugeHead(t *testing.T) {
	p := startProxy(t, Config{Limits: Limits{MaxHeaderBytes: 4 << 10}})
	c := dial(t, p.http)
	go func() {
		// The proxy stops reading at the limit; this write may fail.
		io.WriteString(c, "GET http://a.test/ HTTP/1.1\r\nX: "+strings.Repeat("y", 1<<20)+"\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("huge head: %s", resp.Status)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "http", Reason: ReasonBadRequest})
}

// The slow-client tests use a short HeaderTimeout; they check what
// happens when it passes, not how long it takes.
func TestSlowClient(t *testing.T) {
	srv := startServers(t)
	echoPort := portOf(t, srv.echo)
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("echo.test:%d", echoPort), fmt.Sprintf("127.0.0.1:%d", echoPort)),
		Resolver: newResolver().add("echo.test", "127.0.0.1"),
		Limits:   Limits{HeaderTimeout: 200 * time.Millisecond},
	})

	// A head that never ends.
	c := dial(t, p.http)
	io.WriteString(c, "CONNECT echo.test:1 HTTP/1.1\r\nX: ")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("unfinished head: %v, %v; want 408", resp, err)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "http", Reason: ReasonBadRequest})

	// A client that connects and says nothing holds its slot no longer.
	c = dial(t, p.socks)
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Errorf("silent SOCKS5 client: %q, %v; want the connection closed", b, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Reason: ReasonBadRequest})

	// A SOCKS5 request cut short.
	c = dial(t, p.socks)
	c.Write([]byte{5, 1, 0, 5, 1, 0, 3, 20, 'e'})
	if b, err := io.ReadAll(c); string(b) != "\x05\x00" || err != nil {
		t.Errorf("unfinished SOCKS5 request: % x, %v", b, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "socks5", Reason: ReasonBadRequest})

	// A ClientHello that starts and stops: the tunnel is open, its
	// first bytes never complete.
	c, br, resp := connect(t, p.http, fmt.Sprintf("echo.test:%d", echoPort))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	c.Write([]byte{0x16, 3, 1})
	if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
		t.Errorf("unfinished hello: %q, %v; want the tunnel closed", b, err)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Addr: loopback, Reason: ReasonBadRequest})

	// The header timeout does not limit a tunnel that waits: a client
	// may think for longer before it speaks.
	c, br, resp = connect(t, p.http, fmt.Sprintf("echo.test:%d", echoPort))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	time.Sleep(400 * time.Millisecond)
	io.WriteString(c, "late\n")
	if line, err := br.ReadString('\n'); line != "late\n" {
		t.Errorf("after a pause: %q, %v", line, err)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Addr: loopback, BytesUp: 5, BytesDown: 5, Allowed: true})
}

func TestIdleTimeout(t *testing.T) {
	srv := startServers(t)
	echoPort := portOf(t, srv.echo)
	// Under a byte cap relay waits for bytes before it counts them: the
	// idle timeout holds there too.
	for _, max := range []int64{0, 1 << 30} {
		p := startProxy(t, Config{
			Allow:  mustList(t, fmt.Sprintf("127.0.0.1:%d", echoPort)),
			Limits: Limits{IdleTimeout: 200 * time.Millisecond, MaxBytes: max},
		})
		c, br, resp := connect(t, p.http, fmt.Sprintf("127.0.0.1:%d", echoPort))
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %s", resp.Status)
		}
		io.WriteString(c, "a\n")
		if line, _ := br.ReadString('\n'); line != "a\n" {
			t.Fatalf("cap %d: echo: %q", max, line)
		}
		if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
			t.Errorf("cap %d: idle tunnel: %q, %v; want it closed", max, b, err)
		}
		checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "127.0.0.1", Port: echoPort, Addr: loopback, BytesUp: 2, BytesDown: 2, Allowed: true})
	}
}

func TestConnectionLimit(t *testing.T) {
	srv := startServers(t)
	echoPort := portOf(t, srv.echo)
	const max = 3
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("echo.test:%d", echoPort), fmt.Sprintf("127.0.0.1:%d", echoPort)),
		Resolver: newResolver().add("echo.test", "127.0.0.1"),
		Limits:   Limits{MaxConns: max},
	})
	target := fmt.Sprintf("echo.test:%d", echoPort)
	open := func() net.Conn {
		c, br, resp := connect(t, p.http, target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %s", resp.Status)
		}
		io.WriteString(c, "hi\n")
		if line, err := br.ReadString('\n'); line != "hi\n" {
			t.Fatalf("echo: %q, %v", line, err)
		}
		return c
	}
	var tunnels []net.Conn
	for range max {
		tunnels = append(tunnels, open())
	}

	// One over the limit is read and refused.
	c, _, resp := connect(t, p.http, target)
	if body := bodyOf(t, resp); resp.StatusCode != http.StatusTooManyRequests || !strings.HasSuffix(body, ReasonConnLimit+"\n") {
		t.Errorf("over the limit: %s %q", resp.Status, body)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Reason: ReasonConnLimit})

	// A flood: refused, or closed at once when even the refusals are
	// at the limit; each one an event.
	const flood = 50
	var wg sync.WaitGroup
	statuses := make(chan int, flood)
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", p.http)
			if err != nil {
				statuses <- 0
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses <- 0
				return
			}
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 0 && s != http.StatusTooManyRequests {
			t.Errorf("flood: status %d, want 429 or a closed connection", s)
		}
	}
	for range flood {
		ev := p.events.next(t)
		want := Event{Proto: "connect", Host: "echo.test", Port: echoPort, Reason: ReasonConnLimit}
		if ev.Host == "" {
			// Closed at accept: nothing was read.
			want = Event{Proto: "http", Reason: ReasonConnLimit}
		}
		checkEvent(t, ev, want)
	}

	// The tunnels were not disturbed, and once they end there is room.
	for _, c := range tunnels {
		c.Close()
		checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Addr: loopback, BytesUp: 3, BytesDown: 3, Allowed: true})
	}
	open().Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "echo.test", Port: echoPort, Addr: loopback, BytesUp: 3, BytesDown: 3, Allowed: true})
}

func TestByteLimit(t *testing.T) {
	srv := startServers(t)
	bulkPort, webPort := portOf(t, srv.bulk), portOf(t, srv.web.Listener.Addr().String())
	const max = 100_000
	p := startProxy(t, Config{
		Allow: mustList(t, fmt.Sprintf("bulk.test:%d", bulkPort), fmt.Sprintf("127.0.0.1:%d", bulkPort),
			fmt.Sprintf("127.0.0.1:%d", webPort)),
		Resolver: newResolver().add("bulk.test", "127.0.0.1"),
		Limits:   Limits{MaxBytes: max},
	})
	c, br, resp := connect(t, p.http, fmt.Sprintf("bulk.test:%d", bulkPort))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	io.WriteString(c, "go\n")
	got, err := io.Copy(io.Discard, br)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatal(err)
	}
	if got != max-3 {
		t.Errorf("received %d bytes of %d; want exactly what the limit leaves, %d", got, bulkSize, max-3)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "bulk.test", Port: bulkPort, Addr: loopback,
		BytesUp: 3, BytesDown: max - 3, Allowed: true, Reason: ReasonByteLimit})

	// Past the limit nothing new is let through.
	c, _, resp = connect(t, p.http, fmt.Sprintf("bulk.test:%d", bulkPort))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after the limit: %s", resp.Status)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "bulk.test", Port: bulkPort, Reason: ReasonByteLimit})
	resp, _ = rawRequest(t, p.http, fmt.Sprintf("GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", webPort, webPort))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("plain HTTP after the limit: %s", resp.Status)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "http", Host: "127.0.0.1", Port: webPort, Reason: ReasonByteLimit})
}

func TestByteLimitPlainHTTP(t *testing.T) {
	srv := startServers(t)
	webPort := portOf(t, srv.web.Listener.Addr().String())
	const max = 10_000
	p := startProxy(t, Config{Allow: mustList(t, fmt.Sprintf("127.0.0.1:%d", webPort)), Limits: Limits{MaxBytes: max}})
	// A request body larger than the limit is cut on its way up.
	c := dial(t, p.http)
	body := strings.Repeat("z", 50_000)
	go fmt.Fprintf(c, "POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n%s", webPort, webPort, len(body), body)
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a request cut by the limit got %q", b)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "http", Host: "127.0.0.1", Port: webPort, Addr: loopback,
		BytesUp: max, BytesDown: 0, Allowed: true, Reason: ReasonByteLimit})
}

func TestCloseLeavesNothing(t *testing.T) {
	srv := startServers(t)
	echoPort, webPort := portOf(t, srv.echo), portOf(t, srv.web.Listener.Addr().String())
	runtime.GC()
	base := runtime.NumGoroutine()

	events := newEventLog()
	p, err := New(Config{
		Allow:  mustList(t, fmt.Sprintf("127.0.0.1:%d", echoPort), fmt.Sprintf("127.0.0.1:%d", webPort)),
		Events: events.sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	hl, sl := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	served := make(chan error, 2)
	go func() { served <- p.ServeHTTP(hl) }()
	go func() { served <- p.ServeSOCKS5(sl) }()

	// Open tunnels of both kinds, a plain request waiting for its body,
	// a client stuck in its head and one silent client.
	c1, br1, resp := connect(t, hl.Addr().String(), fmt.Sprintf("127.0.0.1:%d", echoPort))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	io.WriteString(c1, "x\n")
	br1.ReadString('\n')
	c2, br2, rep := socks(t, sl.Addr().String(), socksRequest(1, "127.0.0.1", echoPort))
	if rep != socksOK {
		t.Fatalf("SOCKS5: %#x", rep)
	}
	io.WriteString(c2, "y\n")
	br2.ReadString('\n')
	c3 := dial(t, hl.Addr().String())
	fmt.Fprintf(c3, "POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 100\r\n\r\nabc", webPort, webPort)
	c4 := dial(t, hl.Addr().String())
	io.WriteString(c4, "GET http://127.0.0.1/ HTTP/1.1\r\n")
	c5 := dial(t, sl.Addr().String())
	// Wait until all five are served and the three forwarded ones have
	// their upstream connection.
	for p.connCount() < 8 {
		time.Sleep(time.Millisecond)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returned: every event is in. The three forwarded ones are
	// there; the client stuck in its head has one if the proxy had read
	// a byte of it; the silent client has none.
	snapshot := func() []Event {
		events.mu.Lock()
		defer events.mu.Unlock()
		return append([]Event(nil), events.all...)
	}
	after := snapshot()
	forwarded := 0
	for _, ev := range after {
		switch {
		case ev.Allowed && ev.Reason == "" && ev.Addr == loopback:
			forwarded++
		case ev.Proto == "http" && ev.Reason == ReasonBadRequest && ev.Host == "":
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	if forwarded != 3 || len(after) > 4 {
		t.Errorf("%d events, %d forwarded, when Close returned; want the 3 forwarded and at most the stuck client's", len(after), forwarded)
	}
	for range 2 {
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	}
	for _, c := range []net.Conn{c1, c2, c3, c4, c5} {
		if b, err := io.ReadAll(c); err != nil && !strings.Contains(err.Error(), "reset") {
			t.Errorf("client after Close: %q, %v", b, err)
		}
		c.Close()
	}
	if err := p.ServeHTTP(listen(t, "127.0.0.1:0")); !errors.Is(err, ErrClosed) {
		t.Errorf("ServeHTTP after Close: %v", err)
	}

	// Goroutines end asynchronously in the runtime's bookkeeping; give
	// them a moment, then compare.
	var now int
	for range 200 {
		runtime.GC()
		if now = runtime.NumGoroutine(); now <= base {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if now > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before the proxy:\n%s", now, base, buf[:runtime.Stack(buf, true)])
	}
	if n := len(snapshot()); n != len(after) {
		t.Errorf("%d events after Close had returned", n-len(after))
	}
}

// connCount is how many client and upstream connections are open.
func (p *Proxy) connCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// A cap large enough that the download moves in spliced chunks, each
// counted before it moves: the cut is still exact.
func TestByteLimitSpliced(t *testing.T) {
	srv := startServers(t)
	bulkPort := portOf(t, srv.bulk)
	const max = 512 << 10
	for _, via := range []string{"connect", "socks5"} {
		p := startProxy(t, Config{Allow: mustList(t, fmt.Sprintf("127.0.0.1:%d", bulkPort)), Limits: Limits{MaxBytes: max}})
		var c net.Conn
		var r io.Reader
		if via == "connect" {
			c, r, _ = connect(t, p.http, fmt.Sprintf("127.0.0.1:%d", bulkPort))
		} else {
			c, r, _ = socks(t, p.socks, socksRequest(1, "127.0.0.1", bulkPort))
		}
		io.WriteString(c, "go\n")
		got, _ := io.Copy(io.Discard, r)
		if got != max-3 {
			t.Errorf("%s: received %d bytes of %d; want exactly what the limit leaves, %d", via, got, bulkSize, max-3)
		}
		checkEvent(t, p.events.next(t), Event{Proto: via, Host: "127.0.0.1", Port: bulkPort, Addr: loopback,
			BytesUp: 3, BytesDown: max - 3, Allowed: true, Reason: ReasonByteLimit})
	}

	// Under a cap it does not reach, the whole download comes through,
	// and the server's end passes on as the end of the tunnel.
	p := startProxy(t, Config{Allow: mustList(t, fmt.Sprintf("127.0.0.1:%d", bulkPort)), Limits: Limits{MaxBytes: 4 * bulkSize}})
	c, r, _ := connect(t, p.http, fmt.Sprintf("127.0.0.1:%d", bulkPort))
	io.WriteString(c, "go\n")
	if got, err := io.Copy(io.Discard, r); got != bulkSize || err != nil {
		t.Errorf("under the cap: received %d bytes, %v; want all %d and a clean end", got, err, bulkSize)
	}
	c.Close()
	checkEvent(t, p.events.next(t), Event{Proto: "connect", Host: "127.0.0.1", Port: bulkPort, Addr: loopback,
		BytesUp: 3, BytesDown: bulkSize, Allowed: true})
}
