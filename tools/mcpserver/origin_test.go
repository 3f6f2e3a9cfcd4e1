package mcpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoopbackOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"http://127.0.0.1:8765":           true,
		"http://localhost:8765":           true,
		"http://LOCALHOST:8765":           true,
		"http://[::1]:8765":               true,
		"https://127.1.2.3":               true,
		"http://localhost":                true,
		"http://[::ffff:127.0.0.1]:80":    true,
		"https://evil.example":            false,
		"http://evil.example:8765":        false,
		"http://127.0.0.1.evil.example":   false,
		"http://localhost.evil.example":   false,
		"http://10.0.0.1:8765":            false,
		"http://[::]:8765":                false,
		"http://0.0.0.0:8765":             false,
		"null":                            false,
		"file://":                         false,
		"ws://127.0.0.1:8765":             false,
		"http://user@127.0.0.1:8765":      false,
		"http://127.0.0.1:8765/path":      false,
		"":                                false,
		"http://[fe80::1%25lo]:8765":      false,
		"chrome-extension://abcdefghijkl": false,
	} {
		if got := loopbackOrigin(o); got != want {
			t.Errorf("loopbackOrigin(%q) = %v, want %v", o, got, want)
		}
	}
}

// initialize is an MCP initialize request as a browser's page or a
// program would POST it.
func initialize(t *testing.T, c *http.Client, url, host, origin string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeHTTPOrigin: a request with a foreign Origin is refused with
// 403 on a loopback port and on a unix socket, whatever the method; a
// request without one, or from a loopback origin, is served; on the port
// a Host that is not loopback is refused too.
func TestServeHTTPOrigin(t *testing.T) {
	c, _ := testCaller(t)
	l, err := Listen(Address{Network: "tcp", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, c, l, time.Second) }()
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	url := "http://" + addr + "/mcp"
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", http.StatusOK},
		{"", "http://" + addr, http.StatusOK},
		{"", "http://localhost:" + port, http.StatusOK},
		{"", "http://[::1]:" + port, http.StatusOK},
		{"", "http://127.0.0.1:3000", http.StatusOK}, // another loopback port
		{"localhost:" + port, "", http.StatusOK},
		{"", "https://evil.example", http.StatusForbidden},
		{"", "http://evil.example:" + port, http.StatusForbidden},
		{"", "null", http.StatusForbidden},
		{"evil.example:" + port, "", http.StatusForbidden},                            // DNS rebinding
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden}, // its page
	} {
		if got := initialize(t, http.DefaultClient, url, tc.host, tc.origin); got != tc.want {
			t.Errorf("Host %q, Origin %q: %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}
	// Any method: a GET of the event stream too.
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET with a foreign Origin: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}

	// A unix socket: the Origin rule, and any Host.
	c2, _ := testCaller(t)
	dir, err := os.MkdirTemp("", "tjmcporigin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "sock")
	ul, err := Listen(Address{Network: "unix", Addr: sock})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { served <- ServeHTTP(ctx2, c2, ul, time.Second) }()
	uc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	if got := initialize(t, uc, "http://tooljail/mcp", "", ""); got != http.StatusOK {
		t.Errorf("unix socket, Host tooljail: %d, want 200", got)
	}
	if got := initialize(t, uc, "http://tooljail/mcp", "", "https://evil.example"); got != http.StatusForbidden {
		t.Errorf("unix socket, a foreign Origin: %d, want 403", got)
	}
	cancel2()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP on the socket: %v", err)
	}
}
