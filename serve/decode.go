package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What one request may make the server hold. A request line is read
// whole, but its argv, env and tool arguments are measured on the raw
// line, before anything is decoded from it: decoded, 63 MiB of one-letter
// strings would cost the server more than a gigabyte of small objects.
const (
	// ArgMax is the most argv and env together may take, counted as
	// execve(2) counts them: each string's bytes and its NUL, and a
	// pointer each (an env entry is one string, NAME=value). It is the
	// kernel's limit for the usual 8 MiB stack (a quarter of the stack
	// rlimit); a request over it could not be started anyway.
	ArgMax = 2 << 20
	// MaxArgStrlen is the longest one argument or NAME=value may be, its
	// NUL included: the kernel's MAX_ARG_STRLEN (32 pages).
	MaxArgStrlen = 128 << 10
	// maxSmallField bounds the raw JSON of a field that holds a name, a
	// path or a flag (id, workdir, profile, limits, network, ...).
	maxSmallField = 64 << 10
	// maxProfileTOMLField bounds the raw JSON of profile_toml: the text
	// is at most profiles.MaxSize (1 MiB), escaped.
	maxProfileTOMLField = 8 << 20
	// maxKey bounds a field name the decoder looks at.
	maxKey = 64
)

// requestFields maps each field name of the wire format to the index of
// its Request field: read from the json tags, so that a field added to
// Request is decoded without a change here.
var requestFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Request{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}()

// decoded is a request and what the server holds for it until the call
// ends: the bytes of its stdin, its argv, env and tool arguments.
type decoded struct {
	*Request
	held int64
}

// decodeRequest reads one request line strictly: an unknown field, a
// field given twice, a value of the wrong type or anything after the
// object is an error. Limit values may be JSON strings or numbers. The
// argv, env and tool arguments are measured (execCost) before they are
// decoded, and refused over ArgMax; stdin is decoded from the line
// directly, without a copy of its text.
func decodeRequest(line []byte) (*Request, error) {
	d, err := decodeLine(line)
	if err != nil {
		return nil, err
	}
	return d.Request, nil
}

func decodeLine(line []byte) (*decoded, error) {
	fields, err := topFields(line)
	if err != nil {
		return nil, err
	}
	cost, e := measureFields(fields)
	if e != nil {
		return nil, e
	}
	r := &Request{}
	d := &decoded{Request: r}
	v := reflect.ValueOf(r).Elem()
	for _, f := range fields {
		if err := decodeField(r, v, f); err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, refuse("malformed request: field %q: %v; see docs/serve.md", f.name, err)
		}
	}
	// What the decoded call holds: its input, and its strings with a
	// header each (a Go string or slice element, and the C copy execve
	// gets).
	d.held = int64(len(r.Stdin)) + 2*cost.bytes + 16*cost.count
	return d, nil
}

// measureFields checks each field's size before any is decoded: what
// execve would take of argv, env and a tool call's arguments (their
// cost, at most ArgMax), a profile's TOML, and any other field.
func measureFields(fields []rawField) (execCost, *Error) {
	var cost execCost
	for _, f := range fields {
		var err error
		switch f.name {
		case "argv":
			err = cost.strings(f.raw, "argv")
		case "env":
			err = cost.env(f.raw)
		case "arguments":
			if err = notAnObject(f.raw); err == nil {
				err = cost.any(f.raw)
			}
		case "stdin", "profile_toml":
		default:
			if len(f.raw) > maxSmallField {
				err = fmt.Errorf("%d bytes, longer than %d", len(f.raw), maxSmallField)
			}
		}
		if err == nil && f.name == "profile_toml" && len(f.raw) > maxProfileTOMLField {
			err = fmt.Errorf("%d bytes, longer than %d; a profile is a small TOML file", len(f.raw), maxProfileTOMLField)
		}
		if err != nil {
			return execCost{}, refuse("%s: %v", f.name, err)
		}
		if cost.bytes > ArgMax {
			return execCost{}, refuse("argv, env and arguments: more than %d bytes as execve counts them (each string, its NUL and a pointer); no program can be started with them: send large data as stdin or in a file in the workdir", ArgMax)
		}
	}
	return cost, nil
}

// decodeField decodes one field into r (v is *r): the fields with a form
// of their own by their decoders, the others as JSON.
func decodeField(r *Request, v reflect.Value, f rawField) error {
	switch f.name {
	case "stdin":
		var err error
		r.Stdin, err = decodeBase64(f.raw)
		return err
	case "limits":
		var err error
		r.Limits, err = decodeLimits(f.raw)
		return err
	case "changes_op":
		var err error
		r.ChangesOp, err = decodeChangesOp(f.raw)
		return err
	}
	return json.Unmarshal(f.raw, v.Field(requestFields[f.name]).Addr().Interface())
}

// notAnObject refuses a tool call's arguments that are not a JSON object
// (or null), in words a model can act on: json.Unmarshal would say
// "cannot unmarshal string into Go value of type map[string]interface {}".
func notAnObject(raw []byte) error {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] == '{' || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	kind := "a number"
	switch raw[0] {
	case '"':
		kind = "a string"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	}
	return fmt.Errorf("must be a JSON object, not %s; give each parameter by name: {\"NAME\": VALUE, ...}", kind)
}

// decodeLimits reads the limits object: each value a string or a number.
func decodeLimits(raw []byte) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	out := map[string]string{}
	for k, raw := range m {
		v, err := limitText(raw)
		if err != nil {
			return nil, refuse("limits.%s: %v", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// decodeBase64 decodes a JSON string of base64 (or null) from its raw
// text, without unquoting it into a copy first: base64 has nothing JSON
// must escape, and a string that escapes something anyway is unquoted the
// slow way.
func decodeBase64(raw []byte) ([]byte, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) < 2 || raw[0] != '"' {
		return nil, errors.New("want a base64 string")
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			body = []byte(s)
			break
		}
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n, err := base64.StdEncoding.Decode(out, body)
	if err != nil {
		return nil, fmt.Errorf("not base64: %v", err)
	}
	return out[:n], nil
}

// rawField is one top-level field of a request line: its name and its
// value as it is in the line (a slice of it).
type rawField struct {
	name string
	raw  []byte
}

// topFields splits a request line into its fields without decoding their
// values. The line is checked as JSON first (json.Valid allocates
// nothing), so the walk below only has to find where values end.
func topFields(line []byte) ([]rawField, error) {
	if !json.Valid(line) {
		var probe struct{}
		err := json.Unmarshal(line, &probe)
		if err != nil && strings.Contains(err.Error(), "after top-level value") {
			return nil, refuse("malformed request: data after the JSON object; send one object per connection")
		}
		return nil, refuse("malformed request: %v; send one JSON object on one line (see docs/serve.md)", err)
	}
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return nil, refuse("malformed request: not a JSON object; send one JSON object on one line (see docs/serve.md)")
	}
	i = skipSpace(line, i+1)
	var fields []rawField
	seen := map[string]bool{}
	for line[i] != '}' {
		end := stringEnd(line, i)
		key := line[i:end]
		var name string
		if len(key) <= maxKey {
			json.Unmarshal(key, &name)
		}
		if _, ok := requestFields[name]; !ok || name == "" {
			return nil, refuse("malformed request: json: unknown field %s; see docs/serve.md for the fields", clip(string(key), maxKey))
		}
		if seen[name] {
			return nil, refuse("malformed request: field %q given twice; give it once", name)
		}
		seen[name] = true
		i = skipSpace(line, end) + 1 // the ':'
		i = skipSpace(line, i)
		end = valueEnd(line, i)
		fields = append(fields, rawField{name: name, raw: line[i:end]})
		i = skipSpace(line, end)
		if line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	return fields, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd is the index after the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// stringLen is the length of the JSON string raw once decoded, as
// encoding/json decodes it (an invalid byte or a lone surrogate becomes
// U+FFFD).
func stringLen(raw []byte) int {
	n := 0
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\' && body[i+1] == 'u':
			r := hex4(body[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if utf16.DecodeRune(r, hex4(body[i+2:])) != unicode.ReplacementChar {
						n += 4
						i += 6
						continue
					}
				}
				n += 3
				continue
			}
			n += utf8.RuneLen(r)
		case c == '\\':
			n++
			i += 2
		case c < utf8.RuneSelf:
			n++
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				n += 3
			} else {
				n += size
			}
			i += size
		}
	}
	return n
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// execCost adds up strings as execve counts them: bytes is the sum of
// each string's length, its NUL and a pointer; count is how many.
type execCost struct {
	bytes, count int64
}

func (c *execCost) add(n int) {
	c.bytes += int64(n) + 1 + 8
	c.count++
}

// elements calls f with the start of each element of the JSON array or
// object raw (for an object: of each key, with the value after it).
func elements(raw []byte, f func(i int) (next int, err error)) error {
	i := skipSpace(raw, 1)
	for i < len(raw) && raw[i] != ']' && raw[i] != '}' {
		next, err := f(i)
		if err != nil {
			return err
		}
		i = skipSpace(raw, next)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return nil
}

// strings counts an array of strings (argv), each at most MaxArgStrlen.
func (c *execCost) strings(raw []byte, field string) error {
	if string(raw) == "null" {
		return nil
	}
	if raw[0] != '[' {
		return errors.New("want an array of strings, [\"cmd\", \"arg\", ...]")
	}
	n := 0
	return elements(raw, func(i int) (int, error) {
		if raw[i] != '"' {
			return 0, fmt.Errorf("element %d: want a string", n)
		}
		end := stringEnd(raw, i)
		l := stringLen(raw[i:end])
		if l+1 > MaxArgStrlen {
			return 0, fmt.Errorf("element %d: %d bytes, longer than the %d a program's argument may be (MAX_ARG_STRLEN); send large data as stdin or in a file in the workdir", n, l, MaxArgStrlen-1)
		}
		c.add(l)
		n++
		if c.bytes > ArgMax {
			return 0, fmt.Errorf("more than %d bytes as execve counts them (each string, its NUL and a pointer); no program can be started with them: send large data as stdin or in a file in the workdir", ArgMax)
		}
		return end, nil
	})
}

// env counts an object of strings, each entry one NAME=value string.
func (c *execCost) env(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return errors.New("want an object of strings, {\"NAME\": \"value\"}")
	}
	return elements(raw, func(i int) (int, error) {
		kend := stringEnd(raw, i)
		v := skipSpace(raw, skipSpace(raw, kend)+1)
		if raw[v] != '"' {
			return 0, fmt.Errorf("%s: want a string value", clip(string(raw[i:kend]), maxKey))
		}
		vend := stringEnd(raw, v)
		l := stringLen(raw[i:kend]) + 1 + stringLen(raw[v:vend])
		if l+1 > MaxArgStrlen {
			return 0, fmt.Errorf("%s: NAME=value is %d bytes, longer than the %d a variable may be (MAX_ARG_STRLEN)", clip(string(raw[i:kend]), maxKey), l, MaxArgStrlen-1)
		}
		c.add(l)
		if c.bytes > ArgMax {
			return 0, fmt.Errorf("more than %d bytes as execve counts them (each NAME=value, its NUL and a pointer); no program can be started with them", ArgMax)
		}
		return vend, nil
	})
}

// any counts every string and scalar of a JSON value (a tool's
// arguments, which become a command's argv), each as one argument.
func (c *execCost) any(raw []byte) error {
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '"':
			end := stringEnd(raw, i)
			c.add(stringLen(raw[i:end]))
			i = end
		case '{', '}', '[', ']', ',', ':', ' ', '\t', '\r', '\n':
			i++
			continue
		default:
			end := valueEnd(raw, i)
			c.add(end - i)
			i = end
		}
		if c.bytes > ArgMax {
			return fmt.Errorf("more than %d bytes counted as a command's arguments (each string or number, a NUL and a pointer); send large data as stdin or in a file in the workdir", ArgMax)
		}
	}
	return nil
}
