package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

const runUsage = `Usage: tooljail run [flags] -- CMD [ARG...]

Runs CMD in a jail built from a profile (default: "default"); flags override
the profile, repeatable flags add to it. Sizes are bytes with an optional
binary suffix (64K, 512M, 1G; KiB/MiB/GiB too), durations Go durations (500ms,
10s, 5m), "0" or "unlimited" lifts a limit.

Exit codes: the command's own; 128+N when signal N ended it (137 also for the
memory limit); 124 timeout; 125 tooljail failed (bad flag or profile, a layer
that cannot be enforced); 126 the command cannot be executed; 127 not found.

Flags:
`

// runFlags are the parsed `run` flags, applied on top of the profile.
type runFlags struct {
	profile       string
	ro, rw        []string
	tmpfs, mask   []string
	workdir       string
	noWorkdir     bool
	limits        [][2]string // key, value in flag order
	net           string
	onViolation   string
	env, passEnv  []string
	allowDegraded []string
	report        string
	json          bool
	auditLog      string
	quiet         bool
}

func newRunFlagSet(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	list := func(dst *[]string) func(string) error {
		return func(v string) error { *dst = append(*dst, v); return nil }
	}
	limit := func(key string) func(string) error {
		return func(v string) error { f.limits = append(f.limits, [2]string{key, v}); return nil }
	}
	fs.StringVar(&f.profile, "profile", "default", "start from a shipped `PROFILE` or a TOML file")
	fs.Func("ro", "bind a host `PATH[:DEST]` read-only (repeatable)", list(&f.ro))
	fs.Func("rw", "bind a host `PATH[:DEST]` read-write (repeatable)", list(&f.rw))
	fs.Func("tmpfs", "an empty tmpfs at `DEST[:SIZE]` (repeatable; default size 64M)", list(&f.tmpfs))
	fs.Func("mask", "hide `PATH` inside the jail behind an empty file or directory (repeatable)", list(&f.mask))
	fs.StringVar(&f.workdir, "workdir", "", "bind `DIR` read-write and start there (default: the current directory; / and $HOME are refused)")
	fs.BoolVar(&f.noWorkdir, "no-workdir", false, "no workdir bind; start in /tmp")
	fs.Func("memory", "memory cap `SIZE` (cgroup; swap 0)", limit("memory"))
	fs.Func("cpus", "CPU cap in `CPUS` (cgroup), e.g. 0.5", limit("cpus"))
	fs.Func("pids", "cap on processes and threads `N` (cgroup)", limit("pids"))
	fs.Func("timeout", "wall-clock limit `DUR`; the whole tree is killed, exit 124", limit("timeout"))
	fs.Func("cpu-time", "CPU-time limit `DUR` (RLIMIT_CPU)", limit("cpu_time"))
	fs.Func("nofile", "open file limit `N` (RLIMIT_NOFILE)", limit("nofile"))
	fs.Func("fsize", "largest file the command may write, `SIZE` (RLIMIT_FSIZE)", limit("fsize"))
	fs.Func("output-limit", "cap `SIZE` on relayed stdout+stderr; the rest is counted and dropped", limit("output_limit"))
	fs.StringVar(&f.net, "net", "", "`none` (own namespace, loopback only) or host (trusted tools only)")
	fs.StringVar(&f.onViolation, "on-violation", "", "`deny` (EPERM, the run goes on) or kill (the run is killed)")
	fs.Func("env", "set `K=V` in the command's environment (repeatable)", list(&f.env))
	fs.Func("pass-env", "copy variable `K` from this environment when set (repeatable)", list(&f.passEnv))
	fs.Func("allow-degraded", "run even if these `LAYERS` cannot be enforced: landlock, seccomp, seccomp-notify, cgroup, memory, cpu, pids", list(&f.allowDegraded))
	fs.StringVar(&f.report, "report", "", "write the JSON report to `FILE` (- for stderr)")
	fs.BoolVar(&f.json, "json", false, "capture stdout/stderr into the report and print only the report on stdout")
	fs.StringVar(&f.auditLog, "audit-log", "", "append one JSON line per run to `FILE` (also TOOLJAIL_AUDIT_LOG)")
	fs.BoolVar(&f.quiet, "quiet", false, "no summary line on stderr")
	fs.BoolVar(&f.quiet, "q", false, "same as --quiet")
	return fs
}

func runCommand(args []string, stdout, stderr io.Writer) int {
	// The host probe does not depend on the profile: overlap the two. It
	// only reads (files, system calls), so an early exit leaves nothing.
	go jail.ProbeHost()
	// So is the first signal.Notify: it hands each signal to a locked
	// thread the runtime starts for it, about 0.25 ms.
	sigs := make(chan os.Signal, 4)
	notified := make(chan struct{})
	go func() {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		close(notified)
	}()
	defer func() {
		<-notified
		signal.Stop(sigs)
	}()
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, runUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return fail(stderr, "%v; see 'tooljail run --help'", err)
	}
	command := fs.Args()
	if len(command) == 0 {
		return fail(stderr, "no command given: tooljail run [flags] -- CMD [ARG...]")
	}
	spec, err := f.spec(command)
	if err != nil {
		return fail(stderr, "%v", err)
	}

	cmd := jail.Command(spec)
	cmd.Stdin = os.Stdin
	if f.json {
		cmd.CaptureOutput = true
	} else {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	<-notified
	if cmd.Start() == nil {
		go forwardSignals(cmd, sigs)
	}
	result, runErr := cmd.Wait()
	if result == nil {
		return fail(stderr, "%v", runErr)
	}
	return f.finish(result, runErr, stdout, stderr)
}

// forwardSignals passes SIGINT, SIGTERM, SIGHUP and SIGQUIT to the command;
// a second SIGINT kills the whole run.
func forwardSignals(cmd *jail.Cmd, sigs chan os.Signal) {
	interrupts := 0
	for s := range sigs {
		if s == syscall.SIGINT {
			interrupts++
			if interrupts > 1 {
				cmd.Signal(os.Kill)
				continue
			}
		}
		cmd.Signal(s)
	}
}

// spec loads the profile, overlays the flags and builds the jail.Spec.
func (f *runFlags) spec(command []string) (*jail.Spec, error) {
	p, err := profiles.Load(f.profile)
	if err != nil {
		return nil, err
	}
	fsys := &p.Filesystem
	fsys.Ro = append(fsys.Ro, f.ro...)
	fsys.Rw = append(fsys.Rw, f.rw...)
	fsys.Tmpfs = append(fsys.Tmpfs, f.tmpfs...)
	fsys.Mask = append(fsys.Mask, f.mask...)
	if f.noWorkdir {
		if f.workdir != "" {
			return nil, errors.New("--workdir and --no-workdir contradict each other")
		}
		no := false
		fsys.Workdir = &no
	} else if f.workdir != "" {
		yes := true
		fsys.Workdir = &yes
	}
	for _, l := range f.limits {
		if err := p.SetLimit(l[0], l[1]); err != nil {
			return nil, fmt.Errorf("--%s: %w", strings.ReplaceAll(l[0], "_", "-"), err)
		}
	}
	if f.net != "" {
		p.Network.Mode = &f.net
	}
	if f.onViolation != "" {
		p.Seccomp.OnViolation = &f.onViolation
	}
	for _, kv := range f.env {
		if err := p.AddEnv(kv); err != nil {
			return nil, fmt.Errorf("--env: %w", err)
		}
	}
	p.Env.Pass = append(p.Env.Pass, f.passEnv...)
	for _, l := range f.allowDegraded {
		if err := p.AddAllowDegraded(l); err != nil {
			return nil, fmt.Errorf("--%w", err)
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	home, _ := os.UserHomeDir()
	return p.Spec(profiles.Request{
		Args:    command,
		Cwd:     cwd,
		Workdir: f.workdir,
		Home:    home,
		Environ: os.Environ(),
	})
}

// finish writes the report, the audit line and the summary, and returns the
// exit code.
func (f *runFlags) finish(r *jail.Result, runErr error, stdout, stderr io.Writer) int {
	code := r.ExitCode
	var report []byte
	if f.report != "" || f.json {
		// Only when it is wanted: encoding it costs a noticeable part of
		// a short run.
		var err error
		if report, err = json.MarshalIndent(r, "", "  "); err != nil {
			return fail(stderr, "encode report: %v", err)
		}
		report = append(report, '\n')
	}
	switch f.report {
	case "":
	case "-":
		stderr.Write(report)
	default:
		if err := os.WriteFile(f.report, report, 0o644); err != nil {
			fmt.Fprintf(stderr, "tooljail: write report: %v\n", err)
			code = jail.ExitSetup
		}
	}
	if f.json {
		stdout.Write(report)
	}
	auditPath := f.auditLog
	if auditPath == "" {
		auditPath = os.Getenv("TOOLJAIL_AUDIT_LOG")
	}
	if auditPath != "" {
		if err := jail.AppendAudit(auditPath, r); err != nil {
			fmt.Fprintf(stderr, "tooljail: audit log: %v\n", err)
			code = jail.ExitSetup
		}
	}
	switch {
	case runErr != nil:
		fmt.Fprintf(stderr, "tooljail: %s\n", oneLine(r.Reason))
	case !f.quiet:
		if line := summary(r); line != "" {
			fmt.Fprintf(stderr, "tooljail: %s\n", line)
		}
	}
	return code
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
	denied := 0
	var names []string
	for _, v := range r.Violations {
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
	if r.PidsLimitHits != nil && *r.PidsLimitHits > 0 {
		parts = append(parts, fmt.Sprintf("process limit hit %d time(s)", *r.PidsLimitHits))
	}
	if r.Stdout.Truncated || r.Stderr.Truncated {
		parts = append(parts, fmt.Sprintf("output over the limit of %d bytes dropped", r.Limits.OutputLimitBytes))
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
