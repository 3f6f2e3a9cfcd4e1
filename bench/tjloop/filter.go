package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The outside-the-jail variants of the seccomp-cost loop load a filter on
// this process before the timed loop, the way the jail does before execve:
// no_new_privs, then seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) with a raw
// classic-BPF program.

// allowAll is the shortest filter there is: "return ALLOW". Its cost is the
// kernel's fixed price of a task having any seccomp filter (the syscall
// work flag, __secure_computing, the action-cache lookup), the floor under
// every filter.
func allowAll() []unix.SockFilter {
	return []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
}

// decodeFilter reads a program in the byte form seccomp.Program.Filter
// carries: struct sock_filter entries (u16 code, u8 jt, u8 jf, u32 k) in
// native byte order.
func decodeFilter(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of 8-byte BPF instructions", len(b))
	}
	if n := len(b) / 8; n > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("%d instructions, the kernel accepts at most %d", n, unix.BPF_MAXINSNS)
	}
	out := make([]unix.SockFilter, len(b)/8)
	for i := range out {
		e := b[8*i:]
		out[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(e[0:]),
			Jt:   e[2],
			Jf:   e[3],
			K:    binary.NativeEndian.Uint32(e[4:]),
		}
	}
	return out, nil
}

// offArg0 is offsetof(struct seccomp_data, args[0]).
const offArg0 = 16

// defeatCache puts one instruction in front of prog that loads args[0]
// into the accumulator. The kernel (5.11+) precomputes, per syscall
// number, whether a filter allows the call whatever its arguments, by
// emulating the program with only nr and arch known; it gives up on the
// first load of anything else, so with this prefix no call is ever cached
// and the whole BPF path runs on every call. The result is the same
// program otherwise: the original first instruction reloads the
// accumulator (seccomp programs start with a load) or returns a constant,
// and classic BPF jumps
// are relative, so a prefix moves no target.
func defeatCache(prog []unix.SockFilter) ([]unix.SockFilter, error) {
	if len(prog) == 0 {
		return nil, errors.New("empty program")
	}
	// Safe only if the first instruction does not read the accumulator.
	if c := prog[0].Code; c&0x07 != unix.BPF_LD && c != unix.BPF_RET|unix.BPF_K {
		return nil, fmt.Errorf("the program starts with opcode %#x, which may read the accumulator the prefix sets", c)
	}
	if len(prog)+1 > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("%d instructions leave no room for the prefix", len(prog))
	}
	load := unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg0}
	return append([]unix.SockFilter{load}, prog...), nil
}

// install sets no_new_privs and loads prog on every thread of the process.
func install(prog []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) with %d instructions: %w", len(prog), errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronised to the filter", r)
	}
	return nil
}

// loadFilter returns the program the -filter flag names: "allow-all" or
// the path of a raw program (see decodeFilter).
func loadFilter(spec string, nocache bool) ([]unix.SockFilter, error) {
	var prog []unix.SockFilter
	if spec == "allow-all" {
		prog = allowAll()
	} else {
		b, err := os.ReadFile(spec)
		if err != nil {
			return nil, err
		}
		if prog, err = decodeFilter(b); err != nil {
			return nil, fmt.Errorf("filter %s: %w", spec, err)
		}
	}
	if nocache {
		var err error
		if prog, err = defeatCache(prog); err != nil {
			return nil, fmt.Errorf("filter %s: -nocache: %w", spec, err)
		}
	}
	return prog, nil
}
