package initc

/*
#include "stage2.h"
*/
import "C"

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Stage2 is what the child the init forks to become the command applies
// before its execve (stage2.c): the supervisor prepares it, the child
// only makes system calls with it.
type Stage2 struct {
	Dir string
	// Warm leaves the command's strings out of the plan: stage 2 parks,
	// confined, and gets them with the call (EncodeCall).
	Warm             bool
	Args, Env, Paths []string // Paths: where to look for Args[0], in order
	TTY              bool     // a terminal of Rows by Cols
	Rows, Cols       uint16
	Rlimits          []Rlimit
	NoHugePages      bool   // PR_SET_THP_DISABLE for the command
	TimerSlack       uint64 // PR_SET_TIMERSLACK for the command; 0 keeps the init's
	// Ignore: the signals the command starts with ignored (bit N-1:
	// signal N), as the supervisor's caller had them (OrigIgnored).
	Ignore uint64
	// WaitAck makes stage 2 wait, after its ready record, until the
	// supervisor has registered it.
	WaitAck bool
	// SetID: without namespaces, a root supervisor's stage 2 becomes
	// UID:GID without supplementary groups.
	SetID    bool
	UID, GID uint32
}

// Rlimit is one resource limit stage 2 sets.
type Rlimit struct {
	Resource int
	Cur, Max uint64
}

// OrigNoFile is the RLIMIT_NOFILE this process started with, before the
// Go runtime raised its soft limit (stage2.c reads it in a constructor);
// ok is false when it could not be read.
func OrigNoFile() (cur, max uint64, ok bool) {
	return uint64(C.tj_orig_nofile_cur), uint64(C.tj_orig_nofile_max), C.tj_orig_nofile_ok != 0
}

// OrigTimerSlack is the timer slack (ns) this process started with,
// before a constructor of the program's own could raise it (stage2.c
// reads it first); 0 when it could not be read.
func OrigTimerSlack() uint64 {
	return uint64(C.tj_orig_slack)
}

// OrigIgnored is the set of signals this process started with ignored
// (bit N-1: signal N), read before the Go runtime put its handlers over all
// but SIGHUP's and SIGINT's (stage2.c).
func OrigIgnored() uint64 { return uint64(C.tj_orig_sigign) }

// compileStage2 fills c, in the init's plan. The Landlock ruleset is the
// init's to build (the rule paths resolve in the jail); c gets its flags
// there, and the seccomp filter from the plan's late part.
func (cp *Compiled) compileStage2(c *C.struct_tj_stage2, s *Stage2) error {
	if !s.Warm && len(s.Args) == 0 {
		return errors.New("stage 2: no command")
	}
	if len(s.Rlimits) > C.TJ_MAX_RLIMITS {
		return fmt.Errorf("stage 2: %d resource limits, at most %d", len(s.Rlimits), C.TJ_MAX_RLIMITS)
	}
	c.clone_flags = C.ulong(unix.CLONE_NEWUSER | unix.CLONE_NEWNS)
	var err error
	if c.dir, err = cp.cstring(s.Dir); err != nil {
		return err
	}
	if s.Warm {
		c.warm = 1
	} else {
		if c.argv, err = cp.cstrings(s.Args); err != nil {
			return err
		}
		if c.envp, err = cp.cstrings(s.Env); err != nil {
			return err
		}
		if c.paths, err = cp.cstrings(s.Paths); err != nil {
			return err
		}
		c.npaths = C.int(len(s.Paths))
		if s.TTY {
			c.tty, c.tty_rows, c.tty_cols = 1, C.uint16_t(s.Rows), C.uint16_t(s.Cols)
		}
	}
	for i, r := range s.Rlimits {
		cr := &c.rlimits[i]
		cr.resource, cr.cur, cr.max = C.int(r.Resource), C.uint64_t(r.Cur), C.uint64_t(r.Max)
	}
	c.nrlimits = C.int(len(s.Rlimits))
	c.thp_disable = cbool(s.NoHugePages)
	c.timer_slack = C.ulong(s.TimerSlack)
	c.sigign = C.uint64_t(s.Ignore)
	c.wait_ack = cbool(s.WaitAck)
	if s.SetID {
		c.setid = 1
		c.uid, c.gid = C.uint32_t(s.UID), C.uint32_t(s.GID)
	}
	return nil
}
