package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExampleFile(t *testing.T) {
	f, err := Load("testdata/tools.toml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range f.Tools {
		names = append(names, tl.Name)
	}
	want := []string{"run_python", "run_tests", "grep_repo", "fetch_url", "git_status"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools %v, want %v (file order)", names, want)
	}
	py := f.Lookup("run_python")
	if !py.Stdin || py.Profile != "strict" || py.Limits["timeout"] != "30s" || *py.Rate.PerHour != 200 {
		t.Errorf("run_python = %+v", py)
	}
	g := f.Lookup("grep_repo")
	if got := []string{g.Params[0].Name, g.Params[1].Name, g.Params[2].Name}; !reflect.DeepEqual(got, []string{"pattern", "path", "max_count"}) {
		t.Errorf("grep_repo params in order %v", got)
	}
	argv, err := g.Check(map[string]any{"pattern": "func main"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"grep", "-rnI", "--max-count", "100", "-e", "func main", "--", "."}; !reflect.DeepEqual(argv, want) {
		t.Errorf("argv %q, want %q", argv, want)
	}
	if f.Lookup("nope") != nil {
		t.Error("Lookup of an unknown tool")
	}
}

func TestLoadRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	link := filepath.Join(dir, "link.toml")
	abs, _ := filepath.Abs("testdata/tools.toml")
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
}

// minimal is a valid tool; cases append to or replace it.
const minimal = `
[tools.t]
description = "d"
command = ["echo", "{p}"]
params.p = { type = "string" }
`

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown top key", "x = 1\n" + minimal, `f.toml:1:1: x: unknown key (known keys here: tools, run_command)`},
		{"unknown tool key", minimal + "colour = 1\n", `f.toml:6:1: tools.t.colour: unknown key (known keys here: description`},
		{"unknown param key", minimal + "params.q = { type = \"string\", maxlen = 3 }\n", `f.toml:6:31: tools.t.params.q.maxlen: unknown key (known keys here: type,`},
		{"unknown rate key", minimal + "rate.per_day = 3\n", `f.toml:6:1: tools.t.rate.per_day: unknown key (known keys here: per_minute`},
		{"wrong type", "[tools.t]\ndescription = 3\n", `f.toml:2:`},
		{"no tools", "", `tools: no tools`},
		{"no description", "[tools.t]\ncommand = [\"ls\"]\n", `f.toml:1:8: tools.t.description: missing`},
		{"no command", "[tools.t]\ndescription = \"d\"\n", `tools.t.command: missing`},
		{"empty command", "[tools.t]\ndescription = \"d\"\ncommand = []\n", `f.toml:3:1: tools.t.command: empty`},
		{"bad tool name", "[tools.\"a b\"]\ndescription = \"d\"\ncommand = [\"ls\"]\n", `f.toml:1:8: tools."a b": invalid tool name`},
		{"partial placeholder", "[tools.t]\ndescription = \"d\"\ncommand = [\"echo\", \"--x={p}\"]\nparams.p = { type = \"string\" }\n",
			`f.toml:3:1: tools.t.command: element 2 "--x={p}": a placeholder must be a whole element`},
		{"empty program", "[tools.t]\ndescription = \"d\"\ncommand = [\" \"]\n", `tools.t.command: element 1: the program is empty`},
		{"placeholder as program", "[tools.t]\ndescription = \"d\"\ncommand = [\"{p}\"]\nparams.p = { type = \"string\" }\n", `element 1 "{p}": the program must be fixed text`},
		{"undeclared placeholder", "[tools.t]\ndescription = \"d\"\ncommand = [\"echo\", \"{q}\"]\n", `tools.t.command: element 2 "{q}": no parameter q is declared`},
		{"unused param", minimal + "params.q = { type = \"string\" }\n", `f.toml:6:8: tools.t.params.q: declared but not used`},
		{"param stdin with stdin", "[tools.t]\ndescription = \"d\"\ncommand = [\"cat\", \"{stdin}\"]\nstdin = true\nparams.stdin = { type = \"string\" }\n", `f.toml:5:8: tools.t.params.stdin: reserved for the call's stdin`},
		{"NUL in command", "[tools.t]\ndescription = \"d\"\ncommand = [\"echo\", \"a\\u0000b\"]\n", `holds a NUL byte`},
		{"no type", minimal + "params.q.required = true\n", `tools.t.params.q.type: missing; want one of string, integer`},
		{"bad type", strings.Replace(minimal, `"string"`, `"str"`, 1), `f.toml:5:14: tools.t.params.p.type: "str": want one of`},
		{"enum without values", strings.Replace(minimal, `"string"`, `"enum"`, 1), `tools.t.params.p.values: missing; an enum lists its allowed values`},
		{"enum empty values", strings.Replace(minimal, `"string" }`, `"enum", values = [] }`, 1), `tools.t.params.p.values: empty`},
		{"enum duplicate", strings.Replace(minimal, `"string" }`, `"enum", values = ["a", "a"] }`, 1), `value "a": a duplicate`},
		{"values on string", strings.Replace(minimal, `"string" }`, `"string", values = ["a"] }`, 1), `tools.t.params.p.values: does not apply to a string parameter`},
		{"min on string", strings.Replace(minimal, `"string" }`, `"string", min = 1 }`, 1), `tools.t.params.p.min: does not apply to a string parameter`},
		{"pattern on integer", strings.Replace(minimal, `"string" }`, `"integer", pattern = "1" }`, 1), `tools.t.params.p.pattern: does not apply to a integer parameter`},
		{"beneath on string", strings.Replace(minimal, `"string" }`, `"string", beneath = ["."] }`, 1), `beneath: does not apply`},
		{"bad pattern", strings.Replace(minimal, `"string" }`, `"string", pattern = "(" }`, 1), `tools.t.params.p.pattern: not an RE2 regular expression`},
		{"min above max", strings.Replace(minimal, `"string" }`, `"integer", min = 5, max = 1 }`, 1), `tools.t.params.p.max: below min`},
		{"float bound on integer", strings.Replace(minimal, `"string" }`, `"integer", max = 1.5 }`, 1), `an integer parameter's bound is an integer`},
		{"string bound", strings.Replace(minimal, `"string" }`, `"number", max = "1" }`, 1), `tools.t.params.p.max: want a number, got a string`},
		{"max_length 0", strings.Replace(minimal, `"string" }`, `"string", max_length = 0 }`, 1), `tools.t.params.p.max_length: 0: want 1 to`},
		{"beneath empty", strings.Replace(minimal, `"string" }`, `"path", beneath = [] }`, 1), `tools.t.params.p.beneath: empty`},
		{"beneath escapes", strings.Replace(minimal, `"string" }`, `"path", beneath = ["a/../.."] }`, 1), `beneath: ".."`},
		{"required with default", strings.Replace(minimal, `"string" }`, `"string", required = true, default = "x" }`, 1), `tools.t.params.p.default: a required parameter takes no default`},
		{"optional without default", strings.Replace(minimal, `"string" }`, `"string", required = false }`, 1), `tools.t.params.p.required: false, but no default`},
		{"default wrong type", strings.Replace(minimal, `"string" }`, `"integer", default = "3" }`, 1), `tools.t.params.p.default: "3": breaks its own rule type integer: want a number, got a string`},
		{"default above max", strings.Replace(minimal, `"string" }`, `"integer", max = 3, default = 4 }`, 1), `f.toml:5:41: tools.t.params.p.default: 4: breaks its own rule max 3: above the maximum`},
		{"default not in enum", strings.Replace(minimal, `"string" }`, `"enum", values = ["a"], default = "b" }`, 1), `default: "b": breaks its own rule values ["a"]`},
		{"default breaks pattern", strings.Replace(minimal, `"string" }`, `"string", pattern = "[a-z]+", default = "A" }`, 1), `breaks its own rule pattern "[a-z]+"`},
		{"default path escapes", strings.Replace(minimal, `"string" }`, `"path", default = "../x" }`, 1), `breaks its own rule beneath ["."]: leads out`},
		{"bad profile", minimal + "profile = \"nosuch\"\n", `f.toml:6:1: tools.t.profile: "nosuch": no such shipped profile (shipped: `},
		{"empty profile", minimal + "profile = \"\"\n", `tools.t.profile: empty`},
		{"unknown limit", minimal + "limits.colour = \"1\"\n", `f.toml:6:8: tools.t.limits.colour: unknown limit "colour" (known: memory`},
		{"bad limit", minimal + "limits.memory = \"lots\"\n", `tools.t.limits.memory:`},
		{"limit bool", minimal + "limits.memory = true\n", `tools.t.limits.memory: want a string or a number, got a boolean`},
		{"negative rate", minimal + "rate.per_minute = -1\n", `f.toml:6:6: tools.t.rate.per_minute: -1: want 0 (no limit) to 100000`},
		{"bad output", minimal + "output = \"xml\"\n", `tools.t.output: "xml": want "text" or "json"`},
		{"queue without unit", minimal + "rate.queue = 10\n", `f.toml:6:6: tools.t.rate.queue: 10: a duration needs a unit ("10s"); 0 refuses a call at once`},
		{"queue not a duration", minimal + "rate.queue = \"soon\"\n", `tools.t.rate.queue: "soon": want a duration such as "10s"`},
		{"queue unlimited", minimal + "rate.queue = \"unlimited\"\n", `tools.t.rate.queue: "unlimited": want a duration`},
		{"queue negative", minimal + "rate.queue = \"-1s\"\n", `tools.t.rate.queue: "-1s": want a duration`},
		{"queue too long", minimal + "rate.queue = \"11m\"\n", `tools.t.rate.queue: 11m0s: at most 10m0s`},
		{"queue bool", minimal + "rate.queue = true\n", `tools.t.rate.queue: want a duration such as "10s" ("0": refuse at once), got a boolean`},
		{"run_command queue", "[run_command]\nprofile = \"default\"\nrate.queue = \"x\"\n", `run_command.rate.queue: "x": want a duration`},
		{"bad changes", minimal + "changes = \"yes\"\n", `f.toml:6:1: tools.t.changes: "yes": want "off", "record", "review" or "apply-on-success"`},
		{"empty changes", minimal + "changes = \"\"\n", `tools.t.changes: "": want "off"`},
		{"changes not a string", minimal + "changes = true\n", `f.toml:6:`},
		{"run_command changes", "[run_command]\nprofile = \"default\"\nchanges = \"Review\"\n", `run_command.changes: "Review": want "off"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.toml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestParsePartialNotAlsoUnused(t *testing.T) {
	_, err := Parse("f.toml", []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"echo\", \"--x={p}\"]\nparams.p = { type = \"string\" }\n"))
	if _, ok := err.(*Error); !ok {
		t.Errorf("want the one error of the partial placeholder: %v", err)
	}
}

func TestParseSeveralErrors(t *testing.T) {
	text := minimal + "output = \"xml\"\nrate.concurrency = -2\n"
	_, err := Parse("f.toml", []byte(text))
	list, ok := err.(ErrorList)
	if !ok || len(list) != 2 || list[0].Line != 6 || list[1].Line != 7 {
		t.Fatalf("want two errors, by line: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	text := `
[tools.t]
description = "d"
command = ["prog", "{s}", "{n}", "{i}", "{b}", "{e}", "{p}", "{s}", "{}", "-"]
profile = "./p.toml"
limits = { memory = 512000000, cpus = 0.5, timeout = "20s" }
rate = { per_minute = 0, concurrency = 3, queue = "1m30s" }
stdin = true
output = "json"
changes = "review"
[tools.t.params]
s = { type = "string", pattern = "[a-z]+", max_length = 8, required = true, description = "ds" }
n = { type = "number", min = -1.5, max = 2, default = 0.25 }
i = { type = "integer", min = -3, max = 3, default = -2 }
b = { type = "boolean", default = false }
e = { type = "enum", values = ["x", "y"], default = "y" }
p = { type = "path", beneath = ["src/", "/usr/share"], default = "src/a" }
`
	f, err := Parse("f.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tl := f.Tools[0]
	if tl.Profile != "./p.toml" || !tl.Stdin || tl.Output != "json" || tl.Changes != "review" ||
		!reflect.DeepEqual(tl.Limits, map[string]string{"memory": "512000000", "cpus": "0.5", "timeout": "20s"}) ||
		*tl.Rate.PerMinute != 0 || tl.Rate.PerHour != nil || *tl.Rate.Concurrency != 3 || *tl.Rate.Queue != 90*time.Second {
		t.Errorf("tool %+v", tl)
	}
	want := []Arg{{Text: "prog"}, {Param: "s"}, {Param: "n"}, {Param: "i"}, {Param: "b"}, {Param: "e"}, {Param: "p"}, {Param: "s"}, {Text: "{}"}, {Text: "-"}}
	if !reflect.DeepEqual(tl.Command, want) {
		t.Errorf("command %+v", tl.Command)
	}
	s := tl.Param("s")
	if !s.Required || s.MaxLength != 8 || s.Pattern != "[a-z]+" || s.Description != "ds" {
		t.Errorf("s %+v", s)
	}
	if n := tl.Param("n"); *n.Min != -1.5 || *n.Max != 2 || n.Default != 0.25 || n.Required {
		t.Errorf("n %+v", n)
	}
	if i := tl.Param("i"); i.Default != float64(-2) {
		t.Errorf("i default %#v", i.Default)
	}
	if p := tl.Param("p"); !reflect.DeepEqual(p.Beneath, []string{"src", "/usr/share"}) {
		t.Errorf("p beneath %q", p.Beneath)
	}
	argv, err := tl.Check(map[string]any{"s": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if w := []string{"prog", "abc", "0.25", "-2", "false", "y", "src/a", "abc", "{}", "-"}; !reflect.DeepEqual(argv, w) {
		t.Errorf("argv %q, want %q", argv, w)
	}
}

func TestPolicy(t *testing.T) {
	f, err := Parse("f.toml", []byte(minimal+"limits.timeout = \"1m\"\nrate.per_hour = 5\nrate.queue = 0\n[tools.u]\ndescription = \"u\"\ncommand = [\"ls\"]\nprofile = \"strict\"\nchanges = \"record\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := ServerDefaults
	got := d.For(f.Lookup("t"))
	want := Policy{Profile: "default", ReadOnlyWorkdir: true, Network: "none", Limits: map[string]string{"timeout": "1m"}, Rate: Rate{PerMinute: 10, PerHour: 5, Concurrency: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("t: %+v, want %+v", got, want)
	}
	got = d.For(f.Lookup("u"))
	want = Policy{Profile: "strict", Limits: map[string]string{"timeout": "10s"}, Rate: Rate{PerMinute: 10, Concurrency: 4, Queue: DefaultQueue}, Changes: "record"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("u: %+v, want %+v", got, want)
	}
	if ServerDefaults.Limits["timeout"] != "10s" {
		t.Error("For changed the defaults' limits")
	}
	if r := d.Rates(f); len(r) != 2 || r["t"].PerHour != 5 {
		t.Errorf("rates %+v", r)
	}
}
