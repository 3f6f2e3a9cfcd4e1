package tools

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// oneParam parses a tool "t" whose command is ["prog", "{p}"], p
// declared by decl (an inline table's inside).
func oneParam(t *testing.T, decl string) *Tool {
	t.Helper()
	f, err := Parse("f.toml", []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"prog\", \"{p}\"]\nparams.p = { "+decl+" }\n"))
	if err != nil {
		t.Fatalf("%s: %v", decl, err)
	}
	return f.Tools[0]
}

func TestCheck(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, tc := range []struct {
		decl string
		arg  any    // absentArg: not passed
		want string // the argv element, or the error's text it holds
		ok   bool
	}{
		// string
		{`type = "string"`, "hello world", "hello world", true},
		{`type = "string"`, "", "", true},
		{`type = "string"`, "$(rm -rf /) *; `x`", "$(rm -rf /) *; `x`", true},
		{`type = "string"`, 3.0, `tool t: parameter p = 3: refused by rule type string: want a string, got a number`, false},
		{`type = "string"`, nil, `parameter p = null: refused by rule type string: want a string, got null`, false},
		{`type = "string"`, "a\x00b", `refused by rule no NUL: holds a NUL byte`, false},
		{`type = "string"`, strings.Repeat("a", maxArgBytes+1), `refused by rule argument size: 131072 bytes`, false},
		{`type = "string"`, strings.Repeat("a", maxArgBytes), strings.Repeat("a", maxArgBytes), true},
		{`type = "string", max_length = 3`, "abc", "abc", true},
		{`type = "string", max_length = 3`, "日本語", "日本語", true},
		{`type = "string", max_length = 3`, "abcd", `parameter p = "abcd": refused by rule max_length 3: 4 characters`, false},
		{`type = "string", pattern = "[a-z]+"`, "abc", "abc", true},
		{`type = "string", pattern = "[a-z]+"`, "abc1", `refused by rule pattern "[a-z]+": does not match the whole value`, false},
		{`type = "string", pattern = "a|b"`, "ab", `does not match the whole value`, false},
		{`type = "string", pattern = "[a-z]+"`, long, `p = "` + strings.Repeat("é", 32) + `"…: refused`, false},
		{`type = "string", required = true`, absentArg{}, `tool t: parameter p: refused by rule required: missing`, false},
		{`type = "string", default = "dflt"`, absentArg{}, "dflt", true},
		// integer
		{`type = "integer"`, 42.0, "42", true},
		{`type = "integer"`, -7.0, "-7", true},
		{`type = "integer"`, int64(5), "5", true},
		{`type = "integer"`, 5, "5", true},
		{`type = "integer"`, json.Number("12"), "12", true},
		{`type = "integer"`, json.Number("1e2"), "100", true},
		{`type = "integer"`, json.Number("x"), `refused by rule type integer: not a number`, false},
		{`type = "integer"`, 1.5, `p = 1.5: refused by rule type integer: not a whole number`, false},
		{`type = "integer"`, 1e300, `refused by rule type integer: beyond`, false},
		{`type = "integer"`, int64(1 << 60), `refused by rule type integer: want a finite number`, false},
		{`type = "integer"`, math.NaN(), `want a finite number`, false},
		{`type = "integer"`, "5", `p = "5": refused by rule type integer: want a number, got a string`, false},
		{`type = "integer"`, true, `want a number, got a boolean`, false},
		{`type = "integer", min = 1, max = 10`, 1.0, "1", true},
		{`type = "integer", min = 1, max = 10`, 10.0, "10", true},
		{`type = "integer", min = 1, max = 10`, 0.0, `p = 0: refused by rule min 1: below the minimum`, false},
		{`type = "integer", min = 1, max = 10`, 11.0, `refused by rule max 10: above the maximum`, false},
		{`type = "integer", default = 3`, absentArg{}, "3", true},
		// number
		{`type = "number"`, 0.5, "0.5", true},
		{`type = "number"`, 1e6, "1000000", true},
		{`type = "number"`, 1e22, "1e+22", true},
		{`type = "number"`, math.Copysign(0, -1), "0", true},
		{`type = "number"`, math.Inf(1), `want a finite number`, false},
		{`type = "number", min = -0.5, max = 0.5`, -0.5, "-0.5", true},
		{`type = "number", min = -0.5, max = 0.5`, 0.51, `refused by rule max 0.5`, false},
		{`type = "number", min = -0.5, max = 0.5`, -0.6, `refused by rule min -0.5`, false},
		// boolean
		{`type = "boolean"`, true, "true", true},
		{`type = "boolean"`, false, "false", true},
		{`type = "boolean"`, "true", `refused by rule type boolean: want true or false, got a string`, false},
		{`type = "boolean", default = true`, absentArg{}, "true", true},
		// enum
		{`type = "enum", values = ["a", "b c"]`, "b c", "b c", true},
		{`type = "enum", values = ["a", "b c"]`, "c", `p = "c": refused by rule values ["a", "b c"]: not one of the allowed values`, false},
		{`type = "enum", values = ["a"]`, "A", `not one of`, false},
		{`type = "enum", values = ["1"]`, 1.0, `refused by rule type enum: want a string`, false},
		// path
		{`type = "path"`, "src/main.go", "src/main.go", true},
		{`type = "path"`, ".", ".", true},
		{`type = "path"`, "./a//b/./c/", "a/b/c", true},
		{`type = "path"`, "a/../b", "b", true},
		{`type = "path"`, "-rf", "./-rf", true},
		{`type = "path"`, "./--help", "./--help", true},
		{`type = "path"`, "..", `refused by rule beneath ["."]: leads out of the working directory through ".."`, false},
		{`type = "path"`, "a/../../etc/passwd", `leads out of the working directory`, false},
		{`type = "path"`, "/etc/passwd", `refused by rule beneath ["."]: an absolute path, and the allowed directories are relative`, false},
		{`type = "path"`, "", `empty; give a path`, false},
		{`type = "path"`, "a\x00b", `no NUL`, false},
		{`type = "path"`, 1.0, `refused by rule type path: want a string`, false},
		{`type = "path", beneath = ["src", "docs"]`, "src", "src", true},
		{`type = "path", beneath = ["src", "docs"]`, "docs/x/y.md", "docs/x/y.md", true},
		{`type = "path", beneath = ["src", "docs"]`, "srcx/a", `"srcx/a" is not at or below any of the allowed directories`, false},
		{`type = "path", beneath = ["src", "docs"]`, "src/../docs2", `not at or below`, false},
		{`type = "path", beneath = ["src"]`, "src/../..", `leads out`, false},
		{`type = "path", beneath = ["/usr/share"]`, "/usr/share/dict/words", "/usr/share/dict/words", true},
		{`type = "path", beneath = ["/usr/share"]`, "/usr/share/../../etc/shadow", `"/etc/shadow" is not at or below`, false},
		{`type = "path", beneath = ["/usr/share"]`, "/usr/sharex", `not at or below`, false},
		{`type = "path", beneath = ["/usr/share"]`, "dict", `a relative path, and the allowed directories are absolute`, false},
		{`type = "path", beneath = ["/"]`, "/../../x", "/x", true},
		{`type = "path", beneath = ["/tmp", "."]`, "x", "x", true},
		{`type = "path", beneath = ["/tmp", "."]`, "/tmp/x", "/tmp/x", true},
		{`type = "path", pattern = '[a-z/]+\.go'`, "a/b.go", "a/b.go", true},
		{`type = "path", pattern = '[a-z/]+\.go'`, "a/b.py", `refused by rule pattern`, false},
		{`type = "path", max_length = 4`, "a/b/c", `max_length 4`, false},
	} {
		tool := oneParam(t, tc.decl)
		args := map[string]any{"p": tc.arg}
		if _, absent := tc.arg.(absentArg); absent {
			args = nil
		}
		argv, err := tool.Check(args)
		if !tc.ok {
			var ae *ArgError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %.40q: error %v\nwant *ArgError holding %s", tc.decl, tc.arg, err, tc.want)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(argv, []string{"prog", tc.want}) {
			t.Errorf("%s, %.40q: argv %.60q, %v; want [prog %.60q]", tc.decl, tc.arg, argv, err, tc.want)
		}
	}
}

type absentArg struct{}

func TestCheckUndeclared(t *testing.T) {
	f, err := Parse("f.toml", []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"prog\", \"{a}\", \"{b}\"]\nparams.a = { type = \"string\" }\nparams.b = { type = \"string\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	tool := f.Tools[0]
	_, err = tool.Check(map[string]any{"a": "x", "b": "y", "zz": 1.0, "c": "z"})
	if want := `tool t: parameter "c": refused by rule undeclared: no such parameter; declared: a, b`; err == nil || err.Error() != want {
		t.Errorf("undeclared: %v\nwant %s", err, want)
	}
	_, err = tool.Check(map[string]any{strings.Repeat("k", 100): 1.0, "a": "x", "b": "y"})
	if err == nil || !strings.Contains(err.Error(), `"`+strings.Repeat("k", 64)+`"…`) {
		t.Errorf("long undeclared name not truncated: %v", err)
	}
	// The first declared parameter's problem is the one reported.
	_, err = tool.Check(map[string]any{"b": 2.0})
	if err == nil || !strings.Contains(err.Error(), "parameter a: refused by rule required") {
		t.Errorf("order: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"short", `"short"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"…`},
		{"a\nb", `"a\nb"`},
		{strings.Repeat("x", 63) + "é", `"` + strings.Repeat("x", 63) + `"…`},
		{[]any{"a"}, `["a"]`},
		{map[string]any{"k": strings.Repeat("v", 100)}, `"{\"k\":\"` + strings.Repeat("v", 58) + `"…`},
		{2.5, `2.5`},
	} {
		if got := truncate(tc.in); got != tc.want {
			t.Errorf("truncate(%.20q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestBase(t *testing.T) {
	p := &Param{Type: Path, Beneath: []string{".", "src", "/usr/share", "/"}}
	for _, tc := range []struct{ in, dir, rel string }{
		{"src/a/b", "src", "a/b"},
		{"src", "src", "."},
		{"docs/x", ".", "docs/x"},
		{".", ".", "."},
		{"/usr/share/dict", "/usr/share", "dict"},
		{"/etc/x", "/", "etc/x"},
	} {
		dir, rel, ok := p.Base(tc.in)
		if !ok || dir != tc.dir || rel != tc.rel {
			t.Errorf("Base(%q) = %q, %q, %v; want %q, %q", tc.in, dir, rel, ok, tc.dir, tc.rel)
		}
	}
	if _, _, ok := (&Param{Beneath: []string{"src"}}).Base("lib/x"); ok {
		t.Error("Base of a path outside")
	}
}

func TestBeneathDir(t *testing.T) {
	const notDir, outside = "want a directory", "leads out of the working directory"
	for _, c := range []struct{ in, clean, refusal string }{
		{".", ".", ""},
		{"src/../lib/", "lib", ""},
		{"/var/data/", "/var/data", ""},
		{"/../etc", "/etc", ""},  // absolute: cleaned, never above /
		{"..dots", "..dots", ""}, // a name, not a step up
		{"", "", notDir},
		{"a\x00b", "", notDir},
		{"..", "", outside},
		{"../up", "", outside},
		{"a/../../up", "", outside},
	} {
		clean, msg := beneathDir(c.in)
		if clean != c.clean || (msg == "") != (c.refusal == "") || !strings.Contains(msg, c.refusal) {
			t.Errorf("beneathDir(%q) = %q, %q; want %q, %q", c.in, clean, msg, c.clean, c.refusal)
		}
	}
}

func TestRequiredRule(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name       string
		hasDefault bool
		required   *bool
		req        bool
		key        string
	}{
		{"no default, required unset: required", false, nil, true, ""},
		{"no default, required", false, &yes, true, ""},
		{"no default, not required: cannot be left out", false, &no, false, "required"},
		{"default, required unset: optional", true, nil, false, ""},
		{"default, not required", true, &no, false, ""},
		{"default and required: contradiction", true, &yes, true, "default"},
	} {
		req, key, msg := requiredRule(c.hasDefault, c.required)
		if req != c.req || key != c.key || (msg != "") != (c.key != "") {
			t.Errorf("%s: requiredRule = %v, %q, %q; want %v, %q", c.name, req, key, msg, c.req, c.key)
		}
	}
}
