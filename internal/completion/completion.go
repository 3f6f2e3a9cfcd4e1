// Package completion writes shell completion scripts (bash, zsh, fish) for
// a command tree: subcommands, flags per subcommand, and what each flag's
// value completes to. The tree is made by the caller from its real flag
// definitions, so a script cannot list a flag the parser does not know.
package completion

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one command of the tree: the program itself at the root, a
// subcommand below it.
type Command struct {
	Name  string
	Help  string // one line, for shells that show it (zsh, fish)
	Subs  []*Command
	Flags []Flag
	// Args is what a word that is not a flag completes to once no
	// subcommand matches.
	Args Value
	// DashDash says whether "--" ends the flags and starts a command line
	// (tooljail run -- CMD ARG...): its first word completes to commands,
	// the others to files.
	DashDash bool
}

// Flag is one flag with its one-letter aliases.
type Flag struct {
	Name    string   // long name, without dashes: "memory"
	Aliases []string // one-letter names: "q"
	Help    string
	// TakesValue is false for a boolean flag.
	TakesValue bool
	Value      Value
}

// Value says what a flag's value or an argument completes to: fixed
// words, paths, or both.
type Value struct {
	Words []string
	Files bool // any path
	Dirs  bool // directories only (ignored when Files is set)
}

// Shells lists the shells a script can be written for.
var Shells = []string{"bash", "fish", "zsh"}

// Write writes the completion script of root for shell.
func Write(w io.Writer, shell string, root *Command) error {
	if err := check(root); err != nil {
		return err
	}
	switch shell {
	case "bash":
		return writeBash(w, root)
	case "zsh":
		return writeZsh(w, root)
	case "fish":
		return writeFish(w, root)
	}
	return fmt.Errorf("no completion for shell %q; give one of %s", shell, strings.Join(Shells, ", "))
}

// check refuses names a script could not carry safely: every name and
// word is written unquoted into case patterns and word lists.
func check(c *Command) error {
	var names []string
	names = append(names, c.Name)
	names = append(names, c.Args.Words...)
	for _, f := range c.Flags {
		names = append(names, f.Name)
		names = append(names, f.Aliases...)
		names = append(names, f.Value.Words...)
	}
	for _, n := range names {
		if !safeWord(n) {
			return fmt.Errorf("completion: %q (in %q) is not a plain word", n, c.Name)
		}
	}
	for _, s := range c.Subs {
		if err := check(s); err != nil {
			return err
		}
	}
	return nil
}

func safeWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-_.+@%,", r):
		default:
			return false
		}
	}
	return true
}

// spelling is a flag as typed: one dash for a letter, two for a word.
func spelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// node is a command with its path from the root ("", "tools", "tools call").
type node struct {
	path string
	cmd  *Command
}

// walk lists every command of the tree, root first, each before its
// subcommands, subcommands in the tree's order.
func walk(root *Command) []node {
	var out []node
	var visit func(path string, c *Command)
	visit = func(path string, c *Command) {
		out = append(out, node{path, c})
		for _, s := range c.Subs {
			p := s.Name
			if path != "" {
				p = path + " " + s.Name
			}
			visit(p, s)
		}
	}
	visit("", root)
	return out
}

func subNames(c *Command) []string {
	var names []string
	for _, s := range c.Subs {
		names = append(names, s.Name)
	}
	return names
}

// flagWords is every spelling of c's flags, sorted.
func flagWords(c *Command) []string {
	var words []string
	for _, f := range c.Flags {
		words = append(words, spelling(f.Name))
		for _, a := range f.Aliases {
			words = append(words, spelling(a))
		}
	}
	sort.Strings(words)
	return words
}

// valueFlags is every spelling of c's flags that take a value, with the
// flag, sorted by spelling.
func valueFlags(c *Command) []struct {
	word string
	flag Flag
} {
	var out []struct {
		word string
		flag Flag
	}
	for _, f := range c.Flags {
		if !f.TakesValue {
			continue
		}
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			out = append(out, struct {
				word string
				flag Flag
			}{spelling(n), f})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].word < out[j].word })
	return out
}

// commandCases is the body of the case statement bash's and zsh's scripts
// use to follow the words typed so far (matched as "PATH|WORD"): a
// subcommand extends the command path, and "--" where a command takes one
// marks where its argv begins (dd). Both shells spell a case arm alike.
func commandCases(nodes []node) string {
	var b strings.Builder
	for _, n := range nodes {
		if n.cmd.DashDash {
			fmt.Fprintf(&b, "      %s) dd=$i; break ;;\n", quote(n.path+"|--"))
		}
		for _, s := range n.cmd.Subs {
			child := s.Name
			if n.path != "" {
				child = n.path + " " + s.Name
			}
			fmt.Fprintf(&b, "      %s) cmdpath=%s ;;\n", quote(n.path+"|"+s.Name), quote(child))
		}
	}
	return b.String()
}
