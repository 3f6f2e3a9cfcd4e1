package serve

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDecodeInput(t *testing.T) {
	for _, c := range []struct {
		line string
		tty  bool
		ok   bool
	}{
		{`{"stdin":"aGk="}`, false, true},
		{`{"stdin_end":true}`, false, true},
		{`{"resize":{"rows":40,"cols":100}}`, true, true},
		{`{"resize":{"rows":40,"cols":100}}`, false, false},
		{`{"stdin":"aGk=","stdin_end":true}`, false, false},
		{`{}`, false, false},
		{`{"stdin":"not base64!"}`, false, false},
		{`{"argv":["rm"]}`, false, false},
		{`nonsense`, false, false},
	} {
		if _, err := decodeInput([]byte(c.line), c.tty); (err == nil) != c.ok {
			t.Errorf("%s (tty %v): %v, want ok %v", c.line, c.tty, err, c.ok)
		}
	}
}

type nopCloser struct{ bytes.Buffer }

func (n *nopCloser) Close() error { return nil }

func TestReadInput(t *testing.T) {
	var sizes [][2]uint16
	w := &nopCloser{}
	in := "{\"stdin\":\"aGk=\"}\n{\"resize\":{\"rows\":2,\"cols\":3}}\n{\"stdin_end\":true}\n{\"stdin\":\"bGF0ZQ==\"}\n"
	err := readInput(bufio.NewReader(strings.NewReader(in)), input{stdin: w, tty: true,
		resize: func(r, c uint16) error { sizes = append(sizes, [2]uint16{r, c}); return nil }})
	if err != nil || w.String() != "hi" || len(sizes) != 1 || sizes[0] != [2]uint16{2, 3} {
		t.Errorf("readInput: %v, stdin %q, sizes %v; want hi (nothing after its end) and one resize", err, w.String(), sizes)
	}
	long := "{\"stdin\":\"" + strings.Repeat("A", maxInputLine) + "\"}\n"
	if err := readInput(bufio.NewReader(strings.NewReader(long)), input{stdin: &nopCloser{}}); err == nil {
		t.Error("a line over the limit was taken")
	}
}

// An interactive call over the wire: stdin sent in pieces while the
// command runs, its end, and the report.
func TestStdinStream(t *testing.T) {
	ts := start(t)
	c := ts.client()
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("first\n"))
		time.Sleep(100 * time.Millisecond)
		pw.Write([]byte("second\n"))
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.RunInteractive(ctx, Request{Argv: []string{"/bin/sh", "-c", "read a; echo got $a; cat"}}, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(r.Stdout); got != "got first\nsecond\n" || r.ExitCode != 0 {
		t.Errorf("stdout %q exit %d", got, r.ExitCode)
	}
	if _, err := c.Run(ctx, Request{Argv: []string{"true"}, Stdin: []byte("x"), StdinStream: true}); err == nil {
		t.Error("stdin and stdin_stream together were taken")
	}
}
