// Package sockfile is a server's socket file: where it is by default
// (DefaultPath, ClientPath), the rules of its directory (this user's,
// writable by nobody else), the lock that makes one server its owner, a
// stale socket replaced and a live one refused (Listen), and a Listener
// that removes the file when it closes. Package serve listens with it;
// it imports nothing of tooljail.
package sockfile

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the socket a server listens on when none is given:
// $XDG_RUNTIME_DIR/tooljail.sock, else /run/tooljail/sock for root, else
// /tmp/tooljail-$UID/sock.
func DefaultPath() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "tooljail.sock")
	}
	if os.Geteuid() == 0 {
		return "/run/tooljail/sock"
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
//
// The listener holds an exclusive lock on path+".lock" (LockSuffix) from
// before it looks at the socket until it is closed, so that of servers
// started at once on one socket exactly one serves; the others get an
// error wrapping ErrListening that names the holder's pid. Closing the
// listener removes the socket, then the lock file, then lets the lock go.
// A Server that shuts down stops accepting at once but keeps the lock
// until its drain is over.
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
	lock, err := lockSocket(path)
	if err != nil {
		return nil, err
	}
	// Only the lock's holder replaces a stale socket: two servers that
	// both saw it stale would otherwise each remove the other's new one.
	if err := removeStale(path); err != nil {
		lock.release()
		return nil, err
	}
	// The directory is private: nobody can reach the socket between
	// bind(2) and the chmod below.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		lock.release()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &Listener{UnixListener: l, lock: lock}, nil
}

// LockSuffix names a socket's lock file: the socket's path and this.
const LockSuffix = ".lock"

// Listener is the socket Listen made and the lock that makes it this
// server's.
type Listener struct {
	*net.UnixListener
	lock *socketLock
}

// Close closes the socket (removing its file) and releases the lock.
func (l *Listener) Close() error {
	err := l.StopAccepting()
	l.lock.release()
	return err
}

// StopAccepting closes the socket and removes its file, and keeps the
// lock. A second call does nothing.
func (l *Listener) StopAccepting() error {
	err := l.UnixListener.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// LockPath is the path of the listener's lock file.
func (l *Listener) LockPath() string { return l.lock.path }

// socketLock is a held lock file.
type socketLock struct {
	path string
	f    *os.File
	once sync.Once
}

// lockSocket takes the lock of the socket at path: path+LockSuffix, opened
// (created mode 0600) without following a symlink, locked with flock
// LOCK_EX|LOCK_NB. A holder removes the file before it lets the lock go,
// so a lock won on a file that is no longer at the path (the holder
// removed it after this open) guards nothing: it is dropped and the path
// opened again. A held lock is an error wrapping ErrListening naming the
// holder's pid, which each holder writes into the file.
func lockSocket(path string) (*socketLock, error) {
	lockPath := path + LockSuffix
	for range 100 {
		fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock file %s: %w; remove it if it is not a regular file of yours, or choose another --socket", lockPath, err)
		}
		f := os.NewFile(uintptr(fd), lockPath)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock file %s: %w", lockPath, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			f.Close()
			return nil, fmt.Errorf("lock file %s: not a regular file; remove it or choose another --socket", lockPath)
		}
		if testHookBeforeFlock != nil {
			testHookBeforeFlock()
		}
		if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w on %s (%s holds %s); stop it first, or choose another --socket", ErrListening, path, holderOf(lockPath), lockPath)
			}
			return nil, fmt.Errorf("lock %s: %w", lockPath, err)
		}
		var now unix.Stat_t
		if err := unix.Lstat(lockPath, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			f.Close() // the holder removed it before letting go: again
			continue
		}
		// The file may be a dead server's: its pid goes.
		if err := f.Truncate(0); err == nil {
			f.Chmod(0o600)
			unix.Write(fd, []byte(strconv.Itoa(os.Getpid())+"\n"))
		}
		return &socketLock{path: lockPath, f: f}, nil
	}
	return nil, fmt.Errorf("lock file %s: replaced under this server 100 times; is another program removing it?", lockPath)
}

// testHookBeforeFlock, when set, runs between the lock file's open and
// its flock: a test widens the window in which its holder can remove it.
var testHookBeforeFlock func()

// flock is flock(2), again after EINTR.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// holderOf names the process that holds the lock file at path: "pid N",
// from what it wrote there. A holder that has just taken the lock may not
// have written it yet (the file is empty, or still names the dead server
// it was left by): it is given a moment.
func holderOf(path string) string {
	for range 50 {
		if pid := holderPID(path); pid > 0 && alive(pid) {
			return "pid " + strconv.Itoa(pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "another process"
}

// alive is whether a process pid exists (of any user).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

// holderPID is the pid written in the lock file at path, or 0.
func holderPID(path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	buf := make([]byte, 32)
	n, _ := unix.Read(fd, buf)
	if n <= 0 {
		return 0
	}
	return parsePID(string(buf[:n]))
}

// parsePID reads a lock file's content: a pid and a newline, or 0 when it
// is not that (empty, or still being written).
func parsePID(s string) int {
	t, ok := strings.CutSuffix(s, "\n")
	if !ok {
		return 0
	}
	pid, err := strconv.Atoi(t)
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// release removes the lock file while still holding the lock (so that a
// process that opened it meanwhile finds it gone once it wins the lock,
// and tries again), then lets the lock go. Only a file still at the path
// is removed: never another holder's. A second call does nothing.
func (l *socketLock) release() {
	l.once.Do(func() {
		var st, now unix.Stat_t
		if unix.Fstat(int(l.f.Fd()), &st) == nil && unix.Lstat(l.path, &now) == nil && st.Dev == now.Dev && st.Ino == now.Ino {
			os.Remove(l.path)
		}
		l.f.Close()
	})
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
