package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/tools"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in, network, addr, err string
	}{
		{in: "/run/user/1000/tooljail-mcp/sock", network: "unix", addr: "/run/user/1000/tooljail-mcp/sock"},
		{in: "./mcp/sock", network: "unix", addr: "./mcp/sock"},
		{in: "127.0.0.1:8765", network: "tcp", addr: "127.0.0.1:8765"},
		{in: "127.1.2.3:0", network: "tcp", addr: "127.1.2.3:0"},
		{in: "[::1]:8765", network: "tcp", addr: "[::1]:8765"},
		{in: "localhost:8765", network: "tcp", addr: "127.0.0.1:8765"},
		{in: "0.0.0.0:8765", err: "0.0.0.0 is not a loopback address"},
		{in: "[::]:8765", err: ":: is not a loopback address"},
		{in: ":8765", err: "no host, which listens on every address"},
		{in: "192.168.1.5:8765", err: "192.168.1.5 is not a loopback address"},
		{in: "[::ffff:10.0.0.1]:80", err: "is not a loopback address"},
		{in: "example.com:8765", err: `"example.com" is not a loopback address`},
		{in: "127.0.0.1:http", err: `port "http": want a number`},
		{in: "127.0.0.1:65536", err: `port "65536"`},
		{in: "127.0.0.1:+80", err: `port "+80"`},
		{in: "127.0.0.1", err: "want a unix socket path"},
		{in: "", err: "want a unix socket path"},
	} {
		a, err := ParseAddress(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %+v, %v; want an error with %q", tc.in, a, err, tc.err)
			}
			continue
		}
		if err != nil || a.Network != tc.network || a.Addr != tc.addr {
			t.Errorf("%q: %+v, %v; want %s %s", tc.in, a, err, tc.network, tc.addr)
		}
	}
}

// spoofPeer adds the header ServeHTTP uses internally, as a client that
// wants to be recorded as someone else would.
type spoofPeer struct{ next http.RoundTripper }

func (s spoofPeer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(peerHeader, "4242 4242 4242")
	return s.next.RoundTrip(r)
}

// TestServeHTTP serves testFile over streamable HTTP on a unix socket:
// the SDK's client lists and calls the tools, a refusal and the rate limit
// hold across two sessions, each call is recorded with the client the
// kernel names (not one a header claims), and the end of ctx shuts the
// server down and removes its socket.
func TestServeHTTP(t *testing.T) {
	c, logPath := testCaller(t)
	dir, err := os.MkdirTemp("", "tjmcphttp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "sock")
	l, err := Listen(Address{Network: "unix", Addr: sock})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, c, l, time.Second) }()

	session := func() *mcp.ClientSession {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
		ct := &mcp.StreamableClientTransport{Endpoint: "http://tooljail/mcp", HTTPClient: &http.Client{Transport: spoofPeer{tr}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b := session(), session()
	list, err := a.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 5 {
		t.Fatalf("tools: %v %v", list, err)
	}
	if r, text, _ := callTool(t, a, "show", map[string]any{"word": "hello"}); r.IsError || text != "hello\n" {
		t.Errorf("show: %v %q", r.IsError, text)
	}
	if r, text, _ := callTool(t, b, "show", map[string]any{"word": "../x"}); !r.IsError || !strings.Contains(text, `refused by rule pattern "[a-z]+"`) {
		t.Errorf("a bad argument: %v %q", r.IsError, text)
	}
	if r, _, _ := callTool(t, a, "once", nil); r.IsError {
		t.Error("once: the first call")
	}
	// Another session: the same limiter.
	if r, text, st := callTool(t, b, "once", nil); !r.IsError || st["decision"] != "refused: rate per_minute" {
		t.Errorf("once from a second session: %q %v", text, st)
	}
	a.Close()
	b.Close()

	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket after shutdown: %v", err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d audit lines, want 4:\n%s", len(lines), data)
	}
	for _, l := range lines {
		var m struct {
			Peer struct{ UID, GID, PID int }
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m.Peer.UID != os.Getuid() || m.Peer.GID != os.Getgid() || m.Peer.PID != os.Getpid() {
			t.Errorf("peer %+v, want this process (%d %d %d): %s", m.Peer, os.Getuid(), os.Getgid(), os.Getpid(), l)
		}
	}
}

// TestServeHTTPTCP serves on a loopback port: a call works, and is
// recorded with its client (this process) as the kernel's socket tables
// name it, not as the header the client sends claims.
func TestServeHTTPTCP(t *testing.T) {
	c, logPath := testCaller(t)
	l, err := Listen(Address{Network: "tcp", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, c, l, time.Second) }()
	ct := &mcp.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + "/mcp", HTTPClient: &http.Client{Transport: spoofPeer{http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, text, _ := callTool(t, cs, "cat", map[string]any{"stdin": "over tcp"}); r.IsError || text != "over tcp" {
		t.Errorf("cat: %v %q", r.IsError, text)
	}
	// DNS rebinding: a page of another name that resolves to loopback.
	req, _ := http.NewRequest("POST", "http://"+l.Addr().String()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cs.Close()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"peer":{"uid":%d,"gid":%d,"pid":%d}`, os.Geteuid(), os.Getegid(), os.Getpid())
	if !strings.Contains(string(data), want) || strings.Contains(string(data), `"uid":-1`) {
		t.Errorf("audit, want %s on every line: %s", want, data)
	}
}

// TestServeHTTPEndsRunningCalls: the end of ctx ends a call still running
// (its jail's tree is killed), records it, and ServeHTTP returns.
func TestServeHTTPEndsRunningCalls(t *testing.T) {
	c, logPath := testCaller(t)
	f, err := tools.Parse("tools.toml", []byte(`
[tools.hang]
description = "Say it started, then wait."
command = ["sh", "-c", "touch started; exec sleep 600"]
profile = "default"
limits = { timeout = "0" }
`))
	if err != nil {
		t.Fatal(err)
	}
	c.File = f
	l, err := Listen(Address{Network: "tcp", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, c, l, time.Second) }()
	ct := &mcp.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + "/mcp", MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang"})
	for {
		if _, err := os.Stat(filepath.Join(c.Workdir, "started")); err == nil {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("ServeHTTP ended first: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"tool":"hang"`) || !strings.Contains(string(data), `"status":"signaled"`) {
		t.Errorf("the ended call's line: %s", data)
	}
}
