package completion

import (
	"bytes"
	"strings"
	"testing"
)

func tree(flagName string, words ...string) *Command {
	return &Command{Name: "prog", Subs: []*Command{{
		Name:  "run",
		Flags: []Flag{{Name: flagName, TakesValue: true, Value: Value{Words: words}}},
	}}}
}

func TestWriteRefusesUnsafeNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		root *Command
		ok   bool
	}{
		{"plain", tree("net", "none", "host"), true},
		{"dotted word", tree("profile", "my.profile", "a-b_c"), true},
		{"quote in a word", tree("net", `x"y`), false},
		{"space in a word", tree("net", "a b"), false},
		{"dollar in a flag", tree("n$t"), false},
		{"empty word", tree("net", ""), false},
		{"backtick", tree("net", "`id`"), false},
	} {
		for _, shell := range Shells {
			err := Write(&bytes.Buffer{}, shell, tc.root)
			if (err == nil) != tc.ok {
				t.Errorf("%s, %s: err = %v, want ok = %v", tc.name, shell, err, tc.ok)
			}
		}
	}
}

func TestWriteUnknownShell(t *testing.T) {
	err := Write(&bytes.Buffer{}, "tcsh", tree("net"))
	if err == nil || !strings.Contains(err.Error(), "bash, fish, zsh") {
		t.Fatalf("err = %v, want one naming the shells", err)
	}
}

func TestShort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"memory cap SIZE (cgroup; swap 0)", "memory cap SIZE"},
		{"no summary line on stderr", "no summary line on stderr"},
		{"bind DIR; start there", "bind DIR"},
		{strings.Repeat("word ", 20), strings.TrimSpace(strings.Repeat("word ", 20)[:57]) + "..."},
	} {
		if got := short(tc.in); got != tc.want {
			t.Errorf("short(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFishQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:      `'plain'`,
		`it's`:       `'it\'s'`,
		`back\slash`: `'back\\slash'`,
	} {
		if got := fishQuote(in); got != want {
			t.Errorf("fishQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFlagWordsAndValueFlags(t *testing.T) {
	c := &Command{Flags: []Flag{
		{Name: "quiet", Aliases: []string{"q"}},
		{Name: "memory", TakesValue: true},
	}}
	if got, want := strings.Join(flagWords(c), " "), "--memory --quiet -q"; got != want {
		t.Errorf("flagWords = %q, want %q", got, want)
	}
	vf := valueFlags(c)
	if len(vf) != 1 || vf[0].word != "--memory" {
		t.Errorf("valueFlags = %+v, want --memory alone", vf)
	}
}
