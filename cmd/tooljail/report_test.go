package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
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
	text := strings.Repeat("\x01\xff", 100000)
	r := reportWithTexts(&text, nil)
	r.Stdout.Base64 = []byte(text)
	rep, err := report.EncodeReport(r, "  ")
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
	if !bytes.Contains(got, []byte(`"base64": "Af8B/wH/`)) || !bytes.Equal(got, append(want, '\n')) {
		t.Errorf("report file: %d bytes, want %d", len(got), len(want)+1)
	}
}
