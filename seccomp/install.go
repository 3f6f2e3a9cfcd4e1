package seccomp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ThreadArgs returns what the raw seccomp(SECCOMP_SET_MODE_FILTER, flags,
// &prog) call takes to load prog on the calling thread only, for a caller
// that makes the call itself: the jail's stage 2, a single-threaded child
// forked to exec the command, which runs no Go code. With prog.Notify the
// call returns the listener fd. no_new_privs must be set first.
func ThreadArgs(prog *Program) ([]unix.SockFilter, uintptr, error) {
	if prog == nil {
		return nil, 0, errors.New("no program")
	}
	insns, err := decode(prog.Filter)
	if err != nil {
		return nil, 0, err
	}
	if len(insns) == 0 || len(insns) > unix.BPF_MAXINSNS {
		return nil, 0, fmt.Errorf("a program of %d instructions", len(insns))
	}
	var flags uintptr
	if prog.Notify {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		if flagsAccepted(flags | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) {
			flags |= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		}
	}
	return insns, flags, nil
}
