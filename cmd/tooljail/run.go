package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/internal/term"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
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

func runCommand(args []string, stdout, stderr io.Writer) int {
	// Before any signal.Notify: what this process was started ignoring it
	// ignores again, as its command will (newRunCmd).
	ignoreAsStarted(jail.StartIgnored())
	// The flags are parsed once, for a server or for here.
	var parsed runFlags
	fs := newRunFlagSet(&parsed)
	parseErr := fs.Parse(args)
	// A run for a server jails nothing here (the kernel's view of the
	// current directory, as below). A parse error is runOf's to print.
	if parseErr == nil {
		if sr, err := servedRunOf(&parsed, givenFlags(fs), fs.Args(), unix.Getwd, os.Environ()); err != nil {
			return fail(stderr, "%v", err)
		} else if sr != nil {
			return sr.run(os.Stdin, stdout, stderr)
		}
	}
	// The host probe does not depend on the profile: overlap the two. It
	// only reads (files, system calls), so an early exit leaves nothing.
	go hostprobe.Probe()
	// So is the first signal.Notify (startSignalRelay).
	relay := startSignalRelay()
	defer relay.stop()
	// The kernel's view of the current directory, not $PWD: it has no
	// symlinks, which the jail would refuse to follow where a run could
	// have planted them.
	f, spec, cwd, err := runOf(&parsed, fs, parseErr, unix.Getwd, os.Environ())
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, runUsage)
		printFlags(stdout, newRunFlagSet(&runFlags{}))
		return 0
	}
	if err != nil {
		return fail(stderr, "%v", err)
	}
	execOut, err := f.openExecFD()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	cmd := newRunCmd(f, spec)
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
	result, runErr := relay.run(cmd, execOut)
	restore()
	relay.end()
	if result == nil {
		return fail(stderr, "%v", runErr)
	}
	return f.finish(result, runErr, outs, stdout, stderr)
}

// newRunCmd is the jail.Cmd of a run jailed here: its stdio as the flags
// and the caller's terminals say.
func newRunCmd(f *runFlags, spec *jail.Spec) *jail.Cmd {
	cmd := jail.Command(spec)
	cmd.Stdin = os.Stdin
	// As across an execve: nohup's SIGHUP, a background job's SIGINT and
	// SIGQUIT, a `trap '' TERM`.
	cmd.IgnoredSignals = jail.StartIgnored()
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
	return cmd
}

// parseRun turns the arguments of `run` into its flags and the jail.Spec
// to run, and returns the current directory it used: everything run
// decides before it starts anything. getwd gives the current directory
// (asked only once the arguments parse), environ is the caller's
// environment. The error is one line, flag.ErrHelp for --help.
func parseRun(args []string, getwd func() (string, error), environ []string) (*runFlags, *jail.Spec, string, error) {
	var f runFlags
	fs := newRunFlagSet(&f)
	return runOf(&f, fs, fs.Parse(args), getwd, environ)
}

// runOf is parseRun once fs has parsed the arguments into f, with parseErr.
func runOf(f *runFlags, fs *flag.FlagSet, parseErr error, getwd func() (string, error), environ []string) (*runFlags, *jail.Spec, string, error) {
	if parseErr != nil {
		if errors.Is(parseErr, flag.ErrHelp) {
			return nil, nil, "", parseErr
		}
		return nil, nil, "", lineError("%v; see 'tooljail run --help'", parseErr)
	}
	if serverOf(f, environ) != "" {
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
	return f, spec, cwd, nil
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

var errTTYTwice = errors.New("--tty and --no-tty contradict each other; give one")

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
		name = defaultProfile
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
	for _, step := range []func(*profiles.Profile) error{f.overlayFilesystem, f.overlayLimits, f.overlayNetwork, f.overlayPolicy} {
		if err := step(p); err != nil {
			return nil, err
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

// overlayFilesystem lays the filesystem flags over p: the binds and
// mounts add to its lists, the workdir flags set its keys.
func (f *runFlags) overlayFilesystem(p *profiles.Profile) error {
	fsys := &p.Filesystem
	fsys.Ro = append(fsys.Ro, f.ro...)
	fsys.Rw = append(fsys.Rw, f.rw...)
	fsys.Tmpfs = append(fsys.Tmpfs, f.tmpfs...)
	fsys.Mask = append(fsys.Mask, f.mask...)
	fsys.Caches = append(fsys.Caches, f.caches...)
	if err := workdirFlagsError(f.workdir.set, f.noWorkdir, f.workdirRO); err != nil {
		return err
	}
	if f.noWorkdir {
		fsys.Workdir = ptr(false)
	} else if f.workdir.value != "" {
		fsys.Workdir = ptr(true)
	}
	if f.workdirRO {
		fsys.WorkdirReadOnly = ptr(true)
	}
	if f.changes.set {
		fsys.Changes = &f.changes.value
	}
	return nil
}

// workdirFlagsError refuses the workdir flags that contradict each other.
func workdirFlagsError(workdir, noWorkdir, workdirRO bool) error {
	switch {
	case noWorkdir && workdir:
		return errors.New("--workdir and --no-workdir contradict each other")
	case noWorkdir && workdirRO:
		return errors.New("--workdir-ro and --no-workdir contradict each other: --workdir-ro binds the workdir read-only, --no-workdir binds none")
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// overlayLimits sets p's limits from the flags, each within p's ceiling.
func (f *runFlags) overlayLimits(p *profiles.Profile) error {
	for _, l := range f.limits {
		if err := p.SetLimit(l[0], l[1]); err != nil {
			return fmt.Errorf("--%s: %w", strings.ReplaceAll(l[0], "_", "-"), err)
		}
		// The same words as a server's for a request's limit.
		if err := p.CheckCeiling(l[0], l[1]); err != nil {
			return err
		}
	}
	return nil
}

// overlayNetwork sets p's network mode and adds the --allow-host hosts,
// which only the allow mode takes.
func (f *runFlags) overlayNetwork(p *profiles.Profile) error {
	if f.net.value != "" {
		p.Network.Mode = &f.net.value
	}
	if len(f.allowHosts) == 0 {
		return nil
	}
	if *p.Network.Mode != string(jail.NetAllow) {
		return fmt.Errorf("--allow-host needs the network allow mode: add --net allow (the profile's network mode is %q)", *p.Network.Mode)
	}
	for _, h := range f.allowHosts {
		if err := p.AddAllowHost(h); err != nil {
			return fmt.Errorf("--allow-host: %w", err)
		}
	}
	return nil
}

// overlayPolicy lays the rest over p: what a violation does, the host
// user, the root, the variables passed, the layers allowed to be missing.
func (f *runFlags) overlayPolicy(p *profiles.Profile) error {
	if f.onViolation.value != "" {
		p.Seccomp.OnViolation = &f.onViolation.value
	}
	if f.hostUser.set {
		if err := p.SetHostUser(f.hostUser.value); err != nil {
			return fmt.Errorf("--host-user: %w", err)
		}
	}
	if f.root.set {
		if err := p.SetRoot(f.root.value); err != nil {
			return fmt.Errorf("--root: %w", err)
		}
	}
	p.Env.Pass = append(p.Env.Pass, f.passEnv...)
	for _, l := range f.allowDegraded {
		if err := p.AddAllowDegraded(l); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	return nil
}

// finish writes the report, the audit line and the summary, and returns the
// exit code. Outputs the jail did not open (a failed Start) are skipped.
func (f *runFlags) finish(r *jail.Result, runErr error, outs runOutputs, stdout, stderr io.Writer) int {
	code := r.ExitCode
	if ce := (*jail.CleanupError)(nil); errors.As(runErr, &ce) {
		// The command ran and its report stands; the host is told what
		// the jail left, and the exit code stays the command's.
		warn(stderr, ce)
		runErr = nil
	}
	var rep *report.ReportJSON
	if f.report.value != "" || f.json {
		// Only when it is wanted: encoding it costs a noticeable part of
		// a short run.
		var err error
		if rep, err = report.EncodeReport(r, "  "); err != nil {
			return fail(stderr, "encode report: %v", err)
		}
	}
	if f.report.value == "-" {
		rep.WriteTo(stderr)
	}
	if o := outs.report; o != nil && o.File != nil {
		err := writeReport(o.File, rep)
		o.File = nil // closed
		if err != nil {
			fmt.Fprintf(stderr, "tooljail: write report %s: %v\n", o.Path, err)
			code = jail.ExitSetup
		}
	}
	if f.json {
		rep.WriteTo(stdout)
	}
	if o := outs.audit; o != nil && o.File != nil {
		if err := report.AppendAudit(o.File, r); err != nil {
			fmt.Fprintf(stderr, "tooljail: audit log %s: %v\n", o.Path, err)
			code = jail.ExitSetup
		}
	}
	switch {
	case errors.Is(runErr, errReasonShown):
	case runErr != nil && f.execFD.set && r.ExecFailed():
		// --exec-fd's reader reports it (tellExec).
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
func writeReport(f *os.File, report *report.ReportJSON) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := report.WriteTo(io.NewOffsetWriter(f, 0)); err != nil {
		return err
	}
	return f.Close()
}
