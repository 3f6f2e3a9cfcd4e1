package main

import (
	"errors"
	"io"
	"os"
	"testing"
)

// tellExec writes the line only when the command was exec'd, and closes
// the descriptor either way: its reader sees the end.
func TestTellExec(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, execFDLine},
		{errors.New("not found"), ""},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		tellExec(w, func() error { return c.err })
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != c.want {
			t.Errorf("WaitExec %v: the reader got %q (%v), want %q and the end", c.err, got, err, c.want)
		}
	}
}
