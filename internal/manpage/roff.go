// Package manpage writes man pages (roff, man(7) macros) from the text the
// docs and --help already hold: markdown sections, converted by Markdown,
// and flag lists. It converts the markdown docs/ uses (headings,
// paragraphs, code spans, bold, links, fenced blocks, lists, tables), no
// more.
package manpage

import (
	"fmt"
	"regexp"
	"strings"
)

// Markdown converts md to roff body text. Every heading becomes a
// subsection (.SS): the page's sections (.SH) are the caller's.
func Markdown(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var para []string // the lines of the paragraph or list item being read
	item := ""        // the list item's tag (.IP argument) when para is an item
	flush := func() {
		if len(para) == 0 {
			return
		}
		if item != "" {
			fmt.Fprintf(&b, ".IP %s\n", item)
		} else {
			b.WriteString(".PP\n")
		}
		b.WriteString(line(inline(strings.Join(para, " "))))
		para, item = nil, ""
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "```"):
			flush()
			b.WriteString(".PP\n.RS 4\n.nf\n")
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				b.WriteString(line(literal(lines[i])))
			}
			b.WriteString(".fi\n.RE\n")
		case heading.MatchString(l):
			flush()
			b.WriteString(".SS\n" + line(inline(heading.FindStringSubmatch(l)[1])))
		case strings.HasPrefix(trimmed, "|"):
			flush()
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, strings.TrimSpace(lines[i]))
			}
			i--
			b.WriteString(table(rows))
		case bullet.MatchString(l):
			flush()
			item = `\(bu 2`
			para = []string{bullet.FindStringSubmatch(l)[1]}
		case numbered.MatchString(l):
			flush()
			m := numbered.FindStringSubmatch(l)
			item = m[1] + ". 4"
			para = []string{m[2]}
		default:
			para = append(para, trimmed)
		}
	}
	flush()
	return b.String()
}

var (
	heading  = regexp.MustCompile(`^#{1,6} +(.*?)\s*$`)
	bullet   = regexp.MustCompile(`^[-*] +(.*)$`)
	numbered = regexp.MustCompile(`^([0-9]+)\. +(.*)$`)
	link     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	codeLink = regexp.MustCompile("\\[(`[^`]*`)\\]\\([^)]*\\)") // [`text`](url)
	bold     = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	cellSep  = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)
)

// table renders a markdown table as tagged paragraphs: the first cell is
// the tag, the others follow, each named by its column's header when
// there are more than two columns.
func table(rows []string) string {
	var b strings.Builder
	var header []string
	for n, r := range rows {
		if cellSep.MatchString(r) {
			continue
		}
		cells := splitCells(r)
		if n == 0 {
			header = cells
			continue
		}
		b.WriteString(".TP\n" + line(inline(cells[0])))
		for k, c := range cells[1:] {
			if k > 0 {
				b.WriteString(".br\n")
			}
			text := inline(c)
			if len(header) > 2 && k+1 < len(header) {
				text = `\fI` + inline(header[k+1]) + `\fR: ` + text
			}
			b.WriteString(line(text))
		}
	}
	return b.String()
}

// splitCells splits a table row at the bars that are not escaped (\|).
func splitCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	cur := ""
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur += "|"
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur))
			cur = ""
		default:
			cur += string(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur))
}

// inline converts a paragraph's text: code spans in bold with their
// hyphens as \- (so that a flag copied from the page works), **bold**,
// links as their text; everything escaped.
func inline(s string) string {
	var b strings.Builder
	s = codeLink.ReplaceAllString(s, "$1")
	parts := strings.Split(s, "`")
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString(`\fB` + literal(p) + `\fR`)
			continue
		}
		if i%2 == 1 { // an unmatched backtick: plain text
			b.WriteString("`")
		}
		p = link.ReplaceAllString(p, "$1")
		p = escape(p)
		p = bold.ReplaceAllString(p, `\fB$1\fR`)
		b.WriteString(p)
	}
	return b.String()
}

// literal is text shown as written (code): escaped, hyphens as \-.
func literal(s string) string {
	return strings.ReplaceAll(escape(s), "-", `\-`)
}

// escape makes text safe for roff: the escape character, and every
// character outside ASCII as a \[uXXXX] escape so that the page needs no
// input encoding.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r > 0x7e || (r < 0x20 && r != '\t'):
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// line is one output line: a leading . or ' would make it a request.
func line(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s + "\n"
}
