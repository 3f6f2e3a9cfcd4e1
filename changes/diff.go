package changes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DiffLimit is the largest file WriteDiff compares line by line; a bigger
// one gets a line saying so.
const DiffLimit = 4 << 20

// diffContext is the lines of context around each hunk (diff -u's 3).
const diffContext = 3

// maxEdits bounds the line diff's work: beyond this many inserted and
// deleted lines (after the common head and tail) a file's middle is shown
// as replaced whole. Memory grows as its square.
const maxEdits = 2000

// WriteDiff writes what c does to its path, for `tooljail changes diff`:
// for content (a regular file on either side), a unified diff from old
// (the host's file, the lower layer) to new (the change set's file),
// with "a/PATH" and "b/PATH" labels (patch -p1 in the bind's root applies
// it; /dev/null for a side that is absent); binary content (a NUL in its
// first 8000 bytes, as git decides) or a file over DiffLimit gets one line.
// Other changes are one line each: a new or deleted directory, a symlink's
// target, a mode or type change, a skipped special file. A name that
// needs it is quoted as a Go string ("a/x\ny").
//
// old is nil when the host has no regular file there (c.Kind Created, or a
// type change from something else); new is nil when the change set has no
// regular file there (Deleted, a type change to something else); pass a
// plain nil, not a nil *os.File. Each is read from where it stands, at
// most DiffLimit+1 bytes.
func WriteDiff(w io.Writer, c Change, old, new io.Reader) error {
	bw := bufio.NewWriter(w)
	writeDiff(bw, c, old, new)
	return bw.Flush()
}

func writeDiff(w *bufio.Writer, c Change, old, new io.Reader) {
	a, b := label("a/", c.Path), label("b/", c.Path)
	note := diffNote(c)
	line, done := kindLine(c, a, b, note)
	w.WriteString(line)
	if done {
		return
	}
	line, done = typeLine(c, b, note)
	w.WriteString(line)
	if done {
		return
	}
	writeFileDiff(w, c, a, b, old, new)
}

// diffNote says, after an entry's line, why apply will not write it.
func diffNote(c Change) string {
	switch {
	case c.Protected:
		return " (protected: apply does not write it)"
	case c.Skipped != "":
		return " (not applied: " + c.Skipped + ")"
	}
	return ""
}

// kindLine is what the change's kind says of entry a (before) or b
// (after): all there is to say (done) of a deletion other than a file's,
// a new directory, a mode change; a first line of a type or mode change
// with content.
func kindLine(c Change, a, b, note string) (line string, done bool) {
	oldType := ""
	if c.Base.Exists {
		oldType = typeOf(c.Base.Mode)
	}
	switch {
	case c.Kind == Deleted && c.Type == TypeDir:
		return fmt.Sprintf("deleted directory %s (and everything in it)%s\n", a, note), true
	case c.Kind == Deleted && c.Type != TypeFile:
		return fmt.Sprintf("deleted %s %s%s\n", c.Type, a, note), true
	case c.Kind == Created && c.Type == TypeDir:
		return fmt.Sprintf("new directory %s mode %s%s\n", b, c.Mode, note), true
	case c.Kind == TypeChanged:
		return fmt.Sprintf("type of %s: %s -> %s%s\n", b, oldType, c.Type, note), false
	case c.Kind == ModeChanged:
		return fmt.Sprintf("mode of %s: %04o -> %s%s\n", b, c.Base.Mode&07777, c.Mode, note), true
	case c.Kind == Modified && c.Base.Exists && c.Base.Mode&07777 != permBits(c.Mode):
		return fmt.Sprintf("mode of %s: %04o -> %s\n", b, c.Base.Mode&07777, c.Mode), false
	}
	return "", false
}

// typeLine is what the type of b says: all there is (done) for anything
// but a regular file's content, the note before a file's content.
func typeLine(c Change, b, note string) (line string, done bool) {
	switch c.Type {
	case TypeSymlink:
		return fmt.Sprintf("symlink %s -> %s%s\n", b, quoteIfNeeded(c.Target), note), true
	case TypeDir:
		if c.Kind != TypeChanged {
			return fmt.Sprintf("directory %s%s\n", b, note), true
		}
		return "", true
	case TypeFIFO, TypeSocket, TypeDevice:
		if c.Kind != TypeChanged {
			return fmt.Sprintf("new %s %s%s\n", c.Type, b, note), true
		}
		return "", true
	}
	if c.Link != "" {
		return fmt.Sprintf("hard link %s to %s%s\n", b, label("b/", c.Link), note), true
	}
	if note != "" && c.Kind != TypeChanged {
		return fmt.Sprintf("%s%s\n", b, note), false
	}
	return "", false
}

// writeFileDiff compares a regular file's content (a nil side: none), by
// lines unless either is binary or too large.
func writeFileDiff(w *bufio.Writer, c Change, a, b string, old, new io.Reader) {
	oldData, oldBig, err := readLimited(old)
	if err != nil {
		fmt.Fprintf(w, "%s: cannot read the host's file: %v\n", a, err)
		return
	}
	newData, newBig, err := readLimited(new)
	if err != nil {
		fmt.Fprintf(w, "%s: cannot read the change set's file: %v\n", b, err)
		return
	}
	if old == nil {
		a = "/dev/null"
	}
	if new == nil {
		b = "/dev/null"
	}
	switch {
	case isBinary(oldData) || isBinary(newData):
		fmt.Fprintf(w, "Binary files %s and %s differ (%d -> %d bytes)\n", a, b, sizeOf(c.Base, old, oldData, oldBig), sizeOf(Stamp{Exists: true, Size: c.Size}, new, newData, newBig))
		return
	case oldBig || newBig:
		fmt.Fprintf(w, "Files %s and %s differ (too large to compare by lines: over %d bytes)\n", a, b, DiffLimit)
		return
	}
	unified(w, a, b, splitLines(oldData), splitLines(newData))
}

// permBits reads an Entry.Mode ("0644").
func permBits(s string) uint32 {
	v, _ := strconv.ParseUint(s, 8, 32)
	return uint32(v)
}

// label is prefix+path, quoted when the path has a byte a line-based
// reader could misread (control characters, quotes, backslashes, non-UTF-8).
func label(prefix, p string) string { return quoteIfNeeded(prefix + p) }

func quoteIfNeeded(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }) {
		return strconv.Quote(s)
	}
	return s
}

// readLimited reads r whole up to DiffLimit bytes; big says there was more.
func readLimited(r io.Reader) (data []byte, big bool, err error) {
	if r == nil {
		return nil, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(r, DiffLimit+1))
	if err != nil {
		return nil, false, err
	}
	// A big file keeps its head: a NUL there makes it binary, whatever
	// its size.
	return data, len(data) > DiffLimit, nil
}

// sizeOf is a side's size for the binary line: what was read, or for a
// big file its recorded size; 0 for an absent side.
func sizeOf(s Stamp, r io.Reader, data []byte, big bool) int64 {
	switch {
	case r == nil:
		return 0
	case big:
		return s.Size
	}
	return int64(len(data))
}

func isBinary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 }

// splitLines splits after each newline; the last line may lack one.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// op is one line of an edit script: ' ' kept, '-' deleted, '+' inserted.
type op struct {
	kind byte
	line string
}

// unified writes the unified diff of x to y (diff -u's format, with
// "\ No newline at end of file" where a last line lacks one).
func unified(w *bufio.Writer, a, b string, x, y []string) {
	ops := editScript(x, y)
	changed := false
	for _, o := range ops {
		if o.kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", a, b)
	// Hunks: runs of changes with up to 2*diffContext kept lines between.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			k := end
			for k < len(ops) && ops[k].kind == ' ' {
				k++
			}
			if k == len(ops) || k-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = k
		}
		writeHunk(w, ops, start, end)
		i = end
	}
}

func writeHunk(w *bufio.Writer, ops []op, start, end int) {
	// Line numbers: count the old and new lines before start.
	oldLine, newLine := 1, 1
	for _, o := range ops[:start] {
		if o.kind != '+' {
			oldLine++
		}
		if o.kind != '-' {
			newLine++
		}
	}
	oldN, newN := 0, 0
	for _, o := range ops[start:end] {
		if o.kind != '+' {
			oldN++
		}
		if o.kind != '-' {
			newN++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(oldLine, oldN), hunkRange(newLine, newN))
	for _, o := range ops[start:end] {
		w.WriteByte(o.kind)
		w.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is diff -u's "start,count" (start is the line before an
// empty range; ",1" is left out).
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return strconv.Itoa(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// editScript is a shortest edit script from x to y (Myers' O(ND)
// algorithm) after the common head and tail; beyond maxEdits the middle
// is shown replaced whole.
func editScript(x, y []string) []op {
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	var ops []op
	for _, l := range x[:head] {
		ops = append(ops, op{' ', l})
	}
	mx, my := x[head:len(x)-tail], y[head:len(y)-tail]
	if mid, ok := myers(mx, my); ok {
		ops = append(ops, mid...)
	} else {
		for _, l := range mx {
			ops = append(ops, op{'-', l})
		}
		for _, l := range my {
			ops = append(ops, op{'+', l})
		}
	}
	for _, l := range x[len(x)-tail:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// myers is the shortest edit script from x to y, or false when it has
// more than maxEdits edits.
func myers(x, y []string) ([]op, bool) {
	n, m := len(x), len(y)
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d] = v[-d..d] before step d's moves
	for d := 0; d <= maxD; d++ {
		snap := make([]int, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = v[off+k+1] // down: an insertion
			} else {
				i = v[off+k-1] + 1 // right: a deletion
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i, j = i+1, j+1
			}
			v[off+k] = i
			if i >= n && j >= m {
				return backtrack(x, y, trace, d, k, i), true
			}
		}
	}
	return nil, false
}

// backtrack walks the trace from the end (step d, diagonal k, x index
// i) back to the start and returns the edit script in order.
func backtrack(x, y []string, trace [][]int, d, k, i int) []op {
	var rev []op
	j := i - k
	for ; d > 0; d-- {
		prev := trace[d] // v before step d: diagonals -d..d at 0..2d
		at := func(k int) int { return prev[k+d] }
		down := k == -d || (k != d && at(k-1) < at(k+1))
		pk := k - 1
		if down {
			pk = k + 1
		}
		pi := at(pk)
		pj := pi - pk
		mi := pi // where the step's move ended, before its snake
		if !down {
			mi = pi + 1
		}
		for i > mi {
			rev = append(rev, op{' ', x[i-1]})
			i, j = i-1, j-1
		}
		if down {
			rev = append(rev, op{'+', y[pj]})
		} else {
			rev = append(rev, op{'-', x[pi]})
		}
		i, j, k = pi, pj, pk
	}
	for i > 0 {
		rev = append(rev, op{' ', x[i-1]})
		i--
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}
