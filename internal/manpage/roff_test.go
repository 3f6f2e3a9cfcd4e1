package manpage

import (
	"bytes"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paragraph joins its lines", "one\ntwo\n\nthree", ".PP\none two\n.PP\nthree\n"},
		{"code span: bold, hyphens as minus", "use `--memory 1G`", ".PP\nuse \\fB\\-\\-memory 1G\\fR\n"},
		{"text hyphens stay", "a read-only bind", ".PP\na read-only bind\n"},
		{"backslash escaped", `a \ b`, ".PP\na \\e b\n"},
		{"backslash in code", "`a\\b`", ".PP\n\\fBa\\eb\\fR\n"},
		{"leading dot", ".profile is read", ".PP\n\\&.profile is read\n"},
		{"leading quote", "'x' is", ".PP\n\\&'x' is\n"},
		{"bold", "a **big** deal", ".PP\na \\fBbig\\fR deal\n"},
		{"link text only", "see [profiles](profiles.md#x) now", ".PP\nsee profiles now\n"},
		{"link on a code span", "in ([`a-b.toml`](../a-b.toml), x)", ".PP\nin (\\fBa\\-b.toml\\fR, x)\n"},
		{"non-ASCII as an escape", "a → b", ".PP\na \\[u2192] b\n"},
		{"heading", "## `tooljail run`\ntext", ".SS\n\\fBtooljail run\\fR\n.PP\ntext\n"},
		{"fenced block", "```toml\n.x = \"a-b\"\n```", ".PP\n.RS 4\n.nf\n\\&.x = \"a\\-b\"\n.fi\n.RE\n"},
		{"bullets with continuation", "- one\n  more\n- two", ".IP \\(bu 2\none more\n.IP \\(bu 2\ntwo\n"},
		{"numbered", "1. first\n2. second", ".IP 1. 4\nfirst\n.IP 2. 4\nsecond\n"},
		{"two-column table", "| flag | meaning |\n|---|---|\n| `--ro P` | bind \\| read |", ".TP\n\\fB\\-\\-ro P\\fR\nbind | read\n"},
		{"wider table names its columns", "| a | b | c |\n|---|---|---|\n| x | y | z |", ".TP\nx\n\\fIb\\fR: y\n.br\n\\fIc\\fR: z\n"},
		{"unmatched backtick", "a ` b", ".PP\na ` b\n"},
	} {
		if got := Markdown(tc.in); got != tc.want {
			t.Errorf("%s: Markdown(%q) =\n%s\nwant\n%s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestFlagSynopsis(t *testing.T) {
	for in, want := range map[string]string{
		"--json":              `\fB\-\-json\fR`,
		"-q, --quiet":         `\fB\-q\fR, \fB\-\-quiet\fR`,
		"--memory SIZE":       `\fB\-\-memory\fR \fISIZE\fR`,
		"--profile NAME|FILE": `\fB\-\-profile\fR \fINAME|FILE\fR`,
	} {
		if got := flagSynopsis(in); got != want {
			t.Errorf("flagSynopsis(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPageHasNoDate(t *testing.T) {
	var b bytes.Buffer
	p := &Page{Name: "tooljail-run", Section: 1, Source: "tooljail 0.1.0", Summary: "run a command in a jail",
		Synopsis: []string{"tooljail run [flags] -- CMD"},
		Sections: []Section{{Title: "Options", Flags: []Flag{{"--memory SIZE", "memory cap"}}}}}
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.TH TOOLJAIL\-RUN 1 "" "tooljail 0.1.0" "tooljail manual"`,
		`tooljail\-run \- run a command in a jail`,
		"tooljail run [flags] \\-\\- CMD\n",
		".SH OPTIONS\n.TP\n\\fB\\-\\-memory\\fR \\fISIZE\\fR\nmemory cap\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q:\n%s", want, b.String())
		}
	}
}
