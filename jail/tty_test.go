package jail

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestTTYSize(t *testing.T) {
	for _, c := range []struct {
		in         TTY
		rows, cols uint16
	}{
		{TTY{}, 24, 80},
		{TTY{Rows: 50}, 50, 80},
		{TTY{Cols: 132}, 24, 132},
		{TTY{Rows: 1, Cols: 1}, 1, 1},
		{TTY{Rows: 65535, Cols: 65535}, 65535, 65535},
	} {
		if r, cl := ttySize(c.in); r != c.rows || cl != c.cols {
			t.Errorf("ttySize(%+v) = %d, %d; want %d, %d", c.in, r, cl, c.rows, c.cols)
		}
	}
}

func TestTTYEnd(t *testing.T) {
	for _, c := range []struct {
		typed string
		want  string
	}{
		{"", "\x04"},
		{"line\n", "\x04"},
		{"partial", "\x04\x04"},
		{"a\nb", "\x04\x04"},
		{"\r", "\x04\x04"},
	} {
		if got := string(ttyEnd([]byte(c.typed))); got != c.want {
			t.Errorf("ttyEnd(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}

// errAfter is a reader that gives its data, then an error other than EOF.
type errAfter struct{ data *strings.Reader }

func (e errAfter) Read(p []byte) (int, error) {
	if e.data.Len() == 0 {
		return 0, errors.New("broken")
	}
	return e.data.Read(p)
}

// typeInto types the input, then the end-of-file characters its last byte
// calls for; nil is an empty input; an input that fails is not ended (the
// command keeps what was typed and is not told a false end).
func TestTypeInto(t *testing.T) {
	for _, c := range []struct {
		name string
		in   func() any
		want string
	}{
		{"nil", func() any { return nil }, "\x04"},
		{"lines", func() any { return strings.NewReader("a\nb\n") }, "a\nb\n\x04"},
		{"partial", func() any { return strings.NewReader("a\nb") }, "a\nb\x04\x04"},
		{"failed", func() any { return errAfter{strings.NewReader("x")} }, "x"},
	} {
		var b bytes.Buffer
		switch in := c.in().(type) {
		case nil:
			typeInto(&b, nil)
		case *strings.Reader:
			typeInto(&b, in)
		case errAfter:
			typeInto(&b, in)
		}
		if b.String() != c.want {
			t.Errorf("%s: typed %q, want %q", c.name, b.String(), c.want)
		}
	}
}
