package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

func TestReport(t *testing.T) {
	ts := start(t)
	ctx := context.Background()
	raw, err := ts.client().RunRaw(ctx, Request{ID: "call-1", Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("\n")) {
		t.Error("the report is more than one line")
	}
	var r jail.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Schema != jail.Schema || r.Status != jail.StatusExited || r.ExitCode != 3 || r.Profile != ts.Profiles[0] {
		t.Errorf("report: %s", raw)
	}
	if text(r.Stdout) != "out\n" || text(r.Stderr) != "err\n" {
		t.Errorf("output %q, %q", text(r.Stdout), text(r.Stderr))
	}
	// The same bytes as json.Marshal of the Result: what run --json
	// prints, compact.
	again, _ := json.Marshal(&r)
	if !bytes.Equal(again, raw) {
		t.Errorf("report is not the Result's JSON:\n%s\n%s", raw, again)
	}
	a := ts.auditLines(t)
	if len(a) != 1 || a[0]["request_id"] != "call-1" || a[0]["status"] != "exited" || a[0]["id"] != r.ID {
		t.Fatalf("audit: %v", a)
	}
	peer, _ := a[0]["peer"].(map[string]any)
	if peer["uid"] != float64(os.Getuid()) || peer["gid"] != float64(os.Getgid()) || peer["pid"] != float64(os.Getpid()) {
		t.Errorf("audit peer %v, want uid %d gid %d pid %d", peer, os.Getuid(), os.Getgid(), os.Getpid())
	}
}

func TestSetupErrorIsAReport(t *testing.T) {
	ts := start(t)
	r := run(t, ts.client(), Request{Argv: []string{"/no/such/command"}})
	if r.Status != jail.StatusSetupError || r.ExitCode != jail.ExitNotFound {
		t.Errorf("status %s, exit %d: %s", r.Status, r.ExitCode, r.Reason)
	}
}

func TestStdinEnvWorkdir(t *testing.T) {
	ts := start(t)
	c := ts.client()
	r := run(t, c, Request{Argv: []string{"/bin/cat"}, Stdin: []byte("from\x00stdin")})
	if text(r.Stdout) != "from\x00stdin" {
		t.Errorf("stdin: %q", text(r.Stdout))
	}
	r = run(t, c, Request{Argv: []string{"/bin/cat"}})
	if text(r.Stdout) != "" || r.ExitCode != 0 {
		t.Errorf("no stdin: %q, %d", text(r.Stdout), r.ExitCode)
	}
	r = run(t, c, Request{Argv: []string{"/bin/sh", "-c", `echo "$GREETING $HOME"; pwd`}, Env: map[string]string{"GREETING": "hi"}})
	if got := text(r.Stdout); got != "hi /home/sandbox\n/tmp\n" {
		t.Errorf("env and no workdir: %q", got)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // writable by the jail's host user when root
	r = run(t, c, Request{Argv: []string{"/bin/sh", "-c", "pwd; echo x > made"}, Workdir: dir})
	if got := text(r.Stdout); got != dir+"\n" || r.ExitCode != 0 {
		t.Errorf("workdir: %q, exit %d: %s", got, r.ExitCode, r.Reason)
	}
	if _, err := os.Stat(dir + "/made"); err != nil {
		t.Errorf("the workdir is not bound read-write: %v", err)
	}
	if _, err := c.Run(context.Background(), Request{Argv: []string{"/bin/true"}, Workdir: "rel"}); err == nil {
		t.Error("a relative workdir was taken")
	}
}

func TestStreamOrder(t *testing.T) {
	ts := start(t)
	var mu sync.Mutex
	var got []string
	c := ts.client()
	c.OnStream = func(name string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range strings.Fields(string(data)) {
			got = append(got, name+":"+l)
		}
	}
	r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", "echo 1; sleep 0.1; echo 2 >&2; sleep 0.1; echo 3; sleep 0.1; echo 4 >&2"}})
	want := "stdout:1 stderr:2 stdout:3 stderr:4"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("stream %q, want %q", s, want)
	}
	// The output went out in the stream: the report counts it, once.
	if r.Stdout.Text != nil || r.Stderr.Text != nil || r.Stdout.Bytes != 4 || r.Stderr.Bytes != 4 {
		t.Errorf("a streamed run's report: stdout %+v, stderr %+v; want counts and no text", r.Stdout, r.Stderr)
	}
}

// merge_stderr: one pipe for fd 1 and 2, so thousands of alternating
// writes keep their order, streamed (all on stdout) and captured (the
// report's stdout); stderr says merged and counts nothing.
func TestMergeStderr(t *testing.T) {
	ts := start(t)
	script := `echo 1; echo 2 >&2; echo 3; i=0; while [ $i -lt 2000 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done`
	var want strings.Builder
	want.WriteString("1\n2\n3\n")
	for i := range 2000 {
		fmt.Fprintf(&want, "o%d\ne%d\n", i, i)
	}
	for _, streamed := range []bool{false, true} {
		c := ts.client()
		var got bytes.Buffer
		names := map[string]bool{}
		if streamed {
			c.OnStream = func(name string, data []byte) {
				names[name] = true
				got.Write(data)
			}
		}
		r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", script}, MergeStderr: true})
		if !streamed {
			got.WriteString(text(r.Stdout))
		}
		if got.String() != want.String() {
			t.Errorf("streamed %v: the merged output is not in write order: %.200q...", streamed, got.String())
		}
		if streamed && (len(names) != 1 || !names["stdout"]) {
			t.Errorf("streamed: chunks on %v, want stdout only", names)
		}
		if r.Stdout.Bytes != int64(want.Len()) || !reflect.DeepEqual(r.Stderr, jail.Stream{Merged: true}) {
			t.Errorf("streamed %v: stdout %d bytes, stderr %+v", streamed, r.Stdout.Bytes, r.Stderr)
		}
	}
}

// A report with output that is not UTF-8 carries it exactly: Run gives
// the bytes back as Text, and the raw report has its base64 in place of
// the text.
func TestReportBytesExact(t *testing.T) {
	ts := start(t)
	c := ts.client()
	r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", `printf 'caf\351\n'; printf '\377\376h\000' >&2; echo ok`}})
	if text(r.Stdout) != "caf\xe9\nok\n" || text(r.Stderr) != "\xff\xfeh\x00" {
		t.Errorf("output %q, %q", text(r.Stdout), text(r.Stderr))
	}
	raw, err := c.RunRaw(context.Background(), Request{Argv: []string{"/bin/sh", "-c", `printf 'caf\351'; echo valid >&2`}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"stdout":{"bytes":4,"truncated":false,"base64":"Y2Fm6Q=="}`)) ||
		!bytes.Contains(raw, []byte(`"stderr":{"bytes":6,"truncated":false,"text":"valid\n"}`)) {
		t.Errorf("report: %s", raw)
	}
}

// A command that is not found or cannot be executed gets its reason on
// the stderr stream of a streamed run, as the CLI writes it.
func TestExecFailureStreamsReason(t *testing.T) {
	ts := start(t)
	for _, c := range []struct {
		argv []string
		code int
		want string
	}{
		{[]string{"no-such-command-here"}, jail.ExitNotFound, "tooljail: no-such-command-here: command not found in the jail (PATH="},
		{[]string{"/etc/passwd"}, jail.ExitNotExecutable, "tooljail: /etc/passwd: not executable: permission denied\n"},
	} {
		cl := ts.client()
		var chunks []string
		cl.OnStream = func(name string, data []byte) { chunks = append(chunks, name+":"+string(data)) }
		r := run(t, cl, Request{Argv: c.argv})
		if r.ExitCode != c.code || len(chunks) != 1 || !strings.HasPrefix(chunks[0], "stderr:"+c.want) ||
			chunks[0] != "stderr:"+r.ReasonLine() {
			t.Errorf("%s: exit %d, chunks %q; want %d and the reason on stderr", c.argv[0], r.ExitCode, chunks, c.code)
		}
		// Not streamed: the report's reason has it; its texts stay the
		// command's (empty).
		r = run(t, ts.client(), Request{Argv: c.argv})
		if r.ExitCode != c.code || text(r.Stderr) != "" {
			t.Errorf("%s, not streamed: exit %d, stderr %q", c.argv[0], r.ExitCode, text(r.Stderr))
		}
	}
}

func TestLimits(t *testing.T) {
	ts := start(t)
	c := ts.client()
	for _, tc := range []struct {
		limits  map[string]string
		network string
		refused string // "" when accepted
	}{
		{limits: map[string]string{"memory": "256M", "timeout": "10s", "cpus": "0.5", "pids": "64", "cpu_time": "5s", "nofile": "256", "fsize": "1M", "output_limit": "1M", "max_violations": "10"}},
		{limits: map[string]string{"memory": "512M"}},
		{network: "none"},
		// What `tooljail run` takes for the same profile, looser or not.
		{limits: map[string]string{"memory": "2G"}},
		{limits: map[string]string{"memory": "0"}},
		{limits: map[string]string{"timeout": "unlimited"}},
		{limits: map[string]string{"pids": "1000"}},
		{limits: map[string]string{"max_violations": "0"}},
		{network: "host"},
		{limits: map[string]string{"memory": "lots"}, refused: "limits.memory"},
		{limits: map[string]string{"disk": "1G"}, refused: "limits.disk: unknown limit"},
		{network: "nowhere", refused: `network.mode: "nowhere"`},
	} {
		name := fmt.Sprint(tc.limits, tc.network)
		r, err := c.Run(context.Background(), Request{Argv: []string{"/bin/true"}, Limits: tc.limits, Network: tc.network})
		var e *Error
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.refused == "" && r.ExitCode != 0:
			t.Errorf("%s: exit %d: %s", name, r.ExitCode, r.Reason)
		case tc.refused != "" && !errors.As(err, &e):
			t.Errorf("%s: not refused: %v", name, err)
		case tc.refused != "" && (e.Code != 125 || !strings.Contains(e.Message, tc.refused)):
			t.Errorf("%s: error %d %q, want one with %q", name, e.Code, e.Message, tc.refused)
		}
	}
	r := run(t, c, Request{Argv: []string{"/bin/true"}, Limits: map[string]string{"memory": "256M", "timeout": "10s"}})
	if r.Limits.MemoryBytes != 256<<20 || r.Limits.TimeoutMs != 10000 {
		t.Errorf("applied limits: %+v", r.Limits)
	}
	// Numbers are accepted as limit values on the wire.
	lines := ts.call(t, `{"argv":["/bin/true"],"limits":{"pids":64}}`+"\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"pids":64`) {
		t.Errorf("a numeric limit: %q", lines)
	}
	r = run(t, c, Request{Argv: []string{"/bin/sleep", "5"}, Limits: map[string]string{"timeout": "200ms"}})
	if r.Status != jail.StatusTimeout {
		t.Errorf("a tighter timeout did not apply: %s %s", r.Status, r.Reason)
	}
	r = run(t, c, Request{Argv: []string{"/bin/true"}, Limits: map[string]string{"memory": "1G", "pids": "1000"}})
	if r.Limits.MemoryBytes != 1<<30 || r.Limits.Pids != 1000 {
		t.Errorf("looser limits, as the CLI takes them, did not apply: %+v", r.Limits)
	}
}

// A served profile's [limits.max] is the ceiling of a request's limits,
// refused above it in the words `tooljail run` uses for its flags.
func TestLimitsCeiling(t *testing.T) {
	file := filepath.Join(t.TempDir(), "capped.toml")
	if err := os.WriteFile(file, []byte("extends = \"default\"\n[limits.max]\nmemory = \"1G\"\ntimeout = \"20m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startWith(t, nil, file)
	c := ts.client()
	for _, tc := range []struct {
		limits  map[string]string
		refused string
	}{
		{limits: map[string]string{"memory": "1G"}},
		{limits: map[string]string{"memory": "100M", "timeout": "20m", "pids": "5000"}},
		{limits: map[string]string{"memory": "2G"}, refused: `limits.memory: 2G is above the ceiling of profile `},
		{limits: map[string]string{"memory": "2G"}, refused: `(limits.max.memory = "1G"); ask for at most 1G, or raise the ceiling in the profile`},
		{limits: map[string]string{"memory": "unlimited"}, refused: "limits.memory: unlimited is above the ceiling"},
		{limits: map[string]string{"timeout": "1h"}, refused: "limits.timeout: 1h is above the ceiling"},
	} {
		r, err := c.Run(context.Background(), Request{Argv: []string{"/bin/true"}, Limits: tc.limits})
		var e *Error
		switch {
		case tc.refused == "" && (err != nil || r.ExitCode != 0):
			t.Errorf("%v: %v %+v", tc.limits, err, r)
		case tc.refused != "" && (!errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, tc.refused)):
			t.Errorf("%v: %v, want an error with %q", tc.limits, err, tc.refused)
		}
	}
}

func TestProfiles(t *testing.T) {
	ts := start(t, "strict", "default")
	strict, dflt := ts.Profiles[0], ts.Profiles[1]
	c := ts.client()
	if r := run(t, c, Request{Argv: []string{"/bin/true"}}); r.Profile != strict {
		t.Errorf("default profile %q, want the first served, %s", r.Profile, strict)
	}
	if r := run(t, c, Request{Argv: []string{"/bin/true"}, Profile: dflt}); r.Profile != dflt {
		t.Errorf("profile %q, want %s", r.Profile, dflt)
	}
	_, err := c.Run(context.Background(), Request{Argv: []string{"/bin/true"}, Profile: "network"})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, `profile "network": not served here (served: `+strict+", "+dflt+")") {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	ts := start(t)
	for _, tc := range []struct{ line, want string }{
		{"{not json\n", "malformed request"},
		{`{"argv":["/bin/true"],"bogus":1}` + "\n", `unknown field "bogus"`},
		{`{"argv":["/bin/true"]} {"argv":["/bin/true"]}` + "\n", "data after the JSON object"},
		{`{"argv":[]}` + "\n", "argv: empty"},
		{`{"argv":["/bin/true"],"stdin":"!!"}` + "\n", "malformed request"},
		{`{"argv":["/bin/true"],"limits":{"memory":[1]}}` + "\n", "limits.memory"},
		{`{"argv":["/bin/true"],"env":{"A=B":"c"}}` + "\n", "env"},
		{`{"argv":["/bin/true"]}`, "did not end with a newline"},
	} {
		lines := ts.call(t, tc.line)
		var e struct{ Error *Error }
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &e) != nil || e.Error == nil ||
			e.Error.Code != 125 || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%q: answer %q, want one error line with %q", tc.line, lines, tc.want)
		}
	}
	// The server still serves.
	if r := run(t, ts.client(), Request{Argv: []string{"/bin/true"}}); r.ExitCode != 0 {
		t.Errorf("after bad requests: %+v", r)
	}
}

func TestRequestTooLong(t *testing.T) {
	ts := start(t)
	line := `{"argv":["/bin/echo","` + strings.Repeat("x", MaxRequest) + `"]}` + "\n"
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go conn.Write([]byte(line)) // fails once the server has closed
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, _ := io.ReadAll(conn)
	if !strings.Contains(string(b), `"code":125`) || !strings.Contains(string(b), "longer than 64 MiB") {
		t.Errorf("answer %q", b)
	}
}

// TestClientGoneCancelsRun closes the connection of a running call: the
// run is killed at once, nothing of it is left, and the audit log says
// cancelled.
func TestClientGoneCancelsRun(t *testing.T) {
	ts := start(t)
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprint(time.Now().UnixNano())
	conn.Write([]byte(`{"id":"gone","argv":["/bin/sh","-c","echo started; exec /bin/sleep 30 ` + marker + `"],"stream":true}` + "\n"))
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := conn.Read(buf); err != nil || !strings.Contains(string(buf[:n]), `"stream":"stdout"`) {
		t.Fatalf("first line: %q, %v", buf[:n], err)
	}
	closed := time.Now()
	conn.Close()
	var line map[string]any
	for time.Since(closed) < 10*time.Second {
		if a := ts.auditLines(t); len(a) == 1 {
			line = a[0]
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line == nil {
		t.Fatal("no audit line 10s after the client went away")
	}
	if line["status"] != "cancelled" || line["exit_code"] != float64(137) || line["request_id"] != "gone" {
		t.Errorf("audit line %v, want status cancelled, exit 137", line)
	}
	if d := time.Since(closed); d > 5*time.Second {
		t.Errorf("the run ended %v after the client went away", d)
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
}

// TestStuckReaderCancelled: a client that asks for the stream and does not
// read it gets its run cancelled after the write timeout, and the server
// goes on serving others meanwhile.
func TestStuckReaderCancelled(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.WriteTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.UnixConn).SetReadBuffer(4096)
	conn.Write([]byte(`{"id":"stuck","argv":["/bin/sh","-c","while :; do echo 0123456789abcdef0123456789abcdef; done"],"stream":true}` + "\n"))
	if r := run(t, ts.client(), Request{Argv: []string{"/bin/true"}}); r.ExitCode != 0 {
		t.Errorf("another client while one is stuck: %+v", r)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, a := range ts.auditLines(t) {
			if a["request_id"] == "stuck" {
				if a["status"] != "cancelled" {
					t.Errorf("audit %v, want cancelled", a)
				}
				return
			}
		}
	}
	t.Fatal("the stuck client's run was not cancelled")
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestContextCancelClosesCall(t *testing.T) {
	ts := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := ts.client().Run(ctx, Request{Argv: []string{"/bin/sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run after its context ended: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if a := ts.auditLines(t); len(a) == 1 {
			if a[0]["status"] != "cancelled" {
				t.Errorf("audit %v", a[0])
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the run did not end after the client cancelled")
}

func TestConcurrentClients(t *testing.T) {
	ts := start(t)
	c := ts.client()
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Run(context.Background(), Request{Argv: []string{"/bin/sh", "-c", "sleep 0.2; echo $0", fmt.Sprint(i)}})
			switch {
			case err != nil:
				errs <- err
			case text(r.Stdout) != fmt.Sprintf("%d\n", i) || r.ExitCode != 0:
				errs <- fmt.Errorf("call %d: %q, exit %d: %s", i, text(r.Stdout), r.ExitCode, r.Reason)
			}
		}()
	}
	// A client that connects and says nothing holds up nobody.
	idle, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if a := ts.auditLines(t); len(a) != n {
		t.Errorf("%d audit lines, want %d", len(a), n)
	}
}

func TestShutdownDrains(t *testing.T) {
	ts := start(t)
	c := ts.client()
	res := make(chan *jail.Result, 1)
	go func() {
		r, err := c.Run(context.Background(), Request{Argv: []string{"/bin/sh", "-c", "sleep 0.5; echo done"}})
		if err != nil {
			t.Error(err)
		}
		res <- r
	}()
	waitRuns(t, ts.Server, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if r := <-res; r == nil || text(r.Stdout) != "done\n" || r.Status != jail.StatusExited {
		t.Errorf("the running call did not finish: %+v", r)
	}
	if _, err := os.Stat(ts.path); !os.IsNotExist(err) {
		t.Errorf("socket left after Shutdown: %v", err)
	}
	if _, err := net.Dial("unix", ts.path); err == nil {
		t.Error("a new connection after Shutdown")
	}
}

func TestShutdownGraceEnds(t *testing.T) {
	ts := start(t)
	c := ts.client()
	res := make(chan *jail.Result, 1)
	go func() {
		r, _ := c.Run(context.Background(), Request{Argv: []string{"/bin/sleep", "30"}})
		res <- r
	}()
	waitRuns(t, ts.Server, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if r := <-res; r == nil || r.Status != jail.StatusCancelled || !strings.Contains(r.Reason, "server shut down") {
		t.Errorf("the run left at the end of the grace period: %+v", r)
	}
}

// waitRuns waits until s has n runs going.
func waitRuns(t *testing.T, s *Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		got := len(s.runs)
		s.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("no %d runs", n)
}

func ExampleClient_Run() {
	// A server, as `tooljail serve` runs it, on a socket of its own, with
	// a profile that runs without cgroup caps where the host cannot
	// enforce them (cgroup v1 and not root).
	dir, _ := os.MkdirTemp("", "tooljail-example")
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/agent.toml", []byte(`extends = "default"
allow_degraded = ["cgroup"]
`), 0o644)
	l, err := Listen(dir + "/sock")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &Server{Profiles: []string{dir + "/agent.toml"}}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	c, err := Dial(dir + "/sock")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := c.Run(context.Background(), Request{
		Argv:   []string{"/bin/sh", "-c", "echo hello from $(hostname)"},
		Limits: map[string]string{"memory": "64M", "timeout": "10s"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status, r.ExitCode, *r.Stdout.Text)
	// Output: exited 0 hello from tooljail
}

// startCall sends line, a request with "stream":true whose command prints
// before anything long, and returns the connection once the first stream
// line is in: the run goes.
func (ts *testServer) startCall(t *testing.T, line string) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if n, err := conn.Read(buf); err != nil || !strings.Contains(string(buf[:n]), `"stream":"stdout"`) {
		t.Fatalf("first line: %q, %v", buf[:n], err)
	}
	conn.SetDeadline(time.Time{})
	return conn
}

// waitCount waits until what count returns, under s.mu, is n.
func waitCount(t *testing.T, s *Server, what string, count func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		got := count()
		s.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("no %d %s", n, what)
}

// refusedLines are the audit lines of refused requests.
func (ts *testServer) refusedLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	if _, err := os.Stat(ts.audit); os.IsNotExist(err) {
		return nil // no line yet
	}
	for _, a := range ts.auditLines(t) {
		if a["status"] == "refused" {
			out = append(out, a)
		}
	}
	return out
}

// checkRefusedLine fails unless a is a refused request's audit line of
// this process as client: exit code 125, the peer's uid, gid and pid, and
// the request id id ("" for none).
func checkRefusedLine(t *testing.T, a map[string]any, id string) {
	t.Helper()
	peer, _ := a["peer"].(map[string]any)
	if a["status"] != "refused" || a["exit_code"] != float64(125) || peer["uid"] != float64(os.Getuid()) ||
		peer["gid"] != float64(os.Getgid()) || peer["pid"] != float64(os.Getpid()) {
		t.Errorf("audit line %v: want status refused, exit_code 125, peer uid %d gid %d pid %d", a, os.Getuid(), os.Getgid(), os.Getpid())
	}
	if got, _ := a["request_id"].(string); got != id {
		t.Errorf("audit line %v: request_id %q, want %q", a, got, id)
	}
}

// TestMaxRuns: with MaxRuns runs going and no queue (--queue-timeout 0),
// the next request is refused at once, naming --max-runs, and audited;
// once one ends, a call is served.
func TestMaxRuns(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.MaxRuns = 2; s.QueueTimeout = -1 })
	first := ts.startCall(t, `{"argv":["/bin/sh","-c","echo started; exec /bin/sleep 30"],"stream":true}`+"\n")
	ts.startCall(t, `{"argv":["/bin/sh","-c","echo started; exec /bin/sleep 30"],"stream":true}`+"\n")
	_, err := ts.client().Run(context.Background(), Request{ID: "third", Argv: []string{"/bin/true"}})
	var e *Error
	if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "--max-runs") || !strings.Contains(e.Message, "retry") {
		t.Fatalf("a third call with 2 going: %v, want a refusal naming --max-runs", err)
	}
	refused := ts.refusedLines(t)
	if len(refused) != 1 {
		t.Fatalf("audit: %v, want one refused line", ts.auditLines(t))
	}
	checkRefusedLine(t, refused[0], "third")
	first.Close() // the run is cancelled, its slot freed
	waitCount(t, ts.Server, "runs", func() int { return ts.running }, 1)
	if r := run(t, ts.client(), Request{Argv: []string{"/bin/true"}}); r.ExitCode != 0 {
		t.Errorf("a call after a run ended: %+v", r)
	}
}

// TestQueue: a call that finds every slot busy waits for one and runs
// when a run ends; one that waits past QueueTimeout is refused, saying
// what to do, and audited.
func TestQueue(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.MaxRuns = 1; s.QueueTimeout = MaxQueueTimeout })
	first := ts.startCall(t, `{"argv":["/bin/sh","-c","echo started; exec /bin/sleep 30"],"stream":true}`+"\n")
	done := make(chan error, 1)
	go func() {
		r, err := ts.client().Run(context.Background(), Request{ID: "queued", Argv: []string{"/bin/echo", "ran"}})
		if err == nil && text(r.Stdout) != "ran\n" {
			err = fmt.Errorf("report %+v", r)
		}
		done <- err
	}()
	waitCount(t, ts.Server, "queued calls", func() int { return len(ts.queue.waiting) }, 1)
	first.Close() // the run is cancelled, its slot goes to the queued call
	if err := <-done; err != nil {
		t.Fatalf("the queued call: %v", err)
	}

	ts = startWith(t, func(s *Server) { s.MaxRuns = 1; s.QueueTimeout = 300 * time.Millisecond })
	ts.startCall(t, `{"argv":["/bin/sh","-c","echo started; exec /bin/sleep 30"],"stream":true}`+"\n")
	_, err := ts.client().Run(context.Background(), Request{ID: "late", Argv: []string{"/bin/true"}})
	var e *Error
	if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "none ended within 300ms while this call waited") ||
		!strings.Contains(e.Message, "--queue-timeout") {
		t.Fatalf("a call queued past the timeout: %v, want a refusal naming --max-runs and --queue-timeout", err)
	}
	refused := ts.refusedLines(t)
	if len(refused) != 1 {
		t.Fatalf("audit: %v, want one refused line", ts.auditLines(t))
	}
	checkRefusedLine(t, refused[0], "late")
}

// TestPendingLimit: at most PendingPerRun × MaxRuns connections wait for
// their request line; the next one gets an error line and is audited. A
// connection that sends its request leaves the count.
func TestPendingLimit(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.MaxRuns = 1 })
	pending := func() int { return ts.pending.n }
	waitCount(t, ts.Server, "pending connections", pending, 0)
	var idle []net.Conn
	for range PendingPerRun {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	waitCount(t, ts.Server, "pending connections", pending, PendingPerRun)
	// The server answers at once, without reading anything.
	conn, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(conn)
	conn.Close()
	var e struct{ Error *Error }
	if err != nil || json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Code != 125 ||
		!strings.Contains(e.Error.Message, "--max-runs") || !strings.Contains(e.Error.Message, "waiting to send their request") {
		t.Fatalf("a connection beyond the limit: %q, %v; want one error line naming --max-runs", b, err)
	}
	refused := ts.refusedLines(t)
	if len(refused) != 1 {
		t.Fatalf("audit: %v, want one refused line", ts.auditLines(t))
	}
	checkRefusedLine(t, refused[0], "")
	// The Go client writes its request first: it still gets the line.
	// A big request makes its write fail on the closed connection.
	_, err = ts.client().Run(context.Background(), Request{Argv: []string{"/bin/true"}, Stdin: make([]byte, 8<<20)})
	if !errors.As(err, new(*Error)) || !strings.Contains(err.Error(), "--max-runs") {
		t.Errorf("the client beyond the limit: %v, want the server's error line", err)
	}
	idle[0].Close()
	waitCount(t, ts.Server, "pending connections", pending, PendingPerRun-1)
	if r := run(t, ts.client(), Request{Argv: []string{"/bin/true"}}); r.ExitCode != 0 {
		t.Errorf("a call after an idle connection went: %+v", r)
	}
	// Closed without a byte: no refusal, no audit line.
	if got := len(ts.refusedLines(t)); got != 2 {
		t.Errorf("%d refused lines after an idle connection closed, want 2 (the two beyond the limit)", got)
	}
}

// TestIdleConnectionsDoNotBlock: 100 connections that say nothing do not
// stop a call.
func TestIdleConnectionsDoNotBlock(t *testing.T) {
	ts := start(t)
	for range 100 {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitCount(t, ts.Server, "pending connections", func() int { return ts.pending.n }, 100)
	if r := run(t, ts.client(), Request{Argv: []string{"/bin/echo", "through"}}); text(r.Stdout) != "through\n" {
		t.Errorf("a call with 100 idle connections: %+v", r)
	}
}

// TestRequestTimeout: a connection without a whole request line in time
// gets an error line, is closed, and is audited; its slot is freed.
func TestRequestTimeout(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.RequestTimeout = 200 * time.Millisecond })
	for _, sent := range []string{"", `{"argv":["/bin/true"]`} {
		conn, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(sent))
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(conn)
		conn.Close()
		var e struct{ Error *Error }
		if err != nil || json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Code != 125 || !strings.Contains(e.Error.Message, "no request within 200ms") {
			t.Errorf("sent %q and waited: %q, %v; want one error line, no request within 200ms", sent, b, err)
		}
	}
	refused := ts.refusedLines(t)
	if len(refused) != 2 {
		t.Fatalf("audit: %v, want two refused lines", ts.auditLines(t))
	}
	for _, a := range refused {
		checkRefusedLine(t, a, "")
	}
	waitCount(t, ts.Server, "pending connections", func() int { return ts.pending.n }, 0)
}

// TestRefusalsAudited: every refused request writes one audit line:
// status refused, exit code 125, the client's uid, gid and pid, and its
// id when the request had a valid one. A 256-byte id is taken, a longer
// one refused naming the field.
func TestRefusalsAudited(t *testing.T) {
	ts := start(t)
	long := strings.Repeat("i", MaxID+1)
	for _, c := range []struct {
		line, want, id string
	}{
		{"{not json\n", "malformed request", ""},
		{`{"id":"a","argv":["/bin/true"],"bogus":1}` + "\n", `unknown field "bogus"`, ""},
		{`{"id":"b","argv":["/bin/true"],"profile":"nosuch"}` + "\n", `profile "nosuch": not served here`, "b"},
		{`{"id":"c","argv":["/bin/true"],"limits":{"memory":"lots"}}` + "\n", "limits.memory", "c"},
		{`{"id":"d","argv":[]}` + "\n", "argv: empty", "d"},
		{`{"id":"` + long + `","argv":["/bin/true"]}` + "\n", "id: 257 bytes, longer than 256", ""},
		{`{"id":"e","argv":["/bin/true"]}`, "did not end with a newline", ""},
	} {
		before := len(ts.refusedLines(t))
		lines := ts.call(t, c.line)
		var e struct{ Error *Error }
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &e) != nil || e.Error == nil || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%.40q: answer %q, want an error line with %q", c.line, lines, c.want)
			continue
		}
		refused := ts.refusedLines(t)
		if len(refused) != before+1 {
			t.Errorf("%.40q: %d refused audit lines, want %d", c.line, len(refused), before+1)
			continue
		}
		checkRefusedLine(t, refused[before], c.id)
		if reason, _ := refused[before]["reason"].(string); !strings.Contains(reason, c.want) {
			t.Errorf("%.40q: audit reason %q, want it to say %q", c.line, reason, c.want)
		}
	}
	r := run(t, ts.client(), Request{ID: strings.Repeat("i", MaxID), Argv: []string{"/bin/true"}})
	if r.ExitCode != 0 {
		t.Errorf("a call with a %d-byte id: %+v", MaxID, r)
	}
	a := ts.auditLines(t)
	if last := a[len(a)-1]; last["status"] != "exited" || last["request_id"] != strings.Repeat("i", MaxID) {
		t.Errorf("the run's audit line: %v", last)
	}
}

// TestShutdownKeepsLock: a draining server has removed its socket but
// keeps the lock until its runs have ended, so no second server starts on
// the socket meanwhile; after the drain, one does.
func TestShutdownKeepsLock(t *testing.T) {
	ts := start(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // the jail's host user, when root, writes "go" there
	res := make(chan *jail.Result, 1)
	c := ts.client()
	started := make(chan struct{})
	var once sync.Once
	c.OnStream = func(string, []byte) { once.Do(func() { close(started) }) }
	go func() {
		r, _ := c.Run(context.Background(), Request{Argv: []string{"/bin/sh", "-c", "echo started; while [ ! -e go ]; do sleep 0.02; done; echo done"}, Workdir: dir})
		res <- r
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(ts.path); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket is still there 10s after Shutdown began")
		}
	}
	if l, err := Listen(ts.path); !errors.Is(err, ErrListening) {
		if l != nil {
			l.Close()
		}
		t.Errorf("Listen while the server drains: %v, want ErrListening", err)
	}
	os.WriteFile(dir+"/go", nil, 0o644)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	// A streamed run: the report counts what the stream carried.
	if r := <-res; r == nil || r.Status != jail.StatusExited || r.Stdout.Bytes != int64(len("started\ndone\n")) {
		t.Errorf("the drained run: %+v", r)
	}
	if _, err := os.Lstat(ts.path + LockSuffix); !os.IsNotExist(err) {
		t.Errorf("the lock file after the drain: %v", err)
	}
	l, err := Listen(ts.path)
	if err != nil {
		t.Fatalf("Listen after the drain: %v", err)
	}
	l.Close()
}

// A stream line is what json.Marshal makes of streamLine, for any bytes.
func TestAppendStreamLineIsMarshal(t *testing.T) {
	data := []byte{}
	for n := range 600 {
		for _, name := range []string{"stdout", "stderr"} {
			want, _ := json.Marshal(streamLine{Stream: name, Data: data})
			if got := appendStreamLine([]byte("old"), name, data); string(got) != "old"+string(want)+"\n" {
				t.Fatalf("%d bytes: %q, want %q", n, got, want)
			}
		}
		data = append(data, byte(n*7+n/3))
	}
}

// tty: the command gets a terminal of the jail's own, of the asked size,
// with the request's stdin typed into it and ended by ^D; stderr is the
// terminal's too, and the report marks it. Streamed and captured.
func TestTTYRequest(t *testing.T) {
	ts := start(t)
	for _, streamed := range []bool{false, true} {
		c := ts.client()
		var got bytes.Buffer
		if streamed {
			c.OnStream = func(name string, data []byte) {
				if name == "stdout" {
					got.Write(data)
				}
			}
		}
		r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", `tty; stty size; echo err >&2; read x; echo "got $x"; cat; echo end`},
			Stdin: []byte("line\npartial"), TTY: true, TTYRows: 30, TTYCols: 90})
		if !streamed {
			got.WriteString(text(r.Stdout))
		}
		out := strings.ReplaceAll(got.String(), "\r\n", "\n")
		for _, want := range []string{"/dev/pts/0\n", "30 90\n", "err\n", "got line\n", "partial", "end\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("streamed %v: output lacks %q: %q", streamed, want, out)
			}
		}
		if r.ExitCode != 0 || !r.Stdout.TTY || !r.Stderr.Merged || r.Stdout.Bytes != int64(got.Len()) {
			t.Errorf("streamed %v: exit %d, stdout %+v, stderr %+v", streamed, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
	_, err := ts.client().Run(context.Background(), Request{Argv: []string{"true"}, TTYRows: 30})
	if err == nil || !strings.Contains(err.Error(), "tty_rows") {
		t.Errorf("a size without tty: %v, want refused", err)
	}
}
