// Command tjsys makes raw system calls chosen by name, with harmless
// arguments, so that the integration tests can check what the jail's
// seccomp filter does with each of them. It is static and pure Go
// (CGO_ENABLED=0).
//
// Usage:
//
//	tjsys CALL [CALL...]      one line per call, in order: "ok" or "errno NAME"
//	tjsys loop getppid N      N getppid calls, then "ok" (for the benchmark)
//
// A CALL may also be a file or signal operation with its arguments after
// colons (for the Landlock tests): write:PATH (create or truncate, write
// "tjsys"), truncate:PATH, link:OLD:NEW, rename:OLD:NEW, unlink:PATH,
// read:PATH (prints "data QUOTED-CONTENT" on success), kill:PID:SIGNUM (PID
// may be "self"); nr:NUMBER makes the raw system call NUMBER (decimal, 0x
// hex, or negative: nr:-1 is syscall(-1)) with zero arguments, only inside
// a jail (for the x32-bit tests).
//
// The arguments are chosen so that a call that gets past the filter does no
// harm either: null or invalid pointers and descriptors, query-only modes,
// and the jail's lack of capabilities for the rest. The setuid and setgid
// calls work on files tjsys creates in its working directory (tjsys-*),
// which a test can inspect afterwards. The tests only rely on the filter's
// answer (EPERM, or ENOSYS for clone3 and openat2), never on the kernel's.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// call makes one system call and returns its errno (0 on success).
type call func() unix.Errno

func sys(nr uintptr, a ...uintptr) unix.Errno {
	var v [6]uintptr
	copy(v[:], a)
	_, _, e := unix.Syscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	return e
}

func ptr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

func str(s string) uintptr {
	b, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(b))
}

const atFDCWD = ^uintptr(99) // AT_FDCWD (-100) as an unsigned register

// nowhere is a path that does not exist: a mount-family call that got past
// the filter (a broken jail, or a run outside one) fails with ENOENT.
const nowhere = "/nonexistent-tjsys"

// badKexecFlags has an unknown flag bit: EINVAL rather than unloading the
// loaded kexec image (which nr_segments 0 would do).
const badKexecFlags = 0x1000

const badFD = ^uintptr(0) // -1

// highBits are set in an ioctl request to check that the filter compares
// only the low 32 bits, as the kernel does (cmd is an unsigned int).
const highBits = uintptr(0xffffffff) << 32

var calls = map[string]call{
	// Controls: allowed by the default policy.
	"getppid": func() unix.Errno { return sys(unix.SYS_GETPPID) },
	"personality-query": func() unix.Errno {
		return sys(unix.SYS_PERSONALITY, 0xffffffff)
	},
	"ioctl-tcgets": func() unix.Errno {
		var t unix.Termios
		return sys(unix.SYS_IOCTL, 0, unix.TCGETS, ptr(&t))
	},
	"socket-inet": func() unix.Errno { return socket(unix.AF_INET, unix.SOCK_STREAM, 0) },
	"socket-netlink-route": func() unix.Errno {
		return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	},

	// Namespaces.
	"unshare": func() unix.Errno { return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) },
	"setns":   func() unix.Errno { return sys(unix.SYS_SETNS, ^uintptr(0), 0) },
	"clone":   cloneNewNet,
	"clone3": func() unix.Errno {
		// A valid clone_args (fork semantics) so that ENOSYS can only come
		// from the filter: a kernel that ran it would fork.
		args := struct{ flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64 }{exitSignal: uint64(unix.SIGCHLD)}
		r, _, e := unix.RawSyscall(unix.SYS_CLONE3, ptr(&args), unsafe.Sizeof(args), 0)
		if e == 0 && r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		if e == 0 {
			var ws unix.WaitStatus
			unix.Wait4(int(r), &ws, 0, nil)
		}
		return e
	},

	// Mounts.
	"mount":    func() unix.Errno { return sys(unix.SYS_MOUNT, str("none"), str(nowhere), str("tmpfs"), 0, 0) },
	"umount2":  func() unix.Errno { return sys(unix.SYS_UMOUNT2, str(nowhere), 0) },
	"fsopen":   func() unix.Errno { return sys(unix.SYS_FSOPEN, str("tmpfs"), 0) },
	"fsconfig": func() unix.Errno { return sys(unix.SYS_FSCONFIG, ^uintptr(0), unix.FSCONFIG_CMD_CREATE, 0, 0, 0) },
	"fsmount":  func() unix.Errno { return sys(unix.SYS_FSMOUNT, ^uintptr(0), 0, 0) },
	"move_mount": func() unix.Errno {
		return sys(unix.SYS_MOVE_MOUNT, ^uintptr(0), str(""), atFDCWD, str(nowhere), 0)
	},
	"open_tree":     func() unix.Errno { return sys(unix.SYS_OPEN_TREE, atFDCWD, str(nowhere), 0) },
	"mount_setattr": func() unix.Errno { return sys(unix.SYS_MOUNT_SETATTR, ^uintptr(0), str(""), 0, 0, 0) },
	"pivot_root":    func() unix.Errno { return sys(unix.SYS_PIVOT_ROOT, str(nowhere), str(nowhere)) },
	"chroot":        func() unix.Errno { return sys(unix.SYS_CHROOT, str(nowhere)) },

	// Other processes.
	// PEEKUSER on ourselves, whom we do not trace: ESRCH when allowed.
	// Not PTRACE_TRACEME: allowed, it would stop the process at its next
	// signal until the parent (which does not trace) continues it.
	"ptrace": func() unix.Errno { return sys(unix.SYS_PTRACE, unix.PTRACE_PEEKUSR, uintptr(os.Getpid()), 0, 0) },
	"process_vm_readv": func() unix.Errno {
		// Read one byte of our own memory.
		var src, dst byte = 1, 0
		local := unix.Iovec{Base: &dst, Len: 1}
		remote := unix.Iovec{Base: &src, Len: 1}
		return sys(unix.SYS_PROCESS_VM_READV, uintptr(os.Getpid()), ptr(&local), 1, ptr(&remote), 1, 0)
	},
	"process_vm_writev": func() unix.Errno {
		var src, dst byte = 1, 0
		local := unix.Iovec{Base: &src, Len: 1}
		remote := unix.Iovec{Base: &dst, Len: 1}
		return sys(unix.SYS_PROCESS_VM_WRITEV, uintptr(os.Getpid()), ptr(&local), 1, ptr(&remote), 1, 0)
	},

	// Kernel interfaces.
	"bpf":             func() unix.Errno { return sys(unix.SYS_BPF, unix.BPF_MAP_CREATE, 0, 0) },
	"perf_event_open": func() unix.Errno { return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0) },
	"keyctl": func() unix.Errno {
		const sessionKeyring = ^uintptr(2) // KEY_SPEC_SESSION_KEYRING (-3)
		return sys(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, sessionKeyring, 0)
	},
	"add_key":         func() unix.Errno { return sys(unix.SYS_ADD_KEY, str("user"), str("tjsys"), 0, 0, ^uintptr(0)) },
	"request_key":     func() unix.Errno { return sys(unix.SYS_REQUEST_KEY, str("user"), str("tjsys"), 0, 0) },
	"userfaultfd":     func() unix.Errno { return closeFD(sys2(unix.SYS_USERFAULTFD, unix.O_CLOEXEC)) },
	"io_uring_setup":  func() unix.Errno { return sys(unix.SYS_IO_URING_SETUP, 1, 0) },
	"io_uring_enter":  func() unix.Errno { return sys(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0) },
	"init_module":     func() unix.Errno { return sys(unix.SYS_INIT_MODULE, 0, 0, str("")) },
	"finit_module":    func() unix.Errno { return sys(unix.SYS_FINIT_MODULE, ^uintptr(0), str(""), 0) },
	"delete_module":   func() unix.Errno { return sys(unix.SYS_DELETE_MODULE, str("tjsys_nonexistent"), unix.O_NONBLOCK) },
	"kexec_load":      func() unix.Errno { return sys(unix.SYS_KEXEC_LOAD, 0, 0, 0, badKexecFlags) },
	"kexec_file_load": func() unix.Errno { return sys(unix.SYS_KEXEC_FILE_LOAD, ^uintptr(0), ^uintptr(0), 0, 0, badKexecFlags) },
	// Bad magic: the kernel would answer EINVAL.
	"reboot":  func() unix.Errno { return sys(unix.SYS_REBOOT, 0, 0, 0, 0) },
	"swapon":  func() unix.Errno { return sys(unix.SYS_SWAPON, str(nowhere), 0) },
	"swapoff": func() unix.Errno { return sys(unix.SYS_SWAPOFF, str(nowhere)) },
	"acct":    func() unix.Errno { return sys(unix.SYS_ACCT, str(nowhere)) },
	// Both null: a no-op that returns 0 when allowed.
	"settimeofday": func() unix.Errno { return sys(unix.SYS_SETTIMEOFDAY, 0, 0) },
	// CLOCK_MONOTONIC cannot be set: EINVAL when allowed.
	"clock_settime": func() unix.Errno {
		var ts unix.Timespec
		return sys(unix.SYS_CLOCK_SETTIME, unix.CLOCK_MONOTONIC, ptr(&ts))
	},
	// modes 0 only reads the kernel's clock state.
	"adjtimex": func() unix.Errno {
		var tx unix.Timex
		return sys(unix.SYS_ADJTIMEX, ptr(&tx))
	},
	"open_by_handle_at": func() unix.Errno { return sys(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0) },
	"name_to_handle_at": func() unix.Errno {
		return sys(unix.SYS_NAME_TO_HANDLE_AT, atFDCWD, str("/"), 0, 0, 0)
	},
	// PER_BSD: not one of the default personas.
	"personality": func() unix.Errno { return sys(unix.SYS_PERSONALITY, 0x0006) },

	// Terminal input injection, on an invalid descriptor: EBADF if the
	// filter let it through, never a character pushed into a terminal.
	"ioctl-tiocsti": func() unix.Errno {
		c := byte('x')
		return sys(unix.SYS_IOCTL, badFD, unix.TIOCSTI, ptr(&c))
	},
	"ioctl-tiocsti-highbits": func() unix.Errno {
		c := byte('x')
		return sys(unix.SYS_IOCTL, badFD, highBits|unix.TIOCSTI, ptr(&c))
	},
	"ioctl-tioclinux": func() unix.Errno {
		sub := byte(0) // an invalid subcode
		return sys(unix.SYS_IOCTL, badFD, unix.TIOCLINUX, ptr(&sub))
	},
	"ioctl-tioclinux-highbits": func() unix.Errno {
		sub := byte(0)
		return sys(unix.SYS_IOCTL, badFD, highBits|unix.TIOCLINUX, ptr(&sub))
	},

	// Sockets.
	"socket-packet":        func() unix.Errno { return socket(unix.AF_PACKET, unix.SOCK_RAW, 0) },
	"socket-mptcp":         func() unix.Errno { return socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP) },
	"socket-netlink-audit": func() unix.Errno { return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT) },

	// setuid and setgid bits, on files in the working directory: the
	// filter denies every way of setting or creating them (EPERM); the
	// same calls without those bits are controls that must work. The
	// legacy calls (chmod, creat, open, mkdir, mknod) exist on x86_64 only.
	"chmod-setuid":     legacy("chmod", setidFile, unix.S_ISUID|0o755),
	"chmod-0755":       legacy("chmod", setidFile, 0o755),
	"fchmod-setgid":    fchmodSetgid,
	"fchmodat-setgid":  func() unix.Errno { return sys(unix.SYS_FCHMODAT, atFDCWD, setidFile(), unix.S_ISGID|0o755) },
	"fchmodat-0755":    func() unix.Errno { return sys(unix.SYS_FCHMODAT, atFDCWD, setidFile(), 0o755) },
	"fchmodat2-setuid": func() unix.Errno { return sys(unix.SYS_FCHMODAT2, atFDCWD, setidFile(), unix.S_ISUID|0o755, 0) },
	"creat-setuid":     legacy("creat", newPath("creat-setuid"), unix.S_ISUID|0o755),
	"creat-0755":       legacy("creat", newPath("creat-0755"), 0o755),
	"open-creat-setgid": legacy("open", newPath("open-creat-setgid"),
		unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, unix.S_ISGID|0o755),
	"openat-creat-setuid": func() unix.Errno {
		return closeFD(sys2(unix.SYS_OPENAT, atFDCWD, newPath("openat-creat-setuid")(), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, unix.S_ISUID|0o755))
	},
	"openat-creat-0644": func() unix.Errno {
		return closeFD(sys2(unix.SYS_OPENAT, atFDCWD, newPath("openat-creat-0644")(), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644))
	},
	"openat-tmpfile-setuid": func() unix.Errno {
		return closeFD(sys2(unix.SYS_OPENAT, atFDCWD, str("."), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, unix.S_ISUID|0o700))
	},
	"openat-tmpfile-0600": func() unix.Errno {
		return closeFD(sys2(unix.SYS_OPENAT, atFDCWD, str("."), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600))
	},
	"mkdir-setgid": legacy("mkdir", newPath("mkdir-setgid"), unix.S_ISGID|0o755),
	"mkdirat-setgid": func() unix.Errno {
		return sys(unix.SYS_MKDIRAT, atFDCWD, newPath("mkdirat-setgid")(), unix.S_ISGID|0o755)
	},
	"mkdirat-0755": func() unix.Errno { return sys(unix.SYS_MKDIRAT, atFDCWD, newPath("mkdirat-0755")(), 0o755) },
	"mknod-setuid": legacy("mknod", newPath("mknod-setuid"), unix.S_IFREG|unix.S_ISUID|0o755, 0),
	"mknodat-setgid": func() unix.Errno {
		return sys(unix.SYS_MKNODAT, atFDCWD, newPath("mknodat-setgid")(), unix.S_IFREG|unix.S_ISGID|0o755, 0)
	},
	"mknodat-0644": func() unix.Errno {
		return sys(unix.SYS_MKNODAT, atFDCWD, newPath("mknodat-0644")(), unix.S_IFREG|0o644, 0)
	},
	// The init (PID 1) shares the command's uid: its limits and scheduling
	// are denied (EPERM), the caller's own are controls that must work.
	// prlimit64 only reads; the scheduling calls pass invalid arguments
	// (EINVAL if the filter let them through), or for setpriority the
	// init's own nice value (a no-op).
	"prlimit64-init":          prlimitRead(1),
	"prlimit64-init-highbits": prlimitRead(highBits | 1),
	"prlimit64-self":          func() unix.Errno { return prlimitRead(uintptr(os.Getpid()))() },
	"prlimit64-0":             prlimitRead(0),
	"prlimit64-0-highbits":    prlimitRead(highBits), // the kernel reads pid 0
	"prlimit64-0-set": func() unix.Errno {
		var l unix.Rlimit
		if e := sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_CPU, 0, ptr(&l)); e != 0 {
			return e
		}
		return sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_CPU, ptr(&l), 0)
	},
	"setpriority-init":       func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 1, initNice()) },
	"setpriority-init-high":  func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, highBits|1, initNice()) },
	"setpriority-pgrp-init":  func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 1, initNice()) },
	"setpriority-user":       func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, initNice()) },
	"setpriority-self":       func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, 10) },
	"setpriority-pgrp-self":  func() unix.Errno { return sys(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 0, 10) },
	"sched_setaffinity-init": func() unix.Errno { return sys(unix.SYS_SCHED_SETAFFINITY, 1, 0, 0) },
	"sched_setaffinity-self": func() unix.Errno {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			return err.(unix.Errno)
		}
		return sys(unix.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(set), ptr(&set))
	},
	"sched_setscheduler-init": func() unix.Errno { return sys(unix.SYS_SCHED_SETSCHEDULER, 1, 0, 0) },
	"sched_setparam-init":     func() unix.Errno { return sys(unix.SYS_SCHED_SETPARAM, 1, 0) },
	"sched_setattr-init":      func() unix.Errno { return sys(unix.SYS_SCHED_SETATTR, 1, 0, 0) },
	"ioprio_set-init":         func() unix.Errno { return sys(unix.SYS_IOPRIO_SET, ioprioWhoProcess, 1, badIOPrio) },
	"ioprio_set-user":         func() unix.Errno { return sys(unix.SYS_IOPRIO_SET, ioprioWhoUser, 0, badIOPrio) },
	"ioprio_set-self": func() unix.Errno {
		return sys(unix.SYS_IOPRIO_SET, ioprioWhoProcess, 0, 2<<13|4) // best-effort, level 4: the default
	},

	// The filter answers ENOSYS (its mode is in memory a filter cannot
	// read), so that callers fall back to openat.
	"openat2": func() unix.Errno {
		how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}
		r, _, e := unix.Syscall6(unix.SYS_OPENAT2, atFDCWD, setidFile(), ptr(&how), unsafe.Sizeof(how), 0, 0)
		return closeFD(r, e)
	},
}

// IOPRIO_WHO_PROCESS and IOPRIO_WHO_USER (linux/ioprio.h), and an I/O
// priority of class 7, which the kernel refuses (EINVAL).
const (
	ioprioWhoProcess = 1
	ioprioWhoUser    = 3
	badIOPrio        = 7 << 13
)

// prlimitRead reads pid's RLIMIT_CPU with prlimit64.
func prlimitRead(pid uintptr) call {
	return func() unix.Errno {
		var l unix.Rlimit
		return sys(unix.SYS_PRLIMIT64, pid, unix.RLIMIT_CPU, 0, ptr(&l))
	}
}

// initNice is the init's nice value as setpriority takes it (getpriority
// answers 20 - nice), so that setting it changes nothing.
func initNice() uintptr {
	r, _, e := unix.RawSyscall(unix.SYS_GETPRIORITY, unix.PRIO_PROCESS, 1, 0)
	if e != 0 {
		return 0
	}
	return uintptr(20 - int(r))
}

// legacyNr are the x86_64 numbers of calls that newer architectures
// (arm64) do not have.
var legacyNr = map[string]uintptr{"open": 2, "creat": 85, "mkdir": 83, "chmod": 90, "mknod": 133}

// legacy calls name with a path (from path) and the other arguments; a
// descriptor it returns is closed. ENOSYS where the call does not exist.
func legacy(name string, path func() uintptr, a ...uintptr) call {
	return func() unix.Errno {
		nr, ok := legacyNr[name]
		if runtime.GOARCH != "amd64" || !ok {
			return unix.ENOSYS
		}
		return closeFD(sys2(nr, append([]uintptr{path()}, a...)...))
	}
}

// setidFile creates ./tjsys-setid (mode 0644) if needed and returns its
// path, for the calls that change a mode.
func setidFile() uintptr {
	const name = "tjsys-setid"
	if _, err := os.Lstat(name); err != nil {
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			panic(err)
		}
	}
	return str(name)
}

// newPath is ./tjsys-NAME, for calls that create it.
func newPath(name string) func() uintptr { return func() uintptr { return str("tjsys-" + name) } }

func fchmodSetgid() unix.Errno {
	setidFile()
	fd, err := unix.Open("tjsys-setid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err.(unix.Errno)
	}
	defer unix.Close(fd)
	return sys(unix.SYS_FCHMOD, uintptr(fd), unix.S_ISGID|0o755)
}

// harmless are the calls tjsys makes outside a jail too.
var harmless = map[string]bool{
	"getppid": true, "personality-query": true, "ioctl-tcgets": true,
	"socket-inet": true, "socket-netlink-route": true,
}

func sys2(nr uintptr, a ...uintptr) (uintptr, unix.Errno) {
	var v [6]uintptr
	copy(v[:], a)
	r, _, e := unix.Syscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	return r, e
}

func closeFD(fd uintptr, e unix.Errno) unix.Errno {
	if e == 0 {
		unix.Close(int(fd))
	}
	return e
}

func socket(family, typ, proto uintptr) unix.Errno {
	return closeFD(sys2(unix.SYS_SOCKET, family, typ|unix.SOCK_CLOEXEC, proto))
}

// cloneNewNet calls clone(CLONE_NEWNET|SIGCHLD) directly, not through
// Go's fork: fork semantics (no new stack), and a child that exits at once.
func cloneNewNet() unix.Errno {
	r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWNET|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	if r == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	unix.Wait4(int(r), &ws, 0, nil)
	return 0
}

// opFields is how many colon-separated fields each operation has.
var opFields = map[string]int{"write": 2, "truncate": 2, "link": 3, "rename": 3, "unlink": 2, "read": 2, "kill": 3, "nr": 2}

// op runs a CALL with arguments; ok is false when spec is not one.
func op(spec string) (line string, ok bool) {
	f := strings.Split(spec, ":")
	if n, known := opFields[f[0]]; !known || n != len(f) {
		return "", false
	}
	var err error
	switch f[0] {
	case "write":
		err = os.WriteFile(f[1], []byte("tjsys"), 0o644)
	case "truncate":
		err = unix.Truncate(f[1], 0)
	case "link":
		err = unix.Link(f[1], f[2])
	case "rename":
		err = unix.Rename(f[1], f[2])
	case "unlink":
		err = unix.Unlink(f[1])
	case "read":
		var b []byte
		if b, err = os.ReadFile(f[1]); err == nil {
			return fmt.Sprintf("data %q", b), true
		}
	case "kill":
		if f[1] == "self" {
			f[1] = strconv.Itoa(os.Getpid())
		}
		pid, err1 := strconv.Atoi(f[1])
		sig, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return "", false
		}
		err = unix.Kill(pid, unix.Signal(sig))
	case "nr":
		nr, err := strconv.ParseInt(f[1], 0, 64)
		if err != nil {
			return "", false
		}
		return result(sys(uintptr(nr))), true
	}
	var e unix.Errno
	if err != nil && !errors.As(err, &e) {
		return "error " + err.Error(), true
	}
	return result(e), true
}

func opName(spec string) (string, bool) {
	name, _, found := strings.Cut(spec, ":")
	return name, found
}

func result(e unix.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return "errno " + n
	}
	return fmt.Sprintf("errno %d", int(e))
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: tjsys CALL [CALL...] | tjsys loop getppid N")
		os.Exit(2)
	}
	if args[0] == "loop" {
		if len(args) != 3 || args[1] != "getppid" {
			fmt.Fprintln(os.Stderr, "usage: tjsys loop getppid N")
			os.Exit(2)
		}
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "tjsys: bad count %q\n", args[2])
			os.Exit(2)
		}
		for i := 0; i < n; i++ {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
		fmt.Println("ok")
		return
	}
	// Some calls would change the host if a privileged run outside a
	// jail let them through (e.g. mount as root): the tests pass
	// --env TJSYS_JAILED=1, and only then does tjsys make them.
	if os.Getenv("TJSYS_JAILED") != "1" {
		for _, name := range args {
			if !harmless[name] {
				fmt.Fprintf(os.Stderr, "tjsys: refusing %q outside a jail (set TJSYS_JAILED=1 inside one)\n", name)
				os.Exit(2)
			}
		}
	}
	for _, name := range args {
		if n, isOp := opName(name); isOp && opFields[n] != len(strings.Split(name, ":")) || !isOp && calls[name] == nil {
			fmt.Fprintf(os.Stderr, "tjsys: unknown call %q\n", name)
			os.Exit(2)
		}
	}
	for _, name := range args {
		// Unbuffered on purpose: a run killed for a violation keeps the
		// lines of the calls before it.
		if _, isOp := opName(name); isOp {
			line, ok := op(name)
			if !ok {
				fmt.Fprintf(os.Stderr, "tjsys: bad operation %q\n", name)
				os.Exit(2)
			}
			fmt.Println(line)
			continue
		}
		fmt.Println(result(calls[name]()))
	}
}
