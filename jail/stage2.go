package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initc"
)

// Stage 2 is the child the init forks to become the command: uid 1000 of
// a nested user namespace, in a copy of the init's mount namespace, where
// the init's mounts are locked (they can be neither unmounted nor
// remounted from inside). It runs C (initc's stage2.c): the supervisor prepares
// everything here, in the init's plan, and the child applies, in this
// order, capability drop and no_new_privs, working directory, rlimits,
// huge page setting, Landlock, seccomp (last, so the filter needs to allow
// only what remains), hands the listener to the supervisor, and execs. A
// failure comes back as a record, which failure turns into the run's
// error with the texts of init_steps.h.

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
	// Warm leaves the command's strings out of the plan: stage 2 parks,
	// confined, and gets them with the call (stage2.c, warm.go).
	Warm bool
	// TTY gives the command a terminal of Rows by Cols (Cmd.TTY); a warm
	// jail learns it with the call.
	TTY        bool
	Rows, Cols uint16
	// Session makes the init a session's (init_session.c): each call
	// brings its strings, as a warm jail's does (Warm is set too).
	Session bool
	// Ignore: the signals the command starts with ignored (signalMask of
	// Cmd.IgnoredSignals).
	Ignore uint64
}

// stage2 is what the supervisor needs to report stage 2's failures. It
// keeps its own copies: the C plan is freed once the init is forked,
// before stage 2's records arrive.
type stage2 struct {
	cfg          *stage2Config
	paths        []string
	rlimits      []rlimitSet // by index in the C plan's rlimits
	thp          int
	timerSlack   uint64
	seccompFlags uint
	abi          int // Landlock's, for errors
}

type rlimitSet struct {
	name string
	cur  uint64
}

// prepareStage2 is the child's instructions in the init's plan, and what
// the supervisor keeps to report its failures. The Landlock ruleset is the
// init's to build (the rule paths resolve in the jail), and the seccomp
// filter goes in the plan's late part.
func prepareStage2(cfg *stage2Config) (*stage2, initc.Stage2, error) {
	if len(cfg.Args) == 0 {
		return nil, initc.Stage2{}, errors.New("stage 2: no command")
	}
	s := &stage2{cfg: cfg}
	c := initc.Stage2{Dir: cfg.Dir, Warm: cfg.Warm, WaitAck: cfg.WaitAck}
	if !cfg.Warm {
		s.paths = execCandidates(cfg.Args[0], cfg.Env, cfg.Dir)
		c.Args, c.Env, c.Paths = cfg.Args, cfg.Env, s.paths
		c.TTY, c.Rows, c.Cols = cfg.TTY, cfg.Rows, cfg.Cols
	}
	add := func(name string, res int, cur, max uint64) {
		c.Rlimits = append(c.Rlimits, initc.Rlimit{Resource: res, Cur: cur, Max: max})
		s.rlimits = append(s.rlimits, rlimitSet{name, cur})
	}
	add("core", unix.RLIMIT_CORE, 0, 0)
	if cfg.NoFile > 0 {
		add("nofile", unix.RLIMIT_NOFILE, cfg.NoFile, cfg.NoFile)
	} else if cur, max, ok := initc.OrigNoFile(); ok {
		// The Go runtime raised this process's soft limit; the command
		// gets the one the supervisor's caller gave.
		add("nofile", unix.RLIMIT_NOFILE, cur, max)
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
		c.NoHugePages, s.thp = true, 1
	}
	// The command gets the timer slack the supervisor started with, not
	// one the program raised for its own threads (tooljail does:
	// internal/timerslack); 0, unknown, leaves it the init's.
	ns := initc.OrigTimerSlack()
	c.TimerSlack, s.timerSlack = ns, ns
	c.Ignore = cfg.Ignore
	return s, c, nil
}

// signalMask is sigs as stage 2's mask (bit N-1: signal N), refusing what
// cannot be ignored.
func signalMask(sigs []os.Signal) (uint64, error) {
	var m uint64
	for _, s := range sigs {
		n, ok := s.(syscall.Signal)
		if !ok || n < 1 || n > 64 {
			return 0, fmt.Errorf("Cmd.IgnoredSignals: %v is not a signal of this system (1 to 64)", s)
		}
		if n == syscall.SIGKILL || n == syscall.SIGSTOP {
			return 0, fmt.Errorf("Cmd.IgnoredSignals: %v cannot be ignored", n)
		}
		m |= 1 << (n - 1)
	}
	return m, nil
}

// StartIgnored is the signals this process was started with ignored, read
// before the Go runtime started: the runtime keeps only SIGHUP and SIGINT
// ignored and puts its handlers over the others. The CLI gives them to its
// command (Cmd.IgnoredSignals).
func StartIgnored() []os.Signal {
	var out []os.Signal
	m := initc.OrigIgnored()
	for n := 1; n <= 64; n++ {
		if m&(1<<(n-1)) != 0 {
			out = append(out, syscall.Signal(n))
		}
	}
	return out
}

// failure is the run's error for a child that failed: the text of its
// step in init_steps.h, with the command's words.
func (s *stage2) failure(r record) *SetupError {
	code := r.Code
	if code == 0 {
		code = ExitSetup
	}
	text := initc.StepText(stage2Steps(), r.Step, "stage 2 failed at step {step}: {errno}")
	return &SetupError{Code: code, Err: initc.Describe(r, text, s.word)}
}

// word is what a placeholder of stage 2's texts stands for.
func (s *stage2) word(r record, name string) (string, bool) {
	switch name {
	case "command":
		return s.cfg.Args[0], true
	case "lookup": // 1: the command is a name looked up in PATH
		return initc.Choice(!strings.Contains(s.cfg.Args[0], "/")), true
	case "path_var":
		return envPath(s.cfg.Env), true
	case "workdir":
		return s.cfg.Dir, true
	case "rlimit", "rlimit_value":
		l := rlimitSet{name: "?"}
		if r.Index >= 0 && r.Index < len(s.rlimits) {
			l = s.rlimits[r.Index]
		}
		if name == "rlimit" {
			return l.name, true
		}
		return strconv.FormatUint(l.cur, 10), true
	case "thp":
		return strconv.Itoa(s.thp), true
	case "timer_slack":
		return strconv.FormatUint(s.timerSlack, 10), true
	case "abi":
		return strconv.Itoa(s.abi), true
	case "seccomp_flags":
		return fmt.Sprintf("%#x", s.seccompFlags), true
	}
	return "", false
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
