package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

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
			cmd("show", "a profile, resolved, as TOML", nil, profileCompletion())),
		cmd("version", "version, commit, Go, libseccomp and target", newVersionFlagSet(new(bool)), completion.Value{}),
		cmd("completion", "a shell completion script", nil, completion.Value{Words: completion.Shells}),
		cmd("help", "the list of commands", nil, completion.Value{}),
	}}
	return root
}

// profileCompletion is what names a profile: a shipped one or a file.
func profileCompletion() completion.Value {
	var names []string
	for _, p := range profiles.List() {
		names = append(names, p.Name)
	}
	return completion.Value{Words: names, Files: true}
}

// layerCompletion is the layers --allow-degraded names.
func layerCompletion() completion.Value { return completion.Value{Words: jail.KnownLayers} }

// completionFlags is fs's flags for completion, from their flag table
// (each alias on its long flag), and --help, which every subcommand
// takes. A nil fs has only --help.
func completionFlags(fs *flag.FlagSet) []completion.Flag {
	var out []completion.Flag
	if fs != nil {
		for _, r := range flagRows(fs) {
			var aliases []string
			if r.short != "" {
				aliases = []string{r.short}
			}
			out = append(out, completion.Flag{
				Name: r.name, Aliases: aliases, Help: r.helpText(),
				TakesValue: r.value != "", Value: r.valueCompletion(),
			})
		}
	}
	return append(out, completion.Flag{Name: "help", Help: "the flags of this command"})
}

func stringsOf[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	return out
}
