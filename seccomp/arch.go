package seccomp

import (
	"fmt"
	"runtime"
	"sync"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// x32Bit marks x32 syscall numbers on x86_64 (__X32_SYSCALL_BIT). x32 calls
// report AUDIT_ARCH_X86_64, so the number is the only way to tell them apart.
const x32Bit = 0x40000000

// nativeArch describes the architecture the filter is built for. The
// filter allows only this entry point: any other (i386 int 0x80, x32, or
// aarch32 on arm64) hits the bad-arch action.
type nativeArch struct {
	audit uint32 // AUDIT_ARCH_* in seccomp_data.arch
	scmp  libseccomp.ScmpArch
}

func native() (nativeArch, error) {
	switch runtime.GOARCH {
	case "amd64":
		return nativeArch{unix.AUDIT_ARCH_X86_64, libseccomp.ArchAMD64}, nil
	case "arm64":
		return nativeArch{unix.AUDIT_ARCH_AARCH64, libseccomp.ArchARM64}, nil
	}
	return nativeArch{}, fmt.Errorf("seccomp: architecture %s is not supported (amd64 and arm64 are)", runtime.GOARCH)
}

// foreignArches names the entry points a notification can come from besides
// the native one, for reports.
var foreignArches = map[uint32]struct {
	label string
	scmp  libseccomp.ScmpArch
}{
	unix.AUDIT_ARCH_I386: {"i386", libseccomp.ArchX86},
	unix.AUDIT_ARCH_ARM:  {"arm", libseccomp.ArchARM},
}

// syscallNames caches libseccomp's number-to-name lookups: the monitor asks
// for the same few names again and again under a flood.
type syscallNames struct {
	mu sync.Mutex
	m  map[uint64]nameInfo
}

type nameInfo struct {
	kind  string // "syscall" or "arch"
	name  string
	known bool // libseccomp knows this number
}

// lookup classifies one (arch, nr) pair from a notification.
func (c *syscallNames) lookup(n nativeArch, arch uint32, nr int32) nameInfo {
	key := uint64(arch)<<32 | uint64(uint32(nr))
	c.mu.Lock()
	defer c.mu.Unlock()
	if info, ok := c.m[key]; ok {
		return info
	}
	info := classify(n, arch, nr)
	if c.m == nil {
		c.m = make(map[uint64]nameInfo)
	}
	if len(c.m) < 4096 { // bounded: numbers come from the jail
		c.m[key] = info
	}
	return info
}

func classify(n nativeArch, arch uint32, nr int32) nameInfo {
	switch {
	case arch == n.audit && n.audit == unix.AUDIT_ARCH_X86_64 && nr&x32Bit != 0:
		name, err := libseccomp.ScmpSyscall(nr).GetNameByArch(libseccomp.ArchX32)
		if err != nil {
			return nameInfo{kind: "arch", name: fmt.Sprintf("x32:%d", nr&^x32Bit)}
		}
		return nameInfo{kind: "arch", name: "x32:" + name, known: true}
	case arch == n.audit:
		name, err := libseccomp.ScmpSyscall(nr).GetNameByArch(n.scmp)
		if err != nil {
			return nameInfo{kind: "syscall", name: fmt.Sprintf("syscall#%d", nr)}
		}
		return nameInfo{kind: "syscall", name: name, known: true}
	}
	if fa, ok := foreignArches[arch]; ok {
		name, err := libseccomp.ScmpSyscall(nr).GetNameByArch(fa.scmp)
		if err != nil {
			return nameInfo{kind: "arch", name: fmt.Sprintf("%s:%d", fa.label, nr)}
		}
		return nameInfo{kind: "arch", name: fa.label + ":" + name, known: true}
	}
	return nameInfo{kind: "arch", name: fmt.Sprintf("arch%#x:%d", arch, nr)}
}
