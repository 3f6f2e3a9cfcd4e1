package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// rawRequest sends a request as written and reads the response.
func rawRequest(t *testing.T, proxy, req string) (*http.Response, string) {
	t.Helper()
	c := dial(t, proxy)
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.40q: %v", req, err)
	}
	body := bodyOf(t, resp)
	c.Close()
	return resp, body
}

func TestPlainHTTP(t *testing.T) {
	srv := startServers(t)
	port := portOf(t, srv.web.Listener.Addr().String())
	res := newResolver().add("web.test", "127.0.0.1")
	p := startProxy(t, Config{
		Allow:    mustList(t, fmt.Sprintf("web.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port)),
		Resolver: res,
	})
	hp := fmt.Sprintf("web.test:%d", port)
	allowed := func(up int64) Event {
		return Event{Proto: "http", Host: "web.test", Port: port, Addr: loopback, BytesUp: up, BytesDown: anyBytes, Allowed: true}
	}

	// Origin form upstream, hop-by-hop fields gone, no User-Agent added.
	req := "GET http://" + hp + "/p?q=1 HTTP/1.1\r\nHost: WEB.test:" + fmt.Sprint(port) + "\r\nProxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\n\r\n"
	resp, body := rawRequest(t, p.http, req)
	if want := `GET /p?q=1 host=` + hp + ` conn="close" ua="" proxyauth="" body=`; resp.StatusCode != 200 || body != want {
		t.Errorf("GET: %s %q, want %q", resp.Status, body, want)
	}
	// Up: "GET /p?q=1 HTTP/1.1\r\nHost: web.test:N\r\nConnection: close\r\n\r\n".
	checkEvent(t, p.events.next(t), allowed(int64(len("GET /p?q=1 HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n")+len(hp))))

	// Go's client, with a body.
	u, _ := url.Parse("http://" + p.http)
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post("http://"+hp+"/post", "text/plain", strings.NewReader("hello body"))
	if err != nil {
		t.Fatal(err)
	}
	body = bodyOf(t, resp)
	resp.Body.Close()
	if !strings.HasPrefix(body, "POST /post host="+hp+` conn="close" ua="Go-http-client/1.1"`) || !strings.HasSuffix(body, "body=hello body") {
		t.Errorf("POST: %q", body)
	}
	checkEvent(t, p.events.next(t), allowed(anyBytes))

	// HTTP/1.0 without a Host header: the URL decides.
	resp, body = rawRequest(t, p.http, "GET http://"+hp+"/old HTTP/1.0\r\n\r\n")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /old host="+hp) {
		t.Errorf("HTTP/1.0: %s %q", resp.Status, body)
	}
	checkEvent(t, p.events.next(t), allowed(anyBytes))
	if n := res.count("web.test"); n != 3 {
		t.Errorf("%d lookups for 3 requests", n)
	}

	refused := []struct {
		name, req string
		status    int
		want      Event
	}{
		{"Host header of another host", "GET http://" + hp + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 403,
			Event{Host: "web.test", Port: port, Reason: ReasonHostMismatch}},
		{"Host header of another port", "GET http://" + hp + "/ HTTP/1.1\r\nHost: web.test\r\n\r\n", 403,
			Event{Host: "web.test", Port: port, Reason: ReasonHostMismatch}},
		{"two Host headers", "GET http://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\nHost: evil.test\r\n\r\n", 400,
			Event{Reason: ReasonBadRequest}},
		{"URL not on the list", "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 403,
			Event{Host: "evil.test", Port: 80, Reason: ReasonNotAllowed}},
		{"https URL: no TLS interception", "GET https://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n", 400,
			Event{Reason: ReasonBadRequest}},
		{"origin form", "GET / HTTP/1.1\r\nHost: " + hp + "\r\n\r\n", 400,
			Event{Reason: ReasonBadRequest}},
		{"not HTTP", "hello\r\n\r\n", 400, Event{Reason: ReasonBadRequest}},
	}
	for _, tt := range refused {
		resp, body := rawRequest(t, p.http, tt.req)
		if resp.StatusCode != tt.status || !strings.HasSuffix(body, tt.want.Reason+"\n") {
			t.Errorf("%s: %s %q, want %d", tt.name, resp.Status, body, tt.status)
		}
		tt.want.Proto = "http"
		checkEvent(t, p.events.next(t), tt.want)
	}
	if n := res.count("web.test"); n != 3 {
		t.Errorf("refused requests were looked up: %d lookups", n-3)
	}
	p.events.none(t)
}

func TestRebinding(t *testing.T) {
	srv := startServers(t)
	public := "93.184.216.34"
	// A name whose first answer is public and whose next is the
	// metadata address.
	res := newResolver().add("rebind.test", public).add("rebind.test", "169.254.169.254").
		add("mixed.test", "10.0.0.1", public, "127.0.0.1")
	d := &testDialer{redirect: map[string]string{public + ":80": srv.web.Listener.Addr().String()}}
	p := startProxy(t, Config{Allow: mustList(t, "rebind.test", "mixed.test"), Resolver: res, Dialer: d})

	resp, body := rawRequest(t, p.http, "GET http://rebind.test/x HTTP/1.1\r\nHost: rebind.test\r\n\r\n")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /x host=rebind.test ") {
		t.Fatalf("first: %s %q", resp.Status, body)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "http", Host: "rebind.test", Port: 80, Addr: netip.MustParseAddr(public),
		BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})
	if n := res.count("rebind.test"); n != 1 {
		t.Errorf("%d lookups for one request, want 1", n)
	}

	// The next connection looks up again and gets the rebound answer.
	resp, _ = rawRequest(t, p.http, "GET http://rebind.test/x HTTP/1.1\r\nHost: rebind.test\r\n\r\n")
	if resp.StatusCode != 403 {
		t.Errorf("after rebinding: %s", resp.Status)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "http", Host: "rebind.test", Port: 80, Addr: netip.MustParseAddr("169.254.169.254"),
		Reason: "metadata address"})

	// Of a mixed answer, only the public address is connected to.
	resp, _ = rawRequest(t, p.http, "GET http://mixed.test/ HTTP/1.1\r\nHost: mixed.test\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Errorf("mixed: %s", resp.Status)
	}
	checkEvent(t, p.events.next(t), Event{Proto: "http", Host: "mixed.test", Port: 80, Addr: netip.MustParseAddr(public),
		BytesUp: anyBytes, BytesDown: anyBytes, Allowed: true})
	if got := d.addrs(); len(got) != 2 || got[0] != public+":80" || got[1] != public+":80" {
		t.Errorf("dialed %v, want only %s:80, once per allowed request", got, public)
	}
}
