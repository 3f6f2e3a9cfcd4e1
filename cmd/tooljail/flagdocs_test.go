package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/profiles"
)

// The flag tables of docs/cli.md and docs/serve.md are the flag tables of
// the code, row for row: the same flags in the same order, each named as
// docCell names it, and in run's table the profile key it sets. The
// meaning column is the docs' own. With -update the test rewrites the
// flag and key cells from the code (`make man` runs it), keeping each
// row's meaning.
func TestDocsFlagTables(t *testing.T) {
	for _, d := range flagDocs() {
		file := filepath.Join("..", "..", "docs", d.doc)
		doc := readDoc(t, d.doc)
		got, err := flagDocTable(doc, d.heading, d.rows, d.keys)
		if err != nil {
			t.Errorf("docs/%s, %s: %v", d.doc, d.heading, err)
			continue
		}
		if *updateMan {
			if got != doc {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if got != doc {
			t.Errorf("docs/%s, %s: the flag table is not the code's; rewrite it with `make man`:\n%s", d.doc, d.heading, diffLines(doc, got))
		}
	}
}

// flagDoc is a flag table of the docs and the rows it documents.
type flagDoc struct {
	doc, heading string
	rows         []flagDef
	keys         bool // the table has a profile key column
}

func flagDocs() []flagDoc {
	var server scalar
	var asJSON bool
	return []flagDoc{
		{"cli.md", "## `tooljail run`", runFlagTable(&runFlags{}), true},
		{"serve.md", "## `tooljail serve`", serveFlagTable(&serveFlags{}), false},
		{"cli.md", "## `tooljail tools`", toolsCallFlagTable(&toolsCallFlags{}), false},
		{"cli.md", "## `tooljail mcp`", mcpFlagTable(&mcpFlags{}), false},
		{"cli.md", "## `tooljail audit`", auditFlagTable(&auditFlags{}), false},
		{"cli.md", "## `tooljail changes`", changesFlagTable(&changesFlags{}), false},
		{"cli.md", "## `tooljail session`", slices.Concat(sessionStartFlagTable(&sessionFlags{}), sessionFlagTable(&server, &asJSON)), false},
		{"cli.md", "## `tooljail check`", newCheckFlagTable(&asJSON), false},
		{"cli.md", "## `tooljail version`", newVersionFlagTable(&asJSON), false},
	}
}

var docFlagName = regexp.MustCompile("`--([a-z][a-z0-9-]*)")

// flagDocTable is doc with the flag table under heading made from rows:
// each row's flag cell (and key cell) from the code, its meaning from the
// docs' row of the same flag. An error when the two tables do not hold
// the same flags in the same order.
func flagDocTable(doc, heading string, rows []flagDef, keys bool) (string, error) {
	start := strings.Index(doc, "\n"+heading)
	if start < 0 {
		return "", fmt.Errorf("no heading")
	}
	header := "| flag | meaning |\n|---|---|\n"
	if keys {
		header = "| flag | profile key | meaning |\n|---|---|---|\n"
	}
	section := doc[start+1:]
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	i := strings.Index(section, header)
	if i < 0 {
		return "", fmt.Errorf("no table with the header %q", header)
	}
	i += start + 1 + len(header)
	end := i
	var names, meanings []string
	for end < len(doc) && strings.HasPrefix(doc[end:], "| ") {
		line, _, _ := strings.Cut(doc[end:], "\n")
		end += len(line) + 1
		cells := splitRow(line)
		m := docFlagName.FindAllStringSubmatch(cells[0], -1)
		if m == nil {
			return "", fmt.Errorf("row %q names no flag", line)
		}
		names = append(names, m[len(m)-1][1])
		meanings = append(meanings, cells[len(cells)-1])
	}
	var want []string
	for _, r := range rows {
		want = append(want, r.name)
	}
	if !slices.Equal(names, want) {
		return "", fmt.Errorf("the table lists %q, the code %q (in this order)", names, want)
	}
	var b strings.Builder
	for n, r := range rows {
		b.WriteString("| " + r.docCell() + " | ")
		if keys {
			if r.key != "" {
				b.WriteString("`" + r.key + "` ")
			}
			b.WriteString("| ")
		}
		b.WriteString(meanings[n] + " |\n")
	}
	return doc[:i] + b.String() + doc[end:], nil
}

// splitRow is the cells of a markdown table row, an escaped \| kept in
// its cell.
func splitRow(line string) []string {
	var cells []string
	cell := ""
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell += `\|`
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell))
			cell = ""
		default:
			cell += line[i : i+1]
		}
	}
	// The text before the first | and after the last is no cell.
	return cells[1:]
}

// diffLines is the lines of b that a does not have.
func diffLines(a, b string) string {
	have := map[string]bool{}
	for _, l := range strings.Split(a, "\n") {
		have[l] = true
	}
	var out []string
	for _, l := range strings.Split(b, "\n") {
		if !have[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// Every profile key a flag names is one the profiles have, documented in
// docs/profiles.md.
func TestFlagProfileKeys(t *testing.T) {
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	known := tomlKeys(reflect.ValueOf(p).Elem(), "")
	for _, r := range runFlagTable(&runFlags{}) {
		if r.key != "" && !slices.Contains(known, r.key) {
			t.Errorf("--%s: profile key %q is not one of the profile's keys %q", r.name, r.key, known)
		}
	}
}
