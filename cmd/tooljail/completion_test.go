package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// completionScript writes `tooljail completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"completion", shell}, &stdout, &stderr); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "tooljail."+shell)
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func needShell(t *testing.T, shell string) string {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Fatalf("%s is not installed (.ci/deps.sh installs it): %v", shell, err)
	}
	return path
}

// The bash script, sourced in a bash without bash-completion's helpers,
// completes each command line (the cursor at its end; "" is an empty last word).
func TestCompletionBash(t *testing.T) {
	bash := needShell(t, "bash")
	script := completionScript(t, "bash")
	dir := t.TempDir()
	for _, f := range []string{"tools.toml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		words []string
		want  []string // all of these, among the candidates
		not   []string // none of these
	}{
		{[]string{"ru"}, []string{"run"}, []string{"serve"}},
		{[]string{"run", "--mem"}, []string{"--memory"}, []string{"--mask"}},
		{[]string{"run", "--profile", "de"}, []string{"default"}, nil},
		{[]string{"run", "--profile", "./to"}, []string{"./tools.toml"}, nil},
		{[]string{"run", "--net", ""}, []string{"none", "host", "allow"}, nil},
		{[]string{"run", "--net", "=", "h"}, []string{"host"}, []string{"none"}},
		{[]string{"run", "--on-violation", ""}, []string{"deny", "kill"}, nil},
		{[]string{"run", "--allow-degraded", "land"}, []string{"landlock"}, nil},
		{[]string{"run", "-"}, []string{"-q", "--quiet", "--workdir", "--help"}, []string{"--listen"}},
		{[]string{"run", "--memory", "1G", "--"}, []string{"--memory"}, nil},
		{[]string{"run", "--memory", "1G", "--", "bas"}, []string{"bash"}, []string{"default"}},
		{[]string{"run", "--", "bash", "./no"}, []string{"./notes.txt"}, nil},
		{[]string{"serve", "--profile", "stri"}, []string{"strict"}, nil},
		{[]string{"tools", ""}, []string{"check", "call"}, nil},
		{[]string{"tools", "call", "--"}, []string{"--json", "--workdir", "--arg"}, []string{"--memory"}},
		{[]string{"tools", "check", "./to"}, []string{"./tools.toml"}, nil},
		{[]string{"audit", "show", "--status", "ex"}, []string{"exited"}, nil},
		{[]string{"profile", ""}, []string{"list", "show"}, nil},
		{[]string{"profile", "show", "rea"}, []string{"readonly"}, nil},
		{[]string{"mcp", "--"}, []string{"--tools", "--listen"}, []string{"--memory"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
	} {
		words := append([]string{"tooljail"}, tc.words...)
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c",
			`source "$1" || exit 1
COMP_WORDS=(`+strings.Join(quoted, " ")+`); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_tooljail_complete || exit 1
printf '%s\n' "${COMPREPLY[@]}"`, "bash", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", words, err, out)
		}
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		check(t, strings.Join(words, " "), got, tc.want, tc.not)
	}
}

func check(t *testing.T, line string, got, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%q completes to %q: %q missing", line, got, w)
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%q completes to %q: %q should not be there", line, got, n)
		}
	}
}

// fish loads the script and completes with its own engine (complete -C).
func TestCompletionFish(t *testing.T) {
	fish := needShell(t, "fish")
	script := completionScript(t, "fish")
	for _, tc := range []struct {
		line      string
		want, not []string
	}{
		{"tooljail run --mem", []string{"--memory"}, nil},
		{"tooljail ru", []string{"run"}, nil},
		{"tooljail run --profile de", []string{"default"}, nil},
		{"tooljail run --net ", []string{"none", "host", "allow"}, []string{"--memory"}},
		{"tooljail tools ", []string{"check", "call"}, []string{"run"}},
		{"tooljail tools call --", []string{"--json", "--arg"}, []string{"--memory"}},
		{"tooljail run --memory 1G -- bas", []string{"bash"}, []string{"--memory"}},
	} {
		out, err := exec.Command(fish, "--no-config", "-c", `source $argv[1]; or exit 1; complete -C $argv[2]`, script, tc.line).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			word, desc, _ := strings.Cut(l, "\t")
			got = append(got, word)
			// A value is not described with its flag's help.
			if !strings.HasPrefix(word, "-") && strings.HasPrefix(desc, "MODE") {
				t.Errorf("%q: value %q has its flag's description %q", tc.line, word, desc)
			}
		}
		check(t, tc.line, got, tc.want, tc.not)
	}
}

// zsh completes for real in an interactive zsh on a pseudo-terminal
// (zsh/zpty): each line is typed, TAB pressed (the shell's own completion
// system, the script loaded after compinit), and the line then printed by
// "print LINE: ..." typed in front of it. The deadline only bounds a hang.
func TestCompletionZsh(t *testing.T) {
	zsh := needShell(t, "zsh")
	script := completionScript(t, "zsh")
	cases := []struct{ typed, want string }{
		{"tooljail run --mem", "tooljail run --memory"},
		{"tooljail ru", "tooljail run"},
		{"tooljail run --profile de", "tooljail run --profile default"},
		{"tooljail run --net=ho", "tooljail run --net=host"},
		{"tooljail tools ca", "tooljail tools call"},
	}
	var steps strings.Builder
	for _, tc := range cases {
		// ^U clears the line, ^A goes to its start; LI''NE keeps the
		// echo of what is typed from matching the printed line.
		fmt.Fprintf(&steps, "zpty -w -n z $'\\C-u'%s$'\\t\\C-a'\"print -r -- LI''NE:\"$'\\n'\nzpty -r z out '*LINE:*'$'\\n' || exit 1\nprint -rn -- \"$out\"\n",
			shQuote(tc.typed))
	}
	// Loaded both ways: sourced after compinit (as docs/cli.md says), and
	// autoloaded from fpath as _tooljail (as the .deb installs it).
	fpath := t.TempDir()
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fpath, "_tooljail"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, load := range []string{
		"autoload -U compinit; compinit -u -D; source ${(q)1} || exit 1",
		"fpath=(${(q)2} $fpath); autoload -U compinit; compinit -u -D",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, zsh, "-f", "-c", `zmodload zsh/zpty || exit 1
zpty z 'zsh -f -i'
zpty -w z "PS1='> '; `+load+`; print RE''ADY"
zpty -r z out '*READY*' || exit 1
`+steps.String()+`zpty -d z`, "zsh", script, fpath)
		cmd.Dir = t.TempDir() // no file there starts like a profile name
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("zsh (%s): %v: %s", load, err, out)
		}
		var got []string
		for _, m := range regexp.MustCompile(`LINE:([^\r\n]*)`).FindAllStringSubmatch(string(out), -1) {
			got = append(got, strings.TrimSpace(m[1]))
		}
		if len(got) != len(cases) {
			t.Fatalf("zsh (%s) printed %d lines for %d: %q", load, len(got), len(cases), out)
		}
		for i, tc := range cases {
			if got[i] != tc.want {
				t.Errorf("zsh (%s): %q TAB completes to %q, want %q", load, tc.typed, got[i], tc.want)
			}
		}
	}
}

// The zsh function, called with compadd and the path completers stubbed,
// offers the words for more lines than the terminal test drives (compadd
// itself keeps those that match what is typed).
func TestCompletionZshWords(t *testing.T) {
	zsh := needShell(t, "zsh")
	script := completionScript(t, "zsh")
	cases := []struct {
		words     []string
		want, not []string
	}{
		{[]string{"ru"}, []string{"run"}, []string{"--memory"}},
		{[]string{"run", "--mem"}, []string{"--memory", "-q"}, []string{"run"}},
		{[]string{"run", "--profile", "de"}, []string{"default", "FILES"}, nil},
		{[]string{"run", "--net="}, []string{"none", "host", "allow"}, nil},
		{[]string{"run", "--memory", "1G", "--", "ba"}, []string{"COMMANDS"}, []string{"--memory"}},
		{[]string{"tools", "call", "--"}, []string{"--json"}, []string{"--memory"}},
		{[]string{"audit", "show", "--status", ""}, []string{"exited", "refused"}, nil},
	}
	var calls strings.Builder
	for _, tc := range cases {
		var quoted []string
		for _, w := range tc.words {
			quoted = append(quoted, shQuote(w))
		}
		fmt.Fprintf(&calls, "t %s\nprint -- '%%%%'\n", strings.Join(quoted, " "))
	}
	out, err := exec.Command(zsh, "-f", "-c", `autoload -U compinit && compinit -u -D && source "$1" || exit 1
compadd() { while (( $# )) && [[ $1 != -- ]]; do shift; done; shift; print -rl -- "$@"; }
_files() { print -r -- FILES; }
_command_names() { print -r -- COMMANDS; }
compset() { [[ $cur == *=* ]]; }
t() { local -a words; words=(tooljail "$@"); local CURRENT=$#words; _tooljail; }
`+calls.String(), "zsh", script).CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v: %s", err, out)
	}
	results := strings.Split(string(out), "%%\n")
	if len(results) != len(cases)+1 {
		t.Fatalf("zsh printed %d results for %d lines: %s", len(results)-1, len(cases), out)
	}
	for i, tc := range cases {
		check(t, strings.Join(tc.words, " "), strings.Fields(results[i]), tc.want, tc.not)
	}
}

// shQuote single-quotes s for a POSIX shell or zsh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestCompletionRefusesUnknownShell(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"completion", "tcsh"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "bash, fish, zsh") {
		t.Fatalf("exit %d, stderr %q: want a failure naming the shells", code, stderr.String())
	}
}

// The completion tree has every command the usage texts list, and each of
// its commands is one dispatch knows.
func TestCompletionTreeMatchesCommands(t *testing.T) {
	tree := commandTree()
	paths := map[string]bool{}
	leaves := map[string]bool{} // commands without subcommands: a second word is an argument
	for _, c := range tree.Subs {
		paths[c.Name] = true
		leaves[c.Name] = len(c.Subs) == 0
		for _, s := range c.Subs {
			paths[c.Name+" "+s.Name] = true
		}
		var stdout, stderr bytes.Buffer
		dispatch([]string{c.Name, "--help"}, &stdout, &stderr)
		if strings.Contains(stderr.String(), "unknown command") {
			t.Errorf("completion offers %q, which dispatch does not know", c.Name)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  tooljail ([a-z]+(?: [a-z]+)?)`).FindAllStringSubmatch(usage+profileUsage, -1) {
		first, _, _ := strings.Cut(m[1], " ")
		if !paths[m[1]] && !leaves[first] {
			t.Errorf("usage lists %q; completion does not offer it", m[1])
		}
	}
}
