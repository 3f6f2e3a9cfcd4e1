package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// oddRunes are sequences whose escaping depends on their neighbours or
// that encoding/json escapes: multi-byte runes, invalid and truncated
// UTF-8, control bytes, HTML characters, U+2028.
var oddRunes = []string{
	"a", "é", "€", "😀", "\u2028", "\u2029", "<", ">", "&", "\"", "\\", "\x7f",
	"\x00", "\x01", "\x1f", "\b", "\f", "\n", "\r", "\t",
	"\xff", "\xfe", "\x80", "\xbf", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	"\xe2\x80\xa8", "\xc0\xaf",
}

func marshalText(t *testing.T, text string) string {
	t.Helper()
	var b bytes.Buffer
	if err := (Stream{Text: &text}).WriteTextJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// WriteTextJSON writes what json.Marshal makes of the text, byte for byte,
// wherever a piece ends: every pair of odd sequences across the first cut,
// and random mixes several pieces long.
func TestWriteTextJSONIsMarshal(t *testing.T) {
	var texts []string
	for _, a := range oddRunes {
		for _, b := range oddRunes {
			for k := 0; k <= len(a)+len(b); k++ {
				texts = append(texts, strings.Repeat("x", textPiece-k)+a+b+strings.Repeat("y", k))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		var b strings.Builder
		for b.Len() < 3*textPiece+100 {
			b.WriteString(oddRunes[rng.IntN(len(oddRunes))])
		}
		texts = append(texts, b.String())
	}
	// Continuation bytes only: every cut falls between invalid bytes.
	texts = append(texts, "", "a", strings.Repeat("\x80", 2*textPiece+3), strings.Repeat("\x01", 3*textPiece))
	for _, text := range texts {
		want, err := json.Marshal(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := marshalText(t, text); got != string(want) {
			t.Fatalf("text of %d bytes: WriteTextJSON and json.Marshal differ\n got %.200q...\nwant %.200q...", len(text), got, want)
		}
	}
	var b bytes.Buffer
	if err := (Stream{}).WriteTextJSON(&b); err != nil || b.String() != "null" {
		t.Errorf("no text: %q %v", b.String(), err)
	}
}

// The pieces end where a decoder of the whole text ends a rune or an
// invalid byte.
func TestTextCut(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int
		want int
	}{
		{"abcdef", 3, 3},
		{"ab€def", 3, 2},             // inside € (3 bytes from 2)
		{"ab€def", 4, 2},             // inside €
		{"ab€def", 5, 5},             // after €
		{"a😀b", 4, 1},                // last byte of 😀
		{"a\x80\x80\x80\x80b", 3, 3}, // three continuation bytes before: a boundary
		{"a\x80\x80\x80\x80b", 4, 4}, // likewise
		{"\xf0\x80\x80\x80\x80", 4, 4},
		{"abc", 5, 3},
	} {
		if got := textCut(c.text, c.n); got != c.want {
			t.Errorf("textCut(%q, %d) = %d, want %d", c.text, c.n, got, c.want)
		}
	}
}
