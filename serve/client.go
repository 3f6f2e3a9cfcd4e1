package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/tooljail/tooljail/jail"
)

// Client calls a server. It holds no connection: each call dials its own,
// so a Client may be used by many goroutines at once.
type Client struct {
	// Path is the server's socket.
	Path string
	// OnStream, when set, asks for the output as it comes (Request.Stream)
	// and gets each chunk, "stdout" or "stderr", in order of arrival. The
	// report then counts the output without holding it (no Text); without
	// OnStream the report holds it.
	OnStream func(stream string, data []byte)
	// OnExec, when set, asks the server to say when the command has been
	// exec'd in the jail (Request.ExecEvent), and is called once then,
	// before the call returns; not at all when the command never ran.
	OnExec func()
}

// Dial returns a Client of the server at path ("" for ClientPath:
// TOOLJAIL_SERVER, else DefaultPath), after checking that a server
// answers there.
func Dial(path string) (*Client, error) {
	if path == "" {
		path = ClientPath()
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, fmt.Errorf("tooljail server at %s: %w; start one with 'tooljail serve --socket %s'", path, err, path)
	}
	conn.Close()
	return &Client{Path: path}, nil
}

// Run sends req and returns the run's Result. A request the server
// refused is an *Error (code 125). Cancelling ctx closes the connection,
// and the server cancels the run.
func (c *Client) Run(ctx context.Context, req Request) (*jail.Result, error) {
	raw, err := c.RunRaw(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.result(raw)
}

// result decodes a report line.
func (c *Client) result(raw []byte) (*jail.Result, error) {
	var r jail.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("tooljail server at %s: bad report: %w", c.Path, err)
	}
	// The JSON text of output that is not UTF-8 is lossy; its base64 is not.
	r.Stdout.Exact()
	r.Stderr.Exact()
	return &r, nil
}

// connect dials the server and checks it is the caller's or root's
// (checkServer); the connection is closed when ctx ends, which ends a
// read or write of the caller's.
func (c *Client) connect(ctx context.Context) (*ctxConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return nil, fmt.Errorf("tooljail server at %s: %w", c.Path, err)
	}
	if err := checkServer(conn, os.Geteuid()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tooljail server at %s: %w", c.Path, err)
	}
	return &ctxConn{Conn: conn, stop: context.AfterFunc(ctx, func() { conn.Close() })}, nil
}

// ctxConn is a connection closed by its context's end until Close.
type ctxConn struct {
	net.Conn
	stop func() bool
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// RunRaw is Run that returns the report as the server sent it: one line
// of JSON, exactly the fields `tooljail run --json` prints, without the
// newline.
func (c *Client) RunRaw(ctx context.Context, req Request) ([]byte, error) {
	return c.runRaw(ctx, req, nil)
}

// RunInteractive is Run of an interactive call (Request.StdinStream): what
// is read from stdin goes to the command as it comes, its end as
// stdin's end; each size from resize (nil: none) is the terminal's new
// size (a tty run). The reads of stdin stop when the run ends, but a
// read already waiting finishes first (a terminal's next key).
func (c *Client) RunInteractive(ctx context.Context, req Request, stdin io.Reader, resize <-chan InputResize) (*jail.Result, error) {
	req.StdinStream, req.Stdin = true, nil
	raw, err := c.runRaw(ctx, req, func(w io.Writer, done <-chan struct{}) { feedInput(w, stdin, resize, done) })
	if err != nil {
		return nil, err
	}
	return c.result(raw)
}

// feedInput writes input lines to w: stdin's chunks, then its end, and
// the sizes from resize, until done.
func feedInput(w io.Writer, stdin io.Reader, resize <-chan InputResize, done <-chan struct{}) {
	lines := make(chan InputLine)
	go func() {
		if stdin != nil {
			buf := make([]byte, 32<<10)
			for {
				n, err := stdin.Read(buf)
				if n > 0 {
					select {
					case lines <- InputLine{Stdin: append([]byte(nil), buf[:n]...)}:
					case <-done:
						return
					}
				}
				if err != nil {
					break
				}
			}
		}
		select {
		case lines <- InputLine{StdinEnd: true}:
		case <-done:
		}
	}()
	for {
		var l InputLine
		select {
		case <-done:
			return
		case l = <-lines:
		case sz, ok := <-resize:
			if !ok {
				resize = nil
				continue
			}
			l = InputLine{Resize: &sz}
		}
		b, err := json.Marshal(l)
		if err != nil {
			return
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return
		}
	}
}

func (c *Client) runRaw(ctx context.Context, req Request, feed func(w io.Writer, done <-chan struct{})) ([]byte, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req.Stream = c.OnStream != nil
	req.ExecEvent = c.OnExec != nil
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// A server that refuses before it reads (too many waiting
	// connections) has sent its error line and closed: the write then
	// fails, and the line is still there to read.
	_, werr := conn.Write(append(b, '\n'))
	if feed != nil && werr == nil {
		done := make(chan struct{})
		defer close(done)
		go feed(conn, done)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if werr != nil {
				err = werr
			}
			return nil, c.connErr(ctx, err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		var head struct {
			Stream string          `json:"stream"`
			Data   []byte          `json:"data"`
			Exec   bool            `json:"exec"`
			Error  *Error          `json:"error"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("tooljail server at %s: bad line: %w", c.Path, err)
		}
		switch {
		case head.Error != nil:
			return nil, head.Error
		case head.Exec && head.Schema == nil:
			if c.OnExec != nil {
				c.OnExec()
			}
		case head.Stream != "" && head.Schema == nil:
			if c.OnStream != nil {
				c.OnStream(head.Stream, head.Data)
			}
		default:
			return line, nil
		}
	}
}

func (c *Client) connErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("tooljail server at %s: the connection ended before the report: %w", c.Path, err)
}

// checkServer refuses a server that runs as neither this user nor root:
// anybody can put a socket at a path in /tmp before the real server
// starts, and would then receive the command, its environment and its
// input, and answer with a made-up report.
func checkServer(conn net.Conn, uid int) error {
	return serverProblem(peerOf(conn).UID, uid)
}

// serverProblem says why a client of uid must not use a server running as
// peer (-1: unknown), or nil.
func serverProblem(peer, uid int) error {
	if peer < 0 {
		return errors.New("cannot tell who runs the server (no SO_PEERCRED); refusing to send it the command")
	}
	if peer != uid && peer != 0 {
		return fmt.Errorf("the socket is served by uid %d, neither this user (%d) nor root: it is not your server; refusing to send it the command", peer, uid)
	}
	return nil
}

// Changes sends a changes_op request (docs/serve.md, "Change sets") and
// returns its result as the server sent it: the JSON of the answer's
// "changes" value. A refusal is an *Error; an apply that found conflicts
// is an *Error with Code 1 and its Conflicts, nothing applied.
func (c *Client) Changes(ctx context.Context, op ChangesOp) (json.RawMessage, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	b, err := json.Marshal(Request{ChangesOp: &op})
	if err != nil {
		return nil, err
	}
	_, werr := conn.Write(append(b, '\n'))
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadBytes('\n')
	if err != nil {
		if werr != nil {
			err = werr
		}
		return nil, c.connErr(ctx, err)
	}
	var answer struct {
		Error   *Error          `json:"error"`
		Changes json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(line, &answer); err != nil {
		return nil, fmt.Errorf("tooljail server at %s: bad line: %w", c.Path, err)
	}
	if answer.Error != nil {
		return nil, answer.Error
	}
	if answer.Changes == nil {
		return nil, fmt.Errorf("tooljail server at %s: an answer without a result", c.Path)
	}
	return answer.Changes, nil
}

// SessionOp sends a session_op request (docs/sessions.md) and returns its
// answer as the server sent it: the JSON of the "session" value (start,
// stop) or of "sessions" (list). A start without Detach is attached to
// its connection: the returned closer holds it, and closing it stops the
// session (ctx bounds only the start); otherwise the closer is nil. A
// refusal is an *Error.
func (c *Client) SessionOp(ctx context.Context, req Request) (json.RawMessage, io.Closer, error) {
	if req.SessionOp == nil {
		return nil, nil, errors.New("SessionOp: the request has no session_op")
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	keep := false
	defer func() {
		if !keep {
			conn.Close()
		}
	}()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	_, werr := conn.Write(append(b, '\n'))
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadBytes('\n')
	if err != nil {
		if werr != nil {
			err = werr
		}
		return nil, nil, c.connErr(ctx, err)
	}
	var answer struct {
		Error    *Error          `json:"error"`
		Session  json.RawMessage `json:"session"`
		Sessions json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(line, &answer); err != nil {
		return nil, nil, fmt.Errorf("tooljail server at %s: bad line: %w", c.Path, err)
	}
	if answer.Error != nil {
		return nil, nil, answer.Error
	}
	out := answer.Session
	if req.SessionOp.Action == "list" {
		out = answer.Sessions
	}
	if out == nil {
		return nil, nil, fmt.Errorf("tooljail server at %s: an answer without a result", c.Path)
	}
	if req.SessionOp.Action == "start" && !req.SessionOp.Detach {
		// ctx bounded the start; the session lives until Close.
		if conn.stop() {
			keep = true
			return out, conn.Conn, nil
		}
		return nil, nil, c.connErr(ctx, ctx.Err())
	}
	return out, nil, nil
}
