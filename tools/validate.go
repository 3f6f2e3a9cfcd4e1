package tools

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tooljail/tooljail/changes"

	"github.com/tooljail/tooljail/profiles"
)

// tool checks one [tools.NAME] table; it returns nil after recording a
// problem that leaves nothing to build.
func (c *checker) tool(name string, rt rawTool) *Tool {
	at := func(k ...string) []string { return append([]string{"tools", name}, k...) }
	if !namePattern().MatchString(name) {
		c.add(at(), "invalid tool name: want a letter or _ then letters, digits, _ or -, at most 64")
		return nil
	}
	t := &Tool{Name: name, Output: "text"}
	if rt.Description == nil || strings.TrimSpace(*rt.Description) == "" {
		c.add(at("description"), "missing; say what the tool does: the model reads it to choose the tool")
	} else {
		t.Description = *rt.Description
	}
	for _, pn := range sortedKeys(rt.Params) {
		if p := c.param(name, pn, rt.Params[pn]); p != nil {
			t.Params = append(t.Params, p)
		}
	}
	slicesSortByPos(t.Params, func(p *Param) pos { return c.pos.find(at("params", p.Name)) })
	used := c.command(at, rt, t)
	for pn := range rt.Params {
		if !used[pn] && rt.Command != nil {
			c.add(at("params", pn), "declared but not used in command; use it as a whole element \"{%s}\" or remove it", pn)
		}
	}
	c.policy(at, t, rt.Profile, rt.Limits, rt.Rate)
	c.changes(at, t, rt.Changes)
	if rt.Stdin != nil {
		t.Stdin = *rt.Stdin
	}
	if _, ok := rt.Params["stdin"]; ok && t.Stdin {
		// MCP passes a call's stdin as the argument "stdin".
		c.add(at("params", "stdin"), "reserved for the call's stdin in a tool with stdin = true; name the parameter otherwise")
	}
	if rt.Output != nil {
		if o := *rt.Output; o != "text" && o != "json" {
			c.add(at("output"), "%s: want \"text\" or \"json\"", strconv.Quote(o))
		} else {
			t.Output = o
		}
	}
	return t
}

// command checks the argv template and fills t.Command; used holds the
// parameters it names, so that tool can report the unused ones.
func (c *checker) command(at func(k ...string) []string, rt rawTool, t *Tool) (used map[string]bool) {
	used = map[string]bool{}
	switch {
	case rt.Command == nil:
		c.add(at("command"), `missing; give the argv template, e.g. ["grep", "-e", "{pattern}"]`)
	case len(rt.Command) == 0:
		c.add(at("command"), "empty; give at least the program")
	}
	for i, el := range rt.Command {
		a, msg := templateArg(el)
		switch {
		case msg != "":
			c.add(at("command"), "element %d %s: %s", i+1, strconv.Quote(el), msg)
			for _, m := range placeholder().FindAllString(el, -1) {
				used[m[1:len(m)-1]] = true // reported above, not again as unused
			}
			continue
		case i == 0 && a.Param == "" && strings.TrimSpace(a.Text) == "":
			c.add(at("command"), "element 1: the program is empty; name it (a name looked up in PATH, or an absolute path)")
			continue
		case a.Param != "" && i == 0:
			c.add(at("command"), "element 1 %s: the program must be fixed text; the model never picks it", strconv.Quote(el))
			continue
		case a.Param != "" && !declared(rt, a.Param):
			c.add(at("command"), "element %d %s: no parameter %s is declared; add params.%s or fix the name", i+1, strconv.Quote(el), keyName(a.Param), keyName(a.Param))
			continue
		}
		used[a.Param] = true
		t.Command = append(t.Command, a)
	}
	return used
}

// policy checks the keys a tool and [run_command] share: profile,
// limits and rate.
func (c *checker) policy(at func(k ...string) []string, t *Tool, profile *string, limits map[string]any, rate rawRate) {
	if profile != nil {
		ref := *profile
		switch {
		case ref == "":
			c.add(at("profile"), `empty; name a shipped profile ("default") or a profile file, or leave it out for the server's default`)
		case !profiles.IsFile(ref) && !isShipped(ref):
			c.add(at("profile"), "%s: no such shipped profile (shipped: %s); a file needs a '/' or a .toml suffix", strconv.Quote(ref), strings.Join(shippedNames(), ", "))
		default:
			t.Profile = ref
		}
	}
	if limits != nil {
		t.Limits = map[string]string{}
		for _, k := range sortedKeys(limits) {
			text, err := profiles.LimitText(limits[k])
			if err == nil {
				// SetLimit knows the keys and parses the value as a
				// profile's [limits] would.
				err = (&profiles.Profile{}).SetLimit(k, text)
			}
			if err != nil {
				c.add(at("limits", k), "%v", err)
				continue
			}
			t.Limits[k] = text
		}
	}
	t.Rate.PerMinute = c.rate(at("rate", "per_minute"), rate.PerMinute)
	t.Rate.PerHour = c.rate(at("rate", "per_hour"), rate.PerHour)
	t.Rate.Concurrency = c.rate(at("rate", "concurrency"), rate.Concurrency)
	t.Rate.Queue = c.queue(at("rate", "queue"), rate.Queue)
}

// changes reads the `changes` key: one of the change modes.
func (c *checker) changes(at func(k ...string) []string, t *Tool, v *string) {
	if v == nil {
		return
	}
	m, err := changes.ParseMode(*v)
	if err != nil || *v == "" {
		c.add(at("changes"), "%s: want \"off\", \"record\", \"review\" or \"apply-on-success\"", strconv.Quote(*v))
		return
	}
	t.Changes = string(m)
}

// declared says whether name is a parameter of the raw tool (one whose
// declaration had a problem still counts: it was reported already).
func declared(rt rawTool, name string) bool {
	_, ok := rt.Params[name]
	return ok
}

// maxRate bounds the rate keys: far above any real tool, and small
// enough that a window's record of calls stays small.
const maxRate = 100000

func (c *checker) rate(key []string, v *int64) *int {
	if v == nil {
		return nil
	}
	if *v < 0 || *v > maxRate {
		c.add(key, "%d: want 0 (no limit) to %d", *v, maxRate)
		return nil
	}
	n := int(*v)
	return &n
}

// queue reads rate.queue: a duration ("10s", "1m30s"), "0" or 0 to
// refuse at once, at most MaxQueue.
func (c *checker) queue(key []string, v any) *time.Duration {
	var d time.Duration
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		if x != 0 {
			c.add(key, "%d: a duration needs a unit (\"%ds\"); 0 refuses a call at once", x, x)
			return nil
		}
	case string:
		var err error
		// Not units.ParseDuration: its "unlimited" would read as 0,
		// which here refuses at once.
		if d, err = time.ParseDuration(x); err != nil || d < 0 {
			c.add(key, "%q: want a duration such as \"10s\" or \"1m30s\" (\"0\": refuse at once)", x)
			return nil
		}
	default:
		c.add(key, "want a duration such as \"10s\" (\"0\": refuse at once), got %s", tomlType(v))
		return nil
	}
	if d > MaxQueue {
		c.add(key, "%s: at most %s (a queued call holds its client's request open)", d, MaxQueue)
		return nil
	}
	return &d
}

// templateArg reads one command element: exactly "{name}" is a
// placeholder; fixed text may hold braces, but no "{name}" inside other
// text, which would be a partial substitution.
func templateArg(el string) (Arg, string) {
	if hasNUL(el) {
		return Arg{}, "holds a NUL byte, which no argument can"
	}
	if m := placeholder().FindString(el); m != "" {
		if m != el {
			return Arg{}, fmt.Sprintf("a placeholder must be a whole element, not part of one (no partial substitution); split it, e.g. \"--x\", \"%s\"", m)
		}
		return Arg{Param: el[1 : len(el)-1]}, ""
	}
	return Arg{Text: el}, ""
}

// param checks one params.NAME table.
func (c *checker) param(tool, name string, rp rawParam) *Param {
	at := func(k ...string) []string { return append([]string{"tools", tool, "params", name}, k...) }
	before := len(c.errs)
	p := c.paramType(at, name, rp)
	if p == nil {
		return nil
	}
	if rp.Description != nil {
		p.Description = *rp.Description
	}
	r := paramRules{c: c, p: p, at: at}
	r.values(rp.Values)
	r.pattern(rp.Pattern)
	r.bounds(rp.Min, rp.Max)
	r.maxLength(rp.MaxLength)
	r.beneath(rp.Beneath)
	required, key, msg := requiredRule(rp.Default != nil, rp.Required)
	p.Required = required
	if msg != "" {
		c.add(at(key), "%s", msg)
	}
	if len(c.errs) > before {
		return nil
	}
	if rp.Default != nil {
		v := tomlToArg(rp.Default)
		if _, rule, err := p.check(v); err != nil {
			c.add(at("default"), "%s: breaks its own rule %s: %v", truncate(v), rule, err)
			return nil
		}
		p.Default = v
	}
	return p
}

// paramType checks a parameter's name and type, which every other rule
// depends on; nil after recording a problem with either.
func (c *checker) paramType(at func(k ...string) []string, name string, rp rawParam) *Param {
	if !namePattern().MatchString(name) {
		c.add(at(), "invalid parameter name: want a letter or _ then letters, digits, _ or -, at most 64")
		return nil
	}
	if rp.Type == nil {
		c.add(at("type"), "missing; want one of %s", typeNames())
		return nil
	}
	p := &Param{Name: name, Type: Type(*rp.Type)}
	if !slices.Contains(types, p.Type) {
		c.add(at("type"), "%s: want one of %s", strconv.Quote(*rp.Type), typeNames())
		return nil
	}
	return p
}

// paramRules checks the rules of one parameter of a known type, recording
// each problem under the rule's key.
type paramRules struct {
	c  *checker
	p  *Param
	at func(k ...string) []string
}

// applies says whether a rule is set and applies to the parameter's type.
// Each rule applies to some types only: one that cannot apply is a mistake
// the author would not see otherwise.
func (r paramRules) applies(key string, set bool, ok ...Type) bool {
	if set && !slices.Contains(ok, r.p.Type) {
		r.c.add(r.at(key), "does not apply to a %s parameter", r.p.Type)
		return false
	}
	return set
}

// values reads an enum's allowed values, which it must have.
func (r paramRules) values(values []string) {
	if !r.applies("values", values != nil, Enum) {
		if r.p.Type == Enum && values == nil {
			r.c.add(r.at("values"), "missing; an enum lists its allowed values")
		}
		return
	}
	if len(values) == 0 {
		r.c.add(r.at("values"), "empty; list the allowed values")
	}
	for i, v := range values {
		if hasNUL(v) || slices.Contains(values[:i], v) {
			r.c.add(r.at("values"), "value %s: a duplicate or holds a NUL byte", strconv.Quote(v))
		}
	}
	r.p.Values = values
}

// pattern reads a string's or path's pattern, matched against the whole
// argument.
func (r paramRules) pattern(pattern *string) {
	if !r.applies("pattern", pattern != nil, String, Path) {
		return
	}
	re, err := regexp.Compile(`^(?:` + *pattern + `)$`)
	if err != nil {
		r.c.add(r.at("pattern"), "not an RE2 regular expression: %v", err)
		return
	}
	r.p.Pattern, r.p.re = *pattern, re
}

// bounds reads a number's min and max, which must be in order.
func (r paramRules) bounds(minV, maxV any) {
	r.p.Min = r.c.bound(r.p, r.at("min"), r.applies("min", minV != nil, Integer, Number), minV)
	r.p.Max = r.c.bound(r.p, r.at("max"), r.applies("max", maxV != nil, Integer, Number), maxV)
	if r.p.Min != nil && r.p.Max != nil && *r.p.Min > *r.p.Max {
		r.c.add(r.at("max"), "below min")
	}
}

// maxLength reads a string's or path's max_length, at most what one
// argument may hold.
func (r paramRules) maxLength(n *int64) {
	if !r.applies("max_length", n != nil, String, Path) {
		return
	}
	if *n < 1 || *n > maxArgBytes {
		r.c.add(r.at("max_length"), "%d: want 1 to %d", *n, maxArgBytes)
		return
	}
	r.p.MaxLength = int(*n)
}

// beneath reads a path's directories; a path without them stays below the
// working directory.
func (r paramRules) beneath(dirs []string) {
	if !r.applies("beneath", dirs != nil, Path) {
		if r.p.Type == Path {
			r.p.Beneath = []string{"."}
		}
		return
	}
	if len(dirs) == 0 {
		r.c.add(r.at("beneath"), `empty; list directories, e.g. ["."] for the working directory`)
	}
	for _, d := range dirs {
		clean, msg := beneathDir(d)
		if msg != "" {
			r.c.add(r.at("beneath"), "%s", msg)
			continue
		}
		r.p.Beneath = append(r.p.Beneath, clean)
	}
}

// beneathDir reads one beneath entry: cleaned, absolute or relative to the
// working directory without leaving it; msg says why it is refused.
func beneathDir(d string) (clean, msg string) {
	if d == "" || hasNUL(d) {
		return "", fmt.Sprintf("%s: want a directory: absolute, or relative to the working directory", strconv.Quote(d))
	}
	d = path.Clean(d)
	if !path.IsAbs(d) && (d == ".." || strings.HasPrefix(d, "../")) {
		return "", fmt.Sprintf("%s: leads out of the working directory with \"..\"; give it as an absolute path", strconv.Quote(d))
	}
	return d, ""
}

// requiredRule decides whether a parameter is required from whether it
// has a default and what `required` says: a placeholder is one argv
// element, so a parameter that may be left out needs a default. msg,
// under key, says what is wrong with the pair.
func requiredRule(hasDefault bool, required *bool) (req bool, key, msg string) {
	req = required != nil && *required
	switch {
	case hasDefault && req:
		return req, "default", "a required parameter takes no default; remove one of them"
	case !hasDefault && required != nil && !req:
		return req, "required", "false, but no default: a placeholder is one argv element and cannot be left out; give a default"
	case !hasDefault:
		return true, "", ""
	}
	return req, "", ""
}

// bound reads min or max: a whole number for an integer parameter.
func (c *checker) bound(p *Param, key []string, set bool, v any) *float64 {
	if !set {
		return nil
	}
	var f float64
	switch v := v.(type) {
	case int64:
		if v < -maxSafeInt || v > maxSafeInt {
			c.add(key, "%d: beyond ±2^53, which a JSON number holds exactly", v)
			return nil
		}
		f = float64(v)
	case float64:
		if p.Type == Integer {
			c.add(key, "%v: an integer parameter's bound is an integer", v)
			return nil
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.add(key, "%v: want a finite number", v)
			return nil
		}
		f = v
	default:
		c.add(key, "want a number, got %s", tomlType(v))
		return nil
	}
	return &f
}

// tomlToArg turns a decoded TOML default into what Check's argument
// takes (a JSON-decoded value): integers become float64 when exact.
func tomlToArg(v any) any {
	if n, ok := v.(int64); ok && n >= -maxSafeInt && n <= maxSafeInt {
		return float64(n)
	}
	return v
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

func typeNames() string {
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func isShipped(name string) bool { return slices.Contains(shippedNames(), name) }

// shippedNames lists the shipped profiles, read once: profiles.List
// decodes each of them.
var shippedNames = sync.OnceValue(func() []string {
	var out []string
	for _, i := range profiles.List() {
		out = append(out, i.Name)
	}
	return out
})

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// slicesSortByPos orders s by where the file writes each element.
func slicesSortByPos[T any](s []T, at func(T) pos) {
	slices.SortStableFunc(s, func(a, b T) int {
		pa, pb := at(a), at(b)
		switch {
		case pa.before(pb):
			return -1
		case pb.before(pa):
			return 1
		}
		return 0
	})
}
