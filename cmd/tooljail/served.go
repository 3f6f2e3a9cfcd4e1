package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/term"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/serve"
)

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

var errKeepRunning = errors.New("--keep-running is for a call in a session; give --session ID")

// servedRunOf is the run for a server that the parsed flags f, which of
// them were given and the arguments after them describe: nil when the run
// is not for one. getwd gives the current directory, environ is the
// caller's environment.
func servedRunOf(f *runFlags, given func(string) bool, rest []string, getwd func() (string, error), environ []string) (*servedRun, error) {
	socket := serverOf(f, environ)
	if socket == "" && f.session.set {
		// A session lives in a server: the default one unless named.
		socket = serve.DefaultPath()
	}
	if socket == "" {
		if f.keepRunning {
			return nil, errKeepRunning
		}
		return nil, nil
	}
	if f.tty && f.noTTY {
		return nil, errTTYTwice
	}
	if err := serve.ServedFlagError(given); err != nil {
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
	// TTY: asked for; or at a terminal (sr.run decides: it sees the terminals).
	sr.req = serve.Request{Argv: command, Network: f.net.value, MergeStderr: f.mergeStderr, Changes: f.changes.value, TTY: f.tty}
	if err := f.servedPlace(&sr.req, given, cwd); err != nil {
		return nil, err
	}
	sr.req.Limits = limitMap(f.limits)
	sr.req.Env = servedEnv(f.env, f.passEnv, environ)
	sr.req.Toolchains = f.toolchains
	// Where "auto" looks the program up, --toolchain's or the served
	// profile's (which this side does not know); never the command's PATH.
	sr.req.Path = envValue(environ, "PATH")
	if sr.report, err = servedReport(f.report.value, cwd, sr.req.Workdir); err != nil {
		return nil, err
	}
	if err := sr.setProfile(f.profile.value, cwd); err != nil {
		return nil, err
	}
	return sr, nil
}

// servedPlace sets where a served run works: its workdir, or for a call
// in a session its directory in the session's jail (the session's own
// workdir unless --workdir names one).
func (f *runFlags) servedPlace(req *serve.Request, given func(string) bool, cwd string) error {
	switch {
	case f.noWorkdir && f.workdir.set:
		return errors.New("--workdir and --no-workdir contradict each other")
	case f.session.set:
		if err := serve.SessionCallFlagError(given, limitKeys(f.limits)); err != nil {
			return err
		}
		req.Session, req.KeepRunning = f.session.value, f.keepRunning
		if f.workdir.set {
			req.Cwd = absFrom(cwd, f.workdir.value)
		}
	case f.keepRunning:
		return errKeepRunning
	case f.noWorkdir:
	case f.workdir.set:
		req.Workdir = absFrom(cwd, f.workdir.value)
	default:
		req.Workdir = cwd
	}
	return nil
}

// limitKeys is the keys of limits, in order.
func limitKeys(limits [][2]string) []string {
	var keys []string
	for _, l := range limits {
		keys = append(keys, l[0])
	}
	return keys
}

// limitMap is limits as a request's; nil for none.
func limitMap(limits [][2]string) map[string]string {
	if len(limits) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, l := range limits {
		m[l[0]] = l[1]
	}
	return m
}

// servedReport is the --report value p of a served run as the file it
// writes: absolute, taken from cwd; "" and "-" (none, stderr) as they
// are. A file inside the run's workdir is refused: the command could
// have planted a link there (see jail.Output).
func servedReport(p, cwd, workdir string) (string, error) {
	if p == "" || p == "-" {
		return p, nil
	}
	abs := absFrom(cwd, p)
	if inside(abs, workdir) {
		return "", fmt.Errorf("--report %s: inside the run's workdir %s, where the command could replace it; write the report outside it", p, workdir)
	}
	return abs, nil
}

// setProfile names the profile p in the request, a shipped one or a file.
// The server reads no file of the client's: a file's text goes, and its
// errors name it profile_toml, which run shows as p. A run jailed here
// binds its profile file read-only over itself; a server cannot, so a
// file the command could rewrite for the next run is refused.
func (sr *servedRun) setProfile(p, cwd string) error {
	if !profiles.IsFile(p) {
		sr.req.Profile = p
		return nil
	}
	abs := absFrom(cwd, p)
	if w := sr.req.Workdir; inside(abs, w) {
		return fmt.Errorf("--profile %s: inside the run's workdir %s, where the command could rewrite it for the next run sent to a server; keep the profile outside the workdir", p, w)
	}
	text, err := profiles.ReadFile(abs)
	if err != nil {
		return err
	}
	sr.req.Profile, sr.profileFile, sr.profileText = p, p, string(text)
	return nil
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
	interactive, err := sr.prepareInput(stdin)
	if err != nil {
		return fail(stderr, "read stdin to send it to the server: %v", err)
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
	execOut, err := sr.flags.openExecFD()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if execOut != nil {
		// Closed without the line when the command never ran.
		defer execOut.Close()
		c.OnExec = func() {
			execOut.WriteString(execFDLine)
			execOut.Close() // its reader goes on at the end of file
		}
	}
	var lastErr []byte // the last stderr chunk
	if !sr.flags.json {
		c.OnStream = relayStreams(stdout, stderr, &lastErr)
	}
	ctx, signalled, stop := cancelOnSignal()
	defer stop()
	r, err := sr.send(ctx, c, stdin, interactive)
	restore()
	if sig := signalled(); sig != 0 {
		fmt.Fprintf(stderr, "tooljail: %s: the run was cancelled on the server\n", unix.SignalName(sig))
		return 128 + int(sig)
	}
	if err != nil {
		return sr.sendFailed(err, stderr)
	}
	return sr.finish(r, lastErr, outs, stdout, stderr)
}

// prepareInput completes the request with what the caller's terminals
// decide: a terminal in the jail (--tty, or one at both ends), and stdin
// read whole unless the call is interactive, a terminal at stdin with a
// terminal in the jail, whose keys and sizes are sent as they come
// (stdin_stream).
func (sr *servedRun) prepareInput(stdin *os.File) (interactive bool, err error) {
	stdinTerm := term.IsTerminal(int(stdin.Fd()))
	if !sr.req.TTY && wantTTY(sr.flags, stdinTerm, term.IsTerminal(int(os.Stdout.Fd()))) {
		sr.req.TTY = true
	}
	interactive = sr.req.TTY && stdinTerm
	if !interactive {
		if sr.req.Stdin, err = readStdin(stdin); err != nil {
			return false, err
		}
	}
	if sr.req.TTY {
		sr.req.TTYRows, sr.req.TTYCols = ttySize()
	}
	return interactive, nil
}

// relayStreams writes the run's output as it comes, keeping the last
// stderr chunk in last.
func relayStreams(stdout, stderr io.Writer, last *[]byte) func(stream string, data []byte) {
	return func(stream string, data []byte) {
		if stream == "stdout" {
			stdout.Write(data)
			return
		}
		stderr.Write(data)
		*last = data
	}
}

// cancelOnSignal is a context that SIGINT, SIGTERM, SIGHUP or SIGQUIT
// cancels, unless tooljail was started ignoring it (notify); signalled is
// the signal that did once ctx is done, else 0.
// stop ends the watch.
func cancelOnSignal() (ctx context.Context, signalled func() syscall.Signal, stop func()) {
	sigs := make(chan os.Signal, 1)
	notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	ctx, cancel := context.WithCancel(context.Background())
	var got os.Signal
	done := make(chan struct{})
	go func() {
		select {
		case got = <-sigs:
			cancel()
		case <-done:
		}
	}()
	// got is written before cancel, and read only once ctx says so.
	signalled = func() syscall.Signal {
		if ctx.Err() == nil || got == nil {
			return 0
		}
		return got.(syscall.Signal)
	}
	return ctx, signalled, sync.OnceFunc(func() {
		close(done)
		cancel()
		signal.Stop(sigs)
	})
}

// send sends the request; again with the profile file's text when the
// server serves no profile of the file's name.
func (sr *servedRun) send(ctx context.Context, c *serve.Client, stdin *os.File, interactive bool) (*jail.Result, error) {
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
	return r, err
}

// sendFailed prints why the run got no report and returns the exit code:
// the server's refusal and its code, or tooljail's own.
func (sr *servedRun) sendFailed(err error, stderr io.Writer) int {
	var refused *serve.Error
	switch {
	case errors.As(err, &refused):
		fail(stderr, "%s", sr.refusal(refused.Message))
		return refused.Code
	case isDialError(err):
		return fail(stderr, "%v; start one with 'tooljail serve --socket %s', or run without --server and TOOLJAIL_SERVER", err, sr.socket)
	}
	return fail(stderr, "%v", err)
}

// finish writes what a run jailed here would once it ended. lastErr is the
// last chunk of the stderr stream, which holds the reason line when the
// command could not be executed.
func (sr *servedRun) finish(r *jail.Result, lastErr []byte, outs runOutputs, stdout, stderr io.Writer) int {
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
