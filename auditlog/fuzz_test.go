package auditlog

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader: whatever a log holds, fed in any two pieces (a writer
// mid-line), Reader never panics, returns each whole line once (an entry
// or a *LineError), never a newline inside an entry, and keeps only the
// text after the last newline pending.
func FuzzReader(f *testing.F) {
	f.Add([]byte(run+tool), 10)
	f.Add([]byte(run+"garbage\n"+tool[:20]), 50)
	f.Add([]byte("\n\n{}\n"), 1)
	f.Fuzz(func(t *testing.T, log []byte, cut int) {
		if cut < 0 || cut > len(log) {
			cut = len(log) / 2
		}
		var src bytes.Buffer
		r := NewReader(&src)
		lines := 0
		drain := func() {
			for {
				e, err := r.Next()
				if err == io.EOF {
					return
				}
				var le *LineError
				switch {
				case errors.As(err, &le):
				case err != nil:
					t.Fatal(err)
				case bytes.IndexByte(e.Raw, '\n') >= 0:
					t.Fatalf("an entry with a newline: %q", e.Raw)
				}
				lines++
			}
		}
		src.Write(log[:cut])
		drain()
		src.Write(log[cut:])
		drain()
		if want := bytes.Count(log, []byte("\n")); lines != want || r.Line() != want {
			t.Fatalf("%d lines read (Line %d), the log has %d", lines, r.Line(), want)
		}
		tail := len(log) - (bytes.LastIndexByte(log, '\n') + 1)
		if tail <= MaxLine && r.Pending() != tail {
			t.Fatalf("pending %d, want %d", r.Pending(), tail)
		}
	})
}
