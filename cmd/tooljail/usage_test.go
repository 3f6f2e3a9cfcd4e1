package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"
)

func TestPrintFlags(t *testing.T) {
	var s scalar
	var quiet bool
	fs := flagSetOf("x", []flagDef{
		{name: "memory", value: "SIZE", help: "memory cap SIZE (cgroup)", set: &s},
		{name: "level", value: "LEVEL", def: "low", help: "how loud", set: &scalar{}},
		{name: "quiet", short: "q", help: "no summary line", set: boolFlag{&quiet}},
		{name: "ro", value: "PATH[:DEST]", repeat: true, help: "bind PATH[:DEST] read-only (repeatable); " + strings.Repeat("long ", 16) + "text",
			set: appendTo(new([]string), nil)},
	})
	var b bytes.Buffer
	printFlags(&b, fs)
	want := `  --level LEVEL
      how loud (default "low")
  --memory SIZE
      memory cap SIZE (cgroup)
  -q, --quiet
      no summary line
  --ro PATH[:DEST]
      bind PATH[:DEST] read-only (repeatable); long long long long long long
      long long long long long long long long long long text
`
	if b.String() != want {
		t.Errorf("printFlags:\n%s\nwant:\n%s", b.String(), want)
	}
	// The alias parses as its flag does.
	if err := fs.Parse([]string{"-q", "--ro", "a", "--ro", "b"}); err != nil || !quiet {
		t.Errorf("-q: %v, quiet %v", err, quiet)
	}
}

func TestWrap(t *testing.T) {
	cases := []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one", 10, []string{"one"}},
		{"one two three", 7, []string{"one two", "three"}},
		{"one  two\nthree", 20, []string{"one two three"}},
		{"a verylongwordindeed b", 5, []string{"a", "verylongwordindeed", "b"}},
		{"exactly10c next", 10, []string{"exactly10c", "next"}},
	}
	for _, c := range cases {
		if got := wrap(c.text, c.width); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
		}
	}
}

// Every subcommand's --help names its flags GNU-style: --name, or -x for a
// one-letter alias; never Go's single-dash -name.
func TestHelpIsGNUStyle(t *testing.T) {
	singleDash := regexp.MustCompile(`(?m)(^|[\s,(])-[a-z][a-z0-9-]+`)
	for _, sub := range []struct {
		args []string
		fs   *flag.FlagSet
	}{
		{[]string{"run", "--help"}, newRunFlagSet(&runFlags{})},
		{[]string{"check", "--help"}, newCheckFlagSet(new(bool))},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(sub.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", sub.args, code, stderr.String())
		}
		help := stdout.String()
		if m := singleDash.FindString(help); m != "" {
			t.Errorf("%v prints a single-dash long flag %q:\n%s", sub.args, strings.TrimSpace(m), help)
		}
		sub.fs.VisitAll(func(f *flag.Flag) {
			name := "--" + f.Name
			if len(f.Name) == 1 {
				name = "-" + f.Name
			}
			if !regexp.MustCompile(`(?m)^  (-[a-z], )?` + regexp.QuoteMeta(name) + `( |,|$)`).MatchString(help) {
				t.Errorf("%v does not list %s:\n%s", sub.args, name, help)
			}
		})
	}
}
