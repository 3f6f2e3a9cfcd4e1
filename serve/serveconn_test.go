package serve

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLineVerdict(t *testing.T) {
	const timeout = 5 * time.Second
	ok := []byte(`{"args":["true"]}` + "\n")
	for _, c := range []struct {
		name    string
		line    []byte
		err     error
		evicted bool
		stop    bool
		want    string // part of the refusal; "" for none
	}{
		{"a whole line", ok, nil, false, false, ""},
		// Evicted only counts when the read was cut short by it.
		{"a whole line, evicted after it", ok, nil, true, false, ""},
		{"evicted while reading", nil, os.ErrDeadlineExceeded, true, true, "places for waiting connections"},
		{"evicted beats the budget", nil, errBudget, true, true, "8 places"},
		{"budget full", nil, errBudget, false, true, "MiB of requests"},
		{"nothing sent", nil, io.EOF, false, true, ""},
		{"too slow", []byte(`{"ar`), os.ErrDeadlineExceeded, false, true, "no request within 5s"},
		{"too long", nil, errTooLong, false, true, "longer than"},
		{"no newline", []byte(`{}`), io.ErrUnexpectedEOF, false, true, "did not end with a newline"},
	} {
		e, stop := lineVerdict(c.line, c.err, c.evicted, timeout, 2)
		got := ""
		if e != nil {
			got = e.Message
		}
		if stop != c.stop || (c.want == "") != (e == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%s: lineVerdict = %q, %v; want stop %v and %q", c.name, got, stop, c.stop, c.want)
		}
	}
}
