package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// execFDLine is what --exec-fd's descriptor gets once the command has been
// exec'd in the jail; it is closed without it when the command never ran.
const execFDLine = "exec\n"

// checkExecFD refuses what cannot be --exec-fd's value, before anything
// runs: the command's stdio is not for it.
func checkExecFD(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 {
		return errors.New("a descriptor number of 3 or more, open for writing (0, 1 and 2 are the command's stdio)")
	}
	return nil
}

// openExecFD takes --exec-fd's descriptor: open for writing, and close-on-
// exec from here on, so that nothing tooljail starts holds it open and
// its reader sees the end when tooljail says or exits. nil when not given.
func (f *runFlags) openExecFD() (*os.File, error) {
	if !f.execFD.set {
		return nil, nil
	}
	fd, _ := strconv.Atoi(f.execFD.value) // checkExecFD
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("--exec-fd %d: %v: pass tooljail a descriptor open for writing (a pipe's write end), as its fd %d", fd, err, fd)
	}
	if acc := fl & unix.O_ACCMODE; acc != unix.O_WRONLY && acc != unix.O_RDWR {
		return nil, fmt.Errorf("--exec-fd %d: open for reading only: pass the write end of the pipe", fd)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("--exec-fd %d: %v", fd, err)
	}
	return os.NewFile(uintptr(fd), "exec-fd"), nil
}

// tellExec writes execFDLine to f when wait (jail.Cmd.WaitExec) says the
// command was exec'd, and closes f either way. A reader that has gone
// away is no concern of the run's.
func tellExec(f *os.File, wait func() error) {
	if wait() == nil {
		f.WriteString(execFDLine)
	}
	f.Close()
}
