package manpage

import (
	"fmt"
	"io"
	"strings"
)

// Page is one man page.
type Page struct {
	Name     string // "tooljail-run"
	Section  int    // 1 commands, 5 file formats
	Source   string // the footer's source: "tooljail 0.1.0"
	Summary  string // the NAME line after the dash
	Synopsis []string
	Sections []Section
}

// Section is one .SH of a page: markdown, or a list of flags.
type Section struct {
	Title    string // upper case by convention: "OPTIONS"
	Markdown string
	Flags    []Flag
}

// Flag is a flag as --help shows it: "-q, --quiet", "--memory SIZE".
type Flag struct {
	Synopsis string
	Help     string
}

// Write writes p as roff. Nothing in it comes from the clock: the date
// field is left empty, the version is the caller's.
func (p *Page) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".\\\" Generated from docs/ and the flag definitions; do not edit.\n")
	fmt.Fprintf(&b, ".TH %s %d \"\" \"%s\" \"tooljail manual\"\n", strings.ToUpper(literal(p.Name)), p.Section, escape(p.Source))
	b.WriteString(".SH NAME\n" + line(literal(p.Name)+` \- `+escape(p.Summary)))
	if len(p.Synopsis) > 0 {
		b.WriteString(".SH SYNOPSIS\n.nf\n")
		for _, s := range p.Synopsis {
			b.WriteString(line(literal(s)))
		}
		b.WriteString(".fi\n")
	}
	for _, s := range p.Sections {
		b.WriteString(".SH " + strings.ToUpper(s.Title) + "\n")
		b.WriteString(Markdown(s.Markdown))
		for _, f := range s.Flags {
			b.WriteString(".TP\n" + line(flagSynopsis(f.Synopsis)) + line(escape(f.Help)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flagSynopsis sets a flag's names in bold and its value in italics:
// "-q, --quiet", "--memory SIZE".
func flagSynopsis(s string) string {
	names := strings.Split(s, ", ")
	last, value, hasValue := strings.Cut(names[len(names)-1], " ")
	names[len(names)-1] = last
	var parts []string
	for _, n := range names {
		parts = append(parts, `\fB`+literal(n)+`\fR`)
	}
	out := strings.Join(parts, ", ")
	if hasValue {
		out += ` \fI` + literal(value) + `\fR`
	}
	return out
}
