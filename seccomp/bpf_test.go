package seccomp

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data, what a filter reads.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d seccompData) word(off uint32) (uint32, error) {
	var b [64]byte
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	if off%4 != 0 || off+4 > uint32(len(b)) {
		return 0, fmt.Errorf("load at %d", off)
	}
	return binary.LittleEndian.Uint32(b[off:]), nil
}

// runBPF interprets the classic BPF a seccomp filter uses (the subset
// libseccomp and the prologue emit) over d and returns what the filter
// returns, and how many instructions it ran. It lets the tests check
// decisions without loading a filter.
func runBPF(prog []unix.SockFilter, d seccompData) (uint32, int, error) {
	var a uint32
	steps := 0
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		steps++
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			w, err := d.word(in.K)
			if err != nil {
				return 0, steps, fmt.Errorf("pc %d: %w", pc, err)
			}
			a = w
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var take bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				take = a == in.K
			case unix.BPF_JGT:
				take = a > in.K
			case unix.BPF_JGE:
				take = a >= in.K
			case unix.BPF_JSET:
				take = a&in.K != 0
			}
			if take {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K, steps, nil
		default:
			return 0, steps, fmt.Errorf("pc %d: opcode %#x not interpreted", pc, in.Code)
		}
	}
	return 0, steps, fmt.Errorf("ran off the end of %d instructions", len(prog))
}

// nativeNr is the native number of a syscall, if this architecture has it.
func nativeNr(name string) (uint32, bool) {
	sc, err := libseccomp.GetSyscallFromName(name)
	return uint32(sc), err == nil && sc >= 0
}

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// The prologue's decisions, on the whole compiled filter (prologue and
// libseccomp's program), for calls with arguments.
func TestFilterDecisions(t *testing.T) {
	na, err := native()
	if err != nil {
		t.Skip(err)
	}
	const (
		suid    = unix.S_ISUID
		sgid    = unix.S_ISGID
		high    = uint64(1) << 32
		creat   = unix.O_CREAT | unix.O_WRONLY
		tmpfile = unix.O_TMPFILE | unix.O_RDWR
		tmpBit  = unix.O_TMPFILE &^ unix.O_DIRECTORY // __O_TMPFILE alone: EINVAL in the kernel
	)
	atFDCWD := uint64(0xffffffffffffff9c)
	checkDecisions(t, na, []decision{
		{Policy{}, call{"getppid", [6]uint64{}}, retAllow},
		{Policy{}, call{"chmod", [6]uint64{0, 0o755}}, retAllow},
		{Policy{}, call{"chmod", [6]uint64{0, suid | 0o755}}, retEPERM},
		{Policy{}, call{"chmod", [6]uint64{0, sgid}}, retEPERM},
		{Policy{}, call{"chmod", [6]uint64{0, unix.S_ISVTX | 0o777}}, retAllow},
		// The kernel reads the low bits of the mode only.
		{Policy{}, call{"chmod", [6]uint64{0, high | 0o755}}, retAllow},
		{Policy{}, call{"chmod", [6]uint64{0, high | suid}}, retEPERM},
		{Policy{}, call{"fchmod", [6]uint64{3, suid | 0o700}}, retEPERM},
		{Policy{}, call{"fchmod", [6]uint64{3, 0o700}}, retAllow},
		{Policy{}, call{"fchmodat", [6]uint64{atFDCWD, 0, sgid | 0o755}}, retEPERM},
		{Policy{}, call{"fchmodat", [6]uint64{atFDCWD, suid, 0o755}}, retAllow}, // a path pointer, not a mode
		{Policy{}, call{"fchmodat2", [6]uint64{atFDCWD, 0, suid, unix.AT_SYMLINK_NOFOLLOW}}, retEPERM},
		{Policy{}, call{"fchmodat2", [6]uint64{atFDCWD, 0, 0o644, unix.AT_SYMLINK_NOFOLLOW}}, retAllow},
		{Policy{}, call{"creat", [6]uint64{0, suid | 0o755}}, retEPERM},
		{Policy{}, call{"creat", [6]uint64{0, 0o755}}, retAllow},
		{Policy{}, call{"mkdir", [6]uint64{0, sgid | 0o755}}, retEPERM},
		{Policy{}, call{"mkdir", [6]uint64{0, 0o755}}, retAllow},
		{Policy{}, call{"mkdirat", [6]uint64{atFDCWD, 0, sgid | 0o755}}, retEPERM},
		{Policy{}, call{"mkdirat", [6]uint64{atFDCWD, 0, 0o1777}}, retAllow},
		{Policy{}, call{"mknod", [6]uint64{0, unix.S_IFREG | suid | 0o755, 0}}, retEPERM},
		{Policy{}, call{"mknod", [6]uint64{0, unix.S_IFREG | 0o755, 0}}, retAllow},
		{Policy{}, call{"mknodat", [6]uint64{atFDCWD, 0, unix.S_IFREG | sgid, 0}}, retEPERM},
		{Policy{}, call{"mknodat", [6]uint64{atFDCWD, 0, unix.S_IFIFO | 0o600, 0}}, retAllow},
		{Policy{}, call{"open", [6]uint64{0, creat, sgid | 0o755}}, retEPERM},
		{Policy{}, call{"open", [6]uint64{0, creat, 0o755}}, retAllow},
		{Policy{}, call{"open", [6]uint64{0, unix.O_RDONLY, suid | 0o755}}, retAllow}, // the mode is ignored
		{Policy{}, call{"open", [6]uint64{0, tmpfile, suid}}, retEPERM},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, creat, suid | 0o755}}, retEPERM},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, creat | high, high | sgid}}, retEPERM},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, creat, high | 0o755}}, retAllow},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, high | unix.O_RDWR, sgid}}, retAllow}, // O_CREAT only in the high bits
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, tmpfile, sgid | 0o700}}, retEPERM},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, tmpBit | unix.O_RDWR, suid}}, retEPERM},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, tmpfile, 0o600}}, retAllow},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, unix.O_DIRECTORY, suid}}, retAllow},
		{Policy{}, call{"openat", [6]uint64{atFDCWD, 0, unix.O_RDONLY, 0}}, retAllow},
		{Policy{}, call{"openat2", [6]uint64{atFDCWD, 0, 0, 24}}, retENOSYS},
		// Allowing a call by name lifts none of this.
		{Policy{Allow: []string{"chmod", "openat", "openat2", "ioctl", "socket"}}, call{"chmod", [6]uint64{0, suid}}, retEPERM},
		{Policy{Allow: []string{"chmod", "openat", "openat2"}}, call{"openat", [6]uint64{atFDCWD, 0, creat, suid}}, retEPERM},
		{Policy{Allow: []string{"openat2"}}, call{"openat2", [6]uint64{atFDCWD, 0, 0, 24}}, retENOSYS},
		// Denying the call denies the harmless modes too.
		{Policy{Deny: []string{"chmod", "openat"}}, call{"chmod", [6]uint64{0, 0o755}}, retEPERM},
		{Policy{Deny: []string{"chmod", "openat"}}, call{"openat", [6]uint64{atFDCWD, 0, unix.O_RDONLY, 0}}, retEPERM},
		{Policy{Deny: []string{"openat2"}}, call{"openat2", [6]uint64{atFDCWD, 0, 0, 24}}, retENOSYS},
		// The checks that were there before.
		{Policy{}, call{"ioctl", [6]uint64{0, unix.TIOCSTI}}, retEPERM},
		{Policy{}, call{"ioctl", [6]uint64{0, high | unix.TIOCLINUX}}, retEPERM},
		{Policy{}, call{"ioctl", [6]uint64{0, unix.TCGETS}}, retAllow},
		{Policy{}, call{"socket", [6]uint64{unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP}}, retEPERM},
		{Policy{}, call{"socket", [6]uint64{unix.AF_INET, unix.SOCK_STREAM, 0}}, retAllow},
		{Policy{}, call{"clone3", [6]uint64{}}, retENOSYS},
		{Policy{}, call{"mount", [6]uint64{}}, retEPERM},
	})
}

type call struct {
	name string
	args [6]uint64
}

// decision is what the whole filter for policy returns for call.
type decision struct {
	policy Policy
	call   call
	want   uint32 // in errno mode; notify mode turns EPERM into USER_NOTIF
}

// checkDecisions runs each call through the compiled filter, in errno and
// in notify mode. Calls this architecture does not have are skipped.
func checkDecisions(t *testing.T, na nativeArch, ds []decision) {
	t.Helper()
	for _, tc := range ds {
		nr, ok := nativeNr(tc.call.name)
		if !ok {
			continue // arm64 has no open, creat, chmod, mkdir, mknod
		}
		for _, notify := range []bool{false, true} {
			prog, err := (&Compiler{}).Compile(tc.policy, notify)
			if err != nil {
				t.Fatal(err)
			}
			insns, err := decode(prog.Filter)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if notify && want == retEPERM {
				want = retNotify
			}
			got, _, err := runBPF(insns, seccompData{nr: nr, arch: na.audit, args: tc.call.args})
			if err != nil {
				t.Fatalf("%+v %s: %v", tc.policy, tc.call.name, err)
			}
			if got != want {
				t.Errorf("policy %+v, notify %v: %s(%#x) returns %#x, want %#x", tc.policy, notify, tc.call.name, tc.call.args, got, want)
			}
		}
	}
}

// The command cannot change the init's limits or scheduling: prlimit64 on
// any pid but 0, the pid-taking scheduling calls on pid 1, setpriority and
// ioprio_set on pid 1, process group 1 or any user. Compared on the low 32
// bits, as the kernel reads them; allowing the calls by name or group does
// not lift it, denying them denies every use.
func TestFilterProtectsInit(t *testing.T) {
	na, err := native()
	if err != nil {
		t.Skip(err)
	}
	const (
		high    = uint64(1) << 32
		minus1  = ^uint64(0)
		cpu     = unix.RLIMIT_CPU
		process = unix.PRIO_PROCESS
		pgrp    = unix.PRIO_PGRP
		user    = unix.PRIO_USER
		// IOPRIO_WHO_*, and an I/O priority (class best-effort, level 7).
		ioProcess, ioPgrp, ioUser = 1, 2, 3
		ioprio                    = 2<<13 | 7
	)
	ds := []decision{
		// prlimit64(pid, resource, new, old): pid 0 is the caller.
		{Policy{}, call{"prlimit64", [6]uint64{0, cpu, 0x1000, 0}}, retAllow},
		{Policy{}, call{"prlimit64", [6]uint64{0, cpu, 0, 0x1000}}, retAllow},
		{Policy{}, call{"prlimit64", [6]uint64{1, cpu, 0x1000, 0}}, retEPERM},
		{Policy{}, call{"prlimit64", [6]uint64{1, cpu, 0, 0x1000}}, retEPERM}, // a read too: any pid but 0
		{Policy{}, call{"prlimit64", [6]uint64{2, unix.RLIMIT_NOFILE, 0x1000, 0}}, retEPERM},
		{Policy{}, call{"prlimit64", [6]uint64{minus1, cpu, 0x1000, 0}}, retEPERM},
		{Policy{}, call{"prlimit64", [6]uint64{high | 1, cpu, 0x1000, 0}}, retEPERM},
		{Policy{}, call{"prlimit64", [6]uint64{high, cpu, 0x1000, 0}}, retAllow}, // the kernel reads pid 0
		{Policy{}, call{"setrlimit", [6]uint64{cpu, 0x1000}}, retAllow},
		{Policy{}, call{"getrlimit", [6]uint64{cpu, 0x1000}}, retAllow},

		// setpriority(which, who, prio).
		{Policy{}, call{"setpriority", [6]uint64{process, 1, 19}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{process, high | 1, 19}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{high | process, 1, 19}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{process, 0, 10}}, retAllow},
		{Policy{}, call{"setpriority", [6]uint64{process, 2, 10}}, retAllow},
		{Policy{}, call{"setpriority", [6]uint64{process, high, 10}}, retAllow},
		{Policy{}, call{"setpriority", [6]uint64{pgrp, 1, 10}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{pgrp, 0, 10}}, retAllow},
		{Policy{}, call{"setpriority", [6]uint64{pgrp, 2, 10}}, retAllow},
		{Policy{}, call{"setpriority", [6]uint64{user, 0, 10}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{user, 1000, 10}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{high | user, 5, 10}}, retEPERM},
		{Policy{}, call{"setpriority", [6]uint64{3, 1, 10}}, retAllow},      // the kernel's EINVAL
		{Policy{}, call{"setpriority", [6]uint64{minus1, 1, 10}}, retAllow}, // the kernel's EINVAL
		{Policy{}, call{"getpriority", [6]uint64{process, 1}}, retAllow},

		// ioprio_set(which, who, ioprio): which starts at 1.
		{Policy{}, call{"ioprio_set", [6]uint64{ioProcess, 1, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{ioProcess, high | 1, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{ioProcess, 0, ioprio}}, retAllow},
		{Policy{}, call{"ioprio_set", [6]uint64{ioProcess, 2, ioprio}}, retAllow},
		{Policy{}, call{"ioprio_set", [6]uint64{ioPgrp, 1, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{ioPgrp, 0, ioprio}}, retAllow},
		{Policy{}, call{"ioprio_set", [6]uint64{ioUser, 0, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{ioUser, 1000, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{high | ioUser, 1000, ioprio}}, retEPERM},
		{Policy{}, call{"ioprio_set", [6]uint64{0, 1, ioprio}}, retAllow}, // the kernel's EINVAL
		{Policy{}, call{"ioprio_set", [6]uint64{4, 1, ioprio}}, retAllow}, // the kernel's EINVAL
		{Policy{}, call{"ioprio_get", [6]uint64{ioProcess, 1}}, retAllow},

		// Reading stays allowed.
		{Policy{}, call{"sched_getaffinity", [6]uint64{1, 128, 0x1000}}, retAllow},
		{Policy{}, call{"sched_getattr", [6]uint64{1, 0x1000, 56, 0}}, retAllow},
		{Policy{}, call{"sched_getscheduler", [6]uint64{1}}, retAllow},

		// Not lifted by allowing the calls or their groups.
		{Policy{Allow: []string{"prlimit64", "setpriority", "ioprio_set", "sched_setaffinity", "@process", "@system-info"}}, call{"prlimit64", [6]uint64{1, cpu, 0x1000, 0}}, retEPERM},
		{Policy{Allow: []string{"prlimit64", "setpriority", "ioprio_set", "sched_setaffinity", "@process", "@system-info"}}, call{"setpriority", [6]uint64{process, 1, 19}}, retEPERM},
		{Policy{Allow: []string{"prlimit64", "setpriority", "ioprio_set", "sched_setaffinity", "@process", "@system-info"}}, call{"ioprio_set", [6]uint64{ioUser, 0, ioprio}}, retEPERM},
		{Policy{Allow: []string{"prlimit64", "setpriority", "ioprio_set", "sched_setaffinity", "@process", "@system-info"}}, call{"sched_setaffinity", [6]uint64{1, 8, 0x1000}}, retEPERM},
		{Policy{Allow: []string{"prlimit64", "@process"}}, call{"prlimit64", [6]uint64{0, cpu, 0x1000, 0}}, retAllow},
		// Denied by name: every use.
		{Policy{Deny: []string{"prlimit64", "sched_setaffinity", "setpriority"}}, call{"prlimit64", [6]uint64{0, cpu, 0x1000, 0}}, retEPERM},
		{Policy{Deny: []string{"prlimit64", "sched_setaffinity", "setpriority"}}, call{"sched_setaffinity", [6]uint64{0, 8, 0x1000}}, retEPERM},
		{Policy{Deny: []string{"prlimit64", "sched_setaffinity", "setpriority"}}, call{"setpriority", [6]uint64{process, 0, 10}}, retEPERM},
	}
	// The pid-taking scheduling calls: pid 1 denied, others allowed.
	for _, name := range initPidCalls {
		ds = append(ds,
			decision{Policy{}, call{name, [6]uint64{1, 8, 0x1000}}, retEPERM},
			decision{Policy{}, call{name, [6]uint64{high | 1, 8, 0x1000}}, retEPERM},
			decision{Policy{}, call{name, [6]uint64{0, 8, 0x1000}}, retAllow},
			decision{Policy{}, call{name, [6]uint64{2, 8, 0x1000}}, retAllow},
			decision{Policy{}, call{name, [6]uint64{high, 8, 0x1000}}, retAllow},
			decision{Policy{}, call{name, [6]uint64{minus1, 8, 0x1000}}, retAllow},
			decision{Policy{}, call{name, [6]uint64{1000, 1, 0x1000}}, retAllow},
		)
	}
	checkDecisions(t, na, ds)
}

// Foreign entry points are left to libseccomp's bad-arch action, whatever
// the number says: the prologue acts on native calls only.
func TestPrologueNativeOnly(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 specific numbers")
	}
	prog, err := (&Compiler{}).Compile(Policy{}, false)
	if err != nil {
		t.Fatal(err)
	}
	insns, _ := decode(prog.Filter)
	for _, d := range []seccompData{
		{nr: 15, arch: unix.AUDIT_ARCH_I386, args: [6]uint64{0, unix.S_ISUID}}, // i386 chmod
		{nr: 437, arch: unix.AUDIT_ARCH_I386},                                  // i386 openat2
		{nr: x32Bit | 90, arch: unix.AUDIT_ARCH_X86_64, args: [6]uint64{0, 0}}, // x32 chmod
	} {
		if got, _, err := runBPF(insns, d); err != nil || got != retKill {
			t.Errorf("%+v: %#x %v, want kill-process", d, got, err)
		}
	}
}

// On x86_64 the x32 bit alone does not make a call x32: numbers past the
// x32 table (syscall(-1) among them) fail with ENOSYS, as the kernel
// answers them, and only the table's numbers are the bad-arch action.
// Foreign architectures are left as they were, whatever their number.
func TestFilterX32Numbers(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 specific numbers")
	}
	ceiling, err := libseccompCeiling()
	if err != nil {
		t.Fatal(err)
	}
	last := x32Bit + x32Entries(ceiling) - 1
	for _, notify := range []bool{false, true} {
		prog, err := (&Compiler{}).Compile(Policy{}, notify)
		if err != nil {
			t.Fatal(err)
		}
		insns, _ := decode(prog.Filter)
		bad := uint32(retKill)
		if notify {
			bad = retNotify
		}
		for _, tc := range []struct {
			nr, arch uint32
			want     uint32
		}{
			{0xffffffff, unix.AUDIT_ARCH_X86_64, retENOSYS},      // syscall(-1)
			{x32Bit | 0x1000, unix.AUDIT_ARCH_X86_64, retENOSYS}, // past the x32 table
			{0x7fffffff, unix.AUDIT_ARCH_X86_64, retENOSYS},      //
			{last + 1, unix.AUDIT_ARCH_X86_64, retENOSYS},        // the first number past it
			{0x80000000, unix.AUDIT_ARCH_X86_64, retENOSYS},      // bit 31 alone
			{0xc0000027, unix.AUDIT_ARCH_X86_64, retENOSYS},      // bit 31 with an x32 getpid
			{x32Bit | 39, unix.AUDIT_ARCH_X86_64, bad},           // x32 getpid
			{x32Bit, unix.AUDIT_ARCH_X86_64, bad},                // x32 read
			{x32Bit | 512, unix.AUDIT_ARCH_X86_64, bad},          // x32 rt_sigaction
			{x32Bit | 547, unix.AUDIT_ARCH_X86_64, bad},          // x32 pwritev2, the last x32-only one
			{last, unix.AUDIT_ARCH_X86_64, bad},                  //
			{0xffffffff, unix.AUDIT_ARCH_I386, bad},              // i386: the arch decides
			{20, unix.AUDIT_ARCH_I386, bad},                      // i386 getpid
			{x32Bit | 0x1000, unix.AUDIT_ARCH_I386, bad},         //
			{unix.SYS_GETPID, unix.AUDIT_ARCH_X86_64, retAllow},  // native: unchanged
			{ceiling + 1, unix.AUDIT_ARCH_X86_64, retENOSYS},     //
			{x32Bit - 1, unix.AUDIT_ARCH_X86_64, retENOSYS},      //
		} {
			got, _, err := runBPF(insns, seccompData{nr: tc.nr, arch: tc.arch})
			if err != nil || got != tc.want {
				t.Errorf("notify %v, arch %#x, nr %#x: %#x %v, want %#x", notify, tc.arch, tc.nr, got, err, tc.want)
			}
		}
	}
	if x32Entries(ceiling) < 548 {
		t.Errorf("x32Entries %d: the x32 table ends at 547 (pwritev2)", x32Entries(ceiling))
	}
}

// The prologue alone: the dispatch reaches each handler, a miss falls
// through to "orig" (the first instruction after it), and it stays small.
func TestPrologueShape(t *testing.T) {
	na, err := native()
	if err != nil {
		t.Skip(err)
	}
	nrs, err := prologueNumbers()
	if err != nil {
		t.Fatal(err)
	}
	ceiling, err := libseccompCeiling()
	if err != nil {
		t.Fatal(err)
	}
	pro, err := prologue(prologueParams{arch: na.audit, ceiling: ceiling, nrs: nrs, denyRet: retEPERM})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prologue: %d instructions for %d calls", len(pro), len(nrs))
	if len(pro) > 80 {
		t.Errorf("prologue has %d instructions; keep it small", len(pro))
	}
	// A sentinel after the prologue stands for libseccomp's program.
	const orig = 0xdead
	prog := append(pro, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: orig})
	maxCost := 0
	for nr := uint32(0); nr <= ceiling+1; nr++ {
		d := seccompData{nr: nr, arch: na.audit, args: [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
		got, steps, err := runBPF(prog, d)
		if err != nil {
			t.Fatalf("nr %d: %v", nr, err)
		}
		name := ""
		for n, v := range nrs {
			if v == nr {
				name = n
			}
		}
		want := uint32(orig)
		switch {
		case nr > ceiling || name == "openat2":
			want = retENOSYS
		case name == "socket":
			want = orig // protocol 0xffffffff is not MPTCP
		case name == "setpriority" || name == "ioprio_set" || slices.Contains(initPidCalls, name):
			want = orig // which 0xffffffff is EINVAL, pid 0xffffffff is not the init
		case name != "":
			want = retEPERM // every bit set: setuid modes, a pid that is not 0; TIOCSTI is not all ones
			if name == "ioctl" {
				want = orig
			}
		}
		if got != want {
			t.Errorf("nr %d (%s) with all argument bits set: %#x, want %#x", nr, name, got, want)
		}
		if name == "" && nr <= ceiling {
			maxCost = max(maxCost, steps-1) // not the sentinel
		}
	}
	t.Logf("a call the prologue does not check runs at most %d of its instructions", maxCost)
	if maxCost > 12 {
		t.Errorf("a call the prologue does not check runs %d instructions, want a short dispatch", maxCost)
	}
}

func TestDispatch(t *testing.T) {
	for n := 1; n <= 20; n++ {
		var arms []branch
		for i := 0; i < n; i++ {
			arms = append(arms, branch{uint32(10 * (i + 1)), fmt.Sprintf("h%d", i)})
		}
		prog := dispatch(arms, "miss")
		// Each arm's handler returns its index; miss returns 1000.
		for i := range arms {
			prog = append(prog, labelled(fmt.Sprintf("h%d", i), ret(uint32(i))))
		}
		prog = append(prog, labelled("miss", ret(1000)))
		insns, err := assemble(prog, len(prog))
		if err != nil {
			t.Fatalf("%d arms: %v", n, err)
		}
		for nr := uint32(0); nr <= uint32(10*(n+1)); nr++ {
			want := uint32(1000)
			if nr%10 == 0 && nr > 0 && nr <= uint32(10*n) {
				want = nr/10 - 1
			}
			// The accumulator is the number: load it first.
			got, _, err := runBPF(append([]unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr}}, insns...), seccompData{nr: nr})
			if err != nil || got != want {
				t.Fatalf("%d arms, nr %d: %d %v, want %d", n, nr, got, err, want)
			}
		}
	}
}

func TestArgChecks(t *testing.T) {
	sock := restricted()["socket"]
	for _, c := range []struct {
		name     string
		call     string
		lifted   bool
		families []uint64
		alts     [][]cond
		ok       bool
	}{
		{"unchecked call: plain allow", "read", false, nil, nil, true},
		{"checked call", "clone", false, nil, restricted()["clone"], true},
		{"check lifted: plain allow", "clone", true, nil, nil, true},
		{"socket, no family refused", "socket", false, nil, sock, true},
		{"socket lifted, no family refused", "socket", true, nil, nil, true},
		{"socket without the refused families", "socket", false, []uint64{unix.AF_INET, unix.AF_INET6}, [][]cond{sock[0], sock[3]}, true},
		{"socket lifted: any family but the refused", "socket", true, []uint64{unix.AF_INET},
			[][]cond{{{0, libseccomp.CompareNotEqual, []uint64{unix.AF_INET}}}}, true},
		{"socket lifted, two families refused: each other family, and past the last", "socket", true, []uint64{unix.AF_INET, unix.AF_INET6},
			liftedBut(unix.AF_INET, unix.AF_INET6), true},
		{"socket with every family refused: no rule", "socket", false, []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}, nil, false},
		// Refused families concern socket only.
		{"other call with families refused", "clone", false, []uint64{unix.AF_INET}, restricted()["clone"], true},
	} {
		r := &resolved{lifted: map[string]bool{c.call: c.lifted}, noFamilies: c.families}
		alts, ok := argChecks(c.call, r)
		if ok != c.ok || !reflect.DeepEqual(alts, c.alts) {
			t.Errorf("%s: argChecks = %v, %v; want %v, %v", c.name, alts, ok, c.alts, c.ok)
		}
	}
}

// liftedBut is the lifted socket check without the families no, written
// out: one alternative per other family, then any beyond AF_MAX.
func liftedBut(no ...uint64) [][]cond {
	var alts [][]cond
	for f := uint64(0); f < unix.AF_MAX; f++ {
		if f != no[0] && f != no[1] {
			alts = append(alts, []cond{{0, libseccomp.CompareEqual, []uint64{f}}})
		}
	}
	return append(alts, []cond{{0, libseccomp.CompareGreaterEqual, []uint64{unix.AF_MAX}}})
}

func TestActionsFor(t *testing.T) {
	n := actionsFor(true)
	if n.deny != libseccomp.ActNotify || n.badArch != libseccomp.ActNotify || n.denyRet != unix.SECCOMP_RET_USER_NOTIF {
		t.Errorf("notify: %+v", n)
	}
	e := actionsFor(false)
	if e.deny != libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)) || e.badArch != libseccomp.ActKillProcess || e.denyRet != unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
		t.Errorf("errno: %+v", e)
	}
}

func TestArmLabel(t *testing.T) {
	// The handler each prologue call jumps to, then the one that handler
	// goes on to.
	want := map[string][2]string{
		"ioctl": {"ioctl", ""}, "socket": {"socket", ""}, "prlimit64": {"prlimit64", ""},
		"openat2": {"enosys", ""},
		"chmod":   {"mode1", ""}, "fchmodat": {"mode2", ""},
		"open": {"flags1-mode2", "mode2"}, "openat": {"flags2-mode3", "mode3"},
		"setpriority":   {whoLabel(unix.PRIO_PROCESS), ""},
		"sched_setattr": {"pid1", ""},
	}
	for call, w := range want {
		if l, then := armLabel(call); l != w[0] || then != w[1] {
			t.Errorf("armLabel(%s) = %q, %q; want %q, %q", call, l, then, w[0], w[1])
		}
	}
}

func TestPrologueArms(t *testing.T) {
	// Only the calls this architecture has get an arm, in number order;
	// an open's arm needs its mode check too.
	arms, need := prologueArms(map[string]uint32{"openat": 257, "ioctl": 16, "nosuchcall": 1})
	if want := []branch{{16, "ioctl"}, {257, "flags2-mode3"}}; !reflect.DeepEqual(arms, want) {
		t.Errorf("arms %v, want %v", arms, want)
	}
	if want := map[string]bool{"ioctl": true, "flags2-mode3": true, "mode3": true}; !reflect.DeepEqual(need, want) {
		t.Errorf("need %v, want %v", need, want)
	}
}
