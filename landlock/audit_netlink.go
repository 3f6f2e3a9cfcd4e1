package landlock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel audit netlink numbers (include/uapi/linux/audit.h) that x/sys does
// not name.
const (
	auditNlgrpReadlog = 1    // AUDIT_NLGRP_READLOG: read-only multicast of every record
	auditUser         = 1005 // AUDIT_USER: a user-space message, used as sync marker
	auditEOE          = 1320 // end of a multi-record event
	auditSyscall      = 1300
	auditAccess       = unix.AUDIT_LANDLOCK_ACCESS // 1423
	auditDomain       = unix.AUDIT_LANDLOCK_DOMAIN // 1424
)

// auditStatus is the head of struct audit_status (the fields we read).
type auditStatus struct {
	Mask, Enabled, Failure, Pid, RateLimit, BacklogLimit, Lost, Backlog uint32
}

// auditConn is a NETLINK_AUDIT socket joined to the read-only log group.
type auditConn struct {
	f   *os.File // non-blocking, in Go's poller: Close wakes a blocked Read
	fd  int
	seq uint32
}

// dialAudit opens the socket and joins AUDIT_NLGRP_READLOG. The kernel only
// multicasts to sockets in the initial network namespace, and joining needs
// CAP_AUDIT_READ in the initial user namespace.
func dialAudit() (*auditConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		if errors.Is(err, unix.EPROTONOSUPPORT) {
			return nil, fmt.Errorf("%w: the kernel has no audit support (CONFIG_AUDIT is off)", ErrNotObservable)
		}
		return nil, fmt.Errorf("%w: socket(NETLINK_AUDIT): %v", ErrNotObservable, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (auditNlgrpReadlog - 1)}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: joining the audit log multicast group needs CAP_AUDIT_READ in the initial user namespace (run the supervisor as root, not in a container)", ErrNotObservable)
		}
		return nil, fmt.Errorf("%w: bind(NETLINK_AUDIT, readlog group): %v", ErrNotObservable, err)
	}
	// A burst of denials must not overflow the socket; the overflow is
	// counted (ENOBUFS) rather than blocking the kernel.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	return &auditConn{f: os.NewFile(uintptr(fd), "audit-netlink"), fd: fd}, nil
}

func (c *auditConn) close() error { return c.f.Close() }

// send writes one netlink request to the kernel.
func (c *auditConn) send(typ uint16, flags uint16, payload []byte) error {
	c.seq++
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], typ)
	binary.NativeEndian.PutUint16(msg[6:8], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(msg[8:12], c.seq)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	return unix.Sendto(c.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// read returns the next message: type and payload. Audit records are not
// padded to NLMSG_ALIGN, so syscall.ParseNetlinkMessage rejects them; one
// datagram carries one record.
func (c *auditConn) read(buf []byte) (uint16, []byte, error) {
	n, err := c.f.Read(buf)
	if err != nil {
		return 0, nil, err
	}
	if n < unix.NLMSG_HDRLEN {
		return 0, nil, fmt.Errorf("short netlink message (%d bytes)", n)
	}
	typ := binary.NativeEndian.Uint16(buf[4:6])
	l := int(binary.NativeEndian.Uint32(buf[0:4]))
	if l > n || l < unix.NLMSG_HDRLEN {
		l = n
	}
	return typ, buf[unix.NLMSG_HDRLEN:l], nil
}

// status asks the kernel for audit_status (needs CAP_AUDIT_CONTROL). The
// answer arrives on the same socket; multicast records read meanwhile are
// dropped, which is fine before any run is tracked.
func (c *auditConn) status() (auditStatus, error) {
	var st auditStatus
	if err := c.send(unix.AUDIT_GET, 0, nil); err != nil {
		return st, err
	}
	buf := make([]byte, 1<<16)
	for range 64 {
		typ, data, err := c.readWait(buf)
		if err != nil {
			return st, err
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(data[:4])); e < 0 {
					return st, unix.Errno(-e)
				}
			}
		case unix.AUDIT_GET:
			if len(data) < int(unsafe.Sizeof(st)) {
				return st, fmt.Errorf("short audit_status (%d bytes)", len(data))
			}
			st = *(*auditStatus)(unsafe.Pointer(&data[0]))
			return st, nil
		}
	}
	return st, errors.New("no AUDIT_GET reply")
}

// readWait reads with a deadline, for the request/answer exchanges.
func (c *auditConn) readWait(buf []byte) (uint16, []byte, error) {
	if err := c.f.SetReadDeadline(deadline(statusTimeout)); err != nil {
		return 0, nil, err
	}
	defer c.f.SetReadDeadline(noDeadline)
	return c.read(buf)
}
