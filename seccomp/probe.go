package seccomp

import (
	"fmt"
	"sync"
	"unsafe"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Support says what this host can enforce.
//
//   - Filter: seccomp filters with SECCOMP_RET_KILL_PROCESS (Linux 4.14).
//   - Notify: user notification with the listener and TSYNC together
//     (Linux 5.7, libseccomp >= 2.5 reporting API level 6). Without it the
//     filter still denies the same calls, with EPERM, but nobody learns
//     their names, and a non-native syscall kills the process with SIGSYS
//     (which a report cannot tell from a SIGSYS sent by a process).
//   - From Linux 5.19 the jail waits for answers killably
//     (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so that signals such as Go's
//     preemption signal do not restart a denied call over and over; older
//     kernels work, with more notifications under signal load.
type Support struct {
	Filter bool   `json:"filter"` // filters can be loaded
	Notify bool   `json:"notify"` // user notification works (names of denied calls)
	API    uint   `json:"api_level"`
	Reason string `json:"reason,omitempty"` // why Filter or Notify is false
	Fix    string `json:"fix,omitempty"`
}

// Probe reports what this host supports. It makes no change to the calling
// process and its result is cached.
func Probe() Support { return probeOnce() }

var probeOnce = sync.OnceValue(probe)

func probe() Support {
	var s Support
	s.API, _ = libseccomp.GetAPI()
	if _, err := native(); err != nil {
		s.Reason, s.Fix = err.Error(), "run with --allow-degraded seccomp"
		return s
	}
	if err := actionAvail(unix.SECCOMP_RET_KILL_PROCESS); err != nil {
		s.Reason = fmt.Sprintf("the kernel cannot load seccomp filters with SECCOMP_RET_KILL_PROCESS: %v", err)
		s.Fix = "use Linux 4.14 or later built with CONFIG_SECCOMP_FILTER; if tooljail itself runs under a seccomp profile (a container), allow seccomp(2) there"
		return s
	}
	s.Filter = true

	if err := actionAvail(unix.SECCOMP_RET_USER_NOTIF); err != nil {
		s.Reason = fmt.Sprintf("the kernel has no seccomp user notification: %v", err)
		s.Fix = "use Linux 5.7 or later to see the names of denied syscalls, or run with --allow-degraded seccomp-notify"
		return s
	}
	if !flagsAccepted(unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH) {
		s.Reason = "the kernel cannot combine seccomp TSYNC with a notification listener (SECCOMP_FILTER_FLAG_TSYNC_ESRCH, Linux 5.7)"
		s.Fix = "use Linux 5.7 or later, or run with --allow-degraded seccomp-notify"
		return s
	}
	if s.API < 6 {
		maj, mnr, mic := libseccomp.GetLibraryVersion()
		s.Reason = fmt.Sprintf("libseccomp %d.%d.%d reports API level %d; notification needs level 6", maj, mnr, mic, s.API)
		s.Fix = "build tooljail against libseccomp 2.5 or later (2.6.1 recommended), or run with --allow-degraded seccomp-notify"
		return s
	}
	s.Notify = true
	return s
}

func actionAvail(action uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return errno
	}
	return nil
}

// flagsAccepted asks the kernel whether it knows a set of filter flags
// without loading anything: with a NULL program it checks the flags first
// (EINVAL when unknown or not combinable) and then fails to read the
// program (EFAULT). libseccomp probes the same way.
func flagsAccepted(flags uintptr) bool {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, 0)
	return errno == unix.EFAULT
}
