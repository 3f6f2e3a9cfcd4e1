package serve

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// argv, env and tool arguments are measured as execve would take them,
// on the raw line, and refused over ArgMax or MaxArgStrlen before any of
// them is decoded.
func TestDecodeExecBounds(t *testing.T) {
	many := func(n int, elem string) string {
		return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
	}
	// One-letter strings cost 1+1+8 bytes each: this many fit, one more
	// does not.
	fit := ArgMax / 10
	for _, c := range []struct {
		name, line, want string
	}{
		{"argv that fits", `{"argv":[` + many(fit, `"a"`) + `]}`, ""},
		{"argv one over", `{"argv":[` + many(fit+1, `"a"`) + `]}`, "argv: more than 2097152 bytes as execve counts them"},
		{"16M one-letter argv", `{"argv":[` + many(1<<20, `"a"`) + `]}`, "argv: more than"},
		{"argv and env together", `{"argv":[` + many(fit/2, `"a"`) + `],"env":{` + many(fit/2+1, `"A":""`) + `}}`, "more than 2097152 bytes"},
		{"argument at MAX_ARG_STRLEN", `{"argv":["` + strings.Repeat("x", MaxArgStrlen-1) + `"]}`, ""},
		{"argument over MAX_ARG_STRLEN", `{"argv":["` + strings.Repeat("x", MaxArgStrlen) + `"]}`, "argv: element 0: 131072 bytes, longer than the 131071"},
		{"escapes counted decoded", `{"argv":["` + strings.Repeat(`\u00e9`, MaxArgStrlen/2) + `"]}`, "argv: element 0: 131072 bytes"},
		{"env entry over MAX_ARG_STRLEN", `{"argv":["x"],"env":{"A":"` + strings.Repeat("x", MaxArgStrlen) + `"}}`, "env: \"A\": NAME=value is 131074 bytes"},
		{"tiny env entries", `{"argv":["x"],"env":{` + many(1<<20, `"a":"b"`) + `}}`, "env: more than"},
		{"tool arguments", `{"tool":"t","arguments":{"a":[` + many(1<<20, `1`) + `]}}`, "arguments: more than"},
		{"argv not strings", `{"argv":["a",1]}`, "argv: element 1: want a string"},
		{"env not strings", `{"argv":["a"],"env":{"A":1}}`, `env: "A": want a string value`},
		{"many tiny limits", `{"argv":["a"],"limits":{` + many(1<<16, `"a":1`) + `}}`, "limits: "},
		{"many unknown fields", `{` + many(1<<16, `"a":1`) + `}`, `unknown field "a"`},
		{"duplicate field", `{"argv":["a"],"argv":["b"]}`, `field "argv" given twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeRequest([]byte(c.line + "\n"))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// The decoder gives what encoding/json would: the same request from the
// same line, whatever the escapes.
func TestDecodeAgreesWithJSON(t *testing.T) {
	want := Request{
		ID: "x", Argv: []string{"/bin/echo", "é \"q\" \\ \u2028 😀", ""}, Workdir: "/w",
		Env: map[string]string{"A": "1", "B": "two words"}, Stdin: []byte("\x00\xffbinary"),
		Profile: "default", Limits: map[string]string{"memory": "1G", "pids": "64"}, Network: "none", Stream: true,
	}
	line, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	// Numbers are limit values too, and / may be escaped in base64.
	line = bytes.Replace(line, []byte(`"pids":"64"`), []byte(`"pids":64`), 1)
	for _, l := range [][]byte{line, bytes.ReplaceAll(line, []byte(`"stdin":"AP9iaW5hcnk="`), []byte(`"stdin":"AP9iaW5hcnk\u003d"`))} {
		got, err := decodeRequest(append(l, '\n'))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Errorf("decoded %s\nwant    %s", a, b)
		}
	}
	// And each string's length is counted as encoding/json decodes it.
	for _, s := range []string{`"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, "\"\xff\xfe\"", `"\n\t\\"`} {
		var dec string
		json.Unmarshal([]byte(s), &dec)
		if n := stringLen([]byte(s)); n != len(dec) {
			t.Errorf("stringLen(%s) = %d, encoding/json gives %d bytes", s, n, len(dec))
		}
	}
}

// A tool call's arguments that are not an object are refused in words a
// model can act on, not as a Go type error.
func TestDecodeArgumentsNotAnObject(t *testing.T) {
	for raw, kind := range map[string]string{`"x"`: "a string", `["a"]`: "an array", `1`: "a number", ` true`: "a boolean"} {
		_, err := decodeRequest([]byte(`{"tool":"t","arguments":` + raw + `}`))
		if err == nil || !strings.Contains(err.Error(), "arguments: must be a JSON object, not "+kind) || strings.Contains(err.Error(), "Go value") {
			t.Errorf("arguments %s: %v, want a refusal naming %s", raw, err, kind)
		}
	}
	for _, raw := range []string{`{"a":1}`, `null`, `{}`} {
		if _, err := decodeRequest([]byte(`{"tool":"t","arguments":` + raw + `}`)); err != nil {
			t.Errorf("arguments %s: %v", raw, err)
		}
	}
}
