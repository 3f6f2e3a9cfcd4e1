package tools

import (
	"bytes"
	"errors"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// rawFile is a tool file as decoded, before the checks. Pointers and
// `any` tell unset from zero and leave the type checks that depend on a
// parameter's type to checker.
type rawFile struct {
	Tools      map[string]rawTool `toml:"tools"`
	RunCommand *rawRunCommand     `toml:"run_command"`
}

// rawRunCommand is the [run_command] table: the generic tool.
type rawRunCommand struct {
	Description *string        `toml:"description"`
	Profile     *string        `toml:"profile"`
	Limits      map[string]any `toml:"limits"`
	Rate        rawRate        `toml:"rate"`
	MaxArgs     *int64         `toml:"max_args"`
	Changes     *string        `toml:"changes"`
}

type rawTool struct {
	Description *string             `toml:"description"`
	Command     []string            `toml:"command"`
	Params      map[string]rawParam `toml:"params"`
	Profile     *string             `toml:"profile"`
	Limits      map[string]any      `toml:"limits"`
	Rate        rawRate             `toml:"rate"`
	Stdin       *bool               `toml:"stdin"`
	Output      *string             `toml:"output"`
	Changes     *string             `toml:"changes"`
}

type rawRate struct {
	PerMinute   *int64 `toml:"per_minute"`
	PerHour     *int64 `toml:"per_hour"`
	Concurrency *int64 `toml:"concurrency"`
	// Queue is a duration: a string, or the integer 0.
	Queue any `toml:"queue"`
}

type rawParam struct {
	Type        *string  `toml:"type"`
	Description *string  `toml:"description"`
	Values      []string `toml:"values"`
	Pattern     *string  `toml:"pattern"`
	Min         any      `toml:"min"`
	Max         any      `toml:"max"`
	MaxLength   *int64   `toml:"max_length"`
	Beneath     []string `toml:"beneath"`
	Required    *bool    `toml:"required"`
	Default     any      `toml:"default"`
}

// decode decodes data strictly: go-toml refuses an unknown key, in any
// table, with its position, as profiles do.
func decode(data []byte) (rawFile, error) {
	var f rawFile
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&f)
	return f, err
}

// decodeError turns go-toml's errors into *Error values with positions;
// several unknown keys give one *Error each.
func decodeError(file string, data []byte, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var list ErrorList
		var at positions
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, col := de.Position()
			key := de.Key()
			// go-toml drops the path of an inline table from the key
			// ("tools.t.x" for a key x in params.p = {...}); the key
			// written at that position has it.
			if at == nil {
				at = indexPositions(data)
			}
			if full := at.keyAt(pos{line, col}); len(full) > len(key) && full[len(full)-1] == key[len(key)-1] {
				key = full
			}
			list = append(list, &Error{File: file, Line: line, Column: col, Key: joinKey(key), Msg: "unknown key" + knownKeys(key)})
		}
		if len(list) == 1 {
			return list[0]
		}
		return list
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return &Error{File: file, Line: line, Column: col, Key: joinKey(de.Key()), Msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &Error{File: file, Msg: err.Error()}
}

func joinKey(key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = keyName(k)
	}
	return strings.Join(parts, ".")
}

// knownKeys lists the keys the table holding key may have, for an unknown
// one.
func knownKeys(key []string) string {
	var known string
	switch {
	case len(key) == 1:
		known = "tools, run_command"
	case len(key) == 2 && key[0] == "run_command":
		known = "description, profile, limits, rate, max_args, changes"
	case len(key) == 3 && key[0] == "run_command" && key[1] == "rate":
		known = "per_minute, per_hour, concurrency, queue"
	case len(key) == 3 && key[0] == "tools":
		known = "description, command, params, profile, limits, rate, stdin, output, changes"
	case len(key) == 4 && key[2] == "rate":
		known = "per_minute, per_hour, concurrency, queue"
	case len(key) == 5 && key[2] == "params":
		known = "type, description, values, pattern, min, max, max_length, beneath, required, default"
	default:
		return ""
	}
	return " (known keys here: " + known + ")"
}

// pos is where a key is written: 1-based line and column, 0 when unknown.
type pos struct{ line, col int }

func (a pos) before(b pos) bool {
	return a.line < b.line || a.line == b.line && a.col < b.col
}

// positions maps a key path (its parts joined by NUL, which no key part
// that reaches the checks holds unescaped in a way that matters) to
// where the document writes it: a table header or the key of a
// key-value, inside inline tables too.
type positions map[string]pos

// find returns the position of key, or of its closest enclosing key that
// the document writes.
func (p positions) find(key []string) pos {
	for n := len(key); n > 0; n-- {
		if at, ok := p[strings.Join(key[:n], "\x00")]; ok {
			return at
		}
	}
	return pos{}
}

// keyAt returns the longest key path written at at, nil for none.
func (p positions) keyAt(at pos) []string {
	var best string
	found := false
	for k, q := range p {
		if q == at && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	if !found {
		return nil
	}
	return strings.Split(best, "\x00")
}

// indexPositions walks a document that decoded, recording the first place
// each key path is written.
func indexPositions(data []byte) positions {
	out := positions{}
	var p unstable.Parser
	p.Reset(data)
	record := func(parts []string, r unstable.Range) {
		k := strings.Join(parts, "\x00")
		if _, ok := out[k]; !ok {
			s := p.Shape(r)
			out[k] = pos{s.Start.Line, s.Start.Column}
		}
	}
	var keyValue func(table []string, n *unstable.Node)
	keyValue = func(table []string, n *unstable.Node) {
		parts := append([]string(nil), table...)
		it := n.Key()
		for it.Next() {
			k := it.Node()
			parts = append(parts, string(k.Data))
			record(parts, k.Raw)
		}
		if v := n.Value(); v.Kind == unstable.InlineTable {
			children := v.Children()
			for children.Next() {
				if c := children.Node(); c.Kind == unstable.KeyValue {
					keyValue(parts, c)
				}
			}
		}
	}
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			it := e.Key()
			for it.Next() {
				k := it.Node()
				table = append(table, string(k.Data))
				record(table, k.Raw)
			}
		case unstable.KeyValue:
			keyValue(table, e)
		}
	}
	return out
}
