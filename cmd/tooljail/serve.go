package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/tooljail/tooljail/serve"
)

const serveUsage = `Usage: tooljail serve [--socket PATH] [--profile NAME|FILE]... [--audit-log FILE] [--max-runs N]
       [--warm N] [--allow-client-profiles] [--tools FILE]...

Serves jailed runs on a unix socket: a client sends one JSON request line per
connection and gets the run's report, exactly what 'tooljail run --json'
prints (docs/serve.md has the protocol). Each call runs in a jail of one of the
served profiles, as 'tooljail run' would build it; a request may only tighten
that profile's limits. For each shape of call it sees (a profile and a
workdir), the server keeps --warm jails built ahead of time; each runs one
call, never a second. Only this user (and root) can connect: the socket is mode
0600 in a directory nobody else can write.

SIGTERM or SIGINT drains the server: no new calls, running calls end or hit
their timeout (the longest timeout of the served profiles), then it exits 0.
A socket nobody listens on is replaced; one a live server holds (it holds
SOCKET.lock) is an error (exit 125).

Nothing waits: a call beyond --max-runs, a connection beyond 4 x --max-runs
still waiting for its request line, or one that sends no whole request line
within 10s gets an error line (code 125), and the audit log a "refused" line.

Flags:
`

// serveFlags are the parsed `serve` flags.
type serveFlags struct {
	socket   scalar
	profiles []string
	auditLog scalar
	maxRuns  scalar // a number, checked by maxRunsValue
	warm     scalar // a number, checked by warmValue
	// allowClientProfiles lets a request send a profile of its own.
	allowClientProfiles bool
	tools               []string
}

func newServeFlagSet(f *serveFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&f.socket, "socket", "listen on `PATH` (default $XDG_RUNTIME_DIR/tooljail.sock, else /run/tooljail/sock for root, else /tmp/tooljail-$UID/sock)")
	fs.Func("profile", "serve this profile, a shipped `NAME` or a TOML FILE; repeatable, the first is the default (default \"default\")", func(v string) error {
		if v == "" {
			return errors.New("empty profile name")
		}
		f.profiles = append(f.profiles, v)
		return nil
	})
	fs.Var(&f.auditLog, "audit-log", "append one JSON line per run and per refused request, with the client's uid, gid and pid, to `FILE` (also TOOLJAIL_AUDIT_LOG)")
	f.maxRuns.check = func(v string) error { _, err := maxRunsValue(v); return err }
	fs.Var(&f.maxRuns, "max-runs", fmt.Sprintf("run at most `N` calls at once, across all clients (1 to %d, default %d); a call beyond that is refused at once (error 125), and at most %d x N connections may wait for their request line", serve.MaxRunsCeiling, serve.DefaultMaxRuns, serve.PendingPerRun))
	f.warm.check = func(v string) error { _, err := warmValue(v); return err }
	fs.Var(&f.warm, "warm", fmt.Sprintf("keep `N` jails built ahead of their calls for each shape of call (a served profile and a workdir; 0 to %d, default %d); 0 builds each jail when its call arrives", serve.MaxWarm, serve.DefaultWarm))
	fs.BoolVar(&f.allowClientProfiles, "allow-client-profiles", false, "let a request send a profile of its own (profile_toml: TOML text that extends a shipped or served profile, never a file) instead of naming a served one; without it such a request is refused (error 125)")
	fs.Func("tools", "also serve the tools of `FILE`, a tool file (repeatable: the tools of every file, a name declared in two files an error): a request with \"tool\" and \"arguments\" calls one, checked, rate-limited, jailed and audited as tooljail mcp does (docs/serve.md)", func(v string) error {
		if v == "" {
			return errors.New("empty; give a tool file")
		}
		f.tools = append(f.tools, v)
		return nil
	})
	return fs
}

func serveCommand(args []string, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := newServeFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			printFlags(stdout, fs)
			return 0
		}
		return fail(stderr, "%v; see 'tooljail serve --help'", err)
	}
	if fs.NArg() > 0 {
		return fail(stderr, "serve takes no arguments (got %q); see 'tooljail serve --help'", fs.Args())
	}
	audit := f.auditLog.value
	if audit == "" {
		audit = os.Getenv("TOOLJAIL_AUDIT_LOG")
	}
	srv := &serve.Server{
		Profiles: f.profiles,
		AuditLog: audit,
		ErrorLog: log.New(stderr, "tooljail serve: ", 0),
	}
	srv.AllowClientProfiles = f.allowClientProfiles
	srv.Tools = f.tools
	if f.maxRuns.set {
		srv.MaxRuns, _ = maxRunsValue(f.maxRuns.value) // checked when parsed
	}
	srv.Warm = serve.DefaultWarm
	if f.warm.set {
		srv.Warm, _ = warmValue(f.warm.value) // checked when parsed
	}
	if err := srv.Load(); err != nil {
		return fail(stderr, "%v", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	l, err := serve.Listen(f.socket.value)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return fail(stderr, "%v", err)
	case <-sigs:
	}
	// A second signal ends the grace period: the runs left are cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	if grace := srv.LongestTimeout(); grace > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, grace)
		defer stop()
	}
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "tooljail serve: the grace period ended; the runs left were cancelled\n")
	}
	<-served
	return 0
}

// warmValue is the number a --warm value gives.
func warmValue(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("want a whole number of warm jails, from 0 to %d", serve.MaxWarm)
	}
	return n, serve.CheckWarm(n)
}

// maxRunsValue is the number a --max-runs value gives.
func maxRunsValue(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("want a whole number of runs at once, from 1 to %d", serve.MaxRunsCeiling)
	}
	return n, serve.CheckMaxRuns(n)
}
