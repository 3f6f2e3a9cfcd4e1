package seccomp

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"golang.org/x/sys/unix"
)

// The prologue is a few hand-written BPF instructions put in front of the
// program libseccomp generates. It does what libseccomp cannot express:
//
//   - "allow ioctl except TIOCSTI/TIOCLINUX" and "allow socket except
//     IPPROTO_MPTCP": libseccomp silently drops a conditional rule for a
//     syscall that also has an unconditional one, and its 64-bit compares
//     would let high bits through where the kernel truncates the argument
//     to 32 bits. The prologue compares only the low 32 bits, which is what
//     the kernel uses (cmd is unsigned int, protocol is int).
//   - No setuid or setgid bit can be created (systemd's RestrictSUIDSGID):
//     chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the
//     mode, and creat, mkdir, mkdirat, mknod, mknodat, open and openat with
//     those bits in the mode of what they create, are denied. open and
//     openat use their mode only when the flags have O_CREAT or
//     __O_TMPFILE (the kernel's WILL_CREATE test in fs/open.c; __O_TMPFILE
//     without O_DIRECTORY is EINVAL anyway), so only then is it checked.
//     Modes are umode_t and flags int: the low 32 bits are all the kernel
//     reads.
//   - The jail's init (PID 1, jail/internal/initc/init.c) runs as the same host user as
//     the command, so the kernel lets the command change its limits; with
//     RLIMIT_CPU it would kill the init, and the report would say
//     setup_error about a command that ran. So prlimit64 is denied on any
//     pid but 0 (the caller: what getrlimit and setrlimit use; another
//     process's limits stay readable in /proc/PID/limits), and
//     sched_setaffinity, sched_setattr, sched_setparam and
//     sched_setscheduler on pid 1. setpriority and ioprio_set take
//     (which, who): who 1 is denied when which is the process (pid 1) or
//     the process group (pgrp 1: the init's own, as stage 2 starts a new
//     session and setpgid cannot join another session's group); which is
//     the user is denied whatever who says, as every process of the jail
//     has the same kernel uid (the command's 1000 in its nested user
//     namespace and the init's 0 in the outer one are the same host user),
//     so a user that reaches any process reaches the init too. The kernel
//     refuses the scheduling calls today only because the init keeps
//     capabilities in its namespace that the command lacks (commoncap's
//     cap_safe_nice); the filter does not depend on that, and the report
//     names the call. A command in a pid namespace of its own (a policy
//     that allows @namespaces) cannot see the init, and loses pid 1 for
//     nothing. Reads (getpriority, sched_get*, ioprio_get) are allowed;
//     signals, pidfds and tgkill are out of this rule's scope.
//   - openat2 fails with ENOSYS: its mode and flags are in a struct in
//     memory, which a filter cannot read. ENOSYS is what a kernel older than
//     5.6 answers, and callers fall back to openat (glibc does not call
//     openat2 itself; Go's os package, os.Root included, never calls it).
//   - ENOSYS for syscall numbers above the highest one libseccomp knows:
//     those are newer than the allowlist, and ENOSYS (as on an older
//     kernel) makes libc fall back to the older call, where EPERM would be
//     a hard failure.
//   - On x86_64, numbers with the x32 bit (__X32_SYSCALL_BIT) set that are
//     no x32 entry point fail with ENOSYS, as the kernel answers them (x32
//     or not): syscall(-1) is 0xffffffff and has the bit. Only the real x32
//     entry points (x32Bit + 0 to x32Entries-1) go on to libseccomp's
//     bad-arch action: they are the x32 ABI, a violation of kind "arch".
//     On arm64 there is no x32: every number above the ceiling is ENOSYS.
//
// These hold whatever the policy allows: allowing ioctl, socket, chmod,
// openat2, prlimit64 or setpriority by name (or their groups) does not
// lift them. The init's protection is the jail's own integrity, like the
// report it writes, and not a capability a profile grants to a command.
// pids, which and who are int and resource unsigned int: the low 32 bits
// are all the kernel reads.
//
// It only acts on the native architecture, and on x32-bit numbers only to
// send the ones that are no entry point to ENOSYS; everything else (other
// architectures, real x32 calls) falls through to libseccomp's program,
// which starts by checking the architecture again. The syscall number is
// dispatched once, through a balanced tree of compares, so that a call the
// prologue does not check costs a handful of instructions (of the x32
// split it runs the one compare on the bit; the range compare is on the
// x32 branch only); and every instruction on that path compares only the
// architecture and the number, so that the kernel's per-syscall action
// cache (Linux 5.11) still skips the filter for calls that are always
// allowed.

// prologueVersion is part of the cache key: bump it when the prologue changes.
const prologueVersion = 4

const (
	offNr   = 0
	offArch = 4
	// Low 32 bits of args[i] (little-endian; amd64 and arm64 only).
	offArgLo0 = 16

	ipprotoMPTCP = 262

	// The init's pid and process group in the jail's pid namespace.
	initPid = 1
	// IOPRIO_WHO_PROCESS (linux/ioprio.h); IOPRIO_WHO_PGRP and
	// IOPRIO_WHO_USER follow it, as PRIO_PGRP and PRIO_USER follow
	// PRIO_PROCESS.
	ioprioWhoProcess = 1

	setIDBits = unix.S_ISUID | unix.S_ISGID
	// willCreate is the kernel's WILL_CREATE: open uses its mode argument
	// when the flags have either bit. O_TMPFILE is __O_TMPFILE|O_DIRECTORY.
	willCreate = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
)

// modeArg is the argument holding the mode of the calls that set or create
// with one; openArgs those of the calls whose flags say whether they create.
var (
	modeArg = map[string]uint32{
		"chmod": 1, "fchmod": 1, "creat": 1, "mkdir": 1, "mknod": 1,
		"fchmodat": 2, "fchmodat2": 2, "mkdirat": 2, "mknodat": 2,
	}
	openArgs = map[string]openArg{
		"open":   {flags: 1, mode: 2},
		"openat": {flags: 2, mode: 3},
	}
)

type openArg struct{ flags, mode uint32 }

// initPidCalls change the scheduling of the pid in their first argument;
// whoCalls take (which, who), with which's process value (pgrp and user
// follow it).
var (
	initPidCalls = []string{"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler"}
	whoCalls     = map[string]uint32{"setpriority": unix.PRIO_PROCESS, "ioprio_set": ioprioWhoProcess}
)

// prologueCalls are the syscalls the prologue dispatches on.
func prologueCalls() []string {
	names := []string{"ioctl", "socket", "openat2", "prlimit64"}
	names = append(names, initPidCalls...)
	for n := range modeArg {
		names = append(names, n)
	}
	for n := range openArgs {
		names = append(names, n)
	}
	for n := range whoCalls {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// insn is one instruction with symbolic jump targets (labels) that
// assemble resolves into the relative offsets classic BPF uses.
type insn struct {
	code   uint16
	k      uint32
	jt, jf string // label names; "" means the next instruction
	label  string // this instruction's label
}

func ld(off uint32) insn { return insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
func jeq(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func jgt(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func jge(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func jset(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func ret(k uint32) insn   { return insn{code: unix.BPF_RET | unix.BPF_K, k: k} }
func ldArg(i uint32) insn { return ld(offArgLo0 + 8*i) }

func labelled(l string, in insn) insn { in.label = l; return in }

type prologueParams struct {
	arch    uint32            // native AUDIT_ARCH
	ceiling uint32            // highest syscall number libseccomp knows
	nrs     map[string]uint32 // native numbers of prologueCalls; absent: not on this architecture
	denyRet uint32            // SECCOMP_RET_USER_NOTIF or SECCOMP_RET_ERRNO|EPERM
}

// branch is one arm of the dispatch: the syscall number and the label it
// jumps to.
type branch struct {
	nr    uint32
	label string
}

// Handler labels: "modeN" denies when argument N has a setuid/setgid bit;
// "flagsF-modeN" goes on to "modeN" when the flags in argument F create;
// "pid1" denies when argument 0 is the init's pid; "whoP" denies a
// (which, who) call on the init, P being which's process value.
func modeLabel(arg uint32) string { return fmt.Sprintf("mode%d", arg) }
func createLabel(a openArg) string {
	return fmt.Sprintf("flags%d-mode%d", a.flags, a.mode)
}
func whoLabel(process uint32) string { return fmt.Sprintf("who%d", process) }

// whoHandler denies which == process+2 (the user) whatever who is, and
// who == the init for which == process or process+1 (the process group);
// any other which is the kernel's EINVAL.
func whoHandler(process uint32) []insn {
	in := []insn{ldArg(0), jeq(process+2, "deny", ""), jgt(process+1, "orig", "")}
	if process > 0 {
		in = append(in, jge(process, "", "orig"))
	}
	return append(in, ldArg(1), jeq(initPid, "deny", "orig"))
}

// x32Entries bounds the x32 entry points: x32Bit+n is one for n below it.
// The kernel's x32 table (arch/x86/entry/syscalls/syscall_64.tbl) has the
// calls common to x86_64 and x32 from 0, and the x32-specific ones at 512
// to 547; it keeps that range free, so common calls added after 511 get
// 548 and above. Those libseccomp knows (up to ceiling) are counted as
// x32 entry points too. Everything from x32Bit+x32Entries up, bit 31
// included, is no entry point of either ABI.
func x32Entries(ceiling uint32) uint32 {
	return max(548, ceiling+1)
}

// prologue assembles the checks above for the calls in p.nrs: the header
// (architecture, x32 bit, ceiling), one dispatch on the number, the handlers,
// and the two shared returns. Only the handlers some call jumps to are
// emitted.
func prologue(p prologueParams) ([]unix.SockFilter, error) {
	arms, need := prologueArms(p.nrs)
	if len(arms) == 0 {
		return nil, fmt.Errorf("seccomp: libseccomp knows none of the calls the prologue checks")
	}
	handlers := prologueHandlers(need)
	prog := []insn{
		ld(offArch),
		jeq(p.arch, "", "orig"),
		ld(offNr),
	}
	if p.arch == unix.AUDIT_ARCH_X86_64 {
		// A native call pays this one compare; the range check is on
		// the x32 branch only.
		prog = append(prog, jge(x32Bit, "x32", ""))
		handlers = append(handlers, labelled("x32", jge(x32Bit+x32Entries(p.ceiling), "enosys", "orig")))
	}
	prog = append(prog, jgt(p.ceiling, "enosys", ""))
	prog = append(prog, dispatch(arms, "orig")...)
	prog = append(prog, handlers...)
	prog = append(prog, labelled("enosys", ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))), labelled("deny", ret(p.denyRet)))
	return assemble(prog, len(prog)) // "orig" is the first instruction after the prologue
}

// prologueArms are the dispatch's arms, by call number, for the calls of
// prologueCalls this architecture has, and need the handler labels they
// jump to, directly or through another handler.
func prologueArms(nrs map[string]uint32) (arms []branch, need map[string]bool) {
	need = map[string]bool{}
	for _, name := range prologueCalls() {
		nr, ok := nrs[name]
		if !ok {
			continue
		}
		l, then := armLabel(name)
		if then != "" {
			need[then] = true
		}
		arms = append(arms, branch{nr, l})
		need[l] = true
	}
	sort.Slice(arms, func(i, j int) bool { return arms[i].nr < arms[j].nr })
	return arms, need
}

// armLabel is the handler a prologue call jumps to, and then the one that
// handler jumps on to ("" for none): an open's flags check goes on to its
// mode check.
func armLabel(name string) (label, then string) {
	if name == "openat2" {
		return "enosys", ""
	}
	if a, ok := modeArg[name]; ok {
		return modeLabel(a), ""
	}
	if a, ok := openArgs[name]; ok {
		return createLabel(a), modeLabel(a.mode)
	}
	if proc, ok := whoCalls[name]; ok {
		return whoLabel(proc), ""
	}
	if slices.Contains(initPidCalls, name) {
		return "pid1", ""
	}
	return name, "" // ioctl, socket, prlimit64
}

// prologueHandlers are the argument checks the needed labels name, each
// ending in "deny" or "orig" (libseccomp's program).
func prologueHandlers(need map[string]bool) []insn {
	var handlers []insn
	add := func(l string, in ...insn) {
		if need[l] {
			in[0].label = l
			handlers = append(handlers, in...)
		}
	}
	add("ioctl", ldArg(1), jeq(unix.TIOCSTI, "deny", ""), jeq(unix.TIOCLINUX, "deny", "orig"))
	add("socket", ldArg(2), jeq(ipprotoMPTCP, "deny", "orig"))
	add("prlimit64", ldArg(0), jeq(0, "orig", "deny"))
	add("pid1", ldArg(0), jeq(initPid, "deny", "orig"))
	for _, proc := range []uint32{unix.PRIO_PROCESS, ioprioWhoProcess} {
		add(whoLabel(proc), whoHandler(proc)...)
	}
	// The flags checks come before the mode checks: jumps only go forward.
	for _, a := range []openArg{openArgs["open"], openArgs["openat"]} {
		add(createLabel(a), ldArg(a.flags), jset(willCreate, modeLabel(a.mode), "orig"))
	}
	for _, a := range []uint32{1, 2, 3} {
		add(modeLabel(a), ldArg(a), jset(setIDBits, "deny", "orig"))
	}
	return handlers
}

// dispatch compares the accumulator with the arms' numbers (sorted, at
// least one) and jumps to the matching arm's label, or to miss: a balanced
// tree of "jge" with short "jeq" chains at the leaves, so that any number
// costs about log2(len(arms))+2 compares.
func dispatch(arms []branch, miss string) []insn {
	var out []insn
	n := 0
	var walk func(arms []branch, label string)
	walk = func(arms []branch, label string) {
		if len(arms) <= 2 {
			for i, a := range arms {
				jf := ""
				if i == len(arms)-1 {
					jf = miss
				}
				in := jeq(a.nr, a.label, jf)
				if i == 0 {
					in.label = label
				}
				out = append(out, in)
			}
			return
		}
		mid := len(arms) / 2
		n++
		upper := fmt.Sprintf("dispatch%d", n)
		out = append(out, labelled(label, jge(arms[mid].nr, upper, "")))
		walk(arms[:mid], "")
		walk(arms[mid:], upper)
	}
	walk(arms, "")
	return out
}

// assemble resolves labels. The label "orig" means index end.
func assemble(prog []insn, end int) ([]unix.SockFilter, error) {
	at := map[string]int{"orig": end}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		rel := func(l string) (uint8, error) {
			if l == "" {
				return 0, nil
			}
			t, ok := at[l]
			if !ok || t <= i || t-i-1 > 255 {
				return 0, fmt.Errorf("seccomp: bad prologue jump to %q at %d", l, i)
			}
			return uint8(t - i - 1), nil
		}
		jt, err := rel(in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := rel(in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// encode and decode convert instructions to the byte form a Program
// carries (struct sock_filter, native byte order).
func encode(insns []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(insns))
	for _, in := range insns {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b
}

func decode(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%8 != 0 {
		return nil, fmt.Errorf("seccomp: filter of %d bytes is not a whole number of BPF instructions", len(b))
	}
	if n := len(b) / 8; n > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: filter has %d instructions, the kernel accepts at most %d", n, unix.BPF_MAXINSNS)
	}
	out := make([]unix.SockFilter, len(b)/8)
	for i := range out {
		c := b[8*i:]
		out[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(c),
			Jt:   c[2],
			Jf:   c[3],
			K:    binary.NativeEndian.Uint32(c[4:]),
		}
	}
	return out, nil
}
