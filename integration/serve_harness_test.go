package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The harness of the `tooljail serve` tests: a real server started as a
// suite user, and a raw protocol client (serve-protocol: one request line,
// stream lines, one final line) that connects as that user.

// dialEnv, set in the environment of a copy of this test binary, makes it
// connect to the socket it names and hand the connection back over fd 3:
// the way a test connects as another uid, since SO_PEERCRED records the
// connecting process's credentials and a Go process cannot change its own
// uid for one connection.
const dialEnv = "TJ_SERVE_DIAL"

func init() {
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(dialChild(path))
	}
}

// dialChild connects to path and sends, over fd 3, either the connected
// socket (SCM_RIGHTS) or "errno NAME".
func dialChild(path string) int {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	}
	if err != nil {
		msg := "error " + err.Error()
		var errno unix.Errno
		if errors.As(err, &errno) {
			msg = "errno " + unix.ErrnoName(errno)
		}
		unix.Sendmsg(3, []byte(msg), nil, nil, 0)
		return 0
	}
	if err := unix.Sendmsg(3, []byte("ok"), unix.UnixRights(fd), nil, 0); err != nil {
		return 1
	}
	return 0
}

var (
	dialBinOnce sync.Once
	dialBin     string
	dialBinErr  error
)

// dialBinary is a copy of this test binary in base, which every user can
// execute (go test's own build directory is private).
func dialBinary() (string, error) {
	dialBinOnce.Do(func() {
		dialBin = filepath.Join(base, "serve-dial")
		dialBinErr = copyFile("/proc/self/exe", dialBin)
	})
	return dialBin, dialBinErr
}

// dialAs connects to the socket path as u: directly for the test's own
// identity, through a copy of this binary running as u otherwise. The
// error of a refused connect is a unix.Errno.
func dialAs(u *user, path string) (net.Conn, error) {
	if u.cred == nil {
		return net.Dial("unix", path)
	}
	return dialFresh(u, path)
}

// dialFresh connects to path as u from a new process: a client of its
// own for the server, which tells clients apart by uid and pid.
func dialFresh(u *user, path string) (net.Conn, error) {
	bin, err := dialBinary()
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine := os.NewFile(uintptr(pair[0]), "dial-parent")
	theirs := os.NewFile(uintptr(pair[1]), "dial-child")
	defer mine.Close()
	cmd := exec.Command(bin)
	cmd.Env = []string{dialEnv + "=" + path}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("dial helper as %s: %v: %s", u.name, err, stderr.Bytes())
	}
	buf, oob := make([]byte, 256), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(pair[0], buf, oob, unix.MSG_DONTWAIT)
	if err != nil {
		return nil, fmt.Errorf("dial helper as %s sent nothing: %v", u.name, err)
	}
	msg := string(buf[:n])
	if name, ok := strings.CutPrefix(msg, "errno "); ok {
		for e := unix.Errno(1); e < 150; e++ {
			if unix.ErrnoName(e) == name {
				return nil, e
			}
		}
	}
	if msg != "ok" {
		return nil, fmt.Errorf("dial helper as %s: %s", u.name, msg)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("dial helper as %s: no descriptor (%v)", u.name, err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("dial helper as %s: no descriptor (%v)", u.name, err)
	}
	f := os.NewFile(uintptr(fds[0]), "served")
	defer f.Close()
	return net.FileConn(f)
}

// server is one `tooljail serve` process run as u.
type server struct {
	u                 *user
	dir, sock, audit  string
	cmd               *exec.Cmd
	rc                runCgroup
	mu                sync.Mutex
	stderr            bytes.Buffer
	exited            chan struct{}
	waitErr           error
	profile           string // the --profile file, when u needs degraded layers
	checkedLeftovers  bool
	allowLeftoverPIDs bool
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.Write(p)
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// serverDir is a directory only u can write, for its socket, audit log
// and profile (the server refuses a socket directory others can write).
func (u *user) serverDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(base, "serve-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// startServer starts `tooljail serve --socket DIR/sock --audit-log
// DIR/audit` (and the flags extra) as u in dir (a new serverDir when ""),
// waits until the socket answers, and stops it (SIGTERM, then the cgroup
// leftover check) at the end of the test unless the test did.
func (u *user) startServer(t *testing.T, dir string, extra ...string) *server {
	t.Helper()
	s := u.launchServer(t, dir, extra...)
	s.waitReady(t)
	return s
}

// launchServer is startServer without the wait: the server may still be
// starting, or about to exit.
func (u *user) launchServer(t *testing.T, dir string, extra ...string) *server {
	t.Helper()
	return u.launchServerWrapped(t, dir, nil, extra...)
}

// launchServerWrapped is launchServer through tjhelper's wrap (nil: none):
// tjhelper wrap... tooljail serve ....
func (u *user) launchServerWrapped(t *testing.T, dir string, wrap []string, extra ...string) *server {
	t.Helper()
	if dir == "" {
		dir = u.serverDir(t)
	}
	s := &server{u: u, dir: dir, sock: filepath.Join(dir, "sock"), audit: filepath.Join(dir, "audit"), exited: make(chan struct{})}
	args := append([]string{"serve", "--socket", s.sock, "--audit-log", s.audit}, extra...)
	if len(u.degraded) > 0 {
		// A served run cannot take --allow-degraded: the layers this user
		// cannot have go in the served profile.
		s.profile = filepath.Join(dir, "served.toml")
		q := make([]string, len(u.degraded))
		for i, d := range u.degraded {
			q[i] = fmt.Sprintf("%q", d)
		}
		body := fmt.Sprintf("extends = \"default\"\nallow_degraded = [%s]\n", strings.Join(q, ", "))
		// Written once per dir: another server there may be loading it.
		if b, err := os.ReadFile(s.profile); err != nil || string(b) != body {
			if err := os.WriteFile(s.profile, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(s.profile, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--profile", s.profile)
	}
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	s.rc = rc
	s.cmd = exec.Command(tooljailBin, args...)
	if wrap != nil {
		s.cmd = exec.Command(helperBin, append(append(append([]string{}, wrap...), tooljailBin), args...)...)
	}
	s.cmd.Dir = base
	// A variable of the server's own, which no served run may see.
	s.cmd.Env = u.environ([]string{"TJ_SERVE_SECRET=server-only"})
	s.cmd.Stdout, s.cmd.Stderr = s, s
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	if err := s.cmd.Start(); err != nil {
		rc.release()
		t.Fatalf("start tooljail serve as %s: %v", u.name, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.stop(t)
		}
		if !s.checkedLeftovers {
			s.rc.check(t, s.cmd.Process.Pid)
		}
	})
	return s
}

// waitReady waits until the socket file is there and accepts connections
// from the test (as u: a connection from another uid would be refused).
// A connection that sends nothing and closes is not a call.
func (s *server) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second * slow)
	for {
		select {
		case <-s.exited:
			t.Fatalf("tooljail serve as %s exited before serving: %v\n%s", s.u.name, s.waitErr, s.log())
		default:
		}
		if fi, err := os.Lstat(s.sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := dialAs(s.u, s.sock); err == nil {
				c.Close()
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tooljail serve as %s: no socket at %s after %s\n%s", s.u.name, s.sock, 20*time.Second*slow, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and requires a clean exit: status 0 and the socket
// file removed; then the leftover cgroup check.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.requireExit(t, 0)
	if _, err := os.Lstat(s.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket %s is still there after the server exited (%v)", s.sock, err)
	}
}

// killedInOwnCgroup checks what a SIGKILLed server left in a delegated
// cgroup of its own (the VM guests), which no later server, in another
// one, can clean: it must hold no process, so that the delegating manager
// can remove it (release checks that it can). It reports whether there
// was such a cgroup; on the host the next server cleans, and the caller
// checks that.
func (s *server) killedInOwnCgroup(t *testing.T) bool {
	t.Helper()
	if s.rc.dir == "" {
		return false
	}
	s.checkedLeftovers = true
	for _, d := range s.rc.leftovers(s.cmd.Process.Pid) {
		if p, _ := os.ReadFile(filepath.Join(d, "cgroup.procs")); len(bytes.TrimSpace(p)) > 0 {
			t.Errorf("processes left in %s: %s", d, p)
		}
	}
	s.rc.release()
	return true
}

// requireExit waits for the server's exit, which must be with code.
func (s *server) requireExit(t *testing.T, code int) {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second * slow):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		t.Fatalf("tooljail serve as %s did not exit within %s of SIGTERM\n%s", s.u.name, 30*time.Second*slow, s.log())
	}
	if got := s.cmd.ProcessState.ExitCode(); got != code {
		t.Errorf("tooljail serve as %s exited %v, want %d\n%s", s.u.name, s.waitErr, code, s.log())
	}
	s.rc.check(t, s.cmd.Process.Pid)
	s.checkedLeftovers = true
}

// req is a request line; argv etc. as the protocol names them.
type req struct {
	ID      string            `json:"id,omitempty"`
	Argv    []string          `json:"argv"`
	Workdir string            `json:"workdir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   *string           `json:"stdin,omitempty"`
	Profile string            `json:"profile,omitempty"`
	Limits  map[string]any    `json:"limits,omitempty"`
	Network string            `json:"network,omitempty"`
	Stream  bool              `json:"stream,omitempty"`
	Merge   bool              `json:"merge_stderr,omitempty"`
}

// reply is what came back on one connection.
type reply struct {
	lines   []string // every line, raw
	streams []streamLine
	// the final line: a report (raw and parsed), or an error
	reportRaw []byte
	report    *report
	errCode   int
	errMsg    string
	// when the first stream line and the final line arrived
	firstStream, final time.Time
}

type streamLine struct {
	Stream string `json:"stream"`
	Data   []byte `json:"data"` // base64 on the wire
}

func (r *reply) String() string {
	var b strings.Builder
	for _, l := range r.lines {
		b.WriteString(trunc(l))
		b.WriteByte('\n')
	}
	return b.String()
}

// stdout is what the report holds of stdout, or for a streamed run
// (whose report holds no text) what the stdout stream lines carried.
func (r *reply) stdout() string {
	if r.report != nil && r.report.Stdout.Text != nil {
		return *r.report.Stdout.Text
	}
	return r.streamed("stdout")
}

// streamed is what the stream lines of name carried.
func (r *reply) streamed(name string) string {
	var b strings.Builder
	for _, sl := range r.streams {
		if sl.Stream == name {
			b.Write(sl.Data)
		}
	}
	return b.String()
}

// outLines are the helper's result lines, from the report's stdout text.
func (r *reply) outLines() []string {
	s := strings.TrimRight(r.stdout(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// value decodes result line i ("value JSON") into v.
func (r *reply) value(t *testing.T, i int, v any) {
	t.Helper()
	l := r.outLines()
	if i >= len(l) || !strings.HasPrefix(l[i], "value ") {
		t.Fatalf("result line %d is not a value\n%s", i, r)
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l[i], "value ")), v); err != nil {
		t.Fatalf("result line %d: %v\n%s", i, err, r)
	}
}

// ok fails unless the run ended with a report, exit 0 and n result lines.
func (r *reply) ok(t *testing.T, n int) []string {
	t.Helper()
	if r.report == nil || r.report.ExitCode != 0 || r.report.Status != "exited" || len(r.outLines()) != n {
		t.Fatalf("want a report, status exited, exit 0 and %d result lines\n%s", n, r)
	}
	return r.outLines()
}

// call sends q as s's user and reads the reply.
func (s *server) call(t *testing.T, q req) *reply {
	t.Helper()
	r, err := s.try(s.u, mustJSON(t, q))
	if err != nil {
		t.Fatalf("%v\n%s\nserver log:\n%s", err, r, s.log())
	}
	return r
}

func mustJSON(t *testing.T, q req) []byte {
	t.Helper()
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// try connects as u, writes line, and reads until the server closes; it
// does not fail the test, so that goroutines can use it.
func (s *server) try(u *user, line []byte) (*reply, error) {
	c, err := dialAs(u, s.sock)
	if err != nil {
		return nil, fmt.Errorf("connect to %s as %s: %w", s.sock, u.name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute * slow))
	if _, err := c.Write(line); err != nil {
		return nil, fmt.Errorf("write the request: %v", err)
	}
	return readReply(bufio.NewReaderSize(c, 1<<20), nil)
}

// pending is a call whose first stream line has arrived: the command runs.
type pending struct {
	c  net.Conn
	br *bufio.Reader
	r  *reply
}

// start sends q (which must stream, and whose command must print before
// it does anything long) and returns once the first stream line is in.
func (s *server) start(t *testing.T, q req) *pending {
	t.Helper()
	q.Stream = true
	c, err := dialAs(s.u, s.sock)
	if err != nil {
		t.Fatalf("connect to %s as %s: %v", s.sock, s.u.name, err)
	}
	c.SetDeadline(time.Now().Add(time.Minute * slow))
	if _, err := c.Write(mustJSON(t, q)); err != nil {
		c.Close()
		t.Fatalf("write the request: %v", err)
	}
	p := &pending{c: c, br: bufio.NewReaderSize(c, 1<<20)}
	// A test that fails before finish must not leave the call running:
	// the server would wait for it in its drain.
	t.Cleanup(func() { c.Close() })
	first := errors.New("first stream line")
	p.r, err = readReply(p.br, func() error { return first })
	if err != first {
		c.Close()
		t.Fatalf("want a stream line first: %v\n%s\nserver log:\n%s", err, p.r, s.log())
	}
	return p
}

// finish reads the rest of a pending call's reply.
func (p *pending) finish() (*reply, error) {
	defer p.c.Close()
	return readReply(p.br, nil, p.r)
}

// readReply reads stream lines and the final line, which must be the last:
// the server closes after it.
// onStream, when set, is called after each stream line; an error it
// returns stops the reading there. more continues an earlier reply.
func readReply(br *bufio.Reader, onStream func() error, more ...*reply) (*reply, error) {
	r := new(reply)
	if len(more) > 0 {
		r = more[0]
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			return r, fmt.Errorf("the server closed in the middle of a line: %q", trunc(string(line)))
		}
		if err != nil {
			if len(r.lines) == 0 {
				return r, fmt.Errorf("the server closed without a final line: %v", err)
			}
			if r.report == nil && r.errMsg == "" {
				return r, fmt.Errorf("the last line is not a final line (report or error): %v", err)
			}
			return r, nil
		}
		if r.report != nil || r.errMsg != "" {
			return r, fmt.Errorf("a line after the final line: %q", trunc(string(line)))
		}
		r.lines = append(r.lines, string(bytes.TrimSuffix(line, []byte("\n"))))
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(line, &probe); err != nil {
			return r, fmt.Errorf("a line that is not one JSON object: %v", err)
		}
		switch {
		case probe["stream"] != nil:
			var sl streamLine
			if err := json.Unmarshal(line, &sl); err != nil || (sl.Stream != "stdout" && sl.Stream != "stderr") {
				return r, fmt.Errorf("a bad stream line (%v)", err)
			}
			if r.streams == nil {
				r.firstStream = time.Now()
			}
			r.streams = append(r.streams, sl)
			if onStream != nil {
				if err := onStream(); err != nil {
					return r, err
				}
			}
		case probe["error"] != nil:
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &e); err != nil || e.Error.Message == "" {
				return r, fmt.Errorf("a bad error line (%v)", err)
			}
			r.errCode, r.errMsg, r.final = e.Error.Code, e.Error.Message, time.Now()
		default:
			r.reportRaw = bytes.TrimSuffix(line, []byte("\n"))
			r.report = new(report)
			if err := json.Unmarshal(line, r.report); err != nil || r.report.Schema != "tooljail.report/v1" {
				return r, fmt.Errorf("the final line is not a tooljail.report/v1 report (%v)", err)
			}
			r.final = time.Now()
		}
	}
}

// refused fails unless the reply is one error line, code 125, whose
// message holds each of want.
func (r *reply) refused(t *testing.T, want ...string) {
	t.Helper()
	if r.errMsg == "" || r.errCode != 125 || len(r.lines) != 1 {
		t.Fatalf("want exactly one error line with code 125\n%s", r)
	}
	if strings.Contains(r.errMsg, "\n") {
		t.Errorf("the error message is more than one line: %q", r.errMsg)
	}
	for _, w := range want {
		if !strings.Contains(r.errMsg, w) {
			t.Errorf("the error message %q does not mention %q", r.errMsg, w)
		}
	}
}

func b64(s string) *string {
	e := base64.StdEncoding.EncodeToString([]byte(s))
	return &e
}

// auditLine is the part of an audit log line the tests read.
type auditLine struct {
	Command  []string `json:"command"`
	Status   string   `json:"status"`
	ExitCode int      `json:"exit_code"`
}

// auditFor polls the audit log until a line for a command holding mark
// is there (a served run's line is written after its report).
func (s *server) auditFor(t *testing.T, mark string) auditLine {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second * slow)
	for {
		b, _ := os.ReadFile(s.audit)
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, mark) {
				continue
			}
			var a auditLine
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatalf("audit line %q: %v", l, err)
			}
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit line for %s in %s after %s:\n%s\nserver log:\n%s", mark, s.audit, 15*time.Second*slow, b, s.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procsOf lists host processes of uid whose command line holds mark.
func procsOf(uid int, mark string) []string {
	var l []string
	for _, p := range hostProcs(mark) {
		pid, _, _ := strings.Cut(p, ":")
		st, err := os.Stat("/proc/" + pid)
		if err != nil {
			continue
		}
		if int(st.Sys().(*syscall.Stat_t).Uid) == uid {
			l = append(l, p)
		}
	}
	return l
}

// sleepMark is an argument list for sleep(1) that sleeps 1000 s and is
// found in /proc by its second argument (GNU sleep adds its arguments).
func sleepMark() (args string, mark string) {
	mark = fmt.Sprintf("0.%09d1", mrand.IntN(1000000000))
	return "1000 " + mark, mark
}
