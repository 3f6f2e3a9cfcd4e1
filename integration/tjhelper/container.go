package main

// _container emulates an unprivileged container, without a container
// engine, so that the integration tests can run tooljail the way Docker,
// Podman and Kubernetes run it:
//
//	tjhelper _container [--seccomp docker|tooljail|none] [--proc-masks] [--no-userns] CMD ARG...
//
// It re-executes itself into a new user namespace (the caller mapped to
// root inside, as a rootless engine does), mount namespace and PID
// namespace; with --no-userns it makes none, as Docker does for a
// container without user namespace remapping (its root is the host's
// root, with Docker's capabilities only; an unprivileged caller keeps
// its identity and has no capability to drop). There, as PID 1, it mounts a fresh /proc, optionally masks and
// write-protects /proc paths the way Docker does (--proc-masks), drops every
// capability outside Docker's default set (so no CAP_SYS_ADMIN), sets
// no_new_privs, loads a seccomp filter and execs CMD (as PID 1, as
// `docker run` without --init does).
//
// The filters (hand-assembled classic BPF, native architecture only):
//
//	docker    moby's default profile as Docker applies it to a container
//	          without added capabilities: the namespace, mount, keyring,
//	          module, clock and tracing calls it leaves out fail with EPERM,
//	          clone with any CLONE_NEW* flag fails with EPERM, clone3 with
//	          ENOSYS. Written as a denylist of what moby's allowlist leaves
//	          out; container_test.go checks it against the profile.
//	tooljail  the same plus the rules docs/containers/seccomp.json adds:
//	          clone and unshare with CLONE_NEWUSER, the mount calls and
//	          sethostname (the kernel still requires CAP_SYS_ADMIN in the
//	          namespace's owner, which only a user namespace of one's own
//	          gives).
//	none      no filter.
//
// Nothing changes outside the wrapper's own namespaces: the masks are
// mounts in its mount namespace, over its own /proc. It writes no marker
// file (/.dockerenv): jail's unit tests cover those with fake inputs.
// init dispatches it, before main, so that main.go's action list stays
// as it is.

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	containerArg      = "_container"
	containerInnerArg = "_container-inner"
)

func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case containerArg:
		os.Exit(containerOuter(os.Args[2:]))
	case containerInnerArg:
		// The namespace set-up and the exec must happen on one thread:
		// capability bounding sets are per thread.
		runtime.LockOSThread()
		os.Exit(containerInner(os.Args[2:]))
	}
}

// containerOpts are the wrapper's flags.
type containerOpts struct {
	seccomp   string
	procMasks bool
	noUserns  bool
	args      []string
}

func parseContainerOpts(args []string) (containerOpts, error) {
	var o containerOpts
	fs := flag.NewFlagSet(containerArg, flag.ContinueOnError)
	fs.StringVar(&o.seccomp, "seccomp", "docker", "docker, tooljail or none")
	fs.BoolVar(&o.procMasks, "proc-masks", false, "mask and write-protect /proc paths as Docker does")
	fs.BoolVar(&o.noUserns, "no-userns", false, "no namespaces of the container's own: the caller's identity, Docker's capabilities and filter")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.noUserns && o.procMasks {
		return o, errors.New("--proc-masks needs the container's own mount namespace: not with --no-userns")
	}
	switch o.seccomp {
	case "docker", "tooljail", "none":
	default:
		return o, fmt.Errorf("--seccomp %q: want docker, tooljail or none", o.seccomp)
	}
	o.args = fs.Args()
	if len(o.args) == 0 {
		return o, errors.New("no command")
	}
	return o, nil
}

func (o containerOpts) flags() []string {
	f := []string{"--seccomp", o.seccomp}
	if o.procMasks {
		f = append(f, "--proc-masks")
	}
	if o.noUserns {
		f = append(f, "--no-userns")
	}
	return append(f, "--")
}

// containerOuter starts the inner half in new user, mount and PID
// namespaces and exits with its status; with --no-userns it is the inner
// half.
func containerOuter(args []string) int {
	o, err := parseContainerOpts(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tjhelper %s: %v\n", containerArg, err)
		return 2
	}
	if o.noUserns {
		// No namespace to enter: this process becomes the command, so
		// that it leaves nothing of its own in the caller's cgroup (on
		// cgroup v2 a process there keeps tooljail from sub-groups).
		runtime.LockOSThread()
		return containerInner(args)
	}
	cmd := exec.Command("/proc/self/exe", append(append([]string{containerInnerArg}, o.flags()...), o.args...)...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "tjhelper %s: start the container: %v\n", containerArg, err)
		return 125
	}
}

// containerInner is PID 1 of the emulated container: it sets the
// restrictions up and execs the command.
func containerInner(args []string) int {
	o, err := parseContainerOpts(args)
	if err == nil {
		err = containerSetup(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tjhelper %s: %v\n", containerArg, err)
		return 125
	}
	path, err := exec.LookPath(o.args[0])
	if err == nil {
		err = syscall.Exec(path, o.args, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "tjhelper %s: exec %s: %v\n", containerArg, o.args[0], err)
	return 127
}

func containerSetup(o containerOpts) error {
	if o.noUserns {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
		if err := loadContainerFilter(o.seccomp); err != nil {
			return err
		}
		if os.Geteuid() != 0 {
			return nil // no capability to drop
		}
		return dropCaps()
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	const procFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("proc", "/proc", "proc", procFlags, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if o.procMasks {
		if err := maskProc(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := loadContainerFilter(o.seccomp); err != nil {
		return err
	}
	return dropCaps()
}

// loadContainerFilter loads the filter of mode (none: nothing).
func loadContainerFilter(mode string) error {
	if mode == "none" {
		return nil
	}
	prog, err := containerFilter(mode, nativeAuditArch())
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// TSYNC: every thread of this Go process, not just this one.
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("load the seccomp filter: %w", e)
	}
	return nil
}

// Docker's default masked paths under /proc (moby's oci defaults), and
// the ones it makes read-only. Entries this kernel lacks are skipped, as
// runc skips them.
var (
	dockerMaskedProc   = []string{"asound", "acpi", "kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug", "scsi"}
	dockerReadonlyProc = []string{"bus", "fs", "irq", "sys", "sysrq-trigger"}
)

// maskProc does what runc does for masked and read-only paths: /dev/null
// over a file, an empty read-only tmpfs over a directory, a read-only bind
// of a path over itself.
func maskProc() error {
	for _, name := range dockerMaskedProc {
		p := "/proc/" + name
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY, "")
		} else {
			err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	for _, name := range dockerReadonlyProc {
		p := "/proc/" + name
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		const ro = unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
		if err := unix.Mount(p, p, "", ro, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// dockerCaps is Docker's default capability set; the rest are dropped.
var dockerCaps = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_RAW,
	unix.CAP_SYS_CHROOT, unix.CAP_MKNOD, unix.CAP_AUDIT_WRITE, unix.CAP_SETFCAP,
}

// dropCaps leaves Docker's set in the bounding, permitted and effective
// sets and nothing inheritable or ambient: the command, root in this user
// namespace, gets exactly that set when it is exec'd.
func dropCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	var keep [2]uint32
	for _, c := range dockerCaps {
		keep[c/32] |= 1 << (c % 32)
	}
	for c := 0; c <= last; c++ {
		if keep[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: keep[0], Permitted: keep[0]},
		{Effective: keep[1], Permitted: keep[1]},
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}

// Flags of clone and unshare.
const (
	cloneNewUser = unix.CLONE_NEWUSER
	// cloneNamespaces is the mask of moby's clone rule (2114060288):
	// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
	cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
)

// mountCalls are the calls docs/containers/seccomp.json allows on top of
// moby's default (with clone and unshare with CLONE_NEWUSER).
var mountCalls = map[string]uintptr{
	"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
	"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
	"fspick": unix.SYS_FSPICK, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"mount_setattr": unix.SYS_MOUNT_SETATTR, "sethostname": unix.SYS_SETHOSTNAME,
}

// dockerDenied are the calls moby's default profile refuses (EPERM) to a
// container without added capabilities, apart from clone, clone3 and
// unshare, which containerFilter handles: those gated on a capability
// Docker does not grant by default, and those it never lists. Only calls
// that amd64 and arm64 both have.
var dockerDenied = map[string]uintptr{
	"setns": unix.SYS_SETNS, "setdomainname": unix.SYS_SETDOMAINNAME,
	"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "fanotify_init": unix.SYS_FANOTIFY_INIT,
	"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "quotactl": unix.SYS_QUOTACTL, "syslog": unix.SYS_SYSLOG,
	"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
	"kcmp": unix.SYS_KCMP, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "process_madvise": unix.SYS_PROCESS_MADVISE,
	"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
	"reboot": unix.SYS_REBOOT, "swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "acct": unix.SYS_ACCT,
	"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME, "vhangup": unix.SYS_VHANGUP,
	"get_mempolicy": unix.SYS_GET_MEMPOLICY, "set_mempolicy": unix.SYS_SET_MEMPOLICY, "mbind": unix.SYS_MBIND,
	"move_pages": unix.SYS_MOVE_PAGES, "userfaultfd": unix.SYS_USERFAULTFD, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
}

// nativeAuditArch is the AUDIT_ARCH_* value of this build's architecture.
func nativeAuditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// bpfInsn is one classic BPF instruction whose jumps name labels.
type bpfInsn struct {
	code   uint16
	k      uint32
	jt, jf string // labels; "" is the next instruction
	label  string // this instruction's own label
}

const (
	seccompAllow = unix.SECCOMP_RET_ALLOW
	seccompEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	seccompNoSys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	// x32 system calls have this bit set in their number on x86_64.
	x32Bit = 0x40000000
	// Offsets in struct seccomp_data: nr, arch, args[0] (its low half on
	// a little-endian machine, where the flags of clone and unshare are).
	offNr, offArch, offArg0 = 0, 4, 16
)

func ld(off uint32) bpfInsn { return bpfInsn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
func ret(v uint32) bpfInsn  { return bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: v} }
func jmp(op uint16, k uint32, jt, jf string) bpfInsn {
	return bpfInsn{code: unix.BPF_JMP | op | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func labelled(l string, i bpfInsn) bpfInsn { i.label = l; return i }

// containerFilter assembles the filter of a mode for the architecture
// arch: calls of another architecture and x32 calls fail with EPERM.
func containerFilter(mode string, arch uint32) ([]unix.SockFilter, error) {
	if arch == 0 {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	tooljail := mode == "tooljail"
	p := []bpfInsn{
		ld(offArch),
		jmp(unix.BPF_JEQ, arch, "", "deny"),
		ld(offNr),
		jmp(unix.BPF_JGE, x32Bit, "deny", ""),
		jmp(unix.BPF_JEQ, unix.SYS_CLONE, "clone", ""),
		jmp(unix.BPF_JEQ, unix.SYS_CLONE3, "nosys", ""),
		jmp(unix.BPF_JEQ, unix.SYS_UNSHARE, "unshare", ""),
	}
	for _, nr := range sortedCalls(dockerDenied) {
		p = append(p, jmp(unix.BPF_JEQ, uint32(nr), "deny", ""))
	}
	if !tooljail {
		for _, nr := range sortedCalls(mountCalls) {
			p = append(p, jmp(unix.BPF_JEQ, uint32(nr), "deny", ""))
		}
	}
	p = append(p, ret(seccompAllow))
	// clone: allowed without namespace flags; with CLONE_NEWUSER too in
	// the tooljail mode.
	p = append(p, labelled("clone", ld(offArg0)))
	if tooljail {
		p = append(p, jmp(unix.BPF_JSET, cloneNewUser, "allow", ""))
	}
	p = append(p, jmp(unix.BPF_JSET, cloneNamespaces, "deny", "allow"))
	// unshare: never in moby's profile (without CAP_SYS_ADMIN); with
	// CLONE_NEWUSER in the tooljail mode.
	if tooljail {
		p = append(p, labelled("unshare", ld(offArg0)), jmp(unix.BPF_JSET, cloneNewUser, "allow", "deny"))
	} else {
		p = append(p, labelled("unshare", ret(seccompEPERM)))
	}
	p = append(p,
		labelled("nosys", ret(seccompNoSys)),
		labelled("deny", ret(seccompEPERM)),
		labelled("allow", ret(seccompAllow)),
	)
	return assemble(p)
}

// assemble resolves the labels of p into jump offsets.
func assemble(p []bpfInsn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(i int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		t, ok := at[l]
		if !ok || t <= i || t-i-1 > 255 {
			return 0, fmt.Errorf("bpf: bad jump from %d to %q", i, l)
		}
		return uint8(t - i - 1), nil
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		jt, err := off(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(i, in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// sortedCalls lists the numbers of m in increasing order (the same
// program from run to run).
func sortedCalls(m map[string]uintptr) []uintptr {
	return slices.Sorted(maps.Values(m))
}
