package main

import (
	"strings"
	"testing"
)

// parseServed parses the arguments of `run` for a server, as runCommand
// does: nil when the run is not for one (or the flags do not parse). getwd
// gives the current directory, environ is the caller's environment.
func parseServed(args []string, getwd func() (string, error), environ []string) (*servedRun, error) {
	var f runFlags
	fs := newRunFlagSet(&f)
	if fs.Parse(args) != nil {
		return nil, nil
	}
	return servedRunOf(&f, givenFlags(fs), fs.Args(), getwd, environ)
}

func TestServedReport(t *testing.T) {
	cases := []struct {
		p, cwd, workdir string
		want, err       string
	}{
		{"", "/c", "/w", "", ""},
		{"-", "/c", "/w", "-", ""},
		{"r.json", "/c", "/w", "/c/r.json", ""},
		{"/tmp/../r.json", "/c", "", "/r.json", ""},
		{"r.json", "/w", "/w", "", "--report r.json: inside the run's workdir /w"},
		{"/w/sub/r.json", "/c", "/w", "", "inside the run's workdir"},
		{"/wx/r.json", "/c", "/w", "/wx/r.json", ""},
	}
	for _, c := range cases {
		got, err := servedReport(c.p, c.cwd, c.workdir)
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("servedReport(%q, %q, %q) = %q, %v; want %q, %q", c.p, c.cwd, c.workdir, got, err, c.want, c.err)
		}
	}
}

func TestWorkdirFlagsError(t *testing.T) {
	cases := []struct {
		workdir, noWorkdir, workdirRO bool
		want                          string
	}{
		{false, false, false, ""},
		{true, false, true, ""},
		{false, true, false, ""},
		{true, true, false, "--workdir and --no-workdir contradict each other"},
		{false, true, true, "--workdir-ro and --no-workdir contradict each other"},
		{true, true, true, "--workdir and --no-workdir"},
	}
	for _, c := range cases {
		err := workdirFlagsError(c.workdir, c.noWorkdir, c.workdirRO)
		if (c.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
}

func TestLimitMap(t *testing.T) {
	if m := limitMap(nil); m != nil {
		t.Errorf("no limits: %v, want nil", m)
	}
	l := [][2]string{{"memory", "1G"}, {"timeout", "5s"}}
	if m := limitMap(l); len(m) != 2 || m["memory"] != "1G" || m["timeout"] != "5s" {
		t.Errorf("limitMap: %v", m)
	}
	if k := limitKeys(l); strings.Join(k, ",") != "memory,timeout" {
		t.Errorf("limitKeys: %q", k)
	}
}

// A flag counts as given when it was, a boolean one only when true.
func TestGivenFlags(t *testing.T) {
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse([]string{"--ro", "/a", "--workdir-ro=false", "--tty", "-q", "--memory", "1G", "--", "true"}); err != nil {
		t.Fatal(err)
	}
	given := givenFlags(fs)
	for name, want := range map[string]bool{"ro": true, "workdir-ro": false, "tty": true, "quiet": true, "q": false, "memory": true, "rw": false} {
		if given(name) != want {
			t.Errorf("given(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestChangesUseError(t *testing.T) {
	cases := []struct {
		sub   string
		n     int
		flags changesFlags
		want  string
	}{
		{"list", 0, changesFlags{}, ""},
		{"list", 1, changesFlags{}, "want no argument"},
		{"diff", 2, changesFlags{}, ""},
		{"diff", 3, changesFlags{}, "want an ID and at most one PATH"},
		{"show", 0, changesFlags{}, "want one ID"},
		{"apply", 1, changesFlags{force: true}, ""},
		{"discard", 1, changesFlags{force: true}, "--force is for apply"},
		{"gc", 0, changesFlags{maxSize: scalar{value: "1G", set: true}}, ""},
		{"list", 0, changesFlags{expiry: scalar{value: "1h", set: true}}, "--max-size and --expiry are for gc"},
	}
	for _, c := range cases {
		err := changesUseError(c.sub, c.n, &c.flags)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %d argument(s): %v, want %q", c.sub, c.n, err, c.want)
		}
	}
}

func TestSplitArgv(t *testing.T) {
	cases := []struct {
		pos            []string
		fileName, argv string
	}{
		{[]string{"f.toml", "grep"}, "f.toml,grep", ""},
		{[]string{"f.toml", "grep", "x"}, "f.toml,grep,x", ""},
		{[]string{"f.toml", "run_command", "ls", "-l"}, "f.toml,run_command", "ls,-l"},
		{[]string{"f.toml", "run_command"}, "f.toml,run_command", ""},
		{[]string{"f.toml"}, "f.toml", ""},
	}
	for _, c := range cases {
		fileName, argv := splitArgv(c.pos)
		if strings.Join(fileName, ",") != c.fileName || strings.Join(argv, ",") != c.argv {
			t.Errorf("splitArgv(%q) = %q, %q", c.pos, fileName, argv)
		}
	}
}
