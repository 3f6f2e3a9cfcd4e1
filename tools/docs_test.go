package tools

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestDocsListEveryKey: every key a tool file may hold is in
// docs/tools.md.
func TestDocsListEveryKey(t *testing.T) {
	b, err := os.ReadFile("../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, v := range []any{rawFile{}, rawTool{}, rawRunCommand{}, rawRate{}, rawParam{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			key := typ.Field(i).Tag.Get("toml")
			if key == "" {
				t.Fatalf("%s.%s has no toml key", typ.Name(), typ.Field(i).Name)
			}
			if !documented(doc, key) {
				t.Errorf("docs/tools.md: key %s (%s) is not documented", key, typ.Name())
			}
		}
	}
}

// documented says whether doc writes key as code: `key`, `key = ...`,
// `key.SUB` or [key].
func documented(doc, key string) bool {
	for _, form := range []string{"`" + key + "`", "`" + key + " = ", "`" + key + ".", "[" + key + "]"} {
		if strings.Contains(doc, form) {
			return true
		}
	}
	return false
}
