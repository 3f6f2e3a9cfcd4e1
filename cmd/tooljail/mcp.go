package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools/call"
	"github.com/tooljail/tooljail/tools/mcpserver"
)

const mcpUsage = `Usage: tooljail mcp --tools FILE [--tools FILE]... [--listen ADDR] [--workdir DIR] [--audit-log FILE] [--allow-degraded LAYERS]

Serves the tools of FILE to an agent over MCP (the Model Context Protocol) on
stdin and stdout, as an MCP host starts a local server; with --listen, over
MCP's streamable HTTP transport on a unix socket or a loopback TCP port, to
any number of sessions at once (one rate limit and one audit log for all). Each tool of the file
is an MCP tool with an input schema made from its parameters; every call is
checked, rate-limited, jailed and recorded exactly as 'tooljail tools call'
does it. The model picks a tool and its arguments, never the program, the
profile or a limit. A refused or failed call is a result with isError set and
the reason as text; the outcome (call id, decision, the run's report) is its
structured content. A call over a tool's concurrency waits its turn, up to the
tool's rate.queue (default 10s). Nothing but MCP goes to stdout; errors go to
stderr; a stdin line that is not JSON-RPC is answered with an error and dropped.
The workdir (--workdir, else the current directory) must be one a run would
take: started from / or $HOME without --workdir, it exits 125.

Over stdio it ends when stdin closes; either way on SIGTERM or SIGINT (running
calls are ended, their jails killed, and recorded). docs/tools.md has the
set-up for an MCP host.

Flags:
`

// mcpFlags are the parsed `mcp` flags.
type mcpFlags struct {
	callerFlags
	tools  []string
	listen scalar
}

func newMCPFlagSet(f *mcpFlags) *flag.FlagSet { return flagSetOf("mcp", mcpFlagTable(f)) }

func mcpFlagTable(f *mcpFlags) []flagDef {
	return slices.Concat([]flagDef{
		{name: "tools", value: "FILE", repeat: true, set: appendTo(&f.tools, nonEmpty("a tool file")),
			help: "serve the tools of FILE, a tool file (required; repeatable: the tools of every file, a name declared in two files an error; docs/tools.md)"},
		{name: "listen", value: "ADDR", set: once(&f.listen, func(v string) error { _, err := mcpserver.ParseAddress(v); return err }),
			help: "serve over streamable HTTP on ADDR: a unix socket path (holding a /; its directory private to you, the socket mode 0600) or HOST:PORT on loopback (127.0.0.1:8765, [::1]:8765, port 0 for any free one); any other address is refused, and so is a web page's request (an Origin that is not loopback, on a port a Host that is not: 403)"},
	}, f.callerFlags.table())
}

func mcpCommand(args []string, stdout, stderr io.Writer) int {
	var f mcpFlags
	fs := newMCPFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mcpUsage)
			printFlags(stdout, fs)
			return 0
		}
		return fail(stderr, "%v; see 'tooljail mcp --help'", err)
	}
	if fs.NArg() > 0 {
		return fail(stderr, "mcp takes no arguments (got %q); see 'tooljail mcp --help'", fs.Args())
	}
	if len(f.tools) == 0 {
		return fail(stderr, "mcp: --tools FILE is required: the tools to serve")
	}
	c, closeCaller, ok := f.caller(f.tools, stderr)
	if !ok {
		return jail.ExitSetup
	}
	defer closeCaller()
	// Taken over even when ignored since the start, as by serve.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer keepIgnoringByHandler()()
	if f.listen.set {
		return mcpHTTP(ctx, c, f.listen.value, stderr)
	}
	// Over stdio the client is the host that started this process.
	client := report.Peer{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getppid()}
	srv, err := mcpserver.New(c, client)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	// Not the SDK's mcp.StdioTransport, which ends the session on one
	// line that is not JSON-RPC: a bad line is answered and dropped.
	err = srv.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout))
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fail(stderr, "mcp: %v", err)
	}
	return 0
}

// mcpGrace is how long a shutdown waits for open HTTP responses once the
// running calls are ended.
const mcpGrace = 5 * time.Second

// mcpHTTP serves c over streamable HTTP on addr until ctx ends.
func mcpHTTP(ctx context.Context, c *call.Caller, addr string, stderr io.Writer) int {
	a, err := mcpserver.ParseAddress(addr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	l, err := mcpserver.Listen(a)
	if err != nil {
		return fail(stderr, "mcp: %v", err)
	}
	where := "http://" + l.Addr().String() + "/mcp"
	if a.Network == "unix" {
		where = "unix socket " + l.Addr().String()
	}
	fmt.Fprintf(stderr, "tooljail: mcp: serving streamable HTTP on %s\n", where)
	if err := mcpserver.ServeHTTP(ctx, c, l, mcpGrace); err != nil {
		return fail(stderr, "mcp: %v", err)
	}
	return 0
}
