// Package initlink is the supervisor's end of its link with a jail's
// init: the SOCK_SEQPACKET socket's packets, waited for in Go's poller,
// the descriptors sent before the sync byte, and the init process itself,
// held by its pidfd (signals, its end). What the packets say is package
// initc's (records, call messages); what they mean for a run, package
// jail's.
package initlink

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initc"
)

// The supervisor, the init and stage 2 talk over one SOCK_SEQPACKET
// socketpair. The init and stage 2 send records (struct tj_record,
// initc.ParseRecord), one per packet, with stage 2's seccomp listener as
// SCM_RIGHTS; the supervisor sends stage 2 a one-byte ack when it
// asked for one. Stage 2 marks its copy close-on-exec, so the command
// never sees the socket.
//
// The supervisor's end is non-blocking, and its reader waits in the Go
// runtime's poller (PollSocket): a goroutine blocked in recvmsg holds its
// P in a system call, and while any P is not idle the runtime's sysmon
// thread polls instead of sleeping, through the command's whole run and
// on its CPU (BENCHMARKS.md, issue 31). Sends wait for room in
// SendPacket.

// maxPacket bounds one packet: a record with a path.
const maxPacket = 1 << 16

// Packet is one message as received, with its fds and, when the socket has
// SO_PASSCRED, the sender's pid as the receiver's PID namespace sees it.
type Packet struct {
	Data  []byte
	Files []*os.File
	PID   int
}

// PollSocket is sock as the poller's own descriptor: a duplicate, so that
// closing it (when the reader is done) leaves sock to its owner. It makes
// the socket non-blocking, for its other users too.
func PollSocket(sock int) (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(sock), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the jail's socket: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the jail's socket: %w", err)
	}
	// Non-blocking before NewFile: only then is the file the poller's.
	return os.NewFile(uintptr(fd), "jail-socket"), nil
}

// RecvPacket reads one packet, waiting for it in the poller. End of
// stream is an empty packet.
func RecvPacket(rc syscall.RawConn) (Packet, error) {
	var p Packet
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		p, rerr = RecvPacketNow(int(fd))
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return Packet{}, err
	}
	return p, rerr
}

// RecvPacketNow reads the packet that is there, or fails with EAGAIN.
func RecvPacketNow(fd int) (Packet, error) {
	oob := make([]byte, unix.CmsgSpace(4*4)+unix.CmsgSpace(unix.SizeofUcred))
	for {
		// The packet's size first (MSG_TRUNC gives a datagram's full
		// length), so the buffer fits it: most packets are a few dozen
		// bytes.
		size, _, _, _, err := unix.Recvmsg(fd, nil, nil, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Packet{}, err
		}
		buf := make([]byte, max(1, min(size, maxPacket)))
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Packet{}, err
		}
		p := Packet{Data: buf[:n]}
		if oobn > 0 {
			cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return Packet{}, fmt.Errorf("parse control message: %w", err)
			}
			for _, c := range cmsgs {
				if cred, err := unix.ParseUnixCredentials(&c); err == nil {
					p.PID = int(cred.Pid)
					continue
				}
				fds, err := unix.ParseUnixRights(&c)
				if err != nil {
					continue
				}
				for _, f := range fds {
					p.Files = append(p.Files, os.NewFile(uintptr(f), "jail-fd"))
				}
			}
		}
		return p, nil
	}
}

// SendPacket sends one packet on the jail's socket, waiting for room
// when the init has not read the packets before it (the socket is
// non-blocking: PollSocket). Poll reports room once the queue is down to
// a quarter of the buffer, where a blocking send goes on with the first
// free packet's room; the init reads each message as it comes.
func SendPacket(sock int, data, oob []byte) error {
	for {
		err := unix.Sendmsg(sock, data, oob, nil, unix.MSG_NOSIGNAL)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLOUT}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return err
			}
			continue
		}
		return err
	}
}

// SendFDs sends the sources' descriptors to the init, before the sync byte.
func SendFDs(sock int, fds []int) error {
	for len(fds) > 0 {
		n := min(len(fds), initc.FDsPerMsg)
		if err := SendPacket(sock, []byte{0}, unix.UnixRights(fds[:n]...)); err != nil {
			return fmt.Errorf("send the host paths' descriptors to the jail's init: %w", err)
		}
		fds = fds[n:]
	}
	return nil
}
