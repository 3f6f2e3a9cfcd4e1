package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// A Walker opens what OpenBeneath opens, with the same chains, and refuses
// what it refuses, however the paths share directories.
func TestWalkerIsOpenBeneath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b/c"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("x"), 0o644)
	os.Symlink("b", filepath.Join(dir, "a/link"))
	os.Symlink("/etc", filepath.Join(dir, "abs"))
	root, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := root.Walk()
	defer w.Close()
	for _, rel := range []string{"a/b/f", "a/b/c", "a", "a/b", "a/link/f", "a/link", "abs/passwd", "a/missing", "a/missing/x", "a/b/f/x", "../x", "/etc", "a/../a", "", "a/b/f"} {
		want, werr := root.OpenBeneath(rel)
		got, gerr := w.Open(rel)
		switch {
		case (werr == nil) != (gerr == nil):
			t.Errorf("%q: Walker %v, OpenBeneath %v", rel, gerr, werr)
		case werr != nil:
			if errors.Is(werr, ErrSymlinkBeneath) != errors.Is(gerr, ErrSymlinkBeneath) || errors.Is(werr, fs.ErrNotExist) != errors.Is(gerr, fs.ErrNotExist) {
				t.Errorf("%q: Walker %v, OpenBeneath %v", rel, gerr, werr)
			}
		default:
			if got.Path != want.Path || got.ID() != want.ID() || !slices.Equal(got.Chain, want.Chain) {
				t.Errorf("%q: Walker %s %v, OpenBeneath %s %v", rel, got.Path, got.Chain, want.Path, want.Chain)
			}
		}
		for _, o := range []*Object{want, got} {
			if o != nil {
				o.Close()
			}
		}
	}
}
