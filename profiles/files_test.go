package profiles

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A profile file, or a file it extends, that is not a regular file of at
// most MaxSize (1 MiB) is refused before anything reads it: a FIFO would block the
// read (or an open for reading) for ever, a device would never end.
func TestProfileFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	exact := writeFile(t, dir, "exact.toml", "extends = \"default\"\n"+strings.Repeat("#", MaxSize-len("extends = \"default\"\n")-1)+"\n")
	over := writeFile(t, dir, "over.toml", "extends = \"default\"\n"+strings.Repeat("#", MaxSize-len("extends = \"default\"\n"))+"\n")
	cases := []struct {
		path, want string
	}{
		{fifo, fifo + " is a FIFO (named pipe), not a regular file"},
		{writeFile(t, dir, "child.toml", "extends = \"fifo.toml\"\n"), fifo + " is a FIFO"},
		{"/dev/zero", "/dev/zero is a character device, not a regular file"},
		{dir, dir + " is a directory, not a regular file"},
		{over, over + ": larger than 1 MiB"},
		{writeFile(t, dir, "extends-over.toml", "extends = \"over.toml\"\n"), "larger than 1 MiB"},
		{writeFile(t, dir, "extends-missing.toml", "extends = \"missing.toml\"\n"), filepath.Join(dir, "missing.toml")},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() {
			p, err := Load(c.path)
			if err == nil {
				p.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("Load(%s) = %v, want one line with %q", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) hangs", c.path)
		}
	}
	p, err := Load(exact)
	if err != nil {
		t.Fatalf("a profile of exactly MaxSize bytes: %v", err)
	}
	p.Close()
}

// Every error Load returns is one line: several unknown keys are joined
// with "; ", and a newline that a key or a file name brought in is shown
// as \n.
func TestLoadErrorsOneLine(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content string
		want          []string
	}{
		{"two.toml", "extends = \"default\"\nfoo = 1\n[seccomp]\nbar = 2\n", []string{"two.toml:2:1: foo: unknown key", "; ", "two.toml:4:1: seccomp.bar: unknown key"}},
		{"key.toml", "extends = \"default\"\n\"a\\nb\" = 1\n", []string{`"a\nb": unknown key`}},
		{"a\nb.toml", "extends = \"default\"\n[limits]\nmemory = \"x\"\n", []string{`a\nb.toml:3:1: limits.memory: invalid size "x"`}},
		{"ext.toml", "extends = \"new\\nline.toml\"\n", []string{`new\nline.toml`}},
	}
	for _, c := range cases {
		f := writeFile(t, dir, c.name, c.content)
		err := loadErr(t, f)
		if strings.ContainsAny(err.Error(), "\n\r") {
			t.Errorf("%q: error of several lines: %q", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.name, err, w)
			}
		}
	}
}
