package jail

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// The supervisor, the init and stage 2 talk over one SOCK_SEQPACKET
// socketpair: one message per packet (wire.go), file descriptors as
// SCM_RIGHTS.
// The supervisor sends initConfig once; init and stage 2 send messages back.
// Stage 2 marks its copy close-on-exec, so the command never sees the socket.

// argInit is the init's argv[0]: the binary re-executed as the jail's PID 1.
const argInit = "tooljail-init"

// maxMessage bounds one packet; the config (mount plan and BPF program)
// is a few KiB.
const maxMessage = 1 << 20

// initConfig is everything the init and stage 2 need.
type initConfig struct {
	Mounts   []Mount
	Hostname string
	NetNone  bool
	// DropGroups clears the supplementary groups (possible only when the
	// supervisor is real root; unprivileged user namespaces deny setgroups).
	DropGroups bool
	Home       string
	HostUID    int
	// Resolv binds the host's resolv.conf (shared network only).
	Resolv bool
	// Stage2 is what the init prepares stage 2 with.
	Stage2 stage2Config
}

// stage2Config is the part stage 2 applies before execve.
type stage2Config struct {
	Args     []string
	Env      []string
	Dir      string
	NoFile   uint64
	FSize    int64
	CPUTime  int64 // seconds (RLIMIT_CPU)
	Landlock *landlock.Policy
	Seccomp  *seccomp.Program
	// WaitAck makes stage 2 wait, after msgReady, until the supervisor has
	// registered it (the Landlock denial watcher needs its host pid first).
	WaitAck bool
	// NoHugePages is the supervisor's own PR_SET_THP_DISABLE setting, which
	// the command gets back (the init runs with huge pages off).
	NoHugePages bool
}

// Message types sent to the supervisor.
const (
	msgSetupError = "setup_error" // init or stage 2 failed before the command ran
	msgExecError  = "exec_error"  // execve failed: not found (127) or not executable (126)
	msgReady      = "ready"       // stage 2 is about to execve; carries the notify fd
	msgExit       = "exit"        // init: the command ended
	msgAck        = "ack"         // supervisor to stage 2: go on
)

type message struct {
	Type     string
	Error    string
	Code     int
	Landlock *landlock.Enforced
	Notify   bool // an fd rides along
	// Exit status of the command (msgExit).
	ExitCode int
	Signal   int
	Rusage   *rusage
}

// rusage is what the init's children (the command and every orphan the init
// reaped) used, from getrusage(RUSAGE_CHILDREN).
type rusage struct {
	UserUsec   int64
	SystemUsec int64
	MaxRSSKiB  int64
}

// send writes v (a *message or *initConfig) as one packet, with files as
// SCM_RIGHTS.
func send(fd int, v any, files ...int) error {
	b, err := marshalWire(v)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("message of %d bytes, more than the %d the channel carries", len(b), maxMessage)
	}
	var oob []byte
	if len(files) > 0 {
		oob = unix.UnixRights(files...)
	}
	return unix.Sendmsg(fd, b, oob, nil, 0)
}

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
		// bytes, and a fresh 1 MiB buffer per packet costs page faults
		// and garbage collections in these short-lived processes.
		size, _, _, _, err := unix.Recvmsg(fd, nil, nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return packet{}, err
		}
		buf := make([]byte, max(1, min(size, maxMessage)))
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
