package serve

import (
	"net"

	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/serve/internal/sockfile"
)

// The server's socket file is package serve/internal/sockfile's; these
// names are serve's API for it.

// DefaultPath is the socket a server listens on when none is given:
// $XDG_RUNTIME_DIR/tooljail.sock, else /run/tooljail/sock for root, else
// /tmp/tooljail-$UID/sock.
func DefaultPath() string { return sockfile.DefaultPath() }

// ClientPath is the socket a client dials when none is given: the
// TOOLJAIL_SERVER environment variable, else DefaultPath.
func ClientPath() string { return sockfile.ClientPath() }

// ErrListening is returned by Listen when a live server owns the socket.
var ErrListening = sockfile.ErrListening

// LockSuffix names a socket's lock file: the socket's path and this.
const LockSuffix = sockfile.LockSuffix

// Listen creates the server's socket at path (DefaultPath when ""), in a
// directory of this user's that nobody else may write, mode 0600, under
// an exclusive lock on path+LockSuffix that it holds until it is closed:
// of servers started at once on one socket exactly one serves, the others
// get an error wrapping ErrListening. A stale socket is replaced.
// Closing the listener removes the socket, then the lock file. A Server
// that shuts down stops accepting at once but keeps the lock until its
// drain is over. (sockfile.Listen has the whole story.)
func Listen(path string) (net.Listener, error) { return sockfile.Listen(path) }

// PeerOf is the client at the other end of conn as the kernel recorded it
// when it connected (SO_PEERCRED on a unix socket); -1s when it cannot be
// had (a TCP connection: internal/tcppeer names a loopback one).
// `tooljail mcp --listen` records its unix socket's HTTP clients with it.
func PeerOf(conn net.Conn) *report.Peer { return peerOf(conn) }
