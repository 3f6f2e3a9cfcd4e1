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
	used := map[string]bool{}
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
	if rp.Description != nil {
		p.Description = *rp.Description
	}
	// Each rule applies to some types only: one that cannot apply is a
	// mistake the author would not see otherwise.
	applies := func(key string, set bool, ok ...Type) bool {
		if set && !slices.Contains(ok, p.Type) {
			c.add(at(key), "does not apply to a %s parameter", p.Type)
			return false
		}
		return set
	}
	if applies("values", rp.Values != nil, Enum) {
		if len(rp.Values) == 0 {
			c.add(at("values"), "empty; list the allowed values")
		}
		for i, v := range rp.Values {
			if hasNUL(v) || slices.Contains(rp.Values[:i], v) {
				c.add(at("values"), "value %s: a duplicate or holds a NUL byte", strconv.Quote(v))
			}
		}
		p.Values = rp.Values
	} else if p.Type == Enum && rp.Values == nil {
		c.add(at("values"), "missing; an enum lists its allowed values")
	}
	if applies("pattern", rp.Pattern != nil, String, Path) {
		re, err := regexp.Compile(`^(?:` + *rp.Pattern + `)$`)
		if err != nil {
			c.add(at("pattern"), "not an RE2 regular expression: %v", err)
		} else {
			p.Pattern, p.re = *rp.Pattern, re
		}
	}
	p.Min = c.bound(p, at("min"), applies("min", rp.Min != nil, Integer, Number), rp.Min)
	p.Max = c.bound(p, at("max"), applies("max", rp.Max != nil, Integer, Number), rp.Max)
	if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
		c.add(at("max"), "below min")
	}
	if applies("max_length", rp.MaxLength != nil, String, Path) {
		if *rp.MaxLength < 1 || *rp.MaxLength > maxArgBytes {
			c.add(at("max_length"), "%d: want 1 to %d", *rp.MaxLength, maxArgBytes)
		} else {
			p.MaxLength = int(*rp.MaxLength)
		}
	}
	if applies("beneath", rp.Beneath != nil, Path) {
		if len(rp.Beneath) == 0 {
			c.add(at("beneath"), `empty; list directories, e.g. ["."] for the working directory`)
		}
		for _, d := range rp.Beneath {
			if d == "" || hasNUL(d) {
				c.add(at("beneath"), "%s: want a directory: absolute, or relative to the working directory", strconv.Quote(d))
				continue
			}
			d = path.Clean(d)
			if !path.IsAbs(d) && (d == ".." || strings.HasPrefix(d, "../")) {
				c.add(at("beneath"), "%s: leads out of the working directory with \"..\"; give it as an absolute path", strconv.Quote(d))
				continue
			}
			p.Beneath = append(p.Beneath, d)
		}
	} else if p.Type == Path {
		p.Beneath = []string{"."}
	}
	if rp.Required != nil {
		p.Required = *rp.Required
	}
	switch {
	case rp.Default != nil && p.Required:
		c.add(at("default"), "a required parameter takes no default; remove one of them")
	case rp.Default == nil && rp.Required != nil && !p.Required:
		c.add(at("required"), "false, but no default: a placeholder is one argv element and cannot be left out; give a default")
	case rp.Default == nil:
		p.Required = true
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
