package changes

import "testing"

func TestIsProtected(t *testing.T) {
	names := []string{".git/hooks", ".git/config", ".gitmodules", ".bashrc", ".vscode", ".claude"}
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"", false},
		{"main.go", false},
		// A name, below one, at the root and one or two directories down.
		{".bashrc", true},
		{"a/.bashrc", true},
		{"a/b/.bashrc", true},
		{"a/b/c/.bashrc", false}, // beyond the jail's reach
		{".vscode", true},
		{".vscode/settings.json", true},
		{"a/b/.vscode/tasks.json", true},
		{"a/b/c/.vscode/tasks.json", false},
		{".bashrc.bak", false},
		{"x.bashrc", false},
		{".claude/settings.json", true},
		// .git/ names at any depth, and what holds them.
		{".git/hooks", true},
		{".git/hooks/pre-commit", true},
		{".git/config", true},
		{".git/config.lock", false},
		{".git/index", false},
		{".git/objects/ab/cdef", false},
		{".git", true}, // a .git file or symlink in its place names other hooks
		{"a/b/c/d/.git/hooks/post-checkout", true},
		{"a/b/c/d/.git", true},
		{"vendor/x/.gitmodules", true},
		{"hooks/pre-commit", false},
		{"src/git/hooks", false},
		// A submodule's git directory has hooks and a config of its own.
		{".git/modules/sub/hooks/pre-commit", true},
		{".git/modules/a/b/config", true},
		{".git/modules/sub/objects/x", false},
		{".git/modules/sub", false},
		{"a/.git/modules/lib/hooks", true},
		// Names are whole components.
		{".github/hooks", false},
		{".gitx/hooks", false},
	} {
		if got := IsProtected(tc.rel, names); got != tc.want {
			t.Errorf("IsProtected(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
	if IsProtected(".bashrc", nil) || IsProtected(".git/hooks/x", []string{""}) {
		t.Error("no names protect nothing")
	}
	if !IsProtected("a/.envrc", []string{"/.envrc/"}) {
		t.Error("a name's leading and trailing slashes do not matter")
	}
}
