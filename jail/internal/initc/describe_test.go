package initc

import "testing"

// A phrase's placeholders: plain, a choice (itself a text), unknown or
// unclosed ones left as they are.
func TestFill(t *testing.T) {
	values := map[string]string{"path": "/a|b{c}", "n": "1", "bad": "x", "errno": "EPERM"}
	value := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	for text, want := range map[string]string{
		"mount {path}: {errno}":             "mount /a|b{c}: EPERM",
		"{n:zero|one}":                      "one",
		"{n:zero|one: {errno}|two}":         "one: EPERM",
		"{n:zero|{path}}":                   "/a|b{c}",
		"{n:zero}":                          "?",
		"{bad:zero|one}":                    "?",
		"{unknown} stays":                   "{unknown} stays",
		"unclosed {path":                    "unclosed {path",
		"no placeholder":                    "no placeholder",
		"{n:{errno}|a{b}c|d}":               "a{b}c",
		"two {path} and {n:zero|one} again": "two /a|b{c} and one again",
	} {
		if got := fill(text, value); got != want {
			t.Errorf("fill(%q) = %q, want %q", text, got, want)
		}
	}
}
