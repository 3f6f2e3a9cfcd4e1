package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads prog on every thread of the calling process with the raw
// seccomp(2) call (no libseccomp work happens here). no_new_privs must
// already be set. When prog.Notify, it returns the notification listener;
// the caller hands it to the supervisor (SendListener) and closes its own
// copy before execve. Otherwise it returns nil.
//
// From here on the filter applies to the caller too: everything it does
// until execve must be allowed. The default policy allows what the Go
// runtime needs, but a Policy may deny it (it may deny only what is not
// required: the jail's stage 2 runs no Go code). In notify mode a denied
// call blocks until the supervisor's Monitor answers.
func Install(prog *Program) (*os.File, error) {
	insns, flags, err := ThreadArgs(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: install: %w", err)
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("seccomp: install: read no_new_privs: %w", err)
	}
	if nnp != 1 {
		return nil, errors.New("seccomp: install: no_new_privs is not set; call prctl(PR_SET_NO_NEW_PRIVS, 1) (or apply Landlock) first")
	}
	// Every thread: TSYNC. TSYNC_ESRCH lets TSYNC and NEW_LISTENER share
	// one call: a thread that cannot be synchronised gives ESRCH instead
	// of its tid, which would be ambiguous with the listener fd.
	flags |= unix.SECCOMP_FILTER_FLAG_TSYNC
	if prog.Notify {
		flags |= unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	}
	fprog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(insns)
	switch {
	case errno == unix.ESRCH:
		return nil, errors.New("seccomp: install: a thread of this process could not be synchronised (it has a different seccomp filter or is exiting)")
	case errno != 0:
		return nil, fmt.Errorf("seccomp: install (flags %#x): %w", flags, errno)
	case !prog.Notify && r != 0:
		return nil, fmt.Errorf("seccomp: install: thread %d could not be synchronised to the filter", r)
	case !prog.Notify:
		return nil, nil
	}
	return os.NewFile(r, "seccomp-listener"), nil
}

// ThreadArgs returns what the raw seccomp(SECCOMP_SET_MODE_FILTER, flags,
// &prog) call takes to load prog on the calling thread only, for a caller
// that makes the call itself: the jail's stage 2, a single-threaded child
// forked to exec the command, which runs no Go code. With prog.Notify the
// call returns the listener fd. no_new_privs must be set first.
func ThreadArgs(prog *Program) ([]unix.SockFilter, uintptr, error) {
	if prog == nil {
		return nil, 0, errors.New("no program")
	}
	insns, err := decode(prog.Filter)
	if err != nil {
		return nil, 0, err
	}
	if len(insns) == 0 || len(insns) > unix.BPF_MAXINSNS {
		return nil, 0, fmt.Errorf("a program of %d instructions", len(insns))
	}
	var flags uintptr
	if prog.Notify {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		if flagsAccepted(flags | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) {
			flags |= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		}
	}
	return insns, flags, nil
}

// SendListener sends the listener over a connected AF_UNIX socket with
// SCM_RIGHTS. It runs after Install, under the filter, and uses sendmsg
// only. The caller still closes its own copy of l.
func SendListener(sock int, l *os.File) error {
	rights := unix.UnixRights(int(l.Fd()))
	if err := unix.Sendmsg(sock, []byte{'L'}, rights, nil, 0); err != nil {
		return fmt.Errorf("seccomp: send listener: %w", err)
	}
	runtime.KeepAlive(l)
	return nil
}

// RecvListener receives a listener sent by SendListener. The returned file
// is close-on-exec.
func RecvListener(sock int) (*os.File, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: receive listener: %w", err)
	}
	if n != 1 || buf[0] != 'L' {
		return nil, errors.New("seccomp: receive listener: the jail closed the channel or sent something else")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("seccomp: receive listener: bad control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("seccomp: receive listener: want one fd: %v", err)
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-listener"), nil
}
