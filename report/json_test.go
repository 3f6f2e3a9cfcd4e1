package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// captured is a stream entry as a run's capture makes it of text.
func captured(text *string) Stream {
	if text == nil {
		return Stream{}
	}
	return NewStream(int64(len(*text)), false, text)
}

func reportWithTexts(stdout, stderr *string) *Result {
	return &Result{
		Schema: Schema, ID: "abc", Status: StatusExited,
		// Look-alikes of the placeholders do not confuse the cut.
		Command: []string{"sh", "-c", `echo "tooljail-text-0-"`, "tooljail-text-1-AAAA", "tooljail-base64-0-",
			base64.StdEncoding.EncodeToString([]byte("tooljail-base64-1-"))},
		Stdout:     captured(stdout),
		Stderr:     captured(stderr),
		Violations: []Violation{{Kind: "syscall", Syscall: "ptrace", Count: 1, Action: "denied"}},
	}
}

// The report written with its texts and base64 streamed in is byte for
// byte json.Marshal (or MarshalIndent) of the Result and a newline, with
// or without texts, and for texts of any bytes; read back, the base64
// gives the bytes exactly.
func TestEncodeReportIsMarshal(t *testing.T) {
	odd := strings.Repeat("a\x01\xff<é\u2028😀\"\\\n", 20000) + "\xe2\x82"
	valid := strings.Repeat("a\x01<é\u2028😀\"\\\n", 20000)
	empty, short := "", "value \"tooljail\"\n"
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 3*base64Piece+2)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	rnd := string(random)
	for name, r := range map[string]*Result{
		"no texts":       reportWithTexts(nil, nil),
		"stdout only":    reportWithTexts(&short, nil),
		"stderr only":    reportWithTexts(nil, &short),
		"both, empty":    reportWithTexts(&empty, &empty),
		"both, odd":      reportWithTexts(&odd, &short),
		"both, odd x2":   reportWithTexts(&odd, &odd),
		"valid, odd":     reportWithTexts(&valid, &odd),
		"random, valid":  reportWithTexts(&rnd, &valid),
		"stderr, random": reportWithTexts(&short, &rnd),
	} {
		for _, indent := range []string{"", "  "} {
			var want []byte
			var err error
			if indent == "" {
				want, err = json.Marshal(r)
			} else {
				want, err = json.MarshalIndent(r, "", indent)
			}
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			rep, err := EncodeReport(r, indent)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var got bytes.Buffer
			if n, err := rep.WriteTo(&got); err != nil || n != int64(got.Len()) {
				t.Fatalf("%s: %d, %v", name, n, err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s, indent %q: the written report is not json.Marshal's\n got %.300q\nwant %.300q", name, indent, got.Bytes(), want)
			}
			var back Result
			if err := json.Unmarshal(got.Bytes(), &back); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, s := range []Stream{r.Stdout, r.Stderr} {
				b := []Stream{back.Stdout, back.Stderr}[i]
				if s.Text == nil {
					if b.Text != nil || b.Base64 != nil {
						t.Errorf("%s: stream %d: an output that was not captured came back", name, i)
					}
					continue
				}
				// text or base64, never both: base64 exactly when the
				// bytes are not UTF-8.
				if valid := utf8.ValidString(*s.Text); (b.Base64 != nil) == valid || (b.Text != nil) != valid {
					t.Errorf("%s: stream %d: text %v, base64 %v for bytes valid UTF-8 %v", name, i, b.Text != nil, b.Base64 != nil, valid)
					continue
				}
				b.Exact()
				if *b.Text != *s.Text {
					t.Errorf("%s: stream %d: the exact bytes do not come back", name, i)
				}
			}
		}
	}
}

// Base64 is there exactly when the text is not valid UTF-8, and shares
// its bytes; invalid UTF-8 anywhere, at any piece boundary, is found.
func TestStreamBase64(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"", false},
		{"plain\n", false},
		{"é€😀\u2028", false},
		{"\x00\x01\x7f", false},
		{"\xff", true},
		{"caf\xe9", true},            // latin-1
		{"\xff\xfeh\x00i\x00", true}, // utf-16 with its BOM
		{"\xed\xa0\x80", true},       // a surrogate
		{"\xc0\xaf", true},           // overlong
		{"ab\xe2\x82", true},         // a rune cut at the end
	} {
		s := captured(&c.text)
		if (s.Base64 != nil) != c.want {
			t.Errorf("%q: base64 %v, want %v", c.text, s.Base64 != nil, c.want)
		}
		if s.Base64 != nil && (string(s.Base64) != c.text || unsafe.SliceData(s.Base64) != unsafe.StringData(*s.Text)) {
			t.Errorf("%q: base64 bytes %q are not the text's own", c.text, s.Base64)
		}
	}
	for _, at := range []int{0, base64Piece - 1, base64Piece, base64Piece + 1, textPiece - 1, textPiece, 2*base64Piece + 5} {
		for _, odd := range []string{"\xff", "\xe2\x82", "\xf0\x9f\x98"} {
			b := []byte(strings.Repeat("a", 3*base64Piece))
			copy(b[at:], odd)
			text := string(b)
			s := captured(&text)
			var got bytes.Buffer
			if err := s.WriteBase64JSON(&got); err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(b)
			if s.Base64 == nil || got.String() != string(want) {
				t.Errorf("%q at %d: base64 %v, JSON differs from json.Marshal of the bytes", odd, at, s.Base64 != nil)
			}
		}
	}
	var b bytes.Buffer
	if err := (Stream{}).WriteBase64JSON(&b); err != nil || b.String() != "null" {
		t.Errorf("no base64: %q %v", b.String(), err)
	}
}

// Writing a report with 16 MiB of control bytes, 96 MiB once escaped,
// allocates a small fraction of the text: pieces of it (json.MarshalIndent
// allocates about 800 MiB). So does one with 16 MiB of invalid bytes,
// written as their base64 alone.
func TestEncodeReportMemory(t *testing.T) {
	for _, c := range []struct {
		b    string
		want int
	}{
		{"\x01", 6*16<<20 + 2},
		{"\xff", base64.StdEncoding.EncodedLen(16<<20) + 2}, // base64 only: no text
	} {
		text := strings.Repeat(c.b, 16<<20)
		r := reportWithTexts(&text, nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rep, err := EncodeReport(r, "")
		if err != nil {
			t.Fatal(err)
		}
		var n countWriter
		if _, err := rep.WriteTo(&n); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		parts := 0
		for _, p := range rep.parts {
			parts += len(p)
		}
		if want := countWriter(c.want + parts); n != want {
			t.Errorf("%q: wrote %d bytes, want %d", c.b, n, want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Errorf("%q: writing the report allocated %d bytes", c.b, alloc)
		}
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
