package tools

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const runCommandFile = `
[run_command]
profile = "default"
limits = { timeout = "20s" }
rate = { per_minute = 3, concurrency = 1 }
max_args = 4
`

func TestRunCommandParse(t *testing.T) {
	f, err := Parse("f.toml", []byte(minimal+runCommandFile))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Lookup(RunCommand)
	if g == nil || !g.Generic || !g.Stdin || g.Profile != "default" || g.MaxArgs != 4 || g.Limits["timeout"] != "20s" ||
		*g.Rate.PerMinute != 3 || *g.Rate.Concurrency != 1 || g.Command != nil || f.Tools[len(f.Tools)-1] != g {
		t.Fatalf("run_command %+v", g)
	}
	// Off by default: a file without the table has no such tool.
	f, err = Parse("f.toml", []byte(minimal))
	if err != nil || f.Lookup(RunCommand) != nil {
		t.Fatalf("without [run_command]: %v %v", f, err)
	}
	// The table alone is a file.
	f, err = Parse("f.toml", []byte(runCommandFile))
	if err != nil || len(f.Tools) != 1 || f.Tools[0].Name != RunCommand {
		t.Fatalf("[run_command] alone: %v %v", f, err)
	}
	if f.Tools[0].Description == "" || f.Tools[0].MaxArgs != 4 {
		t.Errorf("%+v", f.Tools[0])
	}
	if f, _ := Parse("f.toml", []byte("[run_command]\nprofile = \"strict\"\n")); f.Tools[0].MaxArgs != defaultMaxArgs {
		t.Errorf("max_args default %d", f.Tools[0].MaxArgs)
	}
}

func TestRunCommandParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no profile", "[run_command]\n", "f.toml:1:2: run_command.profile: missing; name the profile every command runs under"},
		{"unknown profile", "[run_command]\nprofile = \"nope\"\n", `f.toml:2:1: run_command.profile: "nope": no such shipped profile`},
		{"unknown key", "[run_command]\nprofile = \"default\"\ncommand = [\"sh\"]\n", "f.toml:3:1: run_command.command: unknown key (known keys here: description, profile, limits, rate, max_args, changes)"},
		{"unknown rate key", "[run_command]\nprofile = \"default\"\nrate.per_day = 1\n", "run_command.rate.per_day: unknown key (known keys here: per_minute, per_hour, concurrency, queue)"},
		{"bad limit", "[run_command]\nprofile = \"default\"\nlimits.timeout = \"soon\"\n", "f.toml:3:8: run_command.limits.timeout:"},
		{"bad rate", "[run_command]\nprofile = \"default\"\nrate.per_minute = -1\n", "run_command.rate.per_minute: -1: want 0 (no limit) to 100000"},
		{"max_args 0", "[run_command]\nprofile = \"default\"\nmax_args = 0\n", "f.toml:3:1: run_command.max_args: 0: want 1 to 4096"},
		{"max_args big", "[run_command]\nprofile = \"default\"\nmax_args = 5000\n", "run_command.max_args: 5000: want 1 to 4096"},
		{"empty description", "[run_command]\nprofile = \"default\"\ndescription = \" \"\n", "run_command.description: empty"},
		{"a tool of that name", minimal + "\n[tools.run_command]\ndescription = \"d\"\ncommand = [\"x\"]\n" + runCommandFile, "tools.run_command: run_command is the name of the generic tool of [run_command]"},
	} {
		_, err := Parse("f.toml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

func TestRunCommandCheckCall(t *testing.T) {
	f, err := Parse("f.toml", []byte(runCommandFile))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Tools[0]
	// Passed as given: what a shell would read stays in one element.
	argv, d, err := g.CheckCall(map[string]any{"argv": []any{"sh", "-c", "echo $HOME; rm -rf /", "a b*"}})
	if err != nil || d != 0 || strings.Join(argv, "|") != "sh|-c|echo $HOME; rm -rf /|a b*" {
		t.Errorf("argv %q %v %v", argv, d, err)
	}
	if argv, d, err := g.CheckCall(map[string]any{"argv": []any{"ls"}, "timeout": "1.5s"}); err != nil || d != 1500*time.Millisecond || len(argv) != 1 {
		t.Errorf("timeout: %q %v %v", argv, d, err)
	}
	if argv, err := g.Check(map[string]any{"argv": []any{"ls", "-l"}}); err != nil || len(argv) != 2 {
		t.Errorf("Check: %q %v", argv, err)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		rule string
	}{
		{"no argv", map[string]any{}, "required"},
		{"a string", map[string]any{"argv": "ls -l"}, "type array"},
		{"empty", map[string]any{"argv": []any{}}, "min_items 1"},
		{"too many", map[string]any{"argv": []any{"a", "b", "c", "d", "e"}}, "max_args 4"},
		{"a number", map[string]any{"argv": []any{"ls", 1.0}}, "type array"},
		{"NUL", map[string]any{"argv": []any{"ls", "a\x00b"}}, "no NUL"},
		{"empty program", map[string]any{"argv": []any{"", "x"}}, "program"},
		{"huge", map[string]any{"argv": []any{"x", strings.Repeat("a", maxArgBytes+1)}}, "argument size"},
		{"a profile", map[string]any{"argv": []any{"ls"}, "profile": "unconfined"}, "undeclared"},
		{"a number timeout", map[string]any{"argv": []any{"ls"}, "timeout": 5.0}, "type duration"},
		{"a bad timeout", map[string]any{"argv": []any{"ls"}, "timeout": "soon"}, "type duration"},
		{"a zero timeout", map[string]any{"argv": []any{"ls"}, "timeout": "0s"}, "type duration"},
		{"a negative timeout", map[string]any{"argv": []any{"ls"}, "timeout": "-1s"}, "type duration"},
	} {
		_, _, err := g.CheckCall(tc.args)
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Rule != tc.rule {
			t.Errorf("%s: %v; want rule %q", tc.name, err, tc.rule)
		}
	}
	// A declared tool asks no timeout, and has no argv of its own.
	f, _ = Parse("f.toml", []byte(minimal))
	if _, d, err := f.Tools[0].CheckCall(map[string]any{"timeout": "1s"}); err == nil || d != 0 {
		t.Errorf("a declared tool with a timeout: %v", err)
	}
}

// FuzzRunCommand: an admitted argv is exactly the elements given, in
// order, each unchanged.
func FuzzRunCommand(f *testing.F) {
	file, err := Parse("f.toml", []byte("[run_command]\nprofile = \"default\"\nmax_args = 3\n"))
	if err != nil {
		f.Fatal(err)
	}
	g := file.Tools[0]
	f.Add("ls", "-l", "a b", true)
	f.Add("sh", "-c", "$(rm -rf /)", false)
	f.Add("", "\x00", "*", true)
	f.Fuzz(func(t *testing.T, a, b, c string, three bool) {
		in := []any{a, b}
		if three {
			in = append(in, c)
		}
		argv, _, err := g.CheckCall(map[string]any{"argv": in})
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if len(argv) != len(in) {
			t.Fatalf("%d elements became %d", len(in), len(argv))
		}
		for i := range in {
			if argv[i] != in[i] || strings.IndexByte(argv[i], 0) >= 0 {
				t.Fatalf("element %d %q became %q", i, in[i], argv[i])
			}
		}
	})
}
