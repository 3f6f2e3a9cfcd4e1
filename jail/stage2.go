package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// Stage 2 runs as the jail user (uid 1000 of a nested user namespace) in the
// finished filesystem. It applies, in this order: working directory,
// rlimits, capability drop and no_new_privs, Landlock, seccomp (last, so the
// filter needs to allow only what remains), then execve. It reports failures
// to the supervisor on the shared socket.

const stage2ConfigFD = 4

func stage2Main() {
	var cfg stage2Config
	f := os.NewFile(stage2ConfigFD, "config")
	b, err := io.ReadAll(io.LimitReader(f, maxMessage))
	if err == nil {
		err = unmarshalWire(b, &cfg)
	}
	if err != nil {
		stage2Fail(125, fmt.Errorf("read stage 2 config: %w", err))
	}
	f.Close()
	if err := unix.Chdir(cfg.Dir); err != nil {
		stage2Fail(125, fmt.Errorf("working directory %s: %w", cfg.Dir, err))
	}
	if err := setRlimits(&cfg); err != nil {
		stage2Fail(125, err)
	}
	if err := dropCapabilities(); err != nil {
		stage2Fail(125, err)
	}
	// The command gets the supervisor's huge page setting, not the one the
	// supervisor forked the init with (noHugePagesForChildren).
	thp := uintptr(0)
	if cfg.NoHugePages {
		thp = 1
	}
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, thp, 0, 0, 0); err != nil {
		stage2Fail(125, fmt.Errorf("set PR_SET_THP_DISABLE to %d: %w", thp, err))
	}
	ready := message{Type: msgReady}
	if cfg.Landlock != nil {
		// This thread (locked since Init) is the one that execs the
		// command: only its domain matters, the other threads end at
		// execve.
		enforced, err := landlock.RestrictThread(*cfg.Landlock)
		if err != nil {
			stage2Fail(125, fmt.Errorf("landlock: %w", err))
		}
		ready.Landlock = &enforced
	}
	path, code, lookErr := lookPath(cfg.Args[0], cfg.Env, cfg.Dir)
	var files []int
	if cfg.Seccomp != nil {
		listener, err := seccomp.Install(cfg.Seccomp)
		if err != nil {
			stage2Fail(125, fmt.Errorf("seccomp: %w", err))
		}
		if listener != nil {
			ready.Notify = true
			files = append(files, int(listener.Fd()))
			defer listener.Close()
		}
	}
	if err := send(supervisorFD, &ready, files...); err != nil {
		os.Exit(125) // the supervisor is gone
	}
	for _, fd := range files {
		unix.Close(fd)
	}
	if cfg.WaitAck {
		if pk, err := recvPacket(supervisorFD); err != nil || len(pk.data) == 0 {
			os.Exit(125) // the supervisor is gone
		}
	}
	if lookErr != nil {
		stage2Exec(code, lookErr)
	}
	// Only 0, 1 and 2 reach the command, whatever was inherited.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	err = syscall.Exec(path, cfg.Args, cfg.Env)
	code = 126
	if errors.Is(err, unix.ENOENT) {
		code = 127
	}
	stage2Exec(code, fmt.Errorf("%s: %w", cfg.Args[0], err))
}

func stage2Fail(code int, err error) {
	send(supervisorFD, &message{Type: msgSetupError, Error: err.Error(), Code: code})
	os.Exit(code)
}

func stage2Exec(code int, err error) {
	send(supervisorFD, &message{Type: msgExecError, Error: err.Error(), Code: code})
	os.Exit(code)
}

func setRlimits(cfg *stage2Config) error {
	set := func(name string, res int, v uint64) error {
		// syscall.Setrlimit (not a raw prlimit) so that Go does not restore
		// its own RLIMIT_NOFILE at execve.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set %s limit to %d: %w (it cannot be raised above the caller's hard limit)", name, v, err)
		}
		return nil
	}
	if err := set("core", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if cfg.NoFile > 0 {
		if err := set("nofile", unix.RLIMIT_NOFILE, cfg.NoFile); err != nil {
			return err
		}
	}
	if cfg.FSize > 0 {
		if err := set("fsize", unix.RLIMIT_FSIZE, uint64(cfg.FSize)); err != nil {
			return err
		}
	}
	if cfg.CPUTime > 0 {
		// The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
		if err := syscall.Setrlimit(unix.RLIMIT_CPU, &syscall.Rlimit{Cur: uint64(cfg.CPUTime), Max: uint64(cfg.CPUTime) + 1}); err != nil {
			return fmt.Errorf("set cpu-time limit: %w", err)
		}
	}
	return nil
}

// dropCapabilities empties the bounding, ambient, inheritable, permitted and
// effective sets of this thread (the one that execs) and sets no_new_privs,
// so neither the command nor any file capability can regain privilege.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}

// lookPath finds the command the way a shell would, with the command's own
// PATH, inside the jail. It returns the exit code for a failure: 127 when
// nothing is found, 126 when something is found but cannot be executed.
func lookPath(name string, env []string, dir string) (string, int, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return checkExecutable(name, p)
	}
	pathEnv := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		found, code, err := checkExecutable(name, p)
		if err == nil {
			return found, 0, nil
		}
		if code == 126 && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", 126, firstErr
	}
	return "", 127, fmt.Errorf("%s: command not found in the jail (PATH=%s)", name, pathEnv)
}

func checkExecutable(name, p string) (string, int, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return "", 127, fmt.Errorf("%s: no such file in the jail", name)
		}
		return "", 126, fmt.Errorf("%s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return "", 126, fmt.Errorf("%s: is a directory", name)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS); err != nil {
		return "", 126, fmt.Errorf("%s: not executable: %w", name, err)
	}
	return p, 0, nil
}
