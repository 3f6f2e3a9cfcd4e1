package seccomp

import (
	"encoding/binary"
	"fmt"

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
//   - ENOSYS for syscall numbers above the highest one libseccomp knows:
//     those are newer than the allowlist, and ENOSYS (as on an older
//     kernel) makes libc fall back to the older call, where EPERM would be
//     a hard failure.
//
// It only acts on the native architecture and on numbers below the x32 bit;
// everything else falls through to libseccomp's program, which starts by
// checking the architecture again.

// prologueVersion is part of the cache key: bump it when the prologue changes.
const prologueVersion = 1

const (
	offNr   = 0
	offArch = 4
	// Low 32 bits of args[i] (little-endian; amd64 and arm64 only).
	offArgLo0 = 16

	ipprotoMPTCP = 262
)

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
func ret(k uint32) insn { return insn{code: unix.BPF_RET | unix.BPF_K, k: k} }

type prologueParams struct {
	arch      uint32 // native AUDIT_ARCH
	ceiling   uint32 // highest syscall number libseccomp knows
	ioctlNr   uint32
	socketNr  uint32
	denyRet   uint32 // SECCOMP_RET_USER_NOTIF or SECCOMP_RET_ERRNO|EPERM
	tiocsti   uint32
	tioclinux uint32
}

func prologue(p prologueParams) ([]unix.SockFilter, error) {
	withLabel := func(i insn, l string) insn { i.label = l; return i }
	prog := []insn{
		ld(offArch),
		jeq(p.arch, "", "orig"),
		ld(offNr),
		jge(x32Bit, "orig", ""),
		jgt(p.ceiling, "enosys", ""),
		jeq(p.ioctlNr, "", "socket"),
		ld(offArgLo0 + 8*1),
		jeq(p.tiocsti, "deny", ""),
		jeq(p.tioclinux, "deny", "orig"),
		withLabel(jeq(p.socketNr, "", "orig"), "socket"),
		ld(offArgLo0 + 8*2),
		jeq(ipprotoMPTCP, "deny", "orig"),
		withLabel(ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)), "enosys"),
		withLabel(ret(p.denyRet), "deny"),
	}
	return assemble(prog, len(prog)) // "orig" is the first instruction after the prologue
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
