// Command tooljail jails one command and reports what it did. It only parses
// flags and prints; the jail, the profiles and the policy layers live in
// their own packages.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tooljail/tooljail/jail"
	// tooljail's threads wait with a timer slack of 1 ms (docs/architecture.md).
	_ "github.com/tooljail/tooljail/internal/timerslack"
)

const usage = `tooljail jails one command: new namespaces, a minimal filesystem, Landlock,
a seccomp allowlist, rlimits and cgroup caps, and a JSON report of the run.

Usage:
  tooljail run [flags] -- CMD [ARG...]   run CMD in a jail
  tooljail serve [flags]                 serve jailed runs to clients on a unix socket
  tooljail tools check FILE...           validate tool files; print each tool as it would run
  tooljail tools call FILE NAME [flags]  make one tool call (checked, limited, jailed, audited)
  tooljail mcp --tools FILE [flags]      serve the tools of FILE to an agent over MCP (stdio, or HTTP with --listen)
  tooljail audit show [flags] FILE       read an audit log back as a table
  tooljail changes list|show|diff|apply|discard|gc   the change sets of --changes runs
  tooljail session start|list|stop       a jail a server keeps across calls (run --session ID)
  tooljail check [--json]                what this host can enforce, and how to fix what it cannot
  tooljail profile list                  shipped profiles
  tooljail profile show NAME|FILE        a profile, resolved, as TOML
  tooljail version [--json]              version, commit, Go, libseccomp and target
  tooljail completion bash|zsh|fish      a shell completion script

Run 'tooljail COMMAND --help' for the flags of a command.
`

func main() {
	// `tooljail check` re-executes this binary to try a user namespace.
	jail.Init()
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return jail.ExitSetup
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdout, stderr)
	case "serve":
		return serveCommand(args[1:], stdout, stderr)
	case "tools":
		return toolsCommand(args[1:], stdout, stderr)
	case "mcp":
		return mcpCommand(args[1:], stdout, stderr)
	case "audit":
		return auditCommand(args[1:], stdout, stderr)
	case "changes":
		return changesCommand(args[1:], stdout, stderr)
	case "session":
		return sessionCommand(args[1:], stdout, stderr)
	case "check":
		return checkCommand(args[1:], stdout, stderr)
	case "profile":
		return profileCommand(args[1:], stdout, stderr)
	case "version":
		return versionCommand(args[1:], stdout, stderr)
	case "completion":
		return completionCommand(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	return fail(stderr, "unknown command %q; run 'tooljail --help'", args[0])
}

// fail prints one line on stderr and returns tooljail's own failure code.
func fail(stderr io.Writer, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
	fmt.Fprintf(stderr, "tooljail: %s\n", msg)
	return jail.ExitSetup
}

// warn prints err on stderr as tooljail's one warning line, for what went
// wrong without changing the outcome (the exit code, a tool's answer).
func warn(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "tooljail: warning: %v\n", err)
}
