package hostside

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOutputOpen(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "old"), []byte("kept"), 0o644)
	for _, c := range []struct {
		name, want string
	}{
		{"link", "is a symlink"},
		{"fifo", "FIFO"},
		{"sub", "is a directory"},
		{"missing/x", "no such file"},
		{"link/x", "symlink"},
	} {
		o := &Output{Path: filepath.Join(dir, c.name), Perm: 0o644}
		err := o.Open()
		if err == nil {
			err = o.Create()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
		if o.File != nil {
			t.Errorf("%s: opened", c.name)
		}
	}
	// A missing file is created by create, not by open; refuse closes.
	o := &Output{Path: filepath.Join(dir, "new"), Perm: 0o600}
	if err := o.Open(); err != nil || o.File != nil {
		t.Fatalf("open of a missing file: %v, file %v", err, o.File)
	}
	if _, err := os.Lstat(o.Path); err == nil {
		t.Fatal("open created the file")
	}
	o.Refuse()
	SettleOutputs([]*Output{o})
	if _, err := os.Lstat(o.Path); err == nil || o.File != nil {
		t.Fatal("a refused output was created")
	}
	o = &Output{Path: filepath.Join(dir, "new"), Perm: 0o600}
	SettleOutputs([]*Output{o})
	if fi, err := os.Lstat(o.Path); err != nil || o.File == nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settled output: %v, file %v", err, o.File)
	}
	o.File.Close()
	// An existing file is opened as it is (the caller truncates).
	o = &Output{Path: filepath.Join(dir, "old"), Append: true, Perm: 0o600}
	if err := o.Open(); err != nil || o.File == nil {
		t.Fatalf("existing file: %v", err)
	}
	o.File.WriteString("+")
	o.File.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "old")); string(b) != "kept+" {
		t.Fatalf("append wrote %q", b)
	}
}
