package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/tools/mcpserver"
)

const mcpUsage = `Usage: tooljail mcp --tools FILE [--workdir DIR] [--audit-log FILE] [--allow-degraded LAYERS]

Serves the tools of FILE to an agent over MCP (the Model Context Protocol) on
stdin and stdout, as an MCP host starts a local server. Each tool of the file
is an MCP tool with an input schema made from its parameters; every call is
checked, rate-limited, jailed and recorded exactly as 'tooljail tools call'
does it. The model picks a tool and its arguments, never the program, the
profile or a limit. A refused or failed call is a result with isError set and
the reason as text; the outcome (call id, decision, the run's report) is its
structured content. Nothing but MCP goes to stdout; errors go to stderr.

It ends when stdin closes, or on SIGTERM or SIGINT. docs/tools.md has the
set-up for an MCP host.

Flags:
`

// mcpFlags are the parsed `mcp` flags.
type mcpFlags struct {
	callerFlags
	tools scalar
}

func newMCPFlagSet(f *mcpFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.tools.check = nonEmpty("a tool file")
	fs.Var(&f.tools, "tools", "serve the tools of `FILE`, a tool file (required; docs/tools.md)")
	f.callerFlags.register(fs)
	return fs
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
	if !f.tools.set {
		return fail(stderr, "mcp: --tools FILE is required: the tools to serve")
	}
	c, closeCaller, ok := f.caller(f.tools.value, stderr)
	if !ok {
		return jail.ExitSetup
	}
	defer closeCaller()
	// Over stdio the client is the host that started this process.
	client := jail.Peer{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getppid()}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := mcpserver.New(c, client)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	err = srv.Run(ctx, &mcp.StdioTransport{})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fail(stderr, "mcp: %v", err)
	}
	return 0
}
