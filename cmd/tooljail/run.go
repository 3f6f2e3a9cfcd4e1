package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/internal/term"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/serve"
)

const runUsage = `Usage: tooljail run [flags] -- CMD [ARG...]

Runs CMD in a jail built from a profile (default: "default"); flags override
the profile, repeatable flags add to it, the others may be given once. Sizes
are bytes with an optional binary suffix (64K, 512M, 1G; KiB/MiB/GiB too),
durations Go durations (500ms, 10s, 5m), "0" or "unlimited" lifts a limit.

Exit codes: the command's own; 128+N when signal N ended it (137 also for the
memory limit); 124 timeout; 125 tooljail failed (bad flag or profile, a layer
that cannot be enforced); 126 the command cannot be executed; 127 not found.

Host paths (the workdir, --ro and --rw sources, --root, the --profile file
and what it extends, --report, --audit-log) are opened once, before the run,
and a symlink in them is followed only where no jailed run could have
planted it (in a --root directory, symlinks are resolved inside it).
Profile files inside a read-write bind are shown read-only to the command.
Started by root, the jail runs as an unprivileged host user (--host-user).

Flags:
`

// runFlags are the parsed `run` flags, applied on top of the profile.
type runFlags struct {
	profile       scalar
	ro, rw        []string
	tmpfs, mask   []string
	caches        []string
	toolchains    []string
	workdir       scalar
	noWorkdir     bool
	workdirRO     bool
	limits        [][2]string // key, value in flag order
	net           scalar
	allowHosts    []string
	onViolation   scalar
	hostUser      scalar
	root          scalar
	changes       scalar // --changes MODE
	changesDir    scalar // --changes-dir DIR
	env, passEnv  []string
	allowDegraded []string
	report        scalar
	json          bool
	mergeStderr   bool
	tty, noTTY    bool
	session       scalar // --session ID: a call in a server's session
	keepRunning   bool
	auditLog      scalar
	quiet         bool
	server        scalar
}

// scalar is a flag that takes one value. Given twice it is an error rather
// than a silent override, so that a wrapper's flag and the user's cannot
// both seem to apply.
type scalar struct {
	value string
	set   bool
	check func(string) error // nil: any value
}

func (s *scalar) String() string {
	if s == nil {
		return ""
	}
	return s.value
}

// Set checks v before anything else, so that a bad value is an error of
// its own even where a later flag would have replaced it.
func (s *scalar) Set(v string) error {
	if s.check != nil {
		if err := s.check(v); err != nil {
			return err
		}
	}
	if s.set {
		return fmt.Errorf("given twice (%q, then %q); give it once", s.value, v)
	}
	s.value, s.set = v, true
	return nil
}

// asProfile checks a flag's value as the profile key it overrides is
// checked: set puts it into an empty profile, whose Validate then sees
// only that value. So each value is refused when it is parsed, with the
// profile's message, not after the last flag has won.
func asProfile(set func(p *profiles.Profile, v string) error) func(string) error {
	return func(v string) error {
		var p profiles.Profile
		err := set(&p, v)
		if err == nil {
			err = p.Validate()
		}
		if err == nil {
			return nil
		}
		// The flag package names the flag and quotes the value already.
		var ke *profiles.KeyError
		if errors.As(err, &ke) {
			err = ke.Err
		}
		if msg, ok := strings.CutPrefix(err.Error(), strconv.Quote(v)+": "); ok {
			return errors.New(msg)
		}
		return err
	}
}

// nonEmpty refuses "": an empty path would otherwise mean "not given".
func nonEmpty(what string) func(string) error {
	return func(v string) error {
		if v == "" {
			return fmt.Errorf("empty; give %s", what)
		}
		return nil
	}
}

func newRunFlagSet(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	list := func(dst *[]string, check func(string) error) func(string) error {
		return func(v string) error {
			if err := check(v); err != nil {
				return err
			}
			*dst = append(*dst, v)
			return nil
		}
	}
	limit := func(key string) func(string) error {
		check := asProfile(func(p *profiles.Profile, v string) error { return p.SetLimit(key, v) })
		return func(v string) error {
			if err := check(v); err != nil {
				return err
			}
			for _, l := range f.limits {
				if l[0] == key {
					return fmt.Errorf("given twice (%q, then %q); give it once", l[1], v)
				}
			}
			f.limits = append(f.limits, [2]string{key, v})
			return nil
		}
	}
	f.profile.check = nonEmpty("a shipped profile name or a file path")
	f.workdir.check = nonEmpty("a directory, or --no-workdir for none")
	f.report.check = nonEmpty("a file path, or - for stderr")
	f.auditLog.check = nonEmpty("a file path")
	f.server.check = nonEmpty("the socket of a tooljail serve")
	f.net.check = asProfile(func(p *profiles.Profile, v string) error { p.Network.Mode = &v; return nil })
	f.onViolation.check = asProfile(func(p *profiles.Profile, v string) error { p.Seccomp.OnViolation = &v; return nil })
	f.root.check = asProfile((*profiles.Profile).SetRoot)
	f.changes.check = func(v string) error { _, err := changes.ParseMode(v); return err }
	f.changesDir.check = func(v string) error {
		if !strings.HasPrefix(v, "/") {
			return errors.New("want an absolute path")
		}
		return nil
	}
	f.hostUser.check = func(v string) error {
		_, err := profiles.ParseHostUser(v)
		return err
	}
	fs.Var(&f.profile, "profile", "start from a shipped `PROFILE` or a TOML file (default \"default\")")
	fs.Func("ro", "bind a host `PATH[:DEST]` read-only (repeatable)", list(&f.ro,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Ro = []string{v}; return nil })))
	fs.Func("rw", "bind a host `PATH[:DEST]` read-write (repeatable; not a system, top-level or home directory)", list(&f.rw,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Rw = []string{v}; return nil })))
	fs.Func("tmpfs", "an empty tmpfs at `DEST[:SIZE]` (repeatable; without SIZE as large as the memory limit)", list(&f.tmpfs,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Tmpfs = []string{v}; return nil })))
	fs.Func("cache", "bind the build cache `NAME[=DIR]` read-write in HOME: go-build, go-mod, pip, npm or cargo-registry, from tooljail's own directory (~/.cache/tooljail/caches/NAME) or DIR (repeatable)", list(&f.caches,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Caches = []string{v}; return nil })))
	fs.Func("mask", "hide `PATH` inside the jail behind an empty file or directory (repeatable)", list(&f.mask,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Mask = []string{v}; return nil })))
	fs.Var(&f.root, "root", "take the jail's system directories and /etc entries from `DIR`, a root file system of your own (an unpacked container image), instead of the host; owned by you or root, not writable by group or others")
	fs.Func("toolchain", "show the caller's toolchain read-only with execute rights, its bin first in PATH: `auto` finds the command's own (a virtualenv, pyenv, uv, conda, nvm, fnm, volta, rustup, a Go root, a Java home) from this PATH, HOME and directory; an absolute PATH names a prefix (repeatable; never a home directory or one that holds credentials)", list(&f.toolchains,
		asProfile(func(p *profiles.Profile, v string) error { p.Filesystem.Toolchains = []string{v}; return nil })))
	fs.Var(&f.workdir, "workdir", "bind `DIR` read-write and start there (default: the current directory; /, system and top-level directories and home directories are refused)")
	fs.BoolVar(&f.noWorkdir, "no-workdir", false, "no workdir bind; start in /tmp, or in HOME when the profile has no /tmp")
	fs.Var(&f.changes, "changes", "`MODE`: off; record (the command's writes to the workdir and --rw binds reach the host when it ends, listed in the report); review (kept as a change set, the host untouched until 'tooljail changes apply'); apply-on-success (review, applied when it exits 0)")
	fs.Var(&f.changesDir, "changes-dir", "the change store `DIR` (also TOOLJAIL_CHANGES_DIR; default /var/lib/tooljail/changes for root, else $XDG_STATE_HOME/tooljail/changes or ~/.local/state/tooljail/changes)")
	fs.BoolVar(&f.workdirRO, "workdir-ro", false, "bind the workdir read-only (readable, not executable): for commands that search and read it; as filesystem.workdir_readonly = true (the readonly profile)")
	fs.Func("memory", "memory cap `SIZE` (cgroup; swap 0)", limit("memory"))
	fs.Func("cpus", "CPU cap in `CPUS` (cgroup), e.g. 0.5", limit("cpus"))
	fs.Func("pids", "cap on processes and threads `N` (cgroup)", limit("pids"))
	fs.Func("timeout", "wall-clock limit `DUR`; the whole tree is killed, exit 124", limit("timeout"))
	fs.Func("cpu-time", "CPU-time limit `DUR` (RLIMIT_CPU)", limit("cpu_time"))
	fs.Func("nofile", "open file limit `N` (RLIMIT_NOFILE)", limit("nofile"))
	fs.Func("fsize", "largest file the command may write, `SIZE` (RLIMIT_FSIZE)", limit("fsize"))
	fs.Func("output-limit", "cap `SIZE` on relayed stdout+stderr; the rest is counted and dropped", limit("output_limit"))
	fs.Func("max-violations", "after `N` denied system calls the next one kills the whole run (status violation); 0 for no limit", limit("max_violations"))
	fs.Var(&f.net, "net", "`MODE`: none (own namespace, loopback only), host (trusted tools only) or allow (only the --allow-host hosts, through tooljail's proxies and DNS)")
	fs.Func("allow-host", "with --net allow (or a profile in mode allow): let the command reach `PATTERN`, a host name, *.DOMAIN, IP or CIDR with an optional :PORT (default 80 and 443) (repeatable)", list(&f.allowHosts,
		asProfile((*profiles.Profile).AddAllowHost)))
	fs.Func("net-connections", "network allow mode: at most `N` connections through the proxies at once", limit("net_connections"))
	fs.Func("net-bytes", "network allow mode: at most `SIZE` forwarded by the proxies in the run, both directions; 0 for no limit", limit("net_bytes"))
	fs.Var(&f.onViolation, "on-violation", "`ACTION`: deny (EPERM, the run goes on) or kill (the run is killed)")
	fs.Var(&f.hostUser, "host-user", fmt.Sprintf("when tooljail runs as root, the host `USER` the jail runs as: a name, UID or UID:GID, never root (default: the profile's host_user, else the workdir's owner unless that is root, else %d:%d); other callers can only name themselves",
		jail.DefaultHostUser.UID, jail.DefaultHostUser.GID))
	fs.Func("env", "give the command `K=V`, or K with its value in this environment (repeatable); HOME, TMPDIR, USER, LOGNAME, SHELL, PWD, OLDPWD are the jail's and names that look like credentials (env.deny) are dropped, named in the report; a PATH adds its entries the jail shows after the jail's own", list(&f.env,
		profiles.CheckVarFlag))
	fs.Func("pass-env", "copy variable `K` from this environment when set (repeatable)", list(&f.passEnv,
		asProfile(func(p *profiles.Profile, v string) error { p.Env.Pass = []string{v}; return nil })))
	fs.Func("allow-degraded", "run even if these `LAYERS` cannot be enforced: landlock, seccomp, seccomp-notify, cgroup, memory, cpu, pids, namespaces (no namespaces, confined by Landlock and seccomp, where none can be made), protect (without namespaces, the protected paths of the read-write binds stay writable)", list(&f.allowDegraded,
		asProfile((*profiles.Profile).AddAllowDegraded)))
	fs.Var(&f.report, "report", "write the JSON report to `FILE` (- for stderr); opened before the run: a regular file, no symlink, outside the run's read-write binds")
	fs.BoolVar(&f.json, "json", false, "capture stdout/stderr into the report and print only the report on stdout")
	fs.BoolVar(&f.mergeStderr, "merge-stderr", false, "make the command's stderr its stdout (one pipe, as 2>&1): what it writes to either goes to stdout in the order written, and is the report's stdout")
	fs.BoolVar(&f.tty, "tty", false, "give the command a terminal of the jail's own (its stdin, stdout and stderr; this terminal goes raw and is restored after): the default when stdin and stdout are terminals and --json is not given; its output, stderr included, is the report's stdout")
	f.session.check = func(v string) error {
		if !jail.ValidSessionID(v) {
			return errors.New("not a session id (32 hex digits, as 'tooljail session start' printed)")
		}
		return nil
	}
	fs.Var(&f.session, "session", "run the command in the server's session `ID` ('tooljail session start'): the session's jail, with this command, env, stdin and --timeout/--output-limit; --workdir is then its working directory in the jail (default the session's workdir). Uses the server of --server, TOOLJAIL_SERVER, else the default socket (docs/sessions.md)")
	fs.BoolVar(&f.keepRunning, "keep-running", false, "with --session: what the command leaves running (a server started with &) stays in the session after it ends, until the session stops; without it, it is killed when the command ends")
	fs.BoolVar(&f.noTTY, "no-tty", false, "pipes, not a terminal, even when stdin and stdout are terminals")
	fs.Var(&f.auditLog, "audit-log", "append one JSON line per run to `FILE` (also TOOLJAIL_AUDIT_LOG); opened as --report is")
	fs.Var(&f.server, "server", "send the run to the `SOCKET` of a tooljail serve (also TOOLJAIL_SERVER) instead of jailing it here; the server's profile decides what --ro, --rw, --tmpfs, --mask, --workdir-ro, --on-violation, --host-user, --root, --allow-degraded and --audit-log would, so they are refused")
	fs.BoolVar(&f.quiet, "quiet", false, "no summary line on stderr")
	fs.BoolVar(&f.quiet, "q", false, "same as --quiet")
	return fs
}

func runCommand(args []string, stdout, stderr io.Writer) int {
	// A run for a server jails nothing here (the kernel's view of the
	// current directory, as below).
	if sr, err := parseServed(args, unix.Getwd, os.Environ()); err != nil {
		return fail(stderr, "%v", err)
	} else if sr != nil {
		return sr.run(os.Stdin, stdout, stderr)
	}
	// The host probe does not depend on the profile: overlap the two. It
	// only reads (files, system calls), so an early exit leaves nothing.
	go hostprobe.Probe()
	// So is the first signal.Notify: it hands each signal to a locked
	// thread the runtime starts for it.
	sigs := make(chan os.Signal, 16)
	notified := make(chan struct{})
	go func() {
		signal.Notify(sigs, forwardedSignals...)
		close(notified)
	}()
	stopSignals := sync.OnceFunc(func() {
		<-notified
		signal.Stop(sigs)
	})
	defer stopSignals()
	// The kernel's view of the current directory, not $PWD: it has no
	// symlinks, which the jail would refuse to follow where a run could
	// have planted them.
	f, spec, cwd, err := parseRun(args, unix.Getwd, os.Environ())
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, runUsage)
		printFlags(stdout, newRunFlagSet(&runFlags{}))
		return 0
	}
	if err != nil {
		return fail(stderr, "%v", err)
	}

	cmd := jail.Command(spec)
	cmd.Stdin = os.Stdin
	cmd.MergeStderr = f.mergeStderr
	if wantTTY(f, term.IsTerminal(int(os.Stdin.Fd())), term.IsTerminal(int(os.Stdout.Fd()))) {
		cmd.TTY = &jail.TTY{}
		cmd.TTY.Rows, cmd.TTY.Cols = ttySize()
	}
	switch {
	case f.json:
		cmd.CaptureOutput = true
	case f.mergeStderr || cmd.TTY != nil:
		cmd.Stdout = os.Stdout
	default:
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	restore, err := rawTerminal(cmd.TTY != nil)
	if err != nil {
		return fail(stderr, "--tty: %v; run with --no-tty", err)
	}
	// On every way out; first of all before the report or the summary
	// is printed, below.
	defer restore()
	outs := f.outputs(cwd, os.Getenv("TOOLJAIL_AUDIT_LOG"))
	cmd.Outputs = outs.list()
	defer outs.close()
	<-notified
	var forwarding chan struct{}
	if cmd.Start() == nil {
		forwarding = make(chan struct{})
		go func() {
			defer close(forwarding)
			forwardSignals(sigs, ttySignal(cmd))
		}()
	}
	result, runErr := cmd.Wait()
	restore()
	// From here on a signal is tooljail's own again: one that comes while
	// it writes the report or the audit log ends it by the default action
	// instead of going to a command that is gone. Stop guarantees no more
	// sends, so the channel can be closed to end the forwarder.
	stopSignals()
	close(sigs)
	if forwarding != nil {
		<-forwarding
	}
	if result == nil {
		return fail(stderr, "%v", runErr)
	}
	return f.finish(result, runErr, outs, stdout, stderr)
}

// parseRun turns the arguments of `run` into its flags and the jail.Spec
// to run, and returns the current directory it used: everything run
// decides before it starts anything. getwd gives the current directory
// (asked only once the arguments parse), environ is the caller's
// environment. The error is one line, flag.ErrHelp for --help.
func parseRun(args []string, getwd func() (string, error), environ []string) (*runFlags, *jail.Spec, string, error) {
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, "", err
		}
		return nil, nil, "", lineError("%v; see 'tooljail run --help'", err)
	}
	if serverOf(&f, environ) != "" {
		// runCommand sends these to the server (parseServed): nothing of
		// them may run here.
		return nil, nil, "", errors.New("a run for a server (--server, TOOLJAIL_SERVER) is not jailed here")
	}
	if f.tty && f.noTTY {
		return nil, nil, "", errTTYTwice
	}
	command, err := commandOf(fs.Args())
	if err != nil {
		return nil, nil, "", err
	}
	cwd, err := getwd()
	if err != nil {
		return nil, nil, "", lineError("current directory: %v; run tooljail from a directory that exists", err)
	}
	spec, err := f.spec(command, cwd, environ)
	if err != nil {
		return nil, nil, "", lineError("%v", err)
	}
	return &f, spec, cwd, nil
}

// commandOf checks the command that follows the flags.
func commandOf(command []string) ([]string, error) {
	if len(command) == 0 {
		return nil, errors.New("no command given: tooljail run [flags] -- CMD [ARG...]")
	}
	if command[0] == "" {
		return nil, errors.New("empty command name after --: give the program to run, a path or a name looked up in PATH")
	}
	return command, nil
}

// lineError is an error of one line: a newline that a value brought into
// it is shown as \n.
func lineError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return errors.New(strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg))
}

// sessionCallFlags refuses the flags a call in a session cannot take: the
// session's start decided them.
func sessionCallFlags(f *runFlags) error {
	for _, c := range []struct {
		flag string
		set  bool
	}{{"--profile", f.profile.set}, {"--no-workdir", f.noWorkdir}, {"--net", f.net.set}, {"--changes", f.changes.set},
		{"--toolchain", len(f.toolchains) > 0}} {
		if c.set {
			return fmt.Errorf("%s cannot be used with --session: the session's start decided it ('tooljail session start %s ...')", c.flag, c.flag)
		}
	}
	for _, l := range f.limits {
		if l[0] != "timeout" && l[0] != "output_limit" {
			return fmt.Errorf("--%s cannot be used with --session: a session's limits are its start's; a call sets only --timeout and --output-limit", strings.ReplaceAll(l[0], "_", "-"))
		}
	}
	return nil
}

var errTTYTwice = errors.New("--tty and --no-tty contradict each other; give one")

// wantTTY decides whether a run jailed here gets a terminal: --tty and
// --no-tty say so; else it does when a person is at both ends (stdin and
// stdout are terminals) and the output is not captured into the report.
func wantTTY(f *runFlags, stdinTerm, stdoutTerm bool) bool {
	switch {
	case f.tty:
		return true
	case f.noTTY:
		return false
	}
	return stdinTerm && stdoutTerm && !f.json
}

// ttySize is the caller's window size, from stdout or stdin; 0 when
// neither is a terminal (jail.TTY's default then).
func ttySize() (rows, cols uint16) {
	for _, f := range []*os.File{os.Stdout, os.Stdin} {
		if r, c, ok := term.Size(int(f.Fd())); ok {
			return r, c
		}
	}
	return 0, 0
}

// rawTerminal puts the caller's terminal (stdin) in raw mode for a run
// with a terminal: the jail's does the echo, line editing and ^C. The
// restore it returns is safe to call more than once.
func rawTerminal(tty bool) (restore func(), err error) {
	if !tty || !term.IsTerminal(int(os.Stdin.Fd())) {
		return func() {}, nil
	}
	st, err := term.MakeRaw(int(os.Stdin.Fd()))
	if err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { st.Restore() }), nil
}

// terminalSizes sends the caller's window size at each SIGWINCH, for an
// interactive served call, until stop.
func terminalSizes() (<-chan serve.InputResize, func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	out := make(chan serve.InputResize, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if rows, cols := ttySize(); rows != 0 {
					select {
					case out <- serve.InputResize{Rows: rows, Cols: cols}:
					case <-done:
						return
					}
				}
			}
		}
	}()
	return out, sync.OnceFunc(func() {
		signal.Stop(winch)
		close(done)
	})
}

// ttySignal is how a forwarded signal reaches cmd: for a run with a
// terminal, SIGWINCH becomes the new window size, which makes the
// jail's terminal send SIGWINCH itself; any other signal, and every
// signal without a terminal, is sent.
func ttySignal(cmd *jail.Cmd) func(os.Signal) error {
	if cmd.TTY == nil {
		return cmd.Signal
	}
	return func(s os.Signal) error {
		if s != syscall.SIGWINCH {
			return cmd.Signal(s)
		}
		if rows, cols := ttySize(); rows != 0 {
			return cmd.Resize(rows, cols)
		}
		return nil
	}
}

// forwardedSignals are the signals a run jailed here passes to its command
// (the jail's init forwards the same set to the command's process group,
// jail/init_reap.c): those a terminal or an agent runtime sends. SIGKILL
// cannot be caught: it kills tooljail, and with it the jail (its init has
// PR_SET_PDEATHSIG).
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM,
}

// forwardSignals passes forwardedSignals to the command until sigs is
// closed; a second SIGINT kills the whole run.
func forwardSignals(sigs <-chan os.Signal, send func(os.Signal) error) {
	interrupts := 0
	for s := range sigs {
		var out os.Signal
		out, interrupts = forwarded(s, interrupts)
		send(out)
	}
}

// forwarded is what the command gets for s, given how many SIGINTs came
// before: the signal itself, or a kill for a second interrupt (the user
// insists; the command may be ignoring it).
func forwarded(s os.Signal, interrupts int) (os.Signal, int) {
	if s == syscall.SIGINT {
		interrupts++
		if interrupts > 1 {
			return os.Kill, interrupts
		}
	}
	return s, interrupts
}

// runOutputs are the host files a run writes after the command: opened by
// the jail's Start (see jail.Output), written here after Wait.
type runOutputs struct {
	report, audit *jail.Output // nil when not asked for
}

// outputs builds the report and audit-log outputs, relative paths taken
// against cwd: the jail opens only absolute paths.
func (f *runFlags) outputs(cwd, envAuditLog string) runOutputs {
	var o runOutputs
	if p := f.report.value; p != "" && p != "-" {
		o.report = &jail.Output{Path: absFrom(cwd, p), Perm: 0o644}
	}
	p := f.auditLog.value
	if p == "" {
		p = envAuditLog
	}
	if p != "" {
		o.audit = &jail.Output{Path: absFrom(cwd, p), Append: true, Perm: 0o600}
	}
	return o
}

func absFrom(cwd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(cwd, p)
}

func (o runOutputs) list() []*jail.Output {
	var l []*jail.Output
	for _, out := range []*jail.Output{o.report, o.audit} {
		if out != nil {
			l = append(l, out)
		}
	}
	return l
}

func (o runOutputs) close() {
	for _, out := range o.list() {
		if out.File != nil {
			out.File.Close()
			out.File = nil
		}
	}
}

// spec loads the profile, overlays the flags and builds the jail.Spec. cwd
// is the current directory (absolute, no symlinks), environ the caller's
// environment. The Spec holds the profile's files open (Spec.Trusted);
// on an error they are closed.
func (f *runFlags) spec(command []string, cwd string, environ []string) (*jail.Spec, error) {
	name := f.profile.value
	if !f.profile.set {
		name = "default"
	}
	p, err := profiles.Load(name)
	if err != nil {
		return nil, err
	}
	s, err := f.overlay(p, command, cwd, environ)
	if err != nil {
		p.Close()
		return nil, err
	}
	return s, nil
}

// overlay lays the flags over p and builds the jail.Spec.
func (f *runFlags) overlay(p *profiles.Profile, command []string, cwd string, environ []string) (*jail.Spec, error) {
	fsys := &p.Filesystem
	fsys.Ro = append(fsys.Ro, f.ro...)
	fsys.Rw = append(fsys.Rw, f.rw...)
	fsys.Tmpfs = append(fsys.Tmpfs, f.tmpfs...)
	fsys.Mask = append(fsys.Mask, f.mask...)
	fsys.Caches = append(fsys.Caches, f.caches...)
	if f.noWorkdir {
		if f.workdir.set {
			return nil, errors.New("--workdir and --no-workdir contradict each other")
		}
		if f.workdirRO {
			return nil, errors.New("--workdir-ro and --no-workdir contradict each other: --workdir-ro binds the workdir read-only, --no-workdir binds none")
		}
		no := false
		fsys.Workdir = &no
	} else if f.workdir.value != "" {
		yes := true
		fsys.Workdir = &yes
	}
	if f.workdirRO {
		yes := true
		fsys.WorkdirReadOnly = &yes
	}
	if f.changes.set {
		fsys.Changes = &f.changes.value
	}
	for _, l := range f.limits {
		if err := p.SetLimit(l[0], l[1]); err != nil {
			return nil, fmt.Errorf("--%s: %w", strings.ReplaceAll(l[0], "_", "-"), err)
		}
		// The same words as a server's for a request's limit.
		if err := p.CheckCeiling(l[0], l[1]); err != nil {
			return nil, err
		}
	}
	if f.net.value != "" {
		p.Network.Mode = &f.net.value
	}
	if len(f.allowHosts) > 0 {
		if *p.Network.Mode != string(jail.NetAllow) {
			return nil, fmt.Errorf("--allow-host needs the network allow mode: add --net allow (the profile's network mode is %q)", *p.Network.Mode)
		}
		for _, h := range f.allowHosts {
			if err := p.AddAllowHost(h); err != nil {
				return nil, fmt.Errorf("--allow-host: %w", err)
			}
		}
	}
	if f.onViolation.value != "" {
		p.Seccomp.OnViolation = &f.onViolation.value
	}
	if f.hostUser.set {
		if err := p.SetHostUser(f.hostUser.value); err != nil {
			return nil, fmt.Errorf("--host-user: %w", err)
		}
	}
	if f.root.set {
		if err := p.SetRoot(f.root.value); err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
	}
	p.Env.Pass = append(p.Env.Pass, f.passEnv...)
	for _, l := range f.allowDegraded {
		if err := p.AddAllowDegraded(l); err != nil {
			return nil, fmt.Errorf("--%w", err)
		}
	}
	cacheDir, _ := os.UserCacheDir() // "" refuses a named cache, saying why
	s, err := p.Spec(profiles.Request{
		Args:       command,
		Cwd:        cwd,
		CacheDir:   cacheDir,
		Workdir:    f.workdir.value,
		Environ:    environ,
		Vars:       profiles.CallerVars(f.env, environ),
		Toolchains: f.toolchains,
	})
	if err != nil {
		return nil, err
	}
	s.ChangesDir = changesStoreDir(f.changesDir.value, environ)
	return s, nil
}

// finish writes the report, the audit line and the summary, and returns the
// exit code. Outputs the jail did not open (a failed Start) are skipped.
func (f *runFlags) finish(r *jail.Result, runErr error, outs runOutputs, stdout, stderr io.Writer) int {
	code := r.ExitCode
	var report *jail.ReportJSON
	if f.report.value != "" || f.json {
		// Only when it is wanted: encoding it costs a noticeable part of
		// a short run.
		var err error
		if report, err = jail.EncodeReport(r, "  "); err != nil {
			return fail(stderr, "encode report: %v", err)
		}
	}
	if f.report.value == "-" {
		report.WriteTo(stderr)
	}
	if o := outs.report; o != nil && o.File != nil {
		err := writeReport(o.File, report)
		o.File = nil // closed
		if err != nil {
			fmt.Fprintf(stderr, "tooljail: write report %s: %v\n", o.Path, err)
			code = jail.ExitSetup
		}
	}
	if f.json {
		report.WriteTo(stdout)
	}
	if o := outs.audit; o != nil && o.File != nil {
		if err := jail.AppendAudit(o.File, r); err != nil {
			fmt.Fprintf(stderr, "tooljail: audit log %s: %v\n", o.Path, err)
			code = jail.ExitSetup
		}
	}
	switch {
	case errors.Is(runErr, errReasonShown):
	case runErr != nil:
		io.WriteString(stderr, r.ReasonLine())
	case !f.quiet:
		if line := summary(r); line != "" {
			fmt.Fprintf(stderr, "tooljail: %s\n", line)
		}
	}
	return code
}

// errReasonShown is the run error of a served run whose reason line the
// server already sent on the stderr stream (Result.ExecFailed).
var errReasonShown = errors.New("the reason went out on the stderr stream")

// writeReport replaces the content of the report file with report and
// closes it. The file was opened before the run without truncating it, so
// that a previous report stays whole until this one is ready.
func writeReport(f *os.File, report *jail.ReportJSON) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := report.WriteTo(io.NewOffsetWriter(f, 0)); err != nil {
		return err
	}
	return f.Close()
}

// summary is the one line printed when something was denied or a limit hit.
func summary(r *jail.Result) string {
	var parts []string
	switch r.Status {
	case jail.StatusTimeout, jail.StatusMemoryLimit, jail.StatusViolation:
		parts = append(parts, fmt.Sprintf("%s: %s", r.Status, r.Reason))
	case jail.StatusSignaled:
		if r.Signal == "SIGXCPU" || r.Signal == "SIGXFSZ" || r.Signal == "SIGSYS" {
			parts = append(parts, r.Reason)
		}
	}
	denied, refused := 0, 0
	var names, hosts []string
	for _, v := range r.Violations {
		if v.Kind == "network" {
			refused += v.Count
			if len(hosts) < 5 {
				hosts = append(hosts, fmt.Sprintf("%s (%s)", netHost(v.Host, v.Port), v.Reason))
			}
			continue
		}
		denied += v.Count
		name := v.Syscall
		if v.Kind != "syscall" {
			name = v.Kind + ":" + name + v.Path
		}
		if len(names) < 5 {
			names = append(names, name)
		}
	}
	if denied > 0 && r.Status != jail.StatusViolation {
		parts = append(parts, fmt.Sprintf("%d denied call(s): %s", denied, strings.Join(names, ", ")))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d network refusal(s): %s", refused, strings.Join(hosts, ", ")))
	}
	if note := upstreamNote(r); note != "" {
		parts = append(parts, note)
	}
	for _, l := range slices.Sorted(maps.Keys(r.NetworkLimitHits)) {
		parts = append(parts, fmt.Sprintf("network %s hit %d time(s)", l, r.NetworkLimitHits[l]))
	}
	if r.PidsLimitHits != nil && *r.PidsLimitHits > 0 {
		parts = append(parts, fmt.Sprintf("process limit hit %d time(s)", *r.PidsLimitHits))
	}
	parts = append(parts, fullMountNotes(r)...)
	if note := leftoverNote(r); note != "" {
		parts = append(parts, note)
	}
	if note := changesNote(r); note != "" {
		parts = append(parts, note)
	}
	if r.Stdout.Truncated || r.Stderr.Truncated {
		parts = append(parts, fmt.Sprintf("output over the limit of %d bytes dropped", r.Limits.OutputLimitBytes))
	}
	// Only credentials: the jail's own names (HOME, PWD, ...) come with
	// every os.environ and are dropped as a matter of course.
	creds := 0
	for _, d := range r.EnvDropped {
		if d.Reason == profiles.DropCredential {
			creds++
		}
	}
	if creds > 0 {
		parts = append(parts, fmt.Sprintf("dropped %d variable(s) that look like credentials (see the report's env_dropped)", creds))
	}
	return strings.Join(parts, "; ")
}

// netHost is host:port as the summary shows it (IPv6 in brackets; a DNS
// query has no port).
func netHost(host string, port int) string {
	if port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

// serverOf is the socket a run is sent to: --server, else TOOLJAIL_SERVER
// from environ; "" for a run jailed here.
func serverOf(f *runFlags, environ []string) string {
	if f.server.set {
		return f.server.value
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "TOOLJAIL_SERVER="); ok {
			return v
		}
	}
	return ""
}

// notServed are the flags a served run cannot honour, in the order they
// are checked, with why: the server builds the jail from its own profile,
// and keeps its own audit log.
var notServed = []struct {
	flag string
	set  func(f *runFlags) bool
	why  string
}{
	{"--ro", func(f *runFlags) bool { return len(f.ro) > 0 }, "binds come from the server's profile"},
	{"--cache", func(f *runFlags) bool { return len(f.caches) > 0 }, "caches come from the server's profile"},
	{"--rw", func(f *runFlags) bool { return len(f.rw) > 0 }, "binds come from the server's profile"},
	{"--tmpfs", func(f *runFlags) bool { return len(f.tmpfs) > 0 }, "mounts come from the server's profile"},
	{"--mask", func(f *runFlags) bool { return len(f.mask) > 0 }, "masks come from the server's profile"},
	{"--allow-host", func(f *runFlags) bool { return len(f.allowHosts) > 0 }, "the hosts come from the server's profile (network.allow)"},
	{"--on-violation", func(f *runFlags) bool { return f.onViolation.set }, "the server's profile sets seccomp.on_violation"},
	{"--workdir-ro", func(f *runFlags) bool { return f.workdirRO }, "the server's profile says whether the workdir is read-only (filesystem.workdir_readonly; the readonly profile)"},
	{"--host-user", func(f *runFlags) bool { return f.hostUser.set }, "the server decides the host user"},
	{"--root", func(f *runFlags) bool { return f.root.set }, "the server's profile sets filesystem.root, and a client's own profile may not"},
	{"--allow-degraded", func(f *runFlags) bool { return len(f.allowDegraded) > 0 }, "the server's profile sets allow_degraded"},
	{"--audit-log", func(f *runFlags) bool { return f.auditLog.set }, "the server keeps the audit log (tooljail serve --audit-log)"},
	{"--changes-dir", func(f *runFlags) bool { return f.changesDir.set }, "the server keeps its clients' change sets (apply them through it, or with its user's 'tooljail changes')"},
}

// servedFix is how to get what a flag of notServed would give where the
// usual way (a client's own profile) does not give it either.
var servedFix = map[string]string{
	"--root": "serve a profile that sets it (tooljail serve --profile FILE), or run without a server",
}

// servedFlagError is the error for the first flag in f that a served run
// cannot honour, or nil.
func servedFlagError(f *runFlags) error {
	if f.tty && f.noTTY {
		return errTTYTwice
	}
	for _, n := range notServed {
		if n.set(f) {
			fix := servedFix[n.flag]
			if fix == "" {
				fix = "serve a profile that has it (tooljail serve --profile FILE), send one with --profile FILE to a server started with --allow-client-profiles, or run without a server"
			}
			return fmt.Errorf("%s cannot be used with a server (--server, TOOLJAIL_SERVER): %s; %s", n.flag, n.why, fix)
		}
	}
	return nil
}

// servedRun is a run sent to a `tooljail serve`.
type servedRun struct {
	flags  *runFlags
	socket string
	req    serve.Request
	report string // the --report file (absolute), "" for none, "-" for stderr
	// profileFile is a --profile FILE, "" for none. req names it first, as
	// the server may serve that file under the same string; a server that
	// does not gets its text instead (profileText: profile_toml).
	profileFile, profileText string
}

// parseServed parses the arguments of `run` for a server: nil when the run
// is not for one (or the flags do not parse: parseRun says why). getwd
// gives the current directory, environ is the caller's environment.
func parseServed(args []string, getwd func() (string, error), environ []string) (*servedRun, error) {
	var f runFlags
	fs := newRunFlagSet(&f)
	if fs.Parse(args) != nil {
		return nil, nil
	}
	return servedRunOf(&f, fs.Args(), getwd, environ)
}

// servedRunOf is parseServed once the flags are parsed: f and the
// arguments after them.
func servedRunOf(f *runFlags, rest []string, getwd func() (string, error), environ []string) (*servedRun, error) {
	socket := serverOf(f, environ)
	if socket == "" && f.session.set {
		// A session lives in a server: the default one unless named.
		socket = serve.DefaultPath()
	}
	if socket == "" {
		if f.keepRunning {
			return nil, errors.New("--keep-running is for a call in a session; give --session ID")
		}
		return nil, nil
	}
	if err := servedFlagError(f); err != nil {
		return nil, err
	}
	command, err := commandOf(rest)
	if err != nil {
		return nil, err
	}
	cwd, err := getwd()
	if err != nil {
		return nil, lineError("current directory: %v; run tooljail from a directory that exists", err)
	}
	sr := &servedRun{flags: f, socket: socket}
	sr.req = serve.Request{Argv: command, Network: f.net.value, MergeStderr: f.mergeStderr, Changes: f.changes.value}
	// Asked for; or at a terminal (sr.run decides: it sees the terminals).
	sr.req.TTY = f.tty
	switch {
	case f.noWorkdir && f.workdir.set:
		return nil, errors.New("--workdir and --no-workdir contradict each other")
	case f.session.set:
		if err := sessionCallFlags(f); err != nil {
			return nil, err
		}
		sr.req.Session, sr.req.KeepRunning = f.session.value, f.keepRunning
		if f.workdir.set {
			sr.req.Cwd = absFrom(cwd, f.workdir.value)
		}
	case f.keepRunning:
		return nil, errors.New("--keep-running is for a call in a session; give --session ID")
	case f.noWorkdir:
	case f.workdir.set:
		sr.req.Workdir = absFrom(cwd, f.workdir.value)
	default:
		sr.req.Workdir = cwd
	}
	if len(f.limits) > 0 {
		sr.req.Limits = map[string]string{}
		for _, l := range f.limits {
			sr.req.Limits[l[0]] = l[1]
		}
	}
	sr.req.Env = servedEnv(f.env, f.passEnv, environ)
	sr.req.Toolchains = f.toolchains
	// Where "auto" looks the program up, --toolchain's or the served
	// profile's (which this side does not know); never the command's PATH.
	sr.req.Path = envValue(environ, "PATH")
	switch p := f.report.value; {
	case p == "" || p == "-":
		sr.report = p
	default:
		sr.report = absFrom(cwd, p)
		// The command could have planted a link there (see Output).
		if w := sr.req.Workdir; inside(sr.report, w) {
			return nil, fmt.Errorf("--report %s: inside the run's workdir %s, where the command could replace it; write the report outside it", p, w)
		}
	}
	if p := f.profile.value; profiles.IsFile(p) {
		// The server reads no file of the client's: the text goes, and
		// its errors name it profile_toml, which run shows as p. A run
		// jailed here binds its profile file read-only over itself; a
		// server cannot, so a file the command could rewrite for the
		// next run is refused.
		abs := absFrom(cwd, p)
		if w := sr.req.Workdir; inside(abs, w) {
			return nil, fmt.Errorf("--profile %s: inside the run's workdir %s, where the command could rewrite it for the next run sent to a server; keep the profile outside the workdir", p, w)
		}
		text, err := profiles.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		sr.req.Profile, sr.profileFile, sr.profileText = p, p, string(text)
	} else {
		sr.req.Profile = p
	}
	return sr, nil
}

// envValue is the last value of name in environ, "" when unset.
func envValue(environ []string, name string) string {
	v := ""
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val
		}
	}
	return v
}

// inside says whether the absolute path p is dir or below it ("" is no
// directory).
func inside(p, dir string) bool {
	return dir != "" && (p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/"))
}

// servedEnv is the request's env: the --pass-env names set in environ,
// then --env (later entries win, as for a run jailed here). The server's
// profile decides on them as on any caller's variables: a name it does
// not pass is dropped when it looks like a credential.
func servedEnv(set, pass, environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range profiles.CallerVars(pass, environ) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for _, kv := range profiles.CallerVars(set, environ) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if len(env) == 0 {
		return nil
	}
	return env
}

// run sends the run and writes what `tooljail run` would: the output as
// it comes (the report when --json), the report, the summary line; and
// returns the exit code. A signal cancels the run on the server (the
// protocol has no way to forward it) and exits 128+N.
func (sr *servedRun) run(stdin *os.File, stdout, stderr io.Writer) int {
	stdinTerm := term.IsTerminal(int(stdin.Fd()))
	if !sr.req.TTY && wantTTY(sr.flags, stdinTerm, term.IsTerminal(int(os.Stdout.Fd()))) {
		sr.req.TTY = true
	}
	// A terminal at stdin with a terminal in the jail: an interactive
	// call, its keys and sizes sent as they come (stdin_stream).
	interactive := sr.req.TTY && stdinTerm
	if !interactive {
		in, err := readStdin(stdin)
		if err != nil {
			return fail(stderr, "read stdin to send it to the server: %v", err)
		}
		sr.req.Stdin = in
	}
	if sr.req.TTY {
		sr.req.TTYRows, sr.req.TTYCols = ttySize()
	}
	restore, err := rawTerminal(interactive)
	if err != nil {
		return fail(stderr, "--tty: %v; run with --no-tty", err)
	}
	// On every way out; first of all before the report or the summary.
	defer restore()
	var outs runOutputs
	if sr.report != "" && sr.report != "-" {
		f, err := openReport(sr.report)
		if err != nil {
			return fail(stderr, "--report %s: %v", sr.report, err)
		}
		defer f.Close()
		outs.report = &jail.Output{Path: sr.report, Perm: 0o644, File: f}
	}
	c := &serve.Client{Path: sr.socket}
	var lastErr []byte // the last stderr chunk
	if !sr.flags.json {
		c.OnStream = func(stream string, data []byte) {
			if stream == "stdout" {
				stdout.Write(data)
			} else {
				stderr.Write(data)
				lastErr = data
			}
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got os.Signal
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case got = <-sigs:
			cancel()
		case <-done:
		}
	}()
	send := func() (*jail.Result, error) { return c.Run(ctx, sr.req) }
	if interactive {
		resizes, stopResizes := terminalSizes()
		defer stopResizes()
		send = func() (*jail.Result, error) { return c.RunInteractive(ctx, sr.req, stdin, resizes) }
	}
	r, err := send()
	var refused *serve.Error
	if errors.As(err, &refused) && sr.profileText != "" && profileNotServed(refused.Message, sr.req.Profile) {
		sr.req.Profile, sr.req.ProfileTOML = "", sr.profileText
		r, err = send()
	}
	restore()
	if ctx.Err() != nil && got != nil {
		sig := got.(syscall.Signal)
		fmt.Fprintf(stderr, "tooljail: %s: the run was cancelled on the server\n", unix.SignalName(sig))
		return 128 + int(sig)
	}
	switch {
	case errors.As(err, &refused):
		fail(stderr, "%s", sr.refusal(refused.Message))
		return refused.Code
	case isDialError(err):
		return fail(stderr, "%v; start one with 'tooljail serve --socket %s', or run without --server and TOOLJAIL_SERVER", err, sr.socket)
	case err != nil:
		return fail(stderr, "%v", err)
	}
	if !sr.flags.json {
		// As a run jailed here: the output went out as it came; the
		// report holds only its counts.
		r.Stdout.Text, r.Stderr.Text = nil, nil
	}
	var runErr error
	if r.Status == jail.StatusSetupError || r.Status == jail.StatusAborted {
		runErr = errors.New(r.Reason)
		if r.ExecFailed() && string(lastErr) == r.ReasonLine() {
			runErr = errReasonShown
		}
	}
	return sr.flags.finish(r, runErr, outs, stdout, stderr)
}

// profileNotServed says whether a server's refusal says that it serves no profile
// named name (serve.Server.spec's words).
func profileNotServed(msg, name string) bool {
	return strings.HasPrefix(msg, fmt.Sprintf("profile %q: not served here", name))
}

// refusal is the server's refusal as run shows it: what the server says
// of the profile text it was sent (profile_toml:LINE:COL: ...) names the
// --profile file it came from.
func (sr *servedRun) refusal(msg string) string {
	if sr.profileFile == "" {
		return msg
	}
	if rest, ok := strings.CutPrefix(msg, serve.ClientProfileName+":"); ok {
		return sr.profileFile + ":" + rest
	}
	return msg
}

// isDialError says whether err is a failure to connect to the server
// (rather than a connection that ended before the report).
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// readStdin reads all of stdin for the request; a terminal, or no stdin
// at all, is none (nil).
func readStdin(f *os.File) ([]byte, error) {
	if f == nil {
		return nil, nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		return nil, nil
	}
	b, err := io.ReadAll(f)
	if errors.Is(err, unix.EBADF) || errors.Is(err, os.ErrClosed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, nil
	}
	return b, nil
}

// openReport opens the --report file of a served run before the run, as
// jail.Output does for a run jailed here: never through a symlink, only a
// regular file, not truncated until the report is written.
func openReport(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}
