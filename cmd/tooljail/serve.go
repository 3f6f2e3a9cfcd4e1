package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/serve"
)

const serveUsage = `Usage: tooljail serve [--socket PATH] [--profile NAME|FILE]... [--audit-log FILE] [--max-runs N]
       [--queue-timeout DUR] [--server-memory SIZE] [--warm N] [--allow-client-profiles] [--tools FILE]...
       [--changes-dir DIR]

Serves jailed runs on a unix socket: a client sends one JSON request line per
connection and gets the run's report, exactly what 'tooljail run --json'
prints (docs/serve.md has the protocol). Each call runs in a jail of one of the
served profiles, as 'tooljail run' would build it; a request may only tighten
that profile's limits as 'tooljail run' flags may, up to its [limits.max]. For each shape of call it sees (a profile and a
workdir), the server keeps --warm jails built ahead of time; each runs one
call, never a second. Only this user (and root) can connect: the socket is mode
0600 in a directory nobody else can write.

SIGTERM or SIGINT drains the server: no new calls, running calls end or hit
their timeout (the longest timeout of the served profiles), then it exits 0.
A socket nobody listens on is replaced; one a live server holds (it holds
SOCKET.lock) is an error (exit 125).

It says where it serves on stderr when it starts, in one line. A call beyond
--max-runs waits for a slot for --queue-timeout (fairly between clients),
then gets an error line (code 125) and the audit log a "refused" line; so
does a connection beyond 4 x --max-runs still waiting for its request line
(a client over its share loses its oldest to another client's), one that
sends no whole request line within 10s, and a request over the server's
budget (docs/serve.md). The server's own memory is capped (--server-memory)
in a cgroup of its own where the host allows it.

Flags:
`

// serveFlags are the parsed `serve` flags.
type serveFlags struct {
	socket   scalar
	profiles []string
	auditLog scalar
	maxRuns  scalar // a number, checked by maxRunsValue
	queue    scalar // a duration, checked by queueValue
	memory   scalar // a size, checked by serverMemoryValue
	warm     scalar // a number, checked by warmValue
	// allowClientProfiles lets a request send a profile of its own.
	allowClientProfiles bool
	tools               []string
	changesDir          string
}

func newServeFlagSet(f *serveFlags) *flag.FlagSet { return flagSetOf("serve", serveFlagTable(f)) }

// serveFlagTable is serve's flags, bound to f, in the order docs/serve.md
// lists them.
func serveFlagTable(f *serveFlags) []flagDef {
	return []flagDef{
		{name: "socket", value: "PATH", set: &f.socket,
			help: "listen on PATH (default $XDG_RUNTIME_DIR/tooljail.sock, else /run/tooljail/sock for root, else /tmp/tooljail-$UID/sock)"},
		{name: "profile", value: "NAME|FILE", repeat: true, def: defaultProfile, complete: profileCompletion,
			help: "serve this profile, a shipped NAME or a TOML FILE; repeatable, the first is the default",
			set: funcFlag(func(v string) error {
				if v == "" {
					return errors.New("empty profile name")
				}
				f.profiles = append(f.profiles, v)
				return nil
			})},
		{name: "warm", value: "N", set: once(&f.warm, func(v string) error { _, err := warmValue(v); return err }),
			help: fmt.Sprintf("keep N jails built ahead of their calls for each shape of call (a served profile and a workdir; 0 to %d, default %d); 0 builds each jail when its call arrives", serve.MaxWarm, serve.DefaultWarm)},
		{name: "allow-client-profiles", set: boolFlag{&f.allowClientProfiles},
			help: "let a request send a profile of its own (profile_toml: TOML text that extends a shipped or served profile, never a file) instead of naming a served one; without it such a request is refused (error 125)"},
		{name: "audit-log", value: "FILE", set: &f.auditLog,
			help: "append one JSON line per run and per refused request, with the client's uid, gid and pid, to FILE (also TOOLJAIL_AUDIT_LOG)"},
		{name: "tools", value: "FILE", repeat: true, set: appendTo(&f.tools, nonEmpty("a tool file")),
			help: "also serve the tools of FILE, a tool file (repeatable: the tools of every file, a name declared in two files an error): a request with \"tool\" and \"arguments\" calls one, checked, rate-limited, jailed and audited as tooljail mcp does (docs/serve.md)"},
		// Given twice, the last wins (not a scalar).
		{name: "changes-dir", value: "DIR", set: funcFlag(func(v string) error {
			if err := nonEmpty("a directory")(v); err != nil {
				return err
			}
			f.changesDir = v
			return nil
		}),
			help: "keep the clients' change sets (a request's changes) under DIR: for a server run by root, each client's in DIR/uid-UID (default /var/lib/tooljail/changes); else this user's store (default as tooljail changes, also TOOLJAIL_CHANGES_DIR)"},
		{name: "max-runs", value: "N", set: once(&f.maxRuns, func(v string) error { _, err := maxRunsValue(v); return err }),
			help: fmt.Sprintf("run at most N calls at once, across all clients (1 to %d, default %d); a call beyond that waits (--queue-timeout), and at most %d x N connections may wait for their request line, shared between clients", serve.MaxRunsCeiling, serve.DefaultMaxRuns, serve.PendingPerRun)},
		{name: "queue-timeout", value: "DUR", set: once(&f.queue, func(v string) error { _, err := queueValue(v); return err }),
			help: fmt.Sprintf("a call that finds all --max-runs slots busy waits up to DUR for one (default %v, at most %v; 0 refuses it at once), fairly between clients, then is refused (error 125)", serve.DefaultQueueTimeout, serve.MaxQueueTimeout)},
		{name: "server-memory", value: "SIZE", set: once(&f.memory, func(v string) error { _, err := serverMemoryValue(v); return err }),
			help: fmt.Sprintf("cap the server's own memory (not its jails') at SIZE in a cgroup of its own, where the host allows one (default %s; 0 for none); the start line says which", units.FormatSize(defaultServerMemory))},
	}
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
	srv, memory, err := f.server(os.Getenv)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	srv.ErrorLog = log.New(stderr, "tooljail serve: ", 0)
	if err := srv.Load(); err != nil {
		return fail(stderr, "%v", err)
	}
	sigs := make(chan os.Signal, 1)
	// Taken over even when ignored since the start (a script's
	// background job): a server stops on them, and its jails' commands do
	// not inherit an ignored SIGINT from it.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	defer keepIgnoringByHandler()()
	l, err := serve.Listen(f.socket.value)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	// The requests a server holds are bounded (serve.RequestBudget); the
	// runtime collects before its heap outgrows them by much, and the
	// cgroup is the hard stop for what is not bounded (captured output).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverHeapGoal)
	}
	own, release := limitServerMemory(memory)
	defer release()
	fmt.Fprintf(stderr, "tooljail: serve: serving on unix socket %s (%s)\n", l.Addr().String(), own)
	return serveUntilSignal(srv, l, sigs, stderr)
}

// server is the server the flags describe, and the cap on its own
// memory; getenv gives TOOLJAIL_AUDIT_LOG and TOOLJAIL_CHANGES_DIR where
// a flag is not given. The values were checked when parsed.
func (f *serveFlags) server(getenv func(string) string) (*serve.Server, int64, error) {
	srv := &serve.Server{Profiles: f.profiles, AuditLog: f.auditLog.value, AllowClientProfiles: f.allowClientProfiles, Tools: f.tools}
	if srv.AuditLog == "" {
		srv.AuditLog = getenv("TOOLJAIL_AUDIT_LOG")
	}
	srv.ChangesDir = f.changesDir
	if srv.ChangesDir == "" {
		srv.ChangesDir = getenv("TOOLJAIL_CHANGES_DIR")
	}
	if srv.ChangesDir != "" {
		abs, err := filepath.Abs(srv.ChangesDir)
		if err != nil {
			return nil, 0, fmt.Errorf("--changes-dir %s: %v", srv.ChangesDir, err)
		}
		srv.ChangesDir = abs
	}
	if f.maxRuns.set {
		srv.MaxRuns, _ = maxRunsValue(f.maxRuns.value)
	}
	if f.queue.set {
		srv.QueueTimeout, _ = queueValue(f.queue.value)
	}
	srv.Warm = serve.DefaultWarm
	if f.warm.set {
		srv.Warm, _ = warmValue(f.warm.value)
	}
	memory := int64(defaultServerMemory)
	if f.memory.set {
		memory, _ = serverMemoryValue(f.memory.value)
	}
	return srv, memory, nil
}

// limitServerMemory puts the server in a cgroup of its own capped at
// memory (0: none) where the host allows it, and says how it went for the
// start line; release ends it.
func limitServerMemory(memory int64) (own string, release func()) {
	if memory == 0 {
		return "no cgroup of its own (--server-memory 0)", func() {}
	}
	end, err := cgroup.LimitSelf(memory)
	if err != nil {
		return "no cgroup of its own: " + oneLine(err.Error()), func() {}
	}
	return "own cgroup, memory " + units.FormatSize(memory), func() { end() }
}

// serveUntilSignal serves l until the server fails or a signal comes;
// then it drains the server for the longest timeout of its profiles, or
// until a second signal cancels the runs left.
func serveUntilSignal(srv *serve.Server, l net.Listener, sigs <-chan os.Signal, stderr io.Writer) int {
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

// defaultServerMemory is --server-memory's default: the requests the
// server holds (128 MiB at most) and the output its runs capture (16 MiB
// each by default) with room to spare.
const defaultServerMemory = 1 << 30

// serverHeapGoal is the Go runtime's soft memory limit in a server: past
// it the garbage collector runs harder, so that the server's peak stays
// near what it holds (at most serve.RequestBudget of requests).
const serverHeapGoal = 160 << 20

// queueValue is the duration a --queue-timeout value gives: 0 refuses at
// once (serve.Server takes that as a negative QueueTimeout).
func queueValue(v string) (time.Duration, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if err := serve.CheckQueueTimeout(d); err != nil {
		return 0, err
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// serverMemoryValue is the size a --server-memory value gives; 0 for no
// cgroup of the server's own.
func serverMemoryValue(v string) (int64, error) {
	n, err := units.ParseSize(v)
	if err != nil {
		return 0, err
	}
	if n != 0 && n < 64<<20 {
		return 0, fmt.Errorf("%q: below 64M, too little for the server itself; give 64M or more, or 0 for no cap", v)
	}
	return n, nil
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
