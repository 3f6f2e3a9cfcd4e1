package integration

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPHTTP runs `tooljail mcp --listen SOCKET` as each user and drives
// it with the SDK's client over streamable HTTP: it lists the tools, calls
// one, gets a refusal, finds both in the audit log with this process as
// their client; SIGTERM ends the server cleanly and removes its socket.
func TestMCPHTTP(t *testing.T) {
	needPrograms(t, "python3", "git")
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("over http\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		sock := filepath.Join(u.serverDir(t), "mcp.sock") // a directory of the server's own uid
		srv := u.mcpListen(t, repo, audit, sock)
		if !strings.Contains(srv.first, "tooljail: mcp: serving streamable HTTP on unix socket "+sock) {
			t.Fatalf("first stderr line %q", srv.first)
		}
		if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket: %v %v", fi, err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
		defer cancel()
		cs := connectUnixMCP(t, ctx, sock)
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		if strings.Join(names, " ") != "git_status read_file run_tests write_file" {
			t.Errorf("tools %q", names)
		}
		if r := mcpCall(t, cs, "read_file", map[string]any{"path": "a.txt"}); r.isError || r.text != "over http\n" {
			t.Errorf("read_file: %+v", r)
		}
		if r := mcpCall(t, cs, "read_file", map[string]any{"path": "../../etc/passwd"}); !r.isError || !strings.Contains(r.text, `leads out of the working directory through ".."`) {
			t.Errorf("read_file out of the workdir: %+v", r)
		}
		cs.Close()

		srv.stop(t)
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("the socket after SIGTERM: %v", err)
		}
		calls := u.auditCalls(t, audit)
		if len(calls) != 2 {
			t.Fatalf("%d audit lines, want 2: %v", len(calls), calls)
		}
		if calls[0]["decision"] != "admitted" || calls[1]["decision"] != `refused: beneath ["."]` {
			t.Errorf("decisions: %v / %v", calls[0]["decision"], calls[1]["decision"])
		}
		for _, c := range calls {
			p, _ := c["peer"].(map[string]any)
			if p["uid"] != float64(os.Getuid()) || p["pid"] != float64(os.Getpid()) {
				t.Errorf("peer %v, want this test (uid %d, pid %d)", p, os.Getuid(), os.Getpid())
			}
		}
	})
}

// TestMCPListenRefusesTheNetwork: an address that is not loopback is
// refused before anything listens.
func TestMCPListenRefusesTheNetwork(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		toolFile := u.agentToolFile(t)
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "10.0.0.1:8765"} {
			o := u.exec(t, run{args: []string{"mcp", "--tools", toolFile, "--listen", addr}})
			if o.code != 125 || !strings.Contains(o.stderr, "never on the network") && !strings.Contains(o.stderr, "listens on every address") {
				t.Errorf("--listen %s: %s", addr, o)
			}
		}
	})
}

// TestMCPHTTPLoopback runs `tooljail mcp --listen 127.0.0.1:0`: the first
// stderr line gives the URL, the SDK's client calls a tool there, SIGTERM
// ends the server (exit 0), and the call is recorded with this test as
// its client, as the kernel's socket tables name it: its uid, and its pid
// where the server may see the test's open files (the same user, or root).
func TestMCPHTTPLoopback(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		srv := u.mcpListen(t, repo, audit, "127.0.0.1:0")
		url := srv.loopbackURL(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "tooljail-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v", url, err)
		}
		if r := mcpCall(t, cs, "git_status", nil); r.structured["decision"] != "admitted" {
			t.Errorf("git_status: %+v", r)
		}
		cs.Close()
		srv.stop(t)
		pid, gid := os.Getpid(), os.Getegid()
		if u.uid != 0 && u.uid != os.Geteuid() {
			pid, gid = -1, -1 // another user's /proc/PID/fd is closed to the server
		}
		calls := u.auditCalls(t, audit)
		if len(calls) != 1 {
			t.Fatalf("%d audit lines, want 1: %v", len(calls), calls)
		}
		p, _ := calls[0]["peer"].(map[string]any)
		if p["uid"] != float64(os.Geteuid()) || p["pid"] != float64(pid) || p["gid"] != float64(gid) {
			t.Errorf("peer %v, want this test (uid %d, gid %d, pid %d)", p, os.Geteuid(), gid, pid)
		}
	})
}

// mcpServer is a `tooljail mcp --listen` the test started.
type mcpServer struct {
	cmd    *exec.Cmd
	first  string // the first line on its stderr (the rest goes to the test's log)
	exited bool
}

// mcpListen starts `tooljail mcp` as u with agentTools, workdir repo and
// audit log audit, listening on listen, in a cgroup of its own; it is
// killed at the end of the test unless stop ended it.
func (u *user) mcpListen(t *testing.T, repo, audit, listen string) *mcpServer {
	t.Helper()
	return u.mcpListenArgs(t, []string{"mcp", "--tools", u.agentToolFile(t), "--workdir", repo, "--audit-log", audit, "--listen", listen})
}

// mcpListenArgs starts `tooljail ARGS...` as mcpListen does.
func (u *user) mcpListenArgs(t *testing.T, args []string) *mcpServer {
	t.Helper()
	for _, l := range u.degraded {
		args = append(args, "--allow-degraded", l)
	}
	s := &mcpServer{cmd: exec.Command(tooljailBin, args...)}
	s.cmd.Dir = base
	s.cmd.Env = u.environ(nil)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	if err := s.cmd.Start(); err != nil {
		rc.release()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !s.exited {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
		rc.check(t, s.cmd.Process.Pid)
	})
	// The line that says where it serves comes once it listens; a line
	// before it (a warning) is logged, not taken for it.
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		s.first = lines.Text()
		if strings.HasPrefix(s.first, "tooljail: mcp: serving ") {
			break
		}
		t.Logf("tooljail mcp stderr: %s", s.first)
	}
	go func() {
		for lines.Scan() {
			t.Logf("tooljail mcp stderr: %s", lines.Text())
		}
	}()
	return s
}

// stop ends the server with SIGTERM, which must end it cleanly.
// loopbackURL is the URL a server listening on 127.0.0.1 names in its
// first stderr line.
func (s *mcpServer) loopbackURL(t *testing.T) string {
	t.Helper()
	const prefix = "tooljail: mcp: serving streamable HTTP on "
	if !strings.HasPrefix(s.first, prefix+"http://127.0.0.1:") {
		t.Fatalf("first stderr line %q", s.first)
	}
	return strings.TrimPrefix(s.first, prefix)
}

func (s *mcpServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := s.cmd.Wait()
	s.exited = true
	if err != nil {
		t.Errorf("tooljail mcp after SIGTERM: %v", err)
	}
}

// connectUnixMCP connects the SDK's streamable HTTP client to an MCP
// server listening on the unix socket sock.
func connectUnixMCP(t *testing.T, ctx context.Context, sock string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	ct := &mcp.StreamableClientTransport{Endpoint: "http://tooljail/mcp", HTTPClient: &http.Client{Transport: tr}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tooljail-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}
