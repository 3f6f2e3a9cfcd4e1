package auditlog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

const (
	run  = `{"time":"2026-01-01T10:00:00Z","id":"r1","uid":0,"command":["ls"],"status":"exited","exit_code":0}` + "\n"
	tool = `{"time":"2026-01-01T10:01:00Z","id":"","uid":0,"command":[],"status":"refused","exit_code":125,"call_id":"c","tool":"t","arguments":{"a":"x"},"decision":"refused: undeclared"}` + "\n"
)

func TestReaderWaitsForTheNewline(t *testing.T) {
	var src bytes.Buffer
	r := NewReader(&src)
	src.WriteString(run + tool[:30])
	e, err := r.Next()
	if err != nil || e.ID != "r1" || e.IsCall() || string(e.Raw)+"\n" != run {
		t.Fatalf("first: %+v %v", e, err)
	}
	if _, err := r.Next(); err != io.EOF || r.Pending() != 30 {
		t.Fatalf("half a line: %v, pending %d", err, r.Pending())
	}
	src.WriteString(tool[30:])
	e, err = r.Next()
	if err != nil || !e.IsCall() || e.Tool != "t" || e.Decision != "refused: undeclared" || e.Arguments["a"] != "x" || r.Line() != 2 {
		t.Fatalf("the completed line: %+v %v", e, err)
	}
	if _, err := r.Next(); err != io.EOF || r.Pending() != 0 {
		t.Fatalf("end: %v %d", err, r.Pending())
	}
}

func TestReaderBadLines(t *testing.T) {
	r := NewReader(strings.NewReader(run + "\n" + "[1]\n" + `{"id":"no time"}` + "\n" + strings.Repeat("x", MaxLine+5) + "\n" + tool))
	var lines []int
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			lines = append(lines, le.Line)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{2, 3, 4, 5}; len(lines) != 4 || lines[0] != 2 || lines[3] != 5 {
		t.Errorf("bad lines %v, want %v", lines, want)
	}
	if r.Line() != 6 {
		t.Errorf("read %d lines", r.Line())
	}
}

func TestFilter(t *testing.T) {
	re, _ := Parse([]byte(strings.TrimSpace(run)))
	te, _ := Parse([]byte(strings.TrimSpace(tool)))
	at := time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)
	for _, tc := range []struct {
		f        Filter
		run, too bool
	}{
		{Filter{}, true, true},
		{Filter{Tool: "t"}, false, true},
		{Filter{Tool: "other"}, false, false},
		{Filter{Status: "refused"}, false, true},
		{Filter{Status: "exited"}, true, false},
		{Filter{Since: at}, false, true},
		{Filter{Since: at.Add(time.Nanosecond)}, false, false},
	} {
		if tc.f.Match(&re) != tc.run || tc.f.Match(&te) != tc.too {
			t.Errorf("%+v: run %v tool %v", tc.f, tc.f.Match(&re), tc.f.Match(&te))
		}
	}
}
