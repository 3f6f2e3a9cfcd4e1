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
	switch o.Do {
	case "read":
		b, err := os.ReadFile(o.Path)
		if err == nil && len(b) == 0 {
			return "empty"
		}
		return ErrName(err)
	case "write":
		fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte("x"))
			unix.Close(fd)
		}
		return ErrName(err)
	case "create":
		fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return ErrName(err)
	case "truncate":
		return ErrName(unix.Truncate(o.Path, 0))
	case "mkdir":
		return ErrName(unix.Mkdir(o.Path, 0o755))
	case "unlink":
		return ErrName(unix.Unlink(o.Path))
	case "readdir":
		_, err := os.ReadDir(o.Path)
		return ErrName(err)
	case "exec":
		// Forked from the calling thread: the one a per-thread Landlock
		// domain restricts.
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
	case "link":
		return ErrName(unix.Link(o.Path, o.To))
	case "rename":
		return ErrName(unix.Rename(o.Path, o.To))
	case "connect", "bind", "listen":
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
	case "kill0":
		return ErrName(unix.Kill(o.Pid, 0))
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return ErrName(err)
		}
		defer unix.Close(fd)
		return ErrName(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + o.Path}))
	case "ptmx":
		fd, err := unix.Open(o.Path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "open " + ErrName(err)
		}
		defer unix.Close(fd)
		_, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return ErrName(err)
	}
	return "unknown op " + o.Do
}
