package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenBeneath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("x"), 0o644)
	os.Symlink("b", filepath.Join(dir, "a/link"))
	os.Symlink("/etc", filepath.Join(dir, "abs"))
	root, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	o, err := root.OpenBeneath("a/b/f")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if rel, ok := o.Within(root.ID()); !ok || rel != "a/b/f" || o.Path != filepath.Join(dir, "a/b/f") || o.IsDir() {
		t.Errorf("a/b/f: within %q %v, path %s", rel, ok, o.Path)
	}
	for _, tc := range []struct {
		rel  string
		want error
	}{
		{"a/link/f", ErrSymlinkBeneath},
		{"a/link", ErrSymlinkBeneath},
		{"abs/passwd", ErrSymlinkBeneath},
		{"a/missing", fs.ErrNotExist},
		{"a/b/f/x", nil}, // ENOTDIR
		{"../x", nil},
		{"/etc", nil},
		{"a/../a", nil},
		{"", nil},
	} {
		o, err := root.OpenBeneath(tc.rel)
		if err == nil {
			o.Close()
			t.Errorf("OpenBeneath(%q) opened %s", tc.rel, o.Path)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("OpenBeneath(%q): %v, want %v", tc.rel, err, tc.want)
		}
	}
}
