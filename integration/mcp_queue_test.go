package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// queueTools are tools for the rate queue: wait holds each call a
// second, four at once; gate holds its one call until the test says go,
// and a second call waits for it a millisecond at most.
const queueTools = `
[tools.wait]
description = "Take a second."
command = ["sleep", "1"]
rate = { per_minute = 0, concurrency = 4, queue = "2m" }

[tools.gate]
description = "Say it started, then wait for the file go."
profile = "default"
command = ["sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.05; done"]
limits = { timeout = "2m" }
rate = { per_minute = 0, concurrency = 1, queue = "1ms" }

[tools.show]
description = "Print the word."
command = ["printf", "%s\n", "{word}"]
params.word = { type = "string", pattern = "[a-z]+" }
`

func (u *user) queueToolFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(u.dir(t), "queue.toml")
	if err := os.WriteFile(f, []byte(queueTools), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// parallelCalls makes n calls of tool at once on cs and checks that each
// was admitted and ran, and that the audit log shows calls that waited
// in the queue.
func (u *user) parallelCalls(t *testing.T, cs *mcp.ClientSession, tool string, n int, audit string) {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]mcpResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = mcpCall(t, cs, tool, nil)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.isError || r.structured["decision"] != "admitted" {
			t.Errorf("call %d of %d: %+v", i+1, n, r)
		}
	}
	waited := 0
	for _, l := range u.auditCalls(t, audit) {
		if l["tool"] == tool && l["queued_ms"] != nil {
			waited++
		}
	}
	// Four run at once: the other eight wait for a slot.
	if waited < n-4 {
		t.Errorf("%d of %d calls waited in the queue, want at least %d", waited, n, n-4)
	}
}

// TestMCPQueueStdio: 12 calls at once to a tool with concurrency = 4
// over stdio are all answered, and run: those over the concurrency wait
// their turn (rate.queue) instead of failing.
func TestMCPQueueStdio(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		cs := u.mcpSession(t, u.queueToolFile(t), repo, audit)
		u.parallelCalls(t, cs, "wait", 12, audit)
	})
}

// TestMCPQueueHTTP: the same over streamable HTTP, from one session.
func TestMCPQueueHTTP(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		sock := filepath.Join(u.serverDir(t), "mcp.sock") // a directory of the server's own uid
		srv := u.mcpListenFile(t, u.queueToolFile(t), repo, audit, sock)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
		defer cancel()
		cs := connectUnixMCP(t, ctx, sock)
		u.parallelCalls(t, cs, "wait", 12, audit)
		cs.Close()
		srv.stop(t)
	})
}

// TestMCPQueueTimeout: a call that waits out its tool's rate.queue while
// the one slot is busy is refused with the concurrency limit and says
// so; the call that held the slot is unharmed.
func TestMCPQueueTimeout(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		audit := filepath.Join(u.dir(t), "audit.log")
		cs := u.mcpSession(t, u.queueToolFile(t), repo, audit)
		first := make(chan mcpResult, 1)
		go func() { first <- mcpCall(t, cs, "gate", nil) }()
		for deadline := time.Now().Add(time.Minute * slow); ; {
			if _, err := os.Stat(filepath.Join(repo, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first gate call never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		r := mcpCall(t, cs, "gate", nil)
		if !r.isError || r.structured["decision"] != "refused: rate concurrency" ||
			!strings.Contains(r.text, "rate limit concurrency = 1 reached: 1 calls running, and none ended within the 1ms this call waited (rate.queue)") {
			t.Errorf("the second call: %+v", r)
		}
		if err := os.WriteFile(filepath.Join(repo, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := <-first; r.isError || r.structured["decision"] != "admitted" {
			t.Errorf("the first call: %+v", r)
		}
	})
}

// TestMCPMalformedLine: a line on stdin that is not JSON-RPC is answered
// with a JSON-RPC error (id null) and the server reads on: the call after
// it is answered. The SDK's client can neither send such a line nor take
// an answer with id null, so the test writes the line itself and takes
// those answers off the stream before the client reads it.
func TestMCPMalformedLine(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		repo := u.dir(t)
		if err := os.Chmod(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		audit := filepath.Join(u.dir(t), "audit.log")
		cs, raw, answers := u.mcpRawSession(t, u.queueToolFile(t), repo, audit)
		for _, tc := range []struct {
			line string
			code float64
		}{
			{"this is not json", -32700},
			{`{"jsonrpc": "2.0", "id": 1,`, -32700},
			{`[{"jsonrpc": "2.0", "id": 99, "method": "ping"}]`, -32600},
			{`{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}`, -32600},
		} {
			raw(tc.line)
			select {
			case a := <-answers:
				if e, _ := a["error"].(map[string]any); e["code"] != tc.code || a["id"] != nil {
					t.Errorf("%q: answer %v, want code %v and id null", tc.line, a, tc.code)
				}
			case <-time.After(time.Minute * slow):
				t.Fatalf("%q: no answer", tc.line)
			}
			if r := mcpCall(t, cs, "show", map[string]any{"word": "alive"}); r.isError || r.text != "alive\n" {
				t.Fatalf("the call after %q: %+v", tc.line, r)
			}
		}
	})
}

// TestMCPWorkdirAtStart: `tooljail mcp` started from / or from $HOME
// without --workdir, or with a --workdir a run would refuse, exits 125 at
// once with the reason, as for a bad tool file, instead of failing every
// call later.
func TestMCPWorkdirAtStart(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		file := u.queueToolFile(t)
		home := u.dir(t)
		for _, tc := range []struct {
			name string
			r    run
			want string
		}{
			{"from /", run{args: []string{"mcp", "--tools", file}, dir: "/"}, "tooljail: workdir / is the host's root directory; start from a project directory or pass --workdir DIR"},
			{"from $HOME", run{args: []string{"mcp", "--tools", file}, dir: home, env: []string{"HOME=" + home}}, "tooljail: workdir " + home + " is " + home + ", a home directory"},
			{"--workdir /etc", run{args: []string{"mcp", "--tools", file, "--workdir", "/etc"}}, "tooljail: workdir /etc is the system directory /etc; pass a project directory as --workdir DIR"},
			{"--listen from /", run{args: []string{"mcp", "--tools", file, "--listen", "127.0.0.1:0"}, dir: "/"}, "tooljail: workdir / is the host's root directory"},
		} {
			o := u.exec(t, tc.r)
			if o.code != 125 || !strings.Contains(o.stderr, tc.want) || o.stdout != "" {
				t.Errorf("%s: %s; want 125 and %q", tc.name, o, tc.want)
			}
		}
	})
}

// mcpListenFile is mcpListen with the tools of file.
func (u *user) mcpListenFile(t *testing.T, file, repo, audit, listen string) *mcpServer {
	t.Helper()
	return u.mcpListenArgs(t, []string{"mcp", "--tools", file, "--workdir", repo, "--audit-log", audit, "--listen", listen})
}

// mcpRawSession starts `tooljail mcp` as u and connects the SDK's client
// over its stdin and stdout, as mcpSession does, with two additions: raw
// writes a line of the test's own to the server's stdin (between the
// client's messages, never inside one), and answers receives each answer
// with id null, which the client never sees.
func (u *user) mcpRawSession(t *testing.T, file, workdir, audit string) (cs *mcp.ClientSession, raw func(string), answers <-chan map[string]any) {
	t.Helper()
	cmd, rc := u.mcpCommand(t, []string{"mcp", "--tools", file, "--workdir", workdir, "--audit-log", audit})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		rc.release()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		rc.release()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		rc.release()
		t.Fatal(err)
	}
	in := &lockedWriteCloser{w: stdin}
	ch := make(chan map[string]any, 16)
	out := &nullAnswers{in: bufio.NewReader(stdout), closer: stdout, answers: ch}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
	t.Cleanup(cancel)
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "tooljail-test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: out, Writer: in}, nil)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		rc.release()
		t.Fatalf("connect to tooljail mcp: %v", err)
	}
	t.Cleanup(func() {
		cs.Close() // closes stdin: the server ends
		if err := cmd.Wait(); err != nil {
			t.Errorf("tooljail mcp ended with %v", err)
		}
		rc.check(t, cmd.Process.Pid)
	})
	raw = func(line string) {
		t.Helper()
		if _, err := in.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	return cs, raw, ch
}

// lockedWriteCloser serializes the client's messages and the test's raw
// lines (the SDK writes each message in one Write).
type lockedWriteCloser struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriteCloser) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriteCloser) Close() error { return l.w.Close() }

// nullAnswers passes the server's lines on, except the answers with id
// null, which go to answers.
type nullAnswers struct {
	in      *bufio.Reader
	closer  io.Closer
	answers chan<- map[string]any
	pending []byte
}

func (n *nullAnswers) Read(p []byte) (int, error) {
	for len(n.pending) == 0 {
		line, err := n.in.ReadBytes('\n')
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["error"] != nil {
			if id, ok := m["id"]; ok && id == nil {
				n.answers <- m
				line = nil
			}
		}
		n.pending = line
		if err != nil && len(n.pending) == 0 {
			return 0, err
		}
	}
	k := copy(p, n.pending)
	n.pending = n.pending[k:]
	return k, nil
}

func (n *nullAnswers) Close() error { return n.closer.Close() }
