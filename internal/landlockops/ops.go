// Package landlockops is the list of file, socket and signal operations
// the Landlock tests try under a ruleset (through a jail in landlock/, on
// one thread against the init's own ruleset in jail/internal/initlandlock),
// so that both ask the kernel the same questions the same way. Only tests
// import it.
package landlockops

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Op is one thing to try.
type Op struct {
	Do   string `json:"do"`
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`
	Port int    `json:"port,omitempty"`
	Pid  int    `json:"pid,omitempty"`
}

// ErrName is "ok" for nil, else the errno's name, else the error's text.
func ErrName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// listeners keeps the sockets of "listen" ops open until the command exits.
var listeners []int

// Run does o and says how it went: "ok", an errno name, or a few words.
func Run(o Op) string {
	if do, ok := ops[o.Do]; ok {
		return do(o)
	}
	return "unknown op " + o.Do
}

// ops are the operations by name; each asks the kernel one question.
var ops = map[string]func(Op) string{
	"read":     readOp,
	"write":    writeOp,
	"create":   createOp,
	"truncate": func(o Op) string { return ErrName(unix.Truncate(o.Path, 0)) },
	"mkdir":    func(o Op) string { return ErrName(unix.Mkdir(o.Path, 0o755)) },
	"unlink":   func(o Op) string { return ErrName(unix.Unlink(o.Path)) },
	"readdir": func(o Op) string {
		_, err := os.ReadDir(o.Path)
		return ErrName(err)
	},
	"exec":     execOp,
	"link":     func(o Op) string { return ErrName(unix.Link(o.Path, o.To)) },
	"rename":   func(o Op) string { return ErrName(unix.Rename(o.Path, o.To)) },
	"connect":  inetOp,
	"bind":     inetOp,
	"listen":   inetOp,
	"kill0":    func(o Op) string { return ErrName(unix.Kill(o.Pid, 0)) },
	"abstract": abstractOp,
	"ptmx":     ptmxOp,
}

// readOp reads a file; "empty" tells an empty one from a refused read.
func readOp(o Op) string {
	b, err := os.ReadFile(o.Path)
	if err == nil && len(b) == 0 {
		return "empty"
	}
	return ErrName(err)
}

// writeOp opens an existing file for writing and writes one byte.
func writeOp(o Op) string {
	fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		_, err = unix.Write(fd, []byte("x"))
		unix.Close(fd)
	}
	return ErrName(err)
}

// createOp creates a new file.
func createOp(o Op) string {
	fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return ErrName(err)
}

// execOp runs a program and waits for it. It is forked from the calling
// thread: the one a per-thread Landlock domain restricts.
func execOp(o Op) string {
	pid, err := syscall.ForkExec(o.Path, []string{o.Path}, &syscall.ProcAttr{})
	if err != nil {
		return ErrName(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return ErrName(err)
	}
	if ws.ExitStatus() != 0 {
		return fmt.Sprintf("exit %d", ws.ExitStatus())
	}
	return "ok"
}

// inetOp connects, binds or listens to a TCP port on 127.0.0.1; a
// listening socket stays open until the command exits.
func inetOp(o Op) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ErrName(err)
	}
	sa := &unix.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}
	switch o.Do {
	case "connect":
		err = unix.Connect(fd, sa)
	case "bind":
		err = unix.Bind(fd, sa)
	case "listen":
		if err = unix.Bind(fd, sa); err == nil {
			err = unix.Listen(fd, 8)
		}
		if err == nil {
			listeners = append(listeners, fd)
			return "ok"
		}
	}
	unix.Close(fd)
	return ErrName(err)
}

// abstractOp connects to an abstract unix socket (Landlock's scope).
func abstractOp(o Op) string {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ErrName(err)
	}
	defer unix.Close(fd)
	return ErrName(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + o.Path}))
}

// ptmxOp opens a pty master and asks its number: the ioctl Landlock's
// device rights govern.
func ptmxOp(o Op) string {
	fd, err := unix.Open(o.Path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "open " + ErrName(err)
	}
	defer unix.Close(fd)
	_, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
	return ErrName(err)
}
