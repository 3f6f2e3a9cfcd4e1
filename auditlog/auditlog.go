// Package auditlog reads an audit log back: the lines of runs
// (report.AuditLine), of requests a server refused, and of tool calls
// (call.Line), one JSON object a line. It is the reading end of the trail
// that `tooljail audit show` prints.
//
// A log can end in the middle of a line (a writer that died mid-write, or
// one that is writing now: each line is one write(2), so a reader can see
// none of it or all of it, but a full disk can cut it). Reader returns
// only whole lines and keeps the rest until its newline comes, so that a
// follower sees each line once, whole.
package auditlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools/call"
)

// Entry is one line of an audit log: every field a run's or a tool
// call's line can hold (a run's line leaves the call's empty), and the
// line as it was written.
type Entry struct {
	call.Line
	Raw []byte // the line, without its newline
}

// IsCall says whether the entry is a tool call's.
func (e *Entry) IsCall() bool { return e.CallID != "" || e.Tool != "" }

// MaxLine is the longest line Reader takes; a longer one is skipped with a
// *LineError. The writers' lines are far shorter: each argument is cut to
// 1 KiB.
const MaxLine = 1 << 20

// LineError is a line that is not an audit line; reading can go on.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Reader reads entries from a log.
type Reader struct {
	src     *bufio.Reader
	pending []byte // the start of a line whose newline has not come yet
	line    int    // lines read so far
	skip    bool   // in a line longer than MaxLine: drop until its newline
}

// NewReader reads the log r.
func NewReader(r io.Reader) *Reader { return &Reader{src: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next whole line's entry. At the end of what r holds it
// returns io.EOF; Pending then says how many bytes of an incomplete last
// line it holds, which a later Next returns once r has the rest (a
// follower calls Next again after r grew). A line that is not a JSON
// object is a *LineError, and Next can be called again.
func (r *Reader) Next() (Entry, error) {
	for {
		chunk, err := r.src.ReadSlice('\n')
		switch {
		case r.skip:
		case len(r.pending)+len(chunk) > MaxLine+1:
			r.skip, r.pending = true, r.pending[:0]
		default:
			r.pending = append(r.pending, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err == io.EOF {
				return Entry{}, io.EOF
			}
			return Entry{}, err
		}
		r.line++
		if r.skip {
			r.skip = false
			return Entry{}, &LineError{Line: r.line, Err: fmt.Errorf("longer than %d bytes, skipped", MaxLine)}
		}
		b := bytes.TrimSuffix(r.pending, []byte("\n"))
		r.pending = r.pending[:0]
		e, perr := Parse(b)
		if perr != nil {
			return Entry{}, &LineError{Line: r.line, Err: perr}
		}
		return e, nil
	}
}

// Pending is how many bytes of an incomplete last line Next holds.
func (r *Reader) Pending() int { return len(r.pending) }

// Line is the number of the last line Next read.
func (r *Reader) Line() int { return r.line }

// Parse reads one line (without its newline).
func Parse(b []byte) (Entry, error) {
	var e Entry
	if len(bytes.TrimSpace(b)) == 0 {
		return e, errors.New("empty line")
	}
	if err := json.Unmarshal(b, &e.Line); err != nil {
		return e, fmt.Errorf("not an audit line: %v", err)
	}
	if e.Time.IsZero() {
		return e, errors.New("not an audit line: no time")
	}
	e.Raw = append([]byte(nil), b...)
	return e, nil
}

// Filter selects entries; a zero field selects all.
type Filter struct {
	Tool   string    // only calls of this tool
	Since  time.Time // only entries at or after it
	Status string    // only entries of this status ("exited", "refused", ...)
}

// Match says whether f selects e.
func (f Filter) Match(e *Entry) bool {
	if f.Tool != "" && e.Tool != f.Tool {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if f.Status != "" && string(e.Status) != f.Status {
		return false
	}
	return true
}

// Statuses are the statuses a line can have: a run's, refused, and a
// stopped session's.
var Statuses = []report.Status{
	report.StatusExited, report.StatusSignaled, report.StatusTimeout, report.StatusMemoryLimit, report.StatusViolation,
	report.StatusSetupError, report.StatusAborted, report.StatusCancelled, report.StatusRefused, report.StatusSession,
}
