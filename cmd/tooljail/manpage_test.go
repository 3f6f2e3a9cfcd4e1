package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/internal/manpage"
)

// The man pages in docs/man are made from the text --help and docs/ hold:
// the flags from the flag sets the parser uses (flagUsages, as --help
// prints them), the rest from sections of docs/*.md. They are committed
// so that packaging needs no Go; this test fails when one is stale.
// Regenerate them with `make man` (go test ./cmd/tooljail -run TestManPages -update).
var updateMan = flag.Bool("update", false, "rewrite docs/man and the docs' flag tables from docs/ and the flag tables")

func TestManPages(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "man")
	pages := manPages(t)
	if *updateMan {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for _, p := range pages {
		var b bytes.Buffer
		if err := p.Write(&b); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, p.Name+"."+string(rune('0'+p.Section)))
		want[filepath.Base(file)] = true
		if *updateMan {
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s is stale or missing (%v); regenerate the man pages with `make man`", file, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("docs/man/%s is made by nothing; remove it", e.Name())
		}
	}
}

// Every committed page renders with groff's man macros without a warning
// (-ww: all of them).
func TestManPagesRender(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Fatalf("groff is not installed (.ci/deps.sh installs groff-base): %v", err)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "man", "*.[15]"))
	if err != nil || len(files) != 6 {
		t.Fatalf("docs/man holds %q (%v), want the 6 pages", files, err)
	}
	for _, f := range files {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", f)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("groff %s: %v: %s", f, err, stderr.String())
		}
	}
}

func manPages(t *testing.T) []*manpage.Page {
	t.Helper()
	version, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	source := "tooljail " + strings.TrimSpace(string(version))
	cli, serve, tools, profilesDoc := readDoc(t, "cli.md"), readDoc(t, "serve.md"), readDoc(t, "tools.md"), readDoc(t, "profiles.md")
	md := func(title, text string) manpage.Section { return manpage.Section{Title: title, Markdown: text} }
	options := func(fs *flag.FlagSet) manpage.Section {
		s := manpage.Section{Title: "Options"}
		for _, u := range flagUsages(fs) {
			s.Flags = append(s.Flags, manpage.Flag{Synopsis: u.synopsis, Help: u.help})
		}
		return s
	}
	seeAlso := func(self string) manpage.Section {
		var refs []string
		for _, p := range []string{"tooljail(1)", "tooljail-run(1)", "tooljail-serve(1)", "tooljail-mcp(1)", "tooljail-tools(1)", "tooljail-profile(5)"} {
			if !strings.HasPrefix(p, self+"(") {
				refs = append(refs, "`"+p+"`")
			}
		}
		return md("See also", strings.Join(refs, ", ")+"; the documentation in `docs/` of the source, https://github.com/tooljail/tooljail.")
	}
	run := section(t, cli, "## `tooljail run`")
	var commands []string
	for _, c := range usageCommands(usage) {
		commands = append(commands, "| `"+strings.ReplaceAll(c[0], "|", `\|`)+"` | "+c[1]+" |")
	}
	// cli.md's paragraph on flags, without its pointers into the code.
	_, after, _ := strings.Cut(cli, "\nEvery subcommand")
	flagsParagraph, _, _ := strings.Cut(firstParagraph("Every subcommand"+after), " The code is in")
	return []*manpage.Page{
		{
			Name: "tooljail", Section: 1, Source: source, Summary: "jail one command and report what it did",
			Synopsis: []string{"tooljail COMMAND [flags] [ARG...]"},
			Sections: []manpage.Section{
				md("Description", firstParagraph(usage)+"\n\n"+flagsParagraph),
				md("Commands", "| command | |\n|---|---|\n"+strings.Join(commands, "\n")),
				md("Exit status", section(t, cli, "### Exit codes")),
				md("Environment", section(t, cli, "### Environment variables")),
				seeAlso("tooljail"),
			},
		},
		{
			Name: "tooljail-run", Section: 1, Source: source, Summary: "run a command in a jail",
			Synopsis: []string{"tooljail run [flags] -- CMD [ARG...]"},
			Sections: []manpage.Section{
				md("Description", dropFence(intro(run))),
				options(newRunFlagSet(&runFlags{})),
				md("Values", section(t, cli, "### Values")),
				md("Exit status", section(t, cli, "### Exit codes")),
				md("Signals", section(t, cli, "### Signals")),
				md("Standard error", section(t, cli, "### What goes to stderr")),
				md("Through a server", section(t, cli, "### Through a server")),
				md("Environment", section(t, cli, "### Environment variables")),
				seeAlso("tooljail-run"),
			},
		},
		{
			Name: "tooljail-serve", Section: 1, Source: source, Summary: "serve jailed runs to clients on a unix socket",
			Synopsis: usageSynopsis(serveUsage),
			Sections: []manpage.Section{
				md("Description", dropFlagTable(dropFence(section(t, serve, "## `tooljail serve`")))),
				options(newServeFlagSet(&serveFlags{})),
				md("Warm jails", section(t, serve, "## Warm jails")),
				md("Admission", section(t, serve, "## Admission")),
				md("The socket", section(t, serve, "## The socket")),
				seeAlso("tooljail-serve"),
			},
		},
		{
			Name: "tooljail-mcp", Section: 1, Source: source, Summary: "serve the tools of a tool file to an agent over MCP",
			Synopsis: usageSynopsis(mcpUsage),
			Sections: []manpage.Section{
				md("Description", dropFlagTable(dropFence(section(t, cli, "## `tooljail mcp`")))),
				options(newMCPFlagSet(&mcpFlags{})),
				md("MCP", section(t, tools, "## MCP")),
				seeAlso("tooljail-mcp"),
			},
		},
		{
			Name: "tooljail-tools", Section: 1, Source: source, Summary: "check tool files and make tool calls",
			Synopsis: usageSynopsis(toolsUsage),
			Sections: []manpage.Section{
				md("Description", dropFlagTable(dropFence(section(t, cli, "## `tooljail tools`")))),
				options(newToolsCallFlagSet(&toolsCallFlags{})),
				md("The tool file", section(t, tools, "## The tool file")),
				md("The generic tool", section(t, tools, "## The generic tool: run_command")),
				md("Policy", section(t, tools, "## Policy")),
				md("A call", section(t, tools, "## A call")),
				md("What an argument cannot do", section(t, tools, "## What an argument cannot do")),
				seeAlso("tooljail-tools"),
			},
		},
		{
			Name: "tooljail-profile", Section: 5, Source: source, Summary: "tooljail profiles: the policy of a run, in TOML",
			Sections: []manpage.Section{
				md("Description", firstParagraph(strings.SplitN(profilesDoc, "\n\n", 2)[1])),
				md("Format", section(t, profilesDoc, "## The format")),
				md("Shipped profiles", section(t, profilesDoc, "## Shipped profiles")),
				md("Keys", section(t, profilesDoc, "## The keys")),
				seeAlso("tooljail-profile"),
			},
		},
	}
}

// intro is the text of a section before its first subsection.
func intro(md string) string {
	if i := strings.Index(md, "\n#"); i >= 0 {
		return md[:i]
	}
	return md
}

// firstParagraph is md's first paragraph.
func firstParagraph(md string) string {
	md = strings.TrimLeft(md, "\n")
	if i := strings.Index(md, "\n\n"); i >= 0 {
		return md[:i]
	}
	return md
}

var fence = regexp.MustCompile("(?s)```[^\n]*\n.*?\n```\n?")

// dropFence drops a section's first fenced block: its synopsis, which the
// page has as its own SYNOPSIS.
func dropFence(md string) string {
	loc := fence.FindStringIndex(md)
	if loc == nil {
		return md
	}
	return md[:loc[0]] + md[loc[1]:]
}

var flagTable = regexp.MustCompile("(?m)^\\| flag \\| meaning \\|\n(?:\\|.*\n?)*")

// dropFlagTable drops a section's table of flags: the page's OPTIONS are
// the flag set's own, as --help prints them.
func dropFlagTable(md string) string { return flagTable.ReplaceAllString(md, "") }

// usageSynopsis is the usage lines of a --help text ("Usage: tooljail
// serve ..." and the lines that continue it).
func usageSynopsis(text string) []string {
	var lines []string
	for i, l := range strings.Split(text, "\n") {
		if l == "" {
			break
		}
		if i == 0 {
			l = strings.TrimPrefix(l, "Usage: ")
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// usageCommands is the commands of the main usage text: each with its
// one-line description.
func usageCommands(text string) [][2]string {
	var out [][2]string
	for _, m := range regexp.MustCompile(`(?m)^  (tooljail .*?)  +(.*)$`).FindAllStringSubmatch(text, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}
