package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpWidth is the column the help text of a flag is wrapped at.
const helpWidth = 80

// printFlags writes the flags of fs in GNU style, the form the README and
// docs/cli.md use and the parser accepts: "--name VALUE", "--name" for a
// boolean, and a one-letter alias (help text "same as --quiet") as
// "-q, --quiet" on its long flag's line. Each help text follows on its
// own lines, wrapped. flag.PrintDefaults would print Go's "-name".
func printFlags(w io.Writer, fs *flag.FlagSet) {
	for _, u := range flagUsages(fs) {
		fmt.Fprintf(w, "  %s\n", u.synopsis)
		for _, line := range wrap(u.help, helpWidth-6) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// flagUsage is one flag as --help shows it.
type flagUsage struct {
	synopsis string // "-q, --quiet", "--memory SIZE"
	help     string
}

// flagUsages lists the flags of fs in name order, each alias folded into
// the flag it stands for.
func flagUsages(fs *flag.FlagSet) []flagUsage {
	aliases := flagAliases(fs)
	var out []flagUsage
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := aliasOf(fs, f); ok {
			return
		}
		var names []string
		for _, a := range aliases[f.Name] {
			names = append(names, "-"+a)
		}
		names = append(names, dashes(f.Name)+f.Name)
		synopsis := strings.Join(names, ", ")
		value, help := flag.UnquoteUsage(f)
		if !isBool(f) {
			synopsis += " " + value
		}
		if !isZeroDefault(f) {
			help += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		out = append(out, flagUsage{synopsis, help})
	})
	return out
}

// flagAliases maps each long flag of fs to its one-letter aliases.
func flagAliases(fs *flag.FlagSet) map[string][]string {
	aliases := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if target, ok := aliasOf(fs, f); ok {
			aliases[target] = append(aliases[target], f.Name)
		}
	})
	return aliases
}

// aliasOf says which flag f is a one-letter alias of: one whose help text
// is "same as --NAME" for a flag NAME of fs.
func aliasOf(fs *flag.FlagSet, f *flag.Flag) (string, bool) {
	target, ok := strings.CutPrefix(f.Usage, "same as --")
	if !ok || len(f.Name) != 1 || fs.Lookup(target) == nil {
		return "", false
	}
	return target, true
}

// dashes is how a flag is spelled: one dash for a one-letter name (-q),
// two for a word (--quiet), as GNU tools do. The parser takes either.
func dashes(name string) string {
	if len(name) == 1 {
		return "-"
	}
	return "--"
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isZeroDefault says whether f's default is its type's zero value, which
// flag.PrintDefaults leaves unsaid too.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0":
		return true
	}
	return false
}

// wrap breaks text into lines of at most width columns at spaces; a word
// longer than width gets a line of its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
