package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// InputLine is a line a client sends after a stdin_stream request while
// the run goes on: a chunk of stdin, stdin's end, or (with tty) the
// terminal's new size. Exactly one of the fields is set.
type InputLine struct {
	Stdin    []byte       `json:"stdin,omitempty"` // base64 on the wire
	StdinEnd bool         `json:"stdin_end,omitempty"`
	Resize   *InputResize `json:"resize,omitempty"`
}

// InputResize is a terminal's size.
type InputResize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// maxInputLine bounds one input line: a 64 KiB chunk is 87 KiB of base64.
const maxInputLine = 1 << 20

// input is where a stdin_stream run's input lines go.
type input struct {
	stdin  io.WriteCloser // the command's stdin
	resize func(rows, cols uint16) error
	tty    bool
}

// readInput reads the client's input lines until its end of the
// connection and hands them on; an error is a line that is not one (the
// run is cancelled for it). The command's stdin ends at stdin_end or at
// the connection's end.
func readInput(br *bufio.Reader, in input) error {
	defer in.stdin.Close()
	ended := false
	for {
		line, err := readInputLine(br, maxInputLine)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		l, err := decodeInput(line, in.tty)
		if err != nil {
			return err
		}
		switch {
		case l.StdinEnd:
			if !ended {
				in.stdin.Close()
				ended = true
			}
		case l.Resize != nil:
			in.resize(l.Resize.Rows, l.Resize.Cols)
		case !ended:
			// A command that stopped reading makes this wait, as a pipe
			// would; the run's end (Close) lets it go.
			if _, err := in.stdin.Write(l.Stdin); err != nil {
				ended = true
			}
		}
	}
}

// decodeInput checks one input line: one field of InputLine, nothing
// else; resize only with a terminal.
func decodeInput(line []byte, tty bool) (InputLine, error) {
	var l InputLine
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&l); err != nil {
		return l, fmt.Errorf("an input line that is not one: %v; send {\"stdin\": BASE64}, {\"stdin_end\": true} or {\"resize\": {\"rows\", \"cols\"}}", err)
	}
	n := 0
	for _, set := range []bool{l.Stdin != nil, l.StdinEnd, l.Resize != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return l, errors.New("an input line must have one of stdin, stdin_end and resize")
	case l.Resize != nil && !tty:
		return l, errors.New("resize: only a run with a terminal (tty) has a size")
	}
	return l, nil
}

// readInputLine reads one line of at most max bytes, without its newline.
func readInputLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return nil, fmt.Errorf("an input line over %d bytes; send stdin in smaller chunks", max)
		}
		if err == nil {
			return bytes.TrimSuffix(line, []byte("\n")), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
