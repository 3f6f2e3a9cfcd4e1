package mcpserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/tools"
)

func TestSchema(t *testing.T) {
	f, err := tools.Parse("f.toml", []byte(`
[tools.t]
description = "d"
command = ["p", "{s}", "{i}", "{n}", "{b}", "{e}", "{path}"]
stdin = true
params.s = { type = "string", pattern = "[a-z]+|x", max_length = 10, description = "S." }
params.i = { type = "integer", min = 1, max = 10, default = 3 }
params.n = { type = "number", min = -0.5 }
params.b = { type = "boolean", default = false }
params.e = { type = "enum", values = ["a", "b"] }
params.path = { type = "path", beneath = [".", "/usr/share"], description = "P." }
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Schema(f.Tools[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object",` +
		`"required":["s","n","e","path"],` +
		`"properties":{` +
		`"s":{"description":"S.","type":"string","maxLength":10,"pattern":"^(?:[a-z]+|x)$"},` +
		`"i":{"default":3,"type":"integer","minimum":1,"maximum":10},` +
		`"n":{"type":"number","minimum":-0.5},` +
		`"b":{"default":false,"type":"boolean"},` +
		`"e":{"type":"string","enum":["a","b"]},` +
		`"path":{"description":"P. A path beneath the working directory or /usr/share (a relative path is taken from the working directory); symlinks out of it are refused.","type":"string"},` +
		`"stdin":{"description":"Text passed to the command on its standard input.","type":"string"}},` +
		`"additionalProperties":false}`
	var got, wantV any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("schema\n%s\nwant\n%s", b, want)
	}
	// A tool without stdin has no stdin property, and one without
	// parameters an empty object that takes nothing.
	f, err = tools.Parse("f.toml", []byte("[tools.t]\ndescription = \"d\"\ncommand = [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(Schema(f.Tools[0]))
	if got := string(b); got != `{"type":"object","properties":{},"additionalProperties":false}` || strings.Contains(got, "stdin") {
		t.Errorf("schema of a tool without parameters: %s", got)
	}
}
