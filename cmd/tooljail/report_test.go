package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func reportWithTexts(stdout, stderr *string) *jail.Result {
	return &jail.Result{
		Schema: jail.Schema, ID: "abc", Status: jail.StatusExited,
		// Look-alikes of the placeholders do not confuse the cut.
		Command:    []string{"sh", "-c", `echo "tooljail-text-0-"`, "tooljail-text-1-AAAA"},
		Stdout:     jail.Stream{Bytes: 3, Text: stdout},
		Stderr:     jail.Stream{Bytes: 4, Text: stderr},
		Violations: []jail.Violation{{Kind: "syscall", Syscall: "ptrace", Count: 1, Action: "denied"}},
	}
}

// The report written with its texts streamed in is byte for byte
// json.MarshalIndent of the Result and a newline, with or without texts,
// and for texts of any bytes.
func TestEncodedReportIsMarshalIndent(t *testing.T) {
	odd := strings.Repeat("a\x01\xff<é\u2028😀\"\\\n", 20000) + "\xe2\x82"
	empty, short := "", "value \"tooljail\"\n"
	for name, r := range map[string]*jail.Result{
		"no texts":     reportWithTexts(nil, nil),
		"stdout only":  reportWithTexts(&short, nil),
		"stderr only":  reportWithTexts(nil, &short),
		"both, empty":  reportWithTexts(&empty, &empty),
		"both, odd":    reportWithTexts(&odd, &short),
		"both, odd x2": reportWithTexts(&odd, &odd),
	} {
		want, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		rep, err := encodeReport(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got bytes.Buffer
		if err := rep.write(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: the written report is not json.MarshalIndent's\n got %.300q\nwant %.300q", name, got.Bytes(), want)
		}
		var back jail.Result
		if err := json.Unmarshal(got.Bytes(), &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Stdout.Text != nil && *back.Stdout.Text != eachInvalidByteReplaced(*r.Stdout.Text) {
			t.Errorf("%s: the stdout text does not come back", name)
		}
	}
}

// The report file gets the same bytes, replacing a longer old content.
func TestWriteReportStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, bytes.Repeat([]byte("old report "), 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("\x01", 200000)
	r := reportWithTexts(&text, nil)
	rep, err := encodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(f, rep); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(r, "", "  ")
	if !bytes.Equal(got, append(want, '\n')) {
		t.Errorf("report file: %d bytes, want %d", len(got), len(want)+1)
	}
}

// Writing a report with 16 MiB of control bytes, 96 MiB once escaped,
// allocates a small fraction of the text: pieces of it (json.MarshalIndent
// allocates about 800 MiB).
func TestEncodedReportMemory(t *testing.T) {
	text := strings.Repeat("\x01", 16<<20)
	r := reportWithTexts(&text, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := encodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	var n countWriter
	if err := rep.write(&n); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n != 6*16<<20+countWriter(len(rep.parts[0])+len(rep.parts[1])+2) {
		t.Errorf("wrote %d bytes", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("writing the report allocated %d bytes", alloc)
	}
}

// eachInvalidByteReplaced is s with each byte that is not part of valid
// UTF-8 replaced by U+FFFD, as encoding/json encodes it.
func eachInvalidByteReplaced(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // an invalid byte ranges as one utf8.RuneError
	}
	return b.String()
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
