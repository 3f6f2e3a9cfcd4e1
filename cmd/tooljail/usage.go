package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpWidth is the column the help text of a flag is wrapped at.
const helpWidth = 80

// printFlags writes the flags of fs, made from a flag table (flagSetOf),
// in GNU style, the form the README and docs/cli.md use and the parser
// accepts: "--name VALUE", "--name" for a boolean, and a one-letter alias
// as "-q, --quiet" on its long flag's line. Each help text follows on its
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

// flagUsages lists the flags of fs in name order, each alias on its long
// flag's line.
func flagUsages(fs *flag.FlagSet) []flagUsage {
	var out []flagUsage
	for _, r := range flagRows(fs) {
		out = append(out, flagUsage{r.synopsis(), r.helpText()})
	}
	return out
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
