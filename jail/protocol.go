package jail

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The supervisor, the init and stage 2 talk over one SOCK_SEQPACKET
// socketpair. The init and stage 2 send records (struct tj_record,
// failure.go), one per packet, with stage 2's seccomp listener as
// SCM_RIGHTS; the supervisor sends stage 2 a one-byte ack when it
// asked for one. Stage 2 marks its copy close-on-exec, so the command
// never sees the socket.

// maxPacket bounds one packet: a record with a path.
const maxPacket = 1 << 16

// packet is one message as received, with its fds and, when the socket has
// SO_PASSCRED, the sender's pid as the receiver's PID namespace sees it.
type packet struct {
	data  []byte
	files []*os.File
	pid   int
}

// recvPacket reads one packet. End of stream is an empty packet.
func recvPacket(fd int) (packet, error) {
	oob := make([]byte, unix.CmsgSpace(4*4)+unix.CmsgSpace(unix.SizeofUcred))
	for {
		// The packet's size first (MSG_TRUNC gives a datagram's full
		// length), so the buffer fits it: most packets are a few dozen
		// bytes.
		size, _, _, _, err := unix.Recvmsg(fd, nil, nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return packet{}, err
		}
		buf := make([]byte, max(1, min(size, maxPacket)))
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return packet{}, err
		}
		p := packet{data: buf[:n]}
		if oobn > 0 {
			cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return packet{}, fmt.Errorf("parse control message: %w", err)
			}
			for _, c := range cmsgs {
				if cred, err := unix.ParseUnixCredentials(&c); err == nil {
					p.pid = int(cred.Pid)
					continue
				}
				fds, err := unix.ParseUnixRights(&c)
				if err != nil {
					continue
				}
				for _, f := range fds {
					p.files = append(p.files, os.NewFile(uintptr(f), "jail-fd"))
				}
			}
		}
		return p, nil
	}
}
