package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tooljail/tooljail/auditlog"
	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/internal/completion"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

const completionUsage = `Usage: tooljail completion bash|zsh|fish

Prints a completion script for the shell: subcommands, each one's flags, the
shipped profile names, the values of flags that take one of a known set, and
paths where a flag takes a file or directory. Load it with
  bash: source <(tooljail completion bash)
  zsh:  source <(tooljail completion zsh)     (after compinit)
  fish: tooljail completion fish | source
or install it where the shell looks: bash-completion's completions/tooljail,
zsh's fpath as _tooljail, fish's completions/tooljail.fish.
`

func completionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, completionUsage)
		return 0
	}
	if len(args) != 1 {
		return fail(stderr, "completion needs one shell: %s", strings.Join(completion.Shells, ", "))
	}
	if err := completion.Write(stdout, args[0], commandTree()); err != nil {
		return fail(stderr, "%v", err)
	}
	return 0
}

// commandTree is tooljail's commands for completion, made from the flag
// sets the parsers use and the lists the parsers check values against.
func commandTree() *completion.Command {
	files := completion.Value{Files: true}
	cmd := func(name, help string, fs *flag.FlagSet, args completion.Value, subs ...*completion.Command) *completion.Command {
		return &completion.Command{Name: name, Help: help, Flags: completionFlags(fs), Args: args, Subs: subs}
	}
	run := cmd("run", "run CMD in a jail", newRunFlagSet(&runFlags{}), completion.Value{})
	run.DashDash = true
	root := &completion.Command{Name: "tooljail", Subs: []*completion.Command{
		run,
		cmd("serve", "serve jailed runs on a unix socket", newServeFlagSet(&serveFlags{}), completion.Value{}),
		cmd("tools", "validate tool files, make a tool call", nil, completion.Value{},
			cmd("check", "validate tool files", nil, files),
			cmd("call", "make one tool call", newToolsCallFlagSet(&toolsCallFlags{}), files)),
		cmd("mcp", "serve the tools of a file over MCP", newMCPFlagSet(&mcpFlags{}), completion.Value{}),
		cmd("audit", "read an audit log back", nil, completion.Value{},
			cmd("show", "read an audit log back as a table", newAuditFlagSet(&auditFlags{}), files)),
		cmd("changes", "the change sets of --changes runs", nil, completion.Value{},
			cmd("list", "the kept change sets", newChangesFlagSet(&changesFlags{}), completion.Value{}),
			cmd("show", "a change set's entries", newChangesFlagSet(&changesFlags{}), completion.Value{}),
			cmd("diff", "what applying a change set would do", newChangesFlagSet(&changesFlags{}), completion.Value{}),
			cmd("apply", "write a change set to the host", newChangesFlagSet(&changesFlags{}), completion.Value{}),
			cmd("discard", "remove a change set", newChangesFlagSet(&changesFlags{}), completion.Value{}),
			cmd("gc", "remove expired change sets", newChangesFlagSet(&changesFlags{}), completion.Value{})),
		cmd("session", "a jail a server keeps across calls", nil, completion.Value{},
			cmd("start", "start a session", sessionStartFlagSet(&runFlags{}, &sessionFlags{}), completion.Value{}),
			cmd("list", "your sessions", newSessionFlagSet("list", new(scalar), new(bool)), completion.Value{}),
			cmd("stop", "stop a session", newSessionFlagSet("stop", new(scalar), new(bool)), completion.Value{})),
		cmd("check", "what this host can enforce", newCheckFlagSet(new(bool)), completion.Value{}),
		cmd("profile", "shipped profiles", nil, completion.Value{},
			cmd("list", "the shipped profiles", nil, completion.Value{}),
			cmd("show", "a profile, resolved, as TOML", nil, profileValue())),
		cmd("version", "version, commit, Go, libseccomp and target", newVersionFlagSet(new(bool)), completion.Value{}),
		cmd("completion", "a shell completion script", nil, completion.Value{Words: completion.Shells}),
		cmd("help", "the list of commands", nil, completion.Value{}),
	}}
	return root
}

// profileValue is what names a profile: a shipped one or a file.
func profileValue() completion.Value {
	var names []string
	for _, p := range profiles.List() {
		names = append(names, p.Name)
	}
	return completion.Value{Words: names, Files: true}
}

// completionFlags is fs's flags for completion, each one-letter alias
// (usage.go's aliasOf) folded into its flag, and --help, which every
// subcommand takes. A nil fs has only --help.
func completionFlags(fs *flag.FlagSet) []completion.Flag {
	var out []completion.Flag
	if fs != nil {
		aliases := flagAliases(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if _, ok := aliasOf(fs, f); ok {
				return
			}
			metavar, help := flag.UnquoteUsage(f)
			out = append(out, completion.Flag{
				Name: f.Name, Aliases: aliases[f.Name], Help: help,
				TakesValue: !isBool(f), Value: flagValue(f.Name, metavar),
			})
		})
	}
	return append(out, completion.Flag{Name: "help", Help: "the flags of this command"})
}

// flagValue is what a flag's value completes to: the set the parser
// checks it against where there is one, else paths when its value names a
// file or directory (its metavar in the help text), else nothing.
func flagValue(name, metavar string) completion.Value {
	switch name {
	case "profile":
		return profileValue()
	case "net":
		return completion.Value{Words: stringsOf(jail.NetModes)}
	case "changes":
		return completion.Value{Words: stringsOf(changes.Modes)}
	case "on-violation":
		return completion.Value{Words: stringsOf(jail.OnViolations)}
	case "allow-degraded":
		return completion.Value{Words: jail.KnownLayers}
	case "status":
		return completion.Value{Words: stringsOf(auditlog.Statuses)}
	case "toolchain":
		return completion.Value{Words: []string{"auto"}, Dirs: true}
	}
	switch metavar {
	case "FILE", "PATH", "PATH[:DEST]", "SOCKET":
		return completion.Value{Files: true}
	case "DIR":
		return completion.Value{Dirs: true}
	}
	return completion.Value{}
}

func stringsOf[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	return out
}
