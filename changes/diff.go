package changes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// diffLimit is the largest file Diff compares line by line; a bigger one
// gets one line, as a binary file does.
const diffLimit = 4 << 20

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// Diff writes, for each change of set id (or the one path names: its
// Path, or "DEST/PATH" with its bind's destination), what applying it
// would do to the host as it is now: a unified diff for a text file, one
// line for anything else (a binary or large file, a directory, a
// symlink, a deletion of a tree).
func (s *Store) Diff(w io.Writer, id, name string) error {
	set, err := s.Get(id)
	if err != nil {
		return err
	}
	fd, err := openBeneath(int(s.root.Fd()), id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("change set %s: %w", id, err)
	}
	dir := os.NewFile(uintptr(fd), path.Join(s.dir, id))
	defer dir.Close()
	idx := map[string]int{}
	for i, b := range set.Binds {
		idx[b.Dest] = i
	}
	found := false
	for _, c := range set.Changes {
		label := c.Path
		if len(set.Binds) > 1 {
			label = strings.TrimSuffix(c.Bind, "/") + "/" + c.Path
		}
		if name != "" && name != c.Path && name != strings.TrimSuffix(c.Bind, "/")+"/"+c.Path {
			continue
		}
		found = true
		b := idx[c.Bind]
		oldData, oldText := hostContent(set.Binds[b], c)
		newData, newText := upperContent(dir, b, c)
		if err := writeChange(w, label, c, oldData, newData, oldText && newText); err != nil {
			return err
		}
	}
	if name != "" && !found {
		return fmt.Errorf("change set %s has no change at %q (`tooljail changes show %s` lists them)", id, name, id)
	}
	return nil
}

// hostContent is the host's regular file at c's path now, and whether it
// can be diffed as text; nil when it is no regular file (or absent).
func hostContent(b BindInfo, c Change) ([]byte, bool) {
	if !c.Base.Exists || c.Base.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, true
	}
	root, err := hostpath.Open(b.Host, hostpath.Options{})
	if err != nil {
		return nil, false
	}
	defer root.Close()
	if root.Stat.Dev != b.Dev || root.Stat.Ino != b.Ino {
		return nil, false
	}
	fd, err := openBeneath(int(root.File.Fd()), c.Path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	return readText(fd)
}

// upperContent is the set's new regular file at c's path.
func upperContent(dir *os.File, bind int, c Change) ([]byte, bool) {
	if c.Kind == Deleted || c.Type != TypeFile {
		return nil, true
	}
	fd, err := openBeneath(int(dir.Fd()), path.Join(upperDir, fmt.Sprint(bind), c.Path), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	return readText(fd)
}

// readText reads a regular file of fd (closed) up to diffLimit: its bytes
// and whether they are text (UTF-8 without NUL).
func readText(fd int) ([]byte, bool) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > diffLimit {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, diffLimit+1))
	if err != nil || len(b) > diffLimit {
		return nil, false
	}
	return b, IsText(b)
}

// IsText says whether b diffs as text: valid UTF-8 without NUL bytes.
func IsText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// writeChange writes one change: a unified diff when both sides are text
// files, else a line.
func writeChange(w io.Writer, label string, c Change, old, new []byte, text bool) error {
	q := quoteLabel(label)
	var line string
	switch {
	case c.Protected:
		line = fmt.Sprintf("%s: %s %s, protected: never applied\n", q, c.Kind, c.Type)
	case c.Skipped != "":
		line = fmt.Sprintf("%s: %s %s, not applied (%s)\n", q, c.Kind, c.Type, c.Skipped)
	case c.Kind == Deleted:
		if c.Type == TypeFile && text && old != nil {
			return WriteUnified(w, "a/"+label, "/dev/null", old, nil)
		}
		line = fmt.Sprintf("%s: deleted %s\n", q, c.Type)
	case c.Type == TypeSymlink:
		line = fmt.Sprintf("%s: symlink -> %s\n", q, quoteLabel(c.Target))
	case c.Type == TypeDir:
		line = fmt.Sprintf("%s: %s directory, mode %s\n", q, c.Kind, c.Mode)
	case c.Kind == ModeChanged:
		line = fmt.Sprintf("%s: mode %s\n", q, c.Mode)
	case c.Link != "":
		line = fmt.Sprintf("%s: hard link to %s\n", q, quoteLabel(c.Link))
	case !text:
		line = fmt.Sprintf("Binary files differ: %s (%d bytes, sha256 %s)\n", q, c.Size, orNone(c.SHA256))
	default:
		from := "a/" + label
		if old == nil {
			from = "/dev/null"
		}
		return WriteUnified(w, from, "b/"+label, old, new)
	}
	_, err := io.WriteString(w, line)
	return err
}

func orNone(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// quoteLabel shows a path as is when it is plain, else quoted, so that a
// name with a newline cannot fake a diff line.
func quoteLabel(p string) string {
	if strings.IndexFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f || r == '"' || r == '\\' }) < 0 {
		return p
	}
	return fmt.Sprintf("%q", p)
}

// WriteUnified writes the unified diff of old and new (lines of text)
// with the file labels from and to: nothing when they are equal.
func WriteUnified(w io.Writer, from, to string, old, new []byte) error {
	a, b := splitLines(old), splitLines(new)
	ops, err := diffLines(a, b)
	if err != nil {
		_, err := fmt.Fprintf(w, "Files differ: %s (too many changed lines to diff)\n", quoteLabel(to))
		return err
	}
	hunks := hunksOf(ops, len(a), len(b))
	if len(hunks) == 0 {
		return nil
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "--- %s\n+++ %s\n", quoteLabel(from), quoteLabel(to))
	for _, h := range hunks {
		fmt.Fprintf(&buf, "@@ -%s +%s @@\n", hunkRange(h.a0, h.a1), hunkRange(h.b0, h.b1))
		for _, o := range ops[h.o0:h.o1] {
			var l string
			if o.kind == '+' {
				l = b[o.b]
			} else {
				l = a[o.a]
			}
			buf.WriteByte(o.kind)
			buf.WriteString(l)
			if !strings.HasSuffix(l, "\n") {
				buf.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// hunkRange is a hunk's "start,count" for lines [lo, hi) (1-based start;
// an empty range starts at the line before it).
func hunkRange(lo, hi int) string {
	if hi-lo == 1 {
		return fmt.Sprint(lo + 1)
	}
	if hi == lo {
		return fmt.Sprintf("%d,0", lo)
	}
	return fmt.Sprintf("%d,%d", lo+1, hi-lo)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// op is one line of an edit script: ' ' both, '-' only a (index a), '+'
// only b (index b).
type op struct {
	kind byte
	a, b int
}

// maxEdits bounds the edit distance diffLines searches (its memory grows
// with its square).
const maxEdits = 4000

var errTooManyEdits = errors.New("too many changed lines")

// diffLines is a shortest edit script from a to b (Myers' algorithm).
func diffLines(a, b []string) ([]op, error) {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return nil, nil
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		if d > maxEdits {
			return nil, errTooManyEdits
		}
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, off, d), nil
			}
		}
	}
	return nil, errTooManyEdits
}

// backtrack walks the saved frontiers back from (len a, len b).
func backtrack(trace [][]int, a, b []string, off, dEnd int) []op {
	x, y := len(a), len(b)
	var rev []op
	for d := dEnd; d > 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || k != d && v[off+k-1] < v[off+k+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, op{' ', x, y})
		}
		if x == px {
			y--
			rev = append(rev, op{'+', x, y})
		} else {
			x--
			rev = append(rev, op{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{' ', x, y})
	}
	out := make([]op, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

// hunk is a stretch of ops [o0, o1) covering lines [a0, a1) and [b0, b1).
type hunk struct{ o0, o1, a0, a1, b0, b1 int }

// hunksOf groups the changes with diffContext lines around them.
func hunksOf(ops []op, na, nb int) []hunk {
	var hs []hunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		if len(hs) > 0 && start <= hs[len(hs)-1].o1 {
			start = hs[len(hs)-1].o0
			hs = hs[:len(hs)-1]
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*diffContext || run == len(ops) {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		h := hunk{o0: start, o1: end}
		h.a0, h.b0 = posOf(ops, start, na, nb)
		h.a1, h.b1 = posOf(ops, end, na, nb)
		hs = append(hs, h)
		i = end
	}
	return hs
}

// posOf is the line of a and of b where op i starts.
func posOf(ops []op, i, na, nb int) (int, int) {
	if i >= len(ops) {
		return na, nb
	}
	return ops[i].a, ops[i].b
}
