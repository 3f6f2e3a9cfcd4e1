package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"unicode/utf8"
	"unsafe"
)

// Stream is what the command wrote to stdout or stderr.
type Stream struct {
	Bytes     int64 `json:"bytes"`     // everything the command wrote
	Truncated bool  `json:"truncated"` // some of it was over the output limit and dropped
	// Text is the captured output (CaptureOutput): what was relayed, and when
	// truncated also the last bytes of the stream after a marker line. It
	// is at most the output limit, plus 4 KiB and the marker line when
	// truncated, and shares the buffer it was captured in. In Go it is
	// the bytes exactly. In JSON it is written only when it is valid
	// UTF-8 (else Base64 is), and a byte takes at most six bytes
	// (\u0001): WriteTextJSON writes that form without holding it whole.
	Text *string `json:"text,omitempty"`
	// Base64 is the same bytes as Text, and is set (sharing Text's
	// buffer: do not modify it) exactly when they are not valid UTF-8,
	// which a JSON string cannot carry. In JSON it takes the text's place
	// (MarshalJSON): the standard base64 of the bytes, written by
	// WriteBase64JSON without holding it whole. A client that decodes a
	// report (serve.Client) makes Text of it again (Exact).
	Base64 []byte `json:"base64,omitempty"`
	// Merged is set on the stderr entry of a run whose stderr was its
	// stdout (Cmd.MergeStderr): everything is in the stdout entry, in the
	// order it was written, and this one counts nothing.
	Merged bool `json:"merged,omitempty"`
	// TTY is set on the stdout entry of a run with a terminal (Cmd.TTY):
	// it holds what the command wrote to the terminal, stderr included,
	// as the terminal gave it ("\n" became "\r\n", input was echoed).
	TTY bool `json:"tty,omitempty"`
}

// MarshalJSON writes text or base64, never both: a JSON text of bytes
// that are not UTF-8 would turn each invalid byte into a six-byte
// \ufffd, losing them at up to six times their size.
func (s Stream) MarshalJSON() ([]byte, error) {
	type plain Stream
	p := plain(s)
	if p.Base64 != nil {
		p.Text = nil
	}
	return json.Marshal(p)
}

// NewStream is the report's entry of a captured stream: bytes written,
// whether some were dropped, and the text kept, with Base64 set (sharing
// the text's memory) exactly when it is not valid UTF-8.
func NewStream(bytes int64, truncated bool, text *string) Stream {
	s := Stream{Bytes: bytes, Truncated: truncated, Text: text}
	if text != nil && !utf8.ValidString(*text) {
		s.Base64 = unsafe.Slice(unsafe.StringData(*text), len(*text))
	}
	return s
}

// Exact sets Text from Base64 when there is one: what a reader of the
// JSON does to get the exact bytes back (Text in JSON is lossy then).
func (s *Stream) Exact() {
	if s.Base64 != nil {
		t := string(s.Base64)
		s.Text = &t
	}
}

// textPiece is how much of a text WriteTextJSON escapes at a time.
const textPiece = 32 << 10

// WriteTextJSON writes s.Text to w as a JSON string, byte for byte what
// encoding/json makes of it (null when there is none), a piece at a time:
// the escaped form, up to six times the text, is never in memory whole.
// A report writer puts it where json.Marshal of the Result has the text.
func (s Stream) WriteTextJSON(w io.Writer) error {
	if s.Text == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	text := *s.Text
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	for len(text) > 0 {
		n := textCut(text, textPiece)
		buf.Reset()
		if err := enc.Encode(text[:n]); err != nil {
			return err
		}
		// Encode wrote the piece in quotes and a newline.
		if _, err := w.Write(buf.Bytes()[1 : buf.Len()-2]); err != nil {
			return err
		}
		text = text[n:]
	}
	_, err := io.WriteString(w, `"`)
	return err
}

// base64Piece is how many bytes WriteBase64JSON encodes at a time: a
// multiple of 3, so that the pieces make the base64 of the whole.
const base64Piece = 48 << 10

// WriteBase64JSON writes s.Base64 to w as encoding/json writes a []byte
// (a JSON string of its standard base64; null when there is none), a
// piece at a time.
func (s Stream) WriteBase64JSON(w io.Writer) error {
	if s.Base64 == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	b := s.Base64
	buf := make([]byte, 0, 1+base64.StdEncoding.EncodedLen(min(len(b), base64Piece))+1)
	buf = append(buf, '"')
	for {
		n := min(len(b), base64Piece)
		buf = base64.StdEncoding.AppendEncode(buf, b[:n])
		b = b[n:]
		if len(b) == 0 {
			buf = append(buf, '"')
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		buf = buf[:0]
	}
}

// textCut is where to end the piece of text that starts it, near n: where
// a UTF-8 decoder ends a rune or an invalid byte when it decodes the whole
// text, so that the pieces escape as the whole does (no rune is split into
// two U+FFFD). That is before a byte that is not a continuation byte, or
// after three continuation bytes: no rune has more.
func textCut(text string, n int) int {
	if n >= len(text) {
		return len(text)
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(text[i]) {
			return i
		}
	}
	return n
}
