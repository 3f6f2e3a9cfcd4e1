package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveBeneath(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	for _, d := range []string{src, filepath.Join(src, "sub"), filepath.Join(root, "outside")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"in":         "a.txt",
		"subup":      "sub/../a.txt",
		"up":         "../outside",
		"abs":        "/etc",
		"abs_self":   src, // absolute even though it names src itself
		"dangling":   "../nope",
		"missing_in": "sub/missing",
		"magic":      "/proc/self/root",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, tc := range []struct {
		rel    string
		escape bool
	}{
		{".", false},
		{"a.txt", false},
		{"in", false},
		{"subup", false},
		{"sub/../a.txt", false},
		{"no/such/file", false},
		{"missing_in", false},
		{"up", true},
		{"up/x", true},
		{"..", true},
		{"sub/../../outside", true},
		{"abs", true},
		{"abs_self", true},
		{"dangling", true},
		{"magic", true},
	} {
		err := ResolveBeneath(dir, tc.rel)
		if got := errors.Is(err, ErrEscape); got != tc.escape || (!tc.escape && err != nil) {
			t.Errorf("ResolveBeneath(%q) = %v, want escape %v", tc.rel, err, tc.escape)
		}
	}
	if err := ResolveBeneath(dir, "/etc"); err == nil {
		t.Error("an absolute rel was taken")
	}
}
