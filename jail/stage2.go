package jail

/*
#include "stage2.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Stage 2 is the child the init forks to become the command: uid 1000 of
// a nested user namespace, in a copy of the init's mount namespace, where
// the init's mounts are locked (they can be neither unmounted nor
// remounted from inside). It runs C (stage2.c): the supervisor prepares
// everything here, in the init's plan, and the child applies, in this
// order, capability drop and no_new_privs, working directory, rlimits,
// huge page setting, Landlock, seccomp (last, so the filter needs to allow
// only what remains), hands the listener to the supervisor, and execs. A
// failure comes back as a record, which failure turns into the run's
// error.

// stage2Config is the part stage 2 applies before execve.
type stage2Config struct {
	Args    []string
	Env     []string
	Dir     string
	NoFile  uint64
	FSize   int64
	CPUTime int64 // seconds (RLIMIT_CPU)
	// WaitAck makes stage 2 wait, after its ready record, until the
	// supervisor has registered it (the Landlock denial watcher needs its
	// host pid first).
	WaitAck bool
	// NoHugePages is the supervisor's own PR_SET_THP_DISABLE setting, which
	// the command gets back (the init runs with huge pages off).
	NoHugePages bool
}

// stage2 is what the supervisor needs to report stage 2's failures. It
// keeps its own copies: the C plan is freed once the init is forked,
// before stage 2's records arrive.
type stage2 struct {
	cfg          *stage2Config
	paths        []string
	rlimits      []rlimitSet // by index in the C plan's rlimits
	thp          int
	seccompFlags uint
	abi          int // Landlock's, for errors
}

type rlimitSet struct {
	name string
	cur  uint64
}

// prepareStage2 fills c, in the init's plan, with the child's
// instructions. The Landlock ruleset is the init's to build (the rule
// paths resolve in the jail); c gets its flags there, and the seccomp
// filter from the plan's late part.
func prepareStage2(a *arena, c *C.struct_tj_stage2, cfg *stage2Config) (*stage2, error) {
	if len(cfg.Args) == 0 {
		return nil, errors.New("stage 2: no command")
	}
	s := &stage2{cfg: cfg}
	c.clone_flags = C.ulong(unix.CLONE_NEWUSER | unix.CLONE_NEWNS)
	c.dir = a.cstring(cfg.Dir)
	c.argv = a.cstrings(cfg.Args)
	c.envp = a.cstrings(cfg.Env)
	s.paths = execCandidates(cfg.Args[0], cfg.Env, cfg.Dir)
	c.paths = a.cstrings(s.paths)
	c.npaths = C.int(len(s.paths))

	add := func(name string, res int, cur, max uint64) {
		r := &c.rlimits[c.nrlimits]
		r.resource, r.cur, r.max = C.int(res), C.uint64_t(cur), C.uint64_t(max)
		c.nrlimits++
		s.rlimits = append(s.rlimits, rlimitSet{name, cur})
	}
	add("core", unix.RLIMIT_CORE, 0, 0)
	switch {
	case cfg.NoFile > 0:
		add("nofile", unix.RLIMIT_NOFILE, cfg.NoFile, cfg.NoFile)
	case C.tj_orig_nofile_ok != 0:
		// The Go runtime raised this process's soft limit; the command
		// gets the one the supervisor's caller gave.
		add("nofile", unix.RLIMIT_NOFILE, uint64(C.tj_orig_nofile_cur), uint64(C.tj_orig_nofile_max))
	}
	if cfg.FSize > 0 {
		add("fsize", unix.RLIMIT_FSIZE, uint64(cfg.FSize), uint64(cfg.FSize))
	}
	if cfg.CPUTime > 0 {
		// The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
		add("cpu-time", unix.RLIMIT_CPU, uint64(cfg.CPUTime), uint64(cfg.CPUTime)+1)
	}
	// The command gets the supervisor's huge page setting, not the one the
	// supervisor forked the init with (noHugePagesForChildren).
	if cfg.NoHugePages {
		c.thp_disable, s.thp = 1, 1
	}
	// The seccomp filter is in the plan's late part (fillLate).
	if cfg.WaitAck {
		c.wait_ack = 1
	}
	return s, nil
}

// failure is the run's error for a child that failed at step.
func (s *stage2) failure(step int, errno syscall.Errno, index, code int, isDir bool) *SetupError {
	cfg := s.cfg
	var err error
	switch step {
	case C.TJ_STEP_SYNC:
		err = fmt.Errorf("stage 2: the init did not set up its user namespace (%v)", errOrEOF(errno))
	case C.TJ_STEP_SETSID:
		err = fmt.Errorf("stage 2: setsid: %w", errno)
	case C.TJ_STEP_PDEATHSIG:
		err = fmt.Errorf("stage 2: parent death signal: %v", errOrEOF(errno))
	case C.TJ_STEP_CAPBSET:
		err = fmt.Errorf("drop capability %d from the bounding set: %w", index, errno)
	case C.TJ_STEP_NNP:
		err = fmt.Errorf("set no_new_privs: %w", errno)
	case C.TJ_STEP_AMBIENT:
		err = fmt.Errorf("clear ambient capabilities: %w", errno)
	case C.TJ_STEP_CAPSET:
		err = fmt.Errorf("clear capabilities: %w", errno)
	case C.TJ_STEP_CHDIR:
		err = fmt.Errorf("working directory %s: %w", cfg.Dir, errno)
	case C.TJ_STEP_RLIMIT:
		name, v := "?", uint64(0)
		if index >= 0 && index < len(s.rlimits) {
			name, v = s.rlimits[index].name, s.rlimits[index].cur
		}
		err = fmt.Errorf("set %s limit to %d: %w (it cannot be raised above the caller's hard limit)", name, v, errno)
	case C.TJ_STEP_THP:
		err = fmt.Errorf("set PR_SET_THP_DISABLE to %d: %w", s.thp, errno)
	case C.TJ_STEP_LANDLOCK:
		err = fmt.Errorf("landlock: landlock restrict (ABI %d): %w", s.abi, errno)
	case C.TJ_STEP_SECCOMP:
		err = fmt.Errorf("seccomp: install (flags %#x): %w", s.seccompFlags, errno)
	case C.TJ_STEP_READY, C.TJ_STEP_ACK:
		err = fmt.Errorf("stage 2: the supervisor is gone (%v)", errOrEOF(errno))
	case C.TJ_STEP_FDS:
		err = fmt.Errorf("stage 2: mark descriptors close-on-exec: %w", errno)
	case C.TJ_STEP_EXEC:
		return &SetupError{Code: code, Err: s.execError(errno, index, isDir)}
	default:
		err = fmt.Errorf("stage 2 failed at step %d: %v", step, errOrEOF(errno))
	}
	return &SetupError{Code: code, Err: err}
}

func errOrEOF(errno syscall.Errno) string {
	if errno == 0 {
		return "end of file"
	}
	return errno.Error()
}

// execError says why the command could not be executed: 127 nothing found,
// 126 found but not executable. The init sees the command's files and
// says whether the candidate at index is a directory.
func (s *stage2) execError(errno syscall.Errno, index int, isDir bool) error {
	name := s.cfg.Args[0]
	if index < 0 || index >= len(s.paths) {
		if strings.Contains(name, "/") {
			return fmt.Errorf("%s: no such file in the jail", name)
		}
		return fmt.Errorf("%s: command not found in the jail (PATH=%s)", name, envPath(s.cfg.Env))
	}
	if errno == unix.EACCES {
		if isDir {
			return fmt.Errorf("%s: is a directory", name)
		}
		return fmt.Errorf("%s: not executable: %w", name, errno)
	}
	return fmt.Errorf("%s: %w", name, errno)
}

// execCandidates lists where the command is looked for, the way a shell
// would, with the command's own PATH, relative to its working directory.
func execCandidates(name string, env []string, dir string) []string {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	}
	if strings.Contains(name, "/") {
		return []string{abs(name)}
	}
	var out []string
	for _, d := range filepath.SplitList(envPath(env)) {
		if d == "" {
			d = "."
		}
		out = append(out, abs(filepath.Join(d, name)))
	}
	return out
}

func envPath(env []string) string {
	path := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	return path
}
