package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the socket a server listens on when none is given:
// $XDG_RUNTIME_DIR/tooljail.sock, else /run/tooljail.sock for root, else
// /tmp/tooljail-$UID/sock.
func DefaultPath() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "tooljail.sock")
	}
	if os.Geteuid() == 0 {
		return "/run/tooljail.sock"
	}
	return "/tmp/tooljail-" + strconv.Itoa(os.Geteuid()) + "/sock"
}

// ClientPath is the socket a client dials when none is given: the
// TOOLJAIL_SERVER environment variable, else DefaultPath.
func ClientPath() string {
	if p := os.Getenv("TOOLJAIL_SERVER"); p != "" {
		return p
	}
	return DefaultPath()
}

// ErrListening is returned by Listen when a live server owns the socket.
var ErrListening = errors.New("a server is already listening")

// Listen creates the server's socket at path (DefaultPath when ""). The
// directory is created mode 0700 when missing and must belong to this
// process's user and be writable by nobody else, so that only that user
// (and root) can reach the socket, which is mode 0600. A socket file that
// nobody listens on (a server that died) is replaced; one a server
// answers on is an error wrapping ErrListening.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		path = DefaultPath()
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("socket %s: %w", path, err)
		}
		path = abs
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	// The directory is private: nobody can reach the socket between
	// bind(2) and the chmod below.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return l, nil
}

// checkDir makes the socket's directory (mode 0700) when it is missing,
// and refuses one that another user owns or others may write to: they
// could replace the socket under the clients.
func checkDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("socket directory %s: %w; create it (mode 0700) or pass --socket", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	return dirProblem(dir, fi, os.Geteuid())
}

// dirProblem is why a socket directory with fi may not hold the socket
// of a server running as uid, or nil.
func dirProblem(dir string, fi os.FileInfo, uid int) error {
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s: not a directory (a symlink is not followed); pass --socket with a path in a directory of your own", dir)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid {
		return fmt.Errorf("socket directory %s: owned by uid %d, not by this server's uid %d; use a directory of your own (--socket)", dir, st.Uid, uid)
	}
	// Private, not only unwritable: another user who can reach the socket
	// between bind(2) and its chmod could connect, and one who can write
	// the directory could replace it.
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("socket directory %s: mode %04o lets other users in; it must be private to the server's user (chmod 700 it) or pass --socket with a path in a private directory", dir, fi.Mode().Perm())
	}
	return nil
}

// removeStale removes a socket at path that nobody answers on. A live one
// is ErrListening; a file that is not a socket is left alone, as an error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("socket %s: exists and is not a socket; remove it or choose another --socket", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%w on %s; stop it first, or choose another --socket", ErrListening, path)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("socket %s: cannot tell whether a server listens on it: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	return nil
}
