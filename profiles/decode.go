package profiles

import (
	"github.com/tooljail/tooljail/internal/editdist"

	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Error is a problem in a profile file. Line and Column are 1-based and 0
// when the position is not known.
type Error struct {
	File   string // the file as shown to the user
	Line   int
	Column int
	Key    string // dotted key ("limits.memory"), "" when not about one key
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(printable(e.Key) + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// errorList is several problems found in one file (unknown keys), each
// reported, on one line.
type errorList []error

func (l errorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (l errorList) Unwrap() []error { return l }

// printable quotes s when it holds a character that would not show as
// itself on one line (a TOML quoted key may hold a newline).
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// oneLine keeps an error on one line: a newline that a file name or a
// value brought into it is shown escaped (\n), as Go quotes it.
func oneLine(err error) error {
	if err == nil || !strings.ContainsAny(err.Error(), "\n\r") {
		return err
	}
	return lineError{err}
}

type lineError struct{ err error }

func (e lineError) Error() string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(e.err.Error())
}

func (e lineError) Unwrap() error { return e.err }

// document is the shape of one profile file. It differs from Profile in
// `extends` (resolved away by Load) and in [limits], whose values may be
// written as strings or as TOML numbers. Its keys are those of limitKeys:
// decodeDocument reads a file through documentType, which has them.
type document struct {
	Extends       *string    `toml:"extends"`
	Description   *string    `toml:"description"`
	AllowDegraded []string   `toml:"allow_degraded"`
	HostUser      any        `toml:"host_user"` // a name or "UID:GID", or a UID as a TOML integer
	Filesystem    Filesystem `toml:"filesystem"`
	Limits        rawLimits  `toml:"limits"`
	Network       Network    `toml:"network"`
	Env           Env        `toml:"env"`
	Seccomp       Seccomp    `toml:"seccomp"`
	Landlock      Landlock   `toml:"landlock"`
}

// rawLimits holds the place of [limits] in document; documentType puts
// rawLimitsType there.
type rawLimits struct{}

// The reflect types below are built on first use, not in init: every
// tooljail command links this package, and StructOf is not cheap.
var rawLimitsType = sync.OnceValue(func() reflect.Type {
	return limitsStruct(rawLimitTag, reflect.StructField{
		Name: "Max", Type: limitsStruct(rawLimitTag), Tag: `toml:"max"`,
	})
})

func rawLimitTag(k limitKey) string { return `toml:"` + k.key + `"` }

// documentType is document with [limits] as rawLimitsType, one `any`
// field per limitKeys entry: decoded strictly, go-toml takes a string or
// a number for each key and refuses any other key, with its position, as
// it does in every table.
var documentType = sync.OnceValue(func() reflect.Type {
	t := reflect.TypeOf(document{})
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		fields[i] = t.Field(i)
		if fields[i].Type == reflect.TypeOf(rawLimits{}) {
			fields[i].Type = rawLimitsType()
		}
	}
	return reflect.StructOf(fields)
})

// decodeDocument decodes data strictly into a document, the [limits]
// values and the [limits.max] values, indexed like limitKeys (nil where
// unset).
func decodeDocument(data []byte) (doc document, limits, max []any, err error) {
	raw := reflect.New(documentType()).Elem()
	err = toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(raw.Addr().Interface())
	var missing *toml.StrictMissingError
	if err != nil && !errors.As(err, &missing) {
		// A type error names the Go struct that holds the key, here an
		// anonymous one: decoding into document gives the same error
		// naming profiles.document. Its [limits] has no fields, so it
		// finds no error that documentType did not.
		if e := toml.Unmarshal(data, &document{}); e != nil {
			err = e
		}
	}
	if err != nil {
		return document{}, nil, nil, err
	}
	dv := reflect.ValueOf(&doc).Elem()
	for i := 0; i < dv.NumField(); i++ {
		f := raw.Field(i)
		if f.Type() != rawLimitsType() {
			dv.Field(i).Set(f)
			continue
		}
		m := f.Field(len(limitKeys))
		for j := range limitKeys {
			limits = append(limits, f.Field(j).Interface())
			max = append(max, m.Field(j).Interface())
		}
	}
	return doc, limits, max, nil
}

// decode parses one profile file strictly. file names it in errors. The
// returned extends is nil when the file has no `extends` key.
func decode(file string, data []byte) (p *Profile, extends *string, err error) {
	doc, limits, max, err := decodeDocument(data)
	if err != nil {
		return nil, nil, decodeError(file, err)
	}
	p = &Profile{
		Description:   doc.Description,
		AllowDegraded: doc.AllowDegraded,
		Filesystem:    doc.Filesystem,
		Limits:        Limits{},
		Network:       doc.Network,
		Env:           doc.Env,
		Seccomp:       doc.Seccomp,
		Landlock:      doc.Landlock,
	}
	switch v := doc.HostUser.(type) {
	case nil:
	case string:
		p.HostUser = &v
	case int64:
		text := strconv.FormatInt(v, 10)
		p.HostUser = &text
	default:
		return nil, nil, positioned(file, data, "host_user", fmt.Sprintf("want a string (a user name or UID:GID) or a UID, got %T", v))
	}
	for i, k := range limitKeys {
		if limits[i] == nil {
			continue
		}
		text, err := LimitText(limits[i])
		if err != nil {
			return nil, nil, positioned(file, data, "limits."+k.key, err.Error())
		}
		p.Limits[k.key] = text
	}
	for i, k := range limitKeys {
		if max[i] == nil {
			continue
		}
		text, err := LimitText(max[i])
		if err != nil {
			return nil, nil, positioned(file, data, "limits.max."+k.key, err.Error())
		}
		if p.LimitsMax == nil {
			p.LimitsMax = LimitsMax{}
		}
		p.LimitsMax[k.key] = text
	}
	if doc.Extends != nil && *doc.Extends == "" {
		return nil, nil, positioned(file, data, "extends", `empty; name a shipped profile ("default") or a file`)
	}
	if err := p.Validate(); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			return nil, nil, positioned(file, data, ke.Key, ke.Err.Error())
		}
		return nil, nil, &Error{File: file, Msg: err.Error()}
	}
	return p, doc.Extends, nil
}

// LimitText converts a decoded TOML value of a [limits] key to the text
// SetLimit and the units parsers read: a string as it is, a number as its
// decimal text. Tool files (package tools) take limits the same way.
func LimitText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return "", errors.New("want a string or a number, got a boolean")
	case []any:
		return "", errors.New("want a string or a number, got an array")
	case map[string]any:
		return "", errors.New("want a string or a number, got a table")
	default:
		return "", fmt.Errorf("want a string or a number, got %T", v)
	}
}

// decodeError turns go-toml's errors into *Error values with positions. A
// document with several unknown keys yields one error per key, joined.
func decodeError(file string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, col := de.Position()
			key := strings.Join(de.Key(), ".")
			errs = append(errs, &Error{File: file, Line: line, Column: col, Key: key, Msg: "unknown key" + suggest(key)})
		}
		return errorList(errs)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return &Error{File: file, Line: line, Column: col, Key: strings.Join(de.Key(), "."),
			Msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &Error{File: file, Msg: err.Error()}
}

// suggest names the known key closest to an unknown one, if one is close.
func suggest(key string) string {
	parent, name := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		parent, name = key[:i], key[i+1:]
	}
	known := keysOf(documentType(), parent)
	best, bestDist := "", 3 // more than two edits away is not a typo
	for _, k := range known {
		if d := editdist.Distance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		if len(known) > 0 {
			return " (known keys here: " + strings.Join(known, ", ") + ")"
		}
		return ""
	}
	if parent != "" {
		best = parent + "." + best
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// keysOf lists the TOML keys of the table at dotted path in t.
func keysOf(t reflect.Type, path string) []string {
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			break
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Tag.Get("toml") == part && f.Type.Kind() == reflect.Struct {
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if k := t.Field(i).Tag.Get("toml"); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// positioned builds an *Error for key, with the line and column where the
// document sets key (or its closest enclosing table).
func positioned(file string, data []byte, key, msg string) *Error {
	e := &Error{File: file, Key: key, Msg: msg}
	e.Line, e.Column = keyPosition(data, key)
	return e
}

// keyPosition finds where a dotted key is set in a valid document: the key of
// its key-value, or failing that the closest enclosing key or table header.
// It returns 0, 0 when nothing matches.
func keyPosition(data []byte, key string) (line, col int) {
	var p unstable.Parser
	p.Reset(data)
	best := -1
	bestOffset := uint32(0)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		var parts []string
		var first unstable.Range
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			it := e.Key()
			for it.Next() {
				if len(table) == 0 {
					first = it.Node().Raw
				}
				table = append(table, string(it.Node().Data))
			}
			parts = table
		case unstable.KeyValue:
			parts = append([]string(nil), table...)
			it := e.Key()
			n := 0
			for it.Next() {
				if n == 0 {
					first = it.Node().Raw
				}
				n++
				parts = append(parts, string(it.Node().Data))
			}
		default:
			continue
		}
		full := strings.Join(parts, ".")
		if full == key || strings.HasPrefix(key, full+".") {
			if len(full) > best {
				best, bestOffset = len(full), first.Offset
			}
		}
	}
	if best < 0 || p.Error() != nil {
		return 0, 0
	}
	line, col = 1, 1
	for _, c := range data[:bestOffset] {
		col++
		if c == '\n' {
			line, col = line+1, 1
		}
	}
	return line, col
}
