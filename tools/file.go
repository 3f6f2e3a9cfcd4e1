// Package tools reads tool files, checks a call's arguments against a
// tool's declared parameters and limits how often tools are called. It is
// pure: it runs nothing and serves nothing. The server (tooljail mcp,
// tooljail tools call) uses it to turn a call into the argv it jails.
//
// A tool file is TOML, one [tools.NAME] table per tool:
//
//	[tools.grep_repo]
//	description = "Search the repository for a regular expression."
//	command = ["grep", "-rn", "-e", "{pattern}", "--", "{path}"]
//	params.pattern = { type = "string", max_length = 200 }
//	params.path = { type = "path", beneath = ["."], default = "." }
//	rate = { per_minute = 30 }
//
// Keys are strict: an unknown key, a value of the wrong type or one that
// breaks a rule is an error "FILE:LINE:COL: tools.NAME.KEY: ...".
//
// The command is an argv template. Each element is fixed text or exactly
// one placeholder "{param}" standing for the whole element: the value
// becomes that one argv element, never split, never globbed, never seen by
// a shell. An element that holds a placeholder and anything else
// ("--max={n}") is refused: write "--max", "{n}". The first element is
// always fixed text: the model never picks the program. A value that
// starts with "-" could still be read as an option by the program: put
// "--" or an option that takes the next element ("-e") before a
// placeholder, or give the parameter a pattern. Path values never start
// with "-" (Check prefixes "./").
//
// A parameter with a default is optional; one without is required (and
// `required = true` says so; with a default it is an error): a placeholder
// is always exactly one element, so a value can never be left out.
package tools

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MaxSize is the largest tool file Parse and Load read.
const MaxSize = 1 << 20

// File is a parsed tool file.
type File struct {
	Name  string  // as given to Parse or Load, for messages
	Tools []*Tool // in the order of the file
}

// Lookup returns the tool called name, nil when there is none.
func (f *File) Lookup(name string) *Tool {
	for _, t := range f.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Tool is one [tools.NAME] table, checked.
type Tool struct {
	Name        string
	File        string // the name of the file that declares it, as given to Parse
	Description string
	Command     []Arg
	Params      []*Param // in the order of the file
	// Profile is the `profile` key as written: a shipped profile name or
	// a profile file path (profiles.IsFile tells them apart); "" when the
	// tool names none and takes Defaults.Profile. A name is checked to be
	// shipped; a file is not read here.
	Profile string
	// Limits are the [limits] overrides, keys and values as a profile's
	// [limits] takes them (checked with profiles.Profile.SetLimit); a
	// TOML number is kept as its decimal text.
	Limits map[string]string
	// Rate is what the tool's `rate` table sets; an unset key is nil and
	// takes Defaults.Rate's.
	Rate   RateSpec
	Stdin  bool   // the call may pass stdin
	Output string // "text" or "json"
	// Changes is the `changes` key: the change mode of the tool's runs
	// (off, record, review, apply-on-success); "" when the profile
	// decides. With review, a call's writes to its workdir are kept as a
	// change set the result names, for the user to apply or discard.
	Changes string
	// Generic is the run_command tool of a [run_command] table: no
	// Command and no Params; a call gives the whole argv (see
	// CheckCall). MaxArgs bounds its length.
	Generic bool
	MaxArgs int
}

// Arg is one element of a command template: fixed Text, or the value of
// the parameter Param when Param is not "".
type Arg struct {
	Text  string
	Param string
}

// RateSpec is a tool's `rate` table as written; nil is unset.
type RateSpec struct {
	PerMinute, PerHour, Concurrency *int
	Queue                           *time.Duration
}

// Param is one declared parameter.
type Param struct {
	Name        string
	Type        Type
	Description string   // optional, for the input schema
	Values      []string // enum: the allowed values
	// Pattern is the `pattern` as written ("" for none); re is it
	// anchored at both ends, so that it must match the whole value.
	// Pattern and MaxLength apply to a path as the call gives it, before
	// it is cleaned.
	Pattern   string
	re        *regexp.Regexp
	Min, Max  *float64 // integer and number; an integer's are whole
	MaxLength int      // string and path, in characters; 0 for none
	// Beneath are the cleaned directories a path must lie in (or be):
	// relative ones are relative to the working directory. A path
	// parameter that names none gets ["."].
	Beneath  []string
	Required bool
	Default  any // nil, or a value of the type, as Check's argument takes it
}

// Type is a parameter type.
type Type string

const (
	String  Type = "string"
	Integer Type = "integer"
	Number  Type = "number"
	Boolean Type = "boolean"
	Path    Type = "path"
	Enum    Type = "enum"
)

var types = []Type{String, Integer, Number, Boolean, Path, Enum}

// Param returns the parameter called name, nil when there is none.
func (t *Tool) Param(name string) *Param {
	for _, p := range t.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Load reads and parses the tool file at path: a regular file of at most
// MaxSize bytes. It is opened without following a final symlink and
// without blocking on a FIFO; the rules of package hostpath that a
// server's trusted files get are for the caller to apply.
func Load(path string) (*File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("tool file %s: a symlink; give the path of the file itself", path)
		}
		return nil, fmt.Errorf("tool file %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("tool file %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("tool file %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("tool file %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses a tool file's text; name names it in errors. The error is
// an *Error, or an ErrorList of them (one per problem found, by line).
func Parse(name string, data []byte) (*File, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("tool file %s: larger than 1 MiB; a tool file is a small TOML file", name)
	}
	raw, err := decode(data)
	if err != nil {
		return nil, decodeError(name, data, err)
	}
	pos := indexPositions(data)
	c := &checker{file: name, pos: pos}
	f := &File{Name: name}
	if len(raw.Tools) == 0 && raw.RunCommand == nil {
		c.add([]string{"tools"}, "no tools; declare at least one [tools.NAME] table (or [run_command])")
	}
	for toolName, rt := range raw.Tools {
		if t := c.tool(toolName, rt); t != nil {
			f.Tools = append(f.Tools, t)
		}
	}
	var generic *Tool
	if raw.RunCommand != nil {
		if _, ok := raw.Tools[RunCommand]; ok {
			c.add([]string{"tools", RunCommand}, "%s is the name of the generic tool of [run_command]; name this tool otherwise", RunCommand)
		}
		generic = c.runCommand(*raw.RunCommand)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	sort.SliceStable(f.Tools, func(i, j int) bool {
		a, b := pos.find([]string{"tools", f.Tools[i].Name}), pos.find([]string{"tools", f.Tools[j].Name})
		if a != b {
			return a.before(b)
		}
		return f.Tools[i].Name < f.Tools[j].Name
	})
	if generic != nil {
		f.Tools = append(f.Tools, generic)
	}
	for _, t := range f.Tools {
		t.File = name
	}
	return f, nil
}

// Error is a problem in a tool file. Line and Column are 1-based, 0 when
// not known.
type Error struct {
	File         string
	Line, Column int
	Key          string // dotted: "tools.grep.params.path.default"; "" when about no key
	Msg          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(b.String())
}

// ErrorList is several problems of one file, one per line of its message.
type ErrorList []*Error

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// namePattern is what tool and parameter names may be: what MCP allows
// in a tool name, and what a placeholder can hold unambiguously. Compiled
// on first use, not in init: every tooljail command links this package,
// few read a tools file.
var namePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
})

// placeholder finds "{name}" anywhere in a command element.
var placeholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_-]*\}`)
})

// keyName shows a key part as TOML would need it written.
func keyName(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return s
	}
	return strconv.Quote(s)
}

// checker collects the problems of one file.
type checker struct {
	file string
	pos  positions
	errs ErrorList
}

func (c *checker) add(key []string, format string, args ...any) {
	p := c.pos.find(key)
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = keyName(k)
	}
	c.errs = append(c.errs, &Error{File: c.file, Line: p.line, Column: p.col, Key: strings.Join(parts, "."), Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i], c.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Key < b.Key
	})
	if len(c.errs) == 1 {
		return c.errs[0]
	}
	return c.errs
}

// hasNUL says whether s holds a NUL, which no argv element can.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
