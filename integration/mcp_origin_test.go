package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcpInitialize POSTs an MCP initialize request, as a web page's script
// or a program would, and returns the status.
func mcpInitialize(t *testing.T, c *http.Client, url, host, origin string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tooljail-test","version":"1"}}}`))
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

// TestMCPHTTPOrigin: `tooljail mcp --listen` refuses a request from a web
// page (the MCP transport's DNS rebinding rule): on a loopback port, an
// initialize with a foreign Origin, or with a Host that is not loopback,
// gets 403, while the same request with no Origin or a loopback one is
// served; on a unix socket a foreign Origin gets 403 too. Nothing refused
// reaches the audit log (no tool was called).
func TestMCPHTTPOrigin(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		srv := u.mcpListen(t, repo, audit, "127.0.0.1:0")
		url := srv.loopbackURL(t)
		hostport := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
		_, port, _ := net.SplitHostPort(hostport)
		for _, tc := range []struct {
			host, origin string
			want         int
		}{
			{"", "https://evil.example", http.StatusForbidden},
			{"", "http://evil.example:" + port, http.StatusForbidden},
			{"", "null", http.StatusForbidden},
			{"evil.example:" + port, "", http.StatusForbidden},
			{"", "", http.StatusOK},
			{"", "http://" + hostport, http.StatusOK},
			{"", "http://localhost:" + port, http.StatusOK},
			{"localhost:" + port, "http://[::1]:" + port, http.StatusOK},
		} {
			if got := mcpInitialize(t, http.DefaultClient, url, tc.host, tc.origin); got != tc.want {
				t.Errorf("Host %q, Origin %q: %d, want %d", tc.host, tc.origin, got, tc.want)
			}
		}
		srv.stop(t)

		sock := filepath.Join(u.serverDir(t), "mcp.sock") // a directory of the server's own uid
		usrv := u.mcpListen(t, repo, audit, sock)
		if !strings.Contains(usrv.first, "unix socket "+sock) {
			t.Fatalf("first stderr line %q", usrv.first)
		}
		uc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		if got := mcpInitialize(t, uc, "http://tooljail/mcp", "", "https://evil.example"); got != http.StatusForbidden {
			t.Errorf("unix socket, a foreign Origin: %d, want 403", got)
		}
		if got := mcpInitialize(t, uc, "http://tooljail/mcp", "", ""); got != http.StatusOK {
			t.Errorf("unix socket, no Origin: %d, want 200", got)
		}
		usrv.stop(t)
		if b, err := os.ReadFile(audit); err == nil && len(b) > 0 {
			t.Errorf("audit log after initializes only: %s", b)
		}
	})
}
