package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

func TestMain(m *testing.M) {
	jail.Init()
	os.Exit(m.Run())
}

// testServer is a Server serving on a socket in a temporary directory.
type testServer struct {
	*Server
	path, audit string
	done        chan error
}

// profile is the name under which the tests serve the shipped profile
// name: itself as root, else a child of it that allows the cgroup layer
// to be degraded, as a user on a cgroup v1 host (no delegation) needs.
func profile(t testing.TB, name string) string {
	t.Helper()
	if os.Geteuid() == 0 {
		return name
	}
	path := filepath.Join(t.TempDir(), name+".toml")
	toml := "extends = \"" + name + "\"\nallow_degraded = [\"cgroup\"]\n"
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts a server of profiles (none: "default"), each as profile
// maps it, and stops it when the test ends.
func start(t testing.TB, profileNames ...string) *testServer {
	t.Helper()
	return startWith(t, nil, profileNames...)
}

// startWith is start with set, when not nil, called on the Server before
// it serves.
func startWith(t testing.TB, set func(*Server), profileNames ...string) *testServer {
	t.Helper()
	if len(profileNames) == 0 {
		profileNames = []string{"default"}
	}
	for i, n := range profileNames {
		profileNames[i] = profile(t, n)
	}
	dir := t.TempDir()
	ts := &testServer{
		Server: &Server{Profiles: profileNames, AuditLog: filepath.Join(dir, "audit.log")},
		path:   filepath.Join(dir, "run", "sock"),
		audit:  filepath.Join(dir, "audit.log"),
		done:   make(chan error, 1),
	}
	if set != nil {
		set(ts.Server)
	}
	l, err := Listen(ts.path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { ts.done <- ts.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ts.Shutdown(ctx)
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

func (ts *testServer) client() *Client { return &Client{Path: ts.path} }

// call sends a raw request line and returns the lines of the answer, up to
// the server's close.
func (ts *testServer) call(t *testing.T, line string) []string {
	t.Helper()
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(line, "\n") {
		// Nothing more comes: the server sees the end of the request.
		conn.(*net.UnixConn).CloseWrite()
	}
	var lines []string
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return lines
}

// auditLines reads the audit log.
func (ts *testServer) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(ts.audit)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func run(t *testing.T, c *Client, req Request) *jail.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := c.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(%v): %v", req.Argv, err)
	}
	return r
}

func text(s jail.Stream) string {
	if s.Text == nil {
		return ""
	}
	return *s.Text
}
