package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxArgBytes is the longest argv element the kernel takes
// (MAX_ARG_STRLEN, 32 pages, counts the NUL): a longer value is refused
// here rather than by execve.
const maxArgBytes = 128<<10 - 1

// maxSafeInt bounds integers: a JSON number (float64) holds them exactly.
const maxSafeInt = 1 << 53

// shownBytes is how much of a refused value an error shows.
const shownBytes = 64

// ArgError is a call's argument refused by Check.
type ArgError struct {
	Tool  string
	Param string // the parameter; an undeclared one quoted and truncated, as the call named it
	Value string // the value as shown: truncated, quoted; "" when none
	Rule  string // the rule: "undeclared", "required", "type integer", "max 10", `pattern "[a-z]+"`, ...
	Msg   string // why, and what to do
}

func (e *ArgError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s: parameter %s", e.Tool, e.Param)
	if e.Value != "" {
		b.WriteString(" = " + e.Value)
	}
	fmt.Fprintf(&b, ": refused by rule %s: %s", e.Rule, e.Msg)
	return b.String()
}

// Check turns a call's arguments, as decoded from JSON (string, float64,
// bool; json.Number, int and int64 are taken too), into the command's
// argv. An undeclared parameter, a missing required one or a value that
// breaks its rules is an *ArgError, the first found: undeclared names
// first (sorted), then the parameters in the file's order. A missing
// optional parameter takes its default.
//
// Path values are checked lexically: relative to the working directory
// or absolute, cleaned (the cleaned path is what the argv holds, so the
// kernel never walks a ".." the check did not see), no ".." out of the
// working directory, and at or below one of the parameter's Beneath
// directories, relative with relative and absolute with absolute. Symlinks
// cannot be judged without the file system the command will see: the
// caller resolves each path value there, at run time, with
// ResolveBeneath.
func (t *Tool) Check(args map[string]any) ([]string, error) {
	if t.Generic {
		argv, _, err := t.CheckCall(args)
		return argv, err
	}
	for _, name := range sortedKeys(args) {
		if t.Param(name) == nil {
			names := make([]string, len(t.Params))
			for i, p := range t.Params {
				names[i] = p.Name
			}
			return nil, &ArgError{Tool: t.Name, Param: show(name), Rule: "undeclared",
				Msg: "no such parameter; declared: " + strings.Join(names, ", ")}
		}
	}
	values := make(map[string]string, len(t.Params))
	for _, p := range t.Params {
		v, ok := args[p.Name]
		if !ok {
			if p.Default == nil {
				return nil, &ArgError{Tool: t.Name, Param: p.Name, Rule: "required", Msg: "missing; give a value"}
			}
			v = p.Default
		}
		text, rule, err := p.check(v)
		if err != nil {
			return nil, &ArgError{Tool: t.Name, Param: p.Name, Value: truncate(v), Rule: rule, Msg: err.Error()}
		}
		values[p.Name] = text
	}
	argv := make([]string, len(t.Command))
	for i, a := range t.Command {
		if a.Param == "" {
			argv[i] = a.Text
		} else {
			argv[i] = values[a.Param]
		}
	}
	return argv, nil
}

// check checks one value against p's type and rules and returns it as
// an argv element, or the rule it breaks and why.
func (p *Param) check(v any) (arg, rule string, err error) {
	switch p.Type {
	case Integer, Number:
		return p.checkNumber(v)
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return "", "type boolean", fmt.Errorf("want true or false, got %s", jsonType(v))
		}
		return strconv.FormatBool(b), "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", "type " + string(p.Type), fmt.Errorf("want a string, got %s", jsonType(v))
	}
	if hasNUL(s) {
		return "", "no NUL", fmt.Errorf("holds a NUL byte, which no argument can")
	}
	if len(s) > maxArgBytes {
		return "", "argument size", fmt.Errorf("%d bytes; the kernel takes at most %d in one argument", len(s), maxArgBytes)
	}
	if p.Type == Enum {
		if !slices.Contains(p.Values, s) {
			return "", "values " + quoteList(p.Values), fmt.Errorf("not one of the allowed values")
		}
		return s, "", nil
	}
	if p.MaxLength > 0 {
		if n := utf8.RuneCountInString(s); n > p.MaxLength {
			return "", fmt.Sprintf("max_length %d", p.MaxLength), fmt.Errorf("%d characters", n)
		}
	}
	if p.re != nil && !p.re.MatchString(s) {
		return "", "pattern " + strconv.Quote(p.Pattern), fmt.Errorf("does not match the whole value")
	}
	if p.Type == Path {
		out, err := beneath(s, p.Beneath)
		if err != nil {
			return "", "beneath " + quoteList(p.Beneath), err
		}
		return out, "", nil
	}
	return s, "", nil
}

func (p *Param) checkNumber(v any) (arg, rule string, err error) {
	typ := "type " + string(p.Type)
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		f = float64(n)
		if n > maxSafeInt || n < -maxSafeInt {
			f = math.Inf(1)
		}
	case int64:
		f = float64(n)
		if n > maxSafeInt || n < -maxSafeInt {
			f = math.Inf(1)
		}
	case json.Number:
		var perr error
		if f, perr = strconv.ParseFloat(string(n), 64); perr != nil {
			return "", typ, fmt.Errorf("not a number")
		}
	default:
		return "", typ, fmt.Errorf("want a number, got %s", jsonType(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", typ, fmt.Errorf("want a finite number")
	}
	if p.Type == Integer {
		if f != math.Trunc(f) {
			return "", typ, fmt.Errorf("not a whole number")
		}
		if f > maxSafeInt || f < -maxSafeInt {
			return "", typ, fmt.Errorf("beyond ±2^53, which a JSON number holds exactly")
		}
	}
	if p.Min != nil && f < *p.Min {
		return "", "min " + formatNumber(*p.Min), fmt.Errorf("below the minimum")
	}
	if p.Max != nil && f > *p.Max {
		return "", "max " + formatNumber(*p.Max), fmt.Errorf("above the maximum")
	}
	if p.Type == Integer {
		return strconv.FormatInt(int64(f), 10), "", nil
	}
	return formatNumber(f), "", nil
}

// formatNumber writes f as encoding/json does: plain decimals, with an
// exponent only for very small or very large magnitudes; -0 as 0.
func formatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a < 1e-6 || a >= 1e21 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// beneath cleans a path value and checks it lies at or below one of dirs
// (cleaned, relative to the working directory or absolute). It returns
// the cleaned path, with "./" before a relative one that would start with
// "-" and be read as an option.
func beneath(s string, dirs []string) (string, error) {
	if s == "" {
		return "", fmt.Errorf(`empty; give a path ("." for the working directory)`)
	}
	c := path.Clean(s)
	abs := path.IsAbs(c)
	if !abs && (c == ".." || strings.HasPrefix(c, "../")) {
		return "", fmt.Errorf(`leads out of the working directory through ".."`)
	}
	kindMatch := false
	for _, d := range dirs {
		if path.IsAbs(d) != abs {
			continue
		}
		kindMatch = true
		if within(c, d) {
			if !abs && strings.HasPrefix(c, "-") {
				c = "./" + c
			}
			return c, nil
		}
	}
	switch {
	case !kindMatch && abs:
		return "", fmt.Errorf("an absolute path, and the allowed directories are relative to the working directory: give it relative")
	case !kindMatch:
		return "", fmt.Errorf("a relative path, and the allowed directories are absolute: give it absolute")
	}
	return "", fmt.Errorf("%s is not at or below any of the allowed directories", strconv.Quote(c))
}

// within says whether the cleaned path p is dir or lies below it.
func within(p, dir string) bool {
	switch dir {
	case ".":
		return !path.IsAbs(p)
	case "/":
		return path.IsAbs(p)
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// truncate shows a value for an error: a string quoted, at most
// shownBytes of it (cut at a character boundary) and "…" when cut.
func truncate(v any) string {
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		s = string(b)
		if len(s) <= shownBytes {
			return s
		}
		return show(s)
	}
	return show(s)
}

// show quotes s, cut to shownBytes.
func show(s string) string {
	if len(s) <= shownBytes {
		return strconv.Quote(s)
	}
	cut := shownBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
