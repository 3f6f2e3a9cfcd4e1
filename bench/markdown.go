package bench

import (
	"strings"
)

// The hand-written part of BENCHMARKS.md sits between these markers; the
// generator copies it from the previous file unchanged.
const (
	NotesBegin = "<!-- notes -->"
	NotesEnd   = "<!-- /notes -->"
)

// defaultNotes starts the log when BENCHMARKS.md has none yet.
const defaultNotes = `
Hand-written; ` + "`make bench`" + ` keeps everything between the notes markers. One entry per
change: what changed, the start-up median and ratio to bwrap before and after (same run
conditions), and what it bought.

| date | change | tooljail start-up before → after | ratio to bwrap before → after | notes |
|---|---|---|---|---|
`

// Notes returns the text between NotesBegin and NotesEnd in doc, and
// whether both markers were found in that order.
func Notes(doc string) (string, bool) {
	i := strings.Index(doc, NotesBegin)
	if i < 0 {
		return "", false
	}
	rest := doc[i+len(NotesBegin):]
	j := strings.Index(rest, NotesEnd)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// Assemble returns the new BENCHMARKS.md: generated, then the notes
// section with the notes of old (the previous file's content; "" when there
// was none) or a fresh template.
func Assemble(generated, old string) string {
	notes, ok := Notes(old)
	if !ok {
		notes = defaultNotes
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(generated, "\n"))
	b.WriteString("\n\n## What each change bought\n\n")
	b.WriteString(NotesBegin)
	b.WriteString(notes)
	b.WriteString(NotesEnd)
	b.WriteString("\n")
	return b.String()
}

// Table writes a GitHub-flavoured Markdown table. A "|" or newline in a
// cell is escaped so that it cannot break the row.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			c = strings.ReplaceAll(c, "|", `\|`)
			c = strings.ReplaceAll(c, "\n", " ")
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	row(header)
	b.WriteString("|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		row(r)
	}
	return b.String()
}
