package changes

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recordDiff records what Diff hands WriteDiff: the entry and both sides.
func recordDiff(out *[]string) diffWriter {
	return func(w io.Writer, c Change, old, new io.Reader) error {
		side := func(r io.Reader) string {
			if r == nil {
				return "<none>"
			}
			b, err := io.ReadAll(r)
			if err != nil {
				return "error: " + err.Error()
			}
			return string(b)
		}
		*out = append(*out, fmt.Sprintf("%s %s %q %q", c.Kind, c.Path, side(old), side(new)))
		return nil
	}
}

func TestDiffSides(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"mod.txt": "old\n", "gone.txt": "bye\n", "file2link": "was\n"})
	f.file("mod.txt", "new\n", 0o644)
	f.file("new.txt", "hello\n", 0o644)
	f.del("gone.txt")
	f.symlink("file2link", "mod.txt")
	id := f.finish()
	for _, c := range []struct {
		path string
		want []string
	}{
		{"", []string{
			`type_changed file2link "was\n" "<none>"`,
			`deleted gone.txt "bye\n" "<none>"`,
			`modified mod.txt "old\n" "new\n"`,
			`created new.txt "<none>" "hello\n"`,
		}},
		{"mod.txt", []string{`modified mod.txt "old\n" "new\n"`}},
		{"/work/new.txt", []string{`created new.txt "<none>" "hello\n"`}},
	} {
		var got []string
		must(t, f.s.diffWith(io.Discard, id, c.path, recordDiff(&got)))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("Diff(%q):\n%s\nwant\n%s", c.path, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if err := f.s.Diff(io.Discard, id, "nope"); err == nil || !strings.Contains(err.Error(), "no entry") {
		t.Errorf("Diff(unknown) = %v", err)
	}
	var buf bytes.Buffer
	must(t, f.s.Diff(&buf, id, "mod.txt"))
	if !strings.Contains(buf.String(), "mod.txt") {
		t.Errorf("Diff wrote %q", buf.String())
	}
	// The project changed into a symlink: the old side is not followed.
	must(t, os.Remove(filepath.Join(f.host, "mod.txt")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(f.host, "mod.txt")))
	var got []string
	must(t, f.s.diffWith(io.Discard, id, "mod.txt", recordDiff(&got)))
	if len(got) != 1 || got[0] != `modified mod.txt "<none>" "new\n"` {
		t.Errorf("through a symlink: %v", got)
	}
	must(t, os.Remove(filepath.Join(f.host, "mod.txt")))
	must(t, os.WriteFile(filepath.Join(f.host, "mod.txt"), []byte("old\n"), 0o644))
	_, err := f.s.Apply(id, ApplyOptions{Force: true})
	must(t, err)
	if err := f.s.Diff(io.Discard, id, ""); err == nil || !strings.Contains(err.Error(), "applied") {
		t.Errorf("Diff(applied) = %v", err)
	}
}

func TestPickEntries(t *testing.T) {
	changes := []Change{
		{Entry: Entry{Bind: "/home/u/proj", Path: "a.txt"}},
		{Entry: Entry{Bind: "/home/u/proj", Path: "sub/b.txt"}},
		{Entry: Entry{Bind: "/data", Path: "a.txt"}},
	}
	for _, c := range []struct {
		p    string
		want []int
	}{
		{"", []int{0, 1, 2}},
		{"a.txt", []int{0, 2}},
		{"/home/u/proj/a.txt", []int{0}},
		{"/home/u/proj//sub/./b.txt", []int{1}},
		{"/data/a.txt", []int{2}},
		{"b.txt", nil},
		{"sub/b.txt", []int{1}},
	} {
		if got := pickEntries(changes, c.p); !slices.Equal(got, c.want) {
			t.Errorf("pickEntries(%q) = %v, want %v", c.p, got, c.want)
		}
	}
}
