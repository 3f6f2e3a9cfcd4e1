package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine is the longest line StdioTransport takes: the SDK's own bound
// on one message (mcp.DefaultMaxLineLength, 16 MiB).
const MaxLine = mcp.DefaultMaxLineLength

// StdioTransport is MCP's stdio transport (newline-delimited JSON-RPC on
// in and out) that survives a bad line. The SDK's own (mcp.StdioTransport)
// ends the session on the first line that is not a JSON-RPC message: its
// reader decodes one JSON stream and stops at an error, and an error from
// a read closes the connection. Here each line is checked before the SDK
// reads it, with the SDK's own decoder (jsonrpc.DecodeMessage); a line
// that fails is answered with a JSON-RPC error and dropped, and the next
// is read:
//
//   - not one JSON value: -32700 (parse error), id null;
//   - JSON but not a JSON-RPC message (a wrong "jsonrpc", an id that is
//     not a string or number, neither a method nor an id, ...), a batch
//     (an array: MCP 2025-06-18 removed them, and the SDK ends a session
//     of that version on one), or a line over MaxLine bytes: -32600
//     (invalid request), with the line's id when it has a usable one, else
//     null.
//
// Blank lines are skipped. Closing the transport's connection closes in.
func StdioTransport(in io.ReadCloser, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{
		Reader: &lineGuard{in: bufio.NewReaderSize(in, 64<<10), closer: in, out: w, max: MaxLine},
		Writer: w,
		// The guard bounds each line; the SDK's count of a frame would
		// also count what its decoder reads ahead.
		MaxLineLength: -1,
	}
}

// lockedWriter writes whole messages: the SDK's (one Write each, under
// its own lock) and the guard's answers never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves out open, as the SDK's stdio transport leaves stdout.
func (l *lockedWriter) Close() error { return nil }

// lineGuard hands the SDK the lines that are JSON-RPC messages, one at a
// time, each ending in "\n", and answers the others.
type lineGuard struct {
	in     *bufio.Reader
	closer io.Closer
	out    io.Writer
	max    int

	pending []byte // the rest of the line being handed out
	err     error  // the input's end, returned once pending is out
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, tooLong, err := g.readLine()
		answer := []byte(nil)
		switch {
		case tooLong:
			answer = errorLine(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid request: a line of more than %d bytes; send each message on one line of at most that", g.max))
		case line != nil:
			answer = checkLine(line)
			if answer == nil {
				g.pending = append(line, '\n')
			}
		}
		if answer != nil {
			if _, werr := g.out.Write(answer); werr != nil {
				return 0, werr
			}
		}
		g.err = err
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

func (g *lineGuard) Close() error { return g.closer.Close() }

// readLine reads the next line, without its end and surrounding blanks
// (nil for a blank one). A line over max bytes is read to its end and
// dropped (tooLong), so that no more than max is ever held. The error is
// the input's (io.EOF at its end, with the last line if it has no "\n").
func (g *lineGuard) readLine() (line []byte, tooLong bool, err error) {
	for {
		var chunk []byte
		chunk, err = g.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > g.max+2 { // a "\r\n" end is not the line's
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if tooLong {
		return nil, true, err
	}
	if line = bytes.TrimSpace(line); len(line) == 0 {
		line = nil
	}
	return line, false, err
}

// checkLine returns the answer to a line the SDK must not see, nil for a
// JSON-RPC message.
func checkLine(line []byte) []byte {
	var v json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return errorLine(nil, jsonrpc.CodeParseError, "Parse error: not one JSON value on this line ("+err.Error()+"); send each JSON-RPC message as one line of JSON")
	}
	if line[0] == '[' {
		return errorLine(nil, jsonrpc.CodeInvalidRequest, "Invalid request: a JSON-RPC batch (an array); send each message on a line of its own (MCP 2025-06-18 has no batches)")
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return errorLine(lineID(line), jsonrpc.CodeInvalidRequest, "Invalid request: not a JSON-RPC 2.0 message ("+err.Error()+")")
	}
	return nil
}

// errorLine is a JSON-RPC error response with id (nil: null), as a line.
func errorLine(id any, code int, msg string) []byte {
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	if err != nil {
		panic(err) // strings and numbers only
	}
	return append(b, '\n')
}

// lineID is a line's id when it is one JSON-RPC allows (a string or a
// number), so that a client waiting on it gets its answer; nil otherwise.
func lineID(line []byte) any {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil || len(probe.ID) == 0 {
		return nil
	}
	var id any
	dec := json.NewDecoder(bytes.NewReader(probe.ID))
	dec.UseNumber()
	if dec.Decode(&id) != nil {
		return nil
	}
	switch id.(type) {
	case string, json.Number:
		return id
	}
	return nil
}
