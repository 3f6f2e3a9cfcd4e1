package landlock

import (
	"errors"
	"fmt"
	"os"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// BestABI is the newest Landlock ABI this package (through go-landlock
// v0.11.0) knows; a newer kernel is used at this level.
const BestABI = 11

// erratumSignalScoping is the Landlock erratum bit that fixes IPC signal
// scoping between threads of one process (go-landlock treats ABI 6+ kernels
// without it as ABI 5, and so do we, so our numbers match what it enforces).
const erratumSignalScoping = 0x2

// Support says what this kernel offers.
type Support struct {
	// ABI is the Landlock ABI Compile will use: the kernel's, capped at
	// BestABI, and 5 for ABI 6+ kernels that lack the signal-scoping fix.
	// 0 means Landlock cannot be used.
	ABI int `json:"abi"`
	// KernelABI is what the kernel reports (0 when Landlock is missing).
	KernelABI int `json:"kernel_abi"`
	// Reason and Fix explain an ABI of 0 or a downgrade.
	Reason string `json:"reason,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Probe reports the kernel's Landlock ABI. It makes two syscalls and changes
// nothing; the supervisor calls it at preflight and again in Compile.
func Probe() Support {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return unsupported(err)
	}
	s := Support{ABI: v, KernelABI: v}
	if s.ABI > BestABI {
		s.ABI = BestABI
	}
	if s.ABI >= 6 {
		errata, err := ll.LandlockGetErrata()
		if err != nil || errata&erratumSignalScoping == 0 {
			s.ABI = 5
			s.Reason = fmt.Sprintf("kernel Landlock ABI %d lacks the signal-scoping fix (erratum 2), so IPC scoping and audit flags are not used", v)
			s.Fix = "update to a kernel with the Landlock erratum 2 fix (6.12.y stable or later)"
		}
	}
	return s
}

func unsupported(err error) Support {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		lsms := activeLSMs()
		fix := "boot with lsm=...,landlock (keep the current LSMs and add landlock), e.g. in GRUB_CMDLINE_LINUX"
		if lsms != "" {
			fix = fmt.Sprintf("boot with lsm=%s,landlock (the current list plus landlock), e.g. in GRUB_CMDLINE_LINUX", lsms)
		}
		return Support{Reason: "Landlock is built into the kernel but not enabled at boot", Fix: fix}
	case errors.Is(err, unix.ENOSYS):
		return Support{
			Reason: "the kernel has no Landlock (older than 5.13 or built without CONFIG_SECURITY_LANDLOCK), or a seccomp filter hides it",
			Fix:    "use a kernel 5.13 or later with CONFIG_SECURITY_LANDLOCK=y (6.7+ for TCP rules, 6.12+ for IPC scoping)",
		}
	default:
		return Support{Reason: fmt.Sprintf("landlock_create_ruleset(VERSION): %v", err), Fix: "check the kernel's Landlock support"}
	}
}

// activeLSMs returns the kernel's active LSM list when securityfs shows it.
func activeLSMs() string {
	b, err := os.ReadFile("/sys/kernel/security/lsm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
