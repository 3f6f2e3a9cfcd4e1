package jail

/*
#include <stdlib.h>
#include "stage2.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// Stage 2 is the child the init forks to become the command: uid 1000 of
// a nested user namespace, in a copy of the init's mount namespace, where
// the init's mounts are locked (they can be neither unmounted nor
// remounted from inside). It runs C (stage2.c), not a second Go runtime:
// the init prepares everything here, and the child applies, in this order,
// capability drop and no_new_privs, working directory, rlimits, huge page
// setting, Landlock, seccomp (last, so the filter needs to allow only what
// remains), hands the listener to the supervisor, and execs. A failure
// comes back to the init as a tj_status, which the init turns into the
// supervisor's message.

// stage2 is one prepared start: C memory the child reads, and what the
// init needs to report a failure.
type stage2 struct {
	cfg     *stage2Config
	c       *C.struct_tj_stage2
	paths   []string
	rlimits []string // names, by index in c.rlimits
	cmem    []unsafe.Pointer
	rules   landlock.Ruleset
	abi     int // Landlock's, for errors
}

func (s *stage2) alloc(size uintptr) unsafe.Pointer {
	p := C.calloc(1, C.size_t(size))
	if p == nil {
		panic("stage 2: out of memory")
	}
	s.cmem = append(s.cmem, p)
	return p
}

func (s *stage2) cstring(v string) *C.char {
	p := (*C.char)(s.alloc(uintptr(len(v)) + 1))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), len(v)), v)
	return p
}

func (s *stage2) cstrings(l []string) **C.char {
	arr := unsafe.Slice((**C.char)(s.alloc(uintptr(len(l)+1)*unsafe.Sizeof((*C.char)(nil)))), len(l)+1)
	for i, v := range l {
		arr[i] = s.cstring(v)
	}
	return &arr[0]
}

func (s *stage2) free() {
	for _, p := range s.cmem {
		C.free(p)
	}
	s.cmem = nil
	s.rules.Close()
}

// prepareStage2 turns the config into the child's instructions. Errors are
// setup errors (exit 125).
func prepareStage2(cfg *stage2Config) (*stage2, error) {
	if len(cfg.Args) == 0 {
		return nil, errors.New("stage 2: no command")
	}
	s := &stage2{cfg: cfg, rules: landlock.Ruleset{FD: -1}}
	s.c = (*C.struct_tj_stage2)(s.alloc(unsafe.Sizeof(C.struct_tj_stage2{})))
	c := s.c
	c.clone_flags = C.ulong(unix.CLONE_NEWUSER | unix.CLONE_NEWNS)
	c.parent_pid = C.int(os.Getpid())
	c.dir = s.cstring(cfg.Dir)
	c.argv = s.cstrings(cfg.Args)
	c.envp = s.cstrings(cfg.Env)
	s.paths = execCandidates(cfg.Args[0], cfg.Env, cfg.Dir)
	c.paths = s.cstrings(s.paths)
	c.npaths = C.int(len(s.paths))

	add := func(name string, res int, cur, max uint64) {
		r := &c.rlimits[c.nrlimits]
		r.resource, r.cur, r.max = C.int(res), C.uint64_t(cur), C.uint64_t(max)
		c.nrlimits++
		s.rlimits = append(s.rlimits, name)
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
		c.thp_disable = 1
	}

	ready := message{Type: msgReady}
	c.landlock_fd = -1
	if cfg.Landlock != nil {
		rs, enforced, err := landlock.NewRuleset(*cfg.Landlock)
		if err != nil {
			s.free()
			return nil, fmt.Errorf("landlock: %w", err)
		}
		s.rules, s.abi = rs, enforced.ABI
		c.landlock_fd, c.landlock_flags = C.int(rs.FD), C.uint(rs.Flags)
		ready.Landlock = &enforced
	}
	if cfg.Seccomp != nil {
		insns, flags, err := seccomp.ThreadArgs(cfg.Seccomp)
		if err != nil {
			s.free()
			return nil, fmt.Errorf("seccomp: %w", err)
		}
		f := unsafe.Slice((*unix.SockFilter)(s.alloc(uintptr(len(insns))*unsafe.Sizeof(insns[0]))), len(insns))
		copy(f, insns)
		c.filter = (*C.struct_sock_filter)(unsafe.Pointer(&f[0]))
		c.filter_len = C.ushort(len(insns))
		c.seccomp_flags = C.uint(flags)
		if cfg.Seccomp.Notify {
			c.notify = 1
			ready.Notify = true
		}
	}
	b, err := marshalWire(&ready)
	if err != nil {
		s.free()
		return nil, fmt.Errorf("encode the ready message: %w", err)
	}
	c.ready = C.CBytes(b)
	s.cmem = append(s.cmem, c.ready)
	c.ready_len = C.size_t(len(b))
	c.sock = supervisorFD
	if cfg.WaitAck {
		c.wait_ack = 1
	}
	return s, nil
}

// startStage2 forks stage 2 and waits until it has exec'd the command or
// failed. It returns the child's pid, and the message for the supervisor
// when the child failed (the child has exited then, with the code the
// message carries; the init reaps it as it would the command).
func startStage2(cfg *stage2Config) (int, *message, error) {
	s, err := prepareStage2(cfg)
	if err != nil {
		return 0, nil, err
	}
	defer s.free()
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return 0, nil, fmt.Errorf("stage 2 pipe: %w", err)
	}
	defer syncW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		syncR.Close()
		return 0, nil, fmt.Errorf("stage 2 pipe: %w", err)
	}
	defer statusR.Close()
	s.c.sync_fd, s.c.status_fd = C.int(syncR.Fd()), C.int(statusW.Fd())

	pid := int(C.tj_stage2_start(s.c))
	syncR.Close()
	statusW.Close()
	if pid < 0 {
		return 0, nil, fmt.Errorf("start stage 2: %w", syscall.Errno(-pid))
	}
	abort := func(err error) (int, *message, error) {
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, nil, 0, nil)
		return 0, nil, err
	}
	// The nested namespace maps the jail user (1000) to the init's uid 0,
	// so files the command writes belong to the invoking host user.
	for _, m := range [][2]string{
		{"setgroups", "deny"},
		{"uid_map", fmt.Sprintf("%d 0 1\n", JailUID)},
		{"gid_map", fmt.Sprintf("%d 0 1\n", JailGID)},
	} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", pid, m[0]), []byte(m[1]), 0); err != nil {
			return abort(fmt.Errorf("stage 2 %s: %w", m[0], err))
		}
	}
	if _, err := syncW.Write([]byte{0}); err != nil {
		return abort(fmt.Errorf("start stage 2: %w", err))
	}
	var st C.struct_tj_status
	_, err = io.ReadFull(statusR, unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st)))
	switch err {
	case io.EOF:
		return pid, nil, nil // the command runs: execve closed the pipe
	case nil:
		return pid, s.failure(int(st.step), syscall.Errno(st.err), int(st.index), int(st.code)), nil
	}
	return abort(fmt.Errorf("read stage 2 status: %w", err))
}

// failure is the supervisor's message for a child that failed at step.
func (s *stage2) failure(step int, errno syscall.Errno, index, code int) *message {
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
			name, v = s.rlimits[index], uint64(s.c.rlimits[index].cur)
		}
		err = fmt.Errorf("set %s limit to %d: %w (it cannot be raised above the caller's hard limit)", name, v, errno)
	case C.TJ_STEP_THP:
		err = fmt.Errorf("set PR_SET_THP_DISABLE to %d: %w", s.c.thp_disable, errno)
	case C.TJ_STEP_LANDLOCK:
		err = fmt.Errorf("landlock: landlock restrict (ABI %d): %w", s.abi, errno)
	case C.TJ_STEP_SECCOMP:
		err = fmt.Errorf("seccomp: install (flags %#x): %w", uint(s.c.seccomp_flags), errno)
	case C.TJ_STEP_READY, C.TJ_STEP_ACK:
		err = fmt.Errorf("stage 2: the supervisor is gone (%v)", errOrEOF(errno))
	case C.TJ_STEP_FDS:
		err = fmt.Errorf("stage 2: mark descriptors close-on-exec: %w", errno)
	case C.TJ_STEP_EXEC:
		return &message{Type: msgExecError, Error: s.execError(errno, index).Error(), Code: code}
	default:
		err = fmt.Errorf("stage 2 failed at step %d: %v", step, errOrEOF(errno))
	}
	return &message{Type: msgSetupError, Error: err.Error(), Code: code}
}

func errOrEOF(errno syscall.Errno) string {
	if errno == 0 {
		return "end of file"
	}
	return errno.Error()
}

// execError says why the command could not be executed: 127 nothing found,
// 126 found but not executable. The init sees the same files as the
// command, so it can tell a directory from a file it may not execute.
func (s *stage2) execError(errno syscall.Errno, index int) error {
	name := s.cfg.Args[0]
	if index < 0 || index >= len(s.paths) {
		if strings.Contains(name, "/") {
			return fmt.Errorf("%s: no such file in the jail", name)
		}
		return fmt.Errorf("%s: command not found in the jail (PATH=%s)", name, envPath(s.cfg.Env))
	}
	if errno == unix.EACCES {
		var st unix.Stat_t
		if unix.Stat(s.paths[index], &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
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
