package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`: "/a b", `/a\134b`: `/a\b`, `/a\011\012`: "/a\t\n", `/end\040`: "/end ",
		`/a\0`: `/a\0`, `/plain`: "/plain", `/a\999`: `/a\999`, `\`: `\`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
