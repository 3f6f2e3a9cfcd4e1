package tools

import (
	"errors"
	"os"
	"path"
	"strings"
	"testing"
)

// FuzzParse: no text panics the parser, an error is an *Error or an
// ErrorList, and a file that parses gives tools whose commands only name
// declared parameters and whose defaults pass their own checks.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/tools.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add(minimal)
	f.Add(minimal + "params.q = { type = \"enum\", values = [\"a\"], default = \"a\" }\n")
	f.Add("[tools.t]\ndescription = \"d\"\ncommand = [\"x\", \"--a={p}\"]\nparams.p = { type = \"path\", beneath = [\"/\"], default = \"/..\" }\n")
	f.Add("[run_command]\nprofile = \"default\"\nmax_args = 3\nlimits.timeout = \"5s\"\n")
	f.Add("[tools.t]\nparams.p = { type = \"integer\", min = 1, max = 0, default = 2 }\nrate.per_minute = 9999999\n")
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Parse("f.toml", []byte(text))
		if err != nil {
			var e *Error
			var l ErrorList
			if !errors.As(err, &e) && !errors.As(err, &l) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if file != nil {
				t.Fatal("a file with an error")
			}
			return
		}
		for i, tool := range file.Tools {
			if tool.Generic {
				// run_command: last, with no template and no parameters.
				if i != len(file.Tools)-1 || tool.Name != RunCommand || tool.Command != nil || tool.Params != nil || tool.Profile == "" {
					t.Fatalf("generic tool %+v at %d", tool, i)
				}
				continue
			}
			if len(tool.Command) == 0 || tool.Command[0].Param != "" {
				t.Fatalf("tool %s: command %+v", tool.Name, tool.Command)
			}
			for _, a := range tool.Command {
				if a.Param != "" && tool.Param(a.Param) == nil {
					t.Fatalf("tool %s: placeholder %s undeclared", tool.Name, a.Param)
				}
			}
			args := map[string]any{}
			for _, p := range tool.Params {
				if p.Required {
					if p.Default != nil {
						t.Fatalf("tool %s: %s required with a default", tool.Name, p.Name)
					}
					continue
				}
				if _, _, err := p.check(p.Default); err != nil {
					t.Fatalf("tool %s: default of %s refused: %v", tool.Name, p.Name, err)
				}
			}
			_, err := tool.Check(args)
			var ae *ArgError
			if err != nil && (!errors.As(err, &ae) || ae.Rule != "required") {
				t.Fatalf("tool %s: defaults only: %v", tool.Name, err)
			}
		}
	})
}

// FuzzCheck: whatever the arguments, an admitted call's argv is the
// template with each placeholder replaced by exactly one element: fixed
// text unchanged, a string value unchanged, a path cleaned and beneath its
// directories, never starting with "-".
func FuzzCheck(f *testing.F) {
	file, err := Parse("f.toml", []byte(`
[tools.t]
description = "d"
command = ["prog", "-e", "{s}", "--", "{p}", "{n}", "{s}", "fixed {x"]
params.s = { type = "string", max_length = 300 }
params.p = { type = "path", beneath = ["src", "/data", "a/b"] }
params.n = { type = "integer", min = -5, max = 500, default = 1 }
`))
	if err != nil {
		f.Fatal(err)
	}
	tool := file.Tools[0]
	f.Add("x", "src/a", 3.0, true)
	f.Add("a b", "/data/../etc", 1.5, false)
	f.Add("", "-rf", -5.0, true)
	f.Add("é", "a/b/../b/c/", 500.0, true)
	f.Add("$(x)", "src/../..", 1e300, true)
	f.Fuzz(func(t *testing.T, s, p string, n float64, withN bool) {
		args := map[string]any{"s": s, "p": p}
		if withN {
			args["n"] = n
		}
		argv, err := tool.Check(args)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if len(argv) != 8 || argv[0] != "prog" || argv[1] != "-e" || argv[3] != "--" || argv[7] != "fixed {x" {
			t.Fatalf("fixed text changed: %q", argv)
		}
		if argv[2] != s || argv[6] != s {
			t.Fatalf("string value %q became %q, %q", s, argv[2], argv[6])
		}
		out := argv[4]
		if strings.HasPrefix(out, "-") || strings.ContainsRune(out, 0) {
			t.Fatalf("path %q became %q", p, out)
		}
		c := path.Clean(out)
		ok := false
		for _, d := range []string{"src", "/data", "a/b"} {
			ok = ok || c == d || strings.HasPrefix(c, d+"/")
		}
		if !ok || c != strings.TrimPrefix(out, "./") && c != out {
			t.Fatalf("path %q became %q, not clean beneath its directories", p, out)
		}
		for _, part := range strings.Split(c, "/") {
			if part == ".." {
				t.Fatalf("path %q became %q with ..", p, out)
			}
		}
	})
}
