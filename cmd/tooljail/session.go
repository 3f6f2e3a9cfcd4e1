package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/serve"
)

const sessionUsage = `Usage:
  tooljail session start [run's jail flags] [--idle DUR] [--max-life DUR] [--json]
  tooljail session list [--server SOCKET] [--json]
  tooljail session stop ID [--server SOCKET] [--json]

A session is one jail a tooljail server keeps across calls (docs/sessions.md):
start builds it from a profile, a workdir and limits, as 'tooljail run' would,
and prints its id; 'tooljail run --session ID -- CMD' runs a call in it (its
/tmp, HOME and the processes a call kept with --keep-running stay between
calls); stop ends it, killing what is left, and prints its final report. A
session stops by itself after --idle without calls and --max-life after its
start, and with its server. Only the user who started it (and root) can use,
list or stop it. The server is --server's, TOOLJAIL_SERVER's, else the
default socket's.

Flags:
`

// sessionFlags are `session start`'s own flags, beside run's.
type sessionFlags struct {
	idle, maxLife scalar
}

func sessionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, sessionUsage)
		printFlags(stdout, sessionStartFlagSet(&runFlags{}, &sessionFlags{}))
		return 0
	}
	switch args[0] {
	case "start":
		return sessionStart(args[1:], stdout, stderr)
	case "list", "stop":
		return sessionListStop(args[0], args[1:], stdout, stderr)
	}
	return fail(stderr, "session %q: want start, list or stop; see 'tooljail session --help'", args[0])
}

func sessionStartFlagSet(f *runFlags, sf *sessionFlags) *flag.FlagSet {
	return flagSetOf("run", slices.Concat(runFlagTable(f), sessionStartFlagTable(sf)))
}

// sessionStartFlagTable is `session start`'s own flags, beside run's.
func sessionStartFlagTable(sf *sessionFlags) []flagDef {
	check := func(v string) error { _, err := parseSessionDuration(v); return err }
	return []flagDef{
		{name: "idle", value: "DUR", set: once(&sf.idle, check),
			help: fmt.Sprintf("stop the session after DUR without a call (default %s)", serve.DefaultSessionIdle)},
		{name: "max-life", value: "DUR", set: once(&sf.maxLife, check),
			help: fmt.Sprintf("stop the session DUR after its start, a running call with it (default %s)", serve.DefaultSessionMaxLife)},
	}
}

// parseSessionDuration is a positive duration ("10m", "8h").
func parseSessionDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration such as 10m or 8h", v)
	}
	return d, nil
}

// sessionStartRequest turns `session start`'s arguments into the start
// request and the socket: the jail flags as a served run takes them (the
// same checks), without a command.
func sessionStartRequest(args []string, getwd func() (string, error), environ []string) (serve.Request, *servedRun, *runFlags, error) {
	var f runFlags
	var sf sessionFlags
	fs := sessionStartFlagSet(&f, &sf)
	if err := fs.Parse(args); err != nil {
		return serve.Request{}, nil, nil, lineError("%v; see 'tooljail session --help'", err)
	}
	if fs.NArg() > 0 {
		return serve.Request{}, nil, nil, fmt.Errorf("session start takes no command (%q): run one with 'tooljail run --session ID -- CMD'", fs.Arg(0))
	}
	given := givenFlags(fs)
	if err := serve.SessionStartFlagError(given); err != nil {
		return serve.Request{}, nil, nil, err
	}
	// As the served run of a placeholder command: the same checks and
	// profile handling.
	if serverOf(&f, environ) == "" {
		f.server = scalar{value: serve.DefaultPath(), set: true}
	}
	sr, err := servedRunOf(&f, given, []string{"(session)"}, getwd, environ)
	if err != nil {
		return serve.Request{}, nil, nil, err
	}
	req := sr.req
	req.Argv, req.Path, req.Env = nil, "", nil
	for _, t := range req.Toolchains {
		if t == "auto" {
			return serve.Request{}, nil, nil, errors.New(`--toolchain auto finds a command's toolchain, and a session start has no command; name the prefixes`)
		}
	}
	req.SessionOp = &serve.SessionOp{Action: "start", Detach: true, Idle: sf.idle.value, MaxLife: sf.maxLife.value}
	return req, sr, &f, nil
}

func sessionStart(args []string, stdout, stderr io.Writer) int {
	req, sr, f, err := sessionStartRequest(args, unix.Getwd, os.Environ())
	if errors.Is(err, flag.ErrHelp) {
		return sessionCommand(nil, stdout, stderr)
	}
	if err != nil {
		return fail(stderr, "%v", err)
	}
	socket := sr.socket
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := &serve.Client{Path: socket}
	raw, _, err := c.SessionOp(ctx, req)
	var refused *serve.Error
	if errors.As(err, &refused) && sr.profileText != "" && profileNotServed(refused.Message, req.Profile) {
		// A profile file the server does not serve by that name: sent as
		// the client's own, as a served run's is.
		req.Profile, req.ProfileTOML = "", sr.profileText
		raw, _, err = c.SessionOp(ctx, req)
	}
	if code, ok := sessionErr(err, socket, stderr); !ok {
		return code
	}
	var info serve.SessionInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return fail(stderr, "the server's answer: %v", err)
	}
	if f.json {
		stdout.Write(append(raw, '\n'))
	} else {
		fmt.Fprintln(stdout, info.ID)
	}
	return 0
}

// sessionErr prints a failed session request's error; ok when none.
func sessionErr(err error, socket string, stderr io.Writer) (int, bool) {
	var refused *serve.Error
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &refused):
		fail(stderr, "%s", refused.Message)
		return refused.Code, false
	case isDialError(err):
		return fail(stderr, "%v; start one with 'tooljail serve --socket %s'", err, socket), false
	}
	return fail(stderr, "%v", err), false
}

func sessionListStop(action string, args []string, stdout, stderr io.Writer) int {
	var server scalar
	var asJSON bool
	fs := newSessionFlagSet(action, &server, &asJSON)
	// The id may come before or after the flags.
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return fail(stderr, "%v; see 'tooljail session --help'", err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	want := map[string]int{"list": 0, "stop": 1}[action]
	if len(pos) != want {
		return fail(stderr, "session %s takes %d argument(s), got %d; see 'tooljail session --help'", action, want, len(pos))
	}
	socket := server.value
	if !server.set {
		socket = serve.ClientPath()
	}
	op := &serve.SessionOp{Action: action}
	if action == "stop" {
		if !jail.ValidSessionID(pos[0]) {
			return fail(stderr, "%q: not a session id (32 hex digits, as 'tooljail session start' printed)", pos[0])
		}
		op.ID = pos[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, _, err := (&serve.Client{Path: socket}).SessionOp(ctx, serve.Request{SessionOp: op})
	if code, ok := sessionErr(err, socket, stderr); !ok {
		return code
	}
	return printSessionAnswer(action, raw, asJSON, stdout, stderr)
}

// printSessionAnswer prints the server's answer to list or stop: as it
// came with --json, else the stopped session's line or a table.
func printSessionAnswer(action string, raw []byte, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON {
		stdout.Write(append(raw, '\n'))
		return 0
	}
	if action == "stop" {
		var r jail.SessionResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return fail(stderr, "the server's answer: %v", err)
		}
		fmt.Fprintln(stdout, sessionSummary(&r))
		return 0
	}
	var list []serve.SessionInfo
	if err := json.Unmarshal(raw, &list); err != nil {
		return fail(stderr, "the server's answer: %v", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUID\tSTARTED\tPROFILE\tWORKDIR\tIDLE\tMAX LIFE")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.UID, s.StartedAt.Local().Format(time.DateTime), s.Profile, s.Workdir, s.Idle, s.MaxLife)
	}
	tw.Flush()
	return 0
}

// newSessionFlagSet is the flags of `session list` and `session stop`.
func newSessionFlagSet(action string, server *scalar, asJSON *bool) *flag.FlagSet {
	return flagSetOf("session "+action, sessionFlagTable(server, asJSON))
}

func sessionFlagTable(server *scalar, asJSON *bool) []flagDef {
	return []flagDef{
		{name: "server", value: "SOCKET", set: server, help: "the server's SOCKET (also TOOLJAIL_SERVER; default the default socket)"},
		{name: "json", set: boolFlag{asJSON}, help: "print JSON"},
	}
}

// sessionSummary is a stopped session's one line.
func sessionSummary(r *jail.SessionResult) string {
	s := fmt.Sprintf("session %s stopped (%s) after %s: %d calls", r.ID, r.StoppedFor, time.Duration(r.WallTimeMs)*time.Millisecond, r.Calls)
	if r.KilledRunning {
		s += ", a running call killed"
	}
	if n := len(r.Violations); n > 0 {
		s += fmt.Sprintf("; the processes calls kept made denied calls (%d kinds: see --json)", n)
	}
	return s
}
