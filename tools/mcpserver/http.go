package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/internal/tcppeer"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/serve"
	"github.com/tooljail/tooljail/tools/call"
)

// Address is where `tooljail mcp --listen` serves: a unix socket path, or
// a TCP port on a loopback address.
type Address struct {
	Network string // "unix" or "tcp"
	Addr    string // the socket's path, or "IP:PORT"
}

// ParseAddress reads a --listen value: a path (it holds a "/") is a unix
// socket; anything else is HOST:PORT, where HOST must be a loopback
// address (127.0.0.0/8, ::1) or "localhost" (taken as 127.0.0.1, with no
// lookup). Every other host is refused: the tools run with the server's
// rights, and a port others can reach would lend those rights to the
// network.
func ParseAddress(addr string) (Address, error) {
	if strings.Contains(addr, "/") {
		return Address{Network: "unix", Addr: addr}, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Address{}, fmt.Errorf("--listen %q: want a unix socket path (with a /) or HOST:PORT on loopback (127.0.0.1:8765, [::1]:8765): %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return Address{}, fmt.Errorf("--listen %q: port %q: want a number from 0 (any free port) to 65535", addr, port)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	switch {
	case host == "":
		return Address{}, fmt.Errorf("--listen %q: no host, which listens on every address; give a loopback one (127.0.0.1%s) or a unix socket path", addr, addr)
	case ip == nil:
		return Address{}, fmt.Errorf("--listen %q: %q is not a loopback address; tooljail mcp listens on loopback (127.0.0.1, ::1) or a unix socket only, never on the network", addr, host)
	case !ip.IsLoopback():
		return Address{}, fmt.Errorf("--listen %q: %s is not a loopback address; tooljail mcp listens on loopback (127.0.0.1, ::1) or a unix socket only, never on the network", addr, ip)
	}
	return Address{Network: "tcp", Addr: net.JoinHostPort(ip.String(), port)}, nil
}

// Listen opens a: a unix socket by the rules of `tooljail serve`'s socket
// (serve.Listen: a private directory, mode 0600, a lock against a second
// server, a stale socket replaced, the file removed on close), or a
// loopback TCP port.
func Listen(a Address) (net.Listener, error) {
	if a.Network == "unix" {
		return serve.Listen(a.Addr)
	}
	l, err := net.Listen("tcp", a.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a.Addr, err)
	}
	return l, nil
}

// peerHeader carries each HTTP request's client to the tool handlers,
// which see the request's headers only. ServeHTTP sets it from the
// connection on every request, over any value the client sent.
const peerHeader = "Tooljail-Peer"

type peerKey struct{}

// withPeerHeader sets the peer header of every request to the client its
// connection names (peerContext), "-1 -1 -1" when it names none, over any
// value the client sent.
func withPeerHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := &report.Peer{UID: -1, GID: -1, PID: -1}
		if peer, ok := r.Context().Value(peerKey{}).(func() *report.Peer); ok {
			p = peer()
		}
		r.Header.Set(peerHeader, fmt.Sprintf("%d %d %d", p.UID, p.GID, p.PID))
		h.ServeHTTP(w, r)
	})
}

// peerContext is an accepted connection's context, with a function that
// names its client.
func peerContext(ctx context.Context, conn net.Conn) context.Context {
	if _, ok := conn.(*net.UnixConn); ok {
		p := serve.PeerOf(conn)
		return context.WithValue(ctx, peerKey{}, func() *report.Peer { return p })
	}
	// SO_PEERCRED of a TCP socket names no one: the socket tables do.
	// They are read once per connection, as soon as it is accepted (while
	// the client surely holds it), off the accept loop (a scan of
	// /proc/*/fd takes a while).
	peer := make(chan *report.Peer, 1)
	go func() { peer <- tcpPeer(conn) }()
	return context.WithValue(ctx, peerKey{}, sync.OnceValue(func() *report.Peer { return <-peer }))
}

// ServeHTTP serves the tools of c over MCP's streamable HTTP transport
// (the SDK's handler, at any path) on l until ctx ends, then shuts down:
// it stops accepting, ends the running calls (their jails are killed and
// the calls recorded), and closes what is still open after grace. A
// request from a web page is refused with 403 (guardOrigin: a foreign
// Origin, or on TCP a Host that is not loopback). All sessions share c,
// so its rate limits and its audit log hold across them. Each call is
// recorded with its client as the kernel names it:
// SO_PEERCRED on a unix socket; on a loopback TCP port the uid that owns
// the client's socket in the kernel's socket tables, and the pid and gid
// of a process holding it (tcppeer), -1 for what cannot be seen (a
// client that closed first, a process of another user when the server
// is not root).
func ServeHTTP(ctx context.Context, c *call.Caller, l net.Listener, grace time.Duration) error {
	calls, endCalls := context.WithCancel(context.Background())
	defer endCalls()
	running := newCounter()
	srv, err := newServer(c, serverOptions{done: calls, clientOf: peerFromHeader, running: running})
	if err != nil {
		l.Close()
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{
		Handler:           guardOrigin(withPeerHeader(h), l.Addr().Network() != "unix"),
		ConnContext:       peerContext,
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Stop taking connections; the calls that run end (their jails are
	// killed), and each is recorded before its handler returns: only then
	// may the caller close the audit log. A call that arrives meanwhile
	// starts ended, and is recorded too.
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	endCalls()
	running.wait()
	// A session's event stream (GET) stays open while its client is
	// there: closing the sessions ends it, and Shutdown's wait.
	for ss := range srv.Sessions() {
		ss.Close()
	}
	if err := <-shut; err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tcpPeer is the client of a loopback TCP connection, -1s when the
// kernel's tables do not show it.
func tcpPeer(conn net.Conn) *report.Peer {
	o, err := tcppeer.Of(conn)
	if err != nil {
		return &report.Peer{UID: -1, GID: -1, PID: -1}
	}
	return &report.Peer{UID: o.UID, GID: o.GID, PID: o.PID}
}

// counter counts running calls; wait returns once none runs. Unlike a
// sync.WaitGroup, a call may start while another waits.
type counter struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func newCounter() *counter {
	c := &counter{}
	c.zero = sync.NewCond(&c.mu)
	return c
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counter) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 {
		c.zero.Broadcast()
	}
	c.mu.Unlock()
}

func (c *counter) wait() {
	c.mu.Lock()
	for c.n > 0 {
		c.zero.Wait()
	}
	c.mu.Unlock()
}

// peerFromHeader is the client ServeHTTP put in a call's request.
func peerFromHeader(req *mcp.CallToolRequest) report.Peer {
	p := report.Peer{UID: -1, GID: -1, PID: -1}
	if req.Extra == nil || req.Extra.Header == nil {
		return p
	}
	f := strings.Fields(req.Extra.Header.Get(peerHeader))
	if len(f) != 3 {
		return p
	}
	var n [3]int
	for i, s := range f {
		v, err := strconv.Atoi(s)
		if err != nil {
			return p
		}
		n[i] = v
	}
	return report.Peer{UID: n[0], GID: n[1], PID: n[2]}
}
