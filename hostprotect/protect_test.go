package hostprotect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostpath"
)

func TestParseGitdirFile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"gitdir: ../.git/worktrees/wt\n", "../.git/worktrees/wt", true},
		{"gitdir: /srv/repo/.git/modules/m\r\n", "/srv/repo/.git/modules/m", true},
		{"gitdir: x", "x", true},
		{"gitdir:x\n", "", false},
		{"gitdir: \n", "", false},
		{"ref: refs/heads/main\n", "", false},
		{"", "", false},
	} {
		got, ok := parseGitdirFile([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseGitdirFile(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHooksPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[core]\n\thooksPath = myhooks\n", "myhooks"},
		{"[CORE]\n\tHOOKSPATH=\"my hooks\"\n", "my hooks"},
		{"[core] hooksPath = inline\n", "inline"},
		{"[core]\n\thooksPath = a ; comment\n", "a"},
		{"[core]\n\thooksPath = a\n\thooksPath = b\n", "b"},
		{"[user]\n\thooksPath = no\n", ""},
		{"[core]\n# hooksPath = no\n", ""},
		{"[core]\n\thooksPath = ~/hooks\n", ""},
		{"[core]\n\tbare = false\n[remote \"origin\"]\n\thooksPath = no\n", ""},
		{"", ""},
	} {
		if got := hooksPath([]byte(tc.in)); got != tc.want {
			t.Errorf("hooksPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestProtectWithin(t *testing.T) {
	l := &protectLookup{host: "/srv/proj"}
	for _, tc := range []struct {
		w, p, want string
		ok         bool
	}{
		{"", "myhooks", "myhooks", true},
		{"a/wt", "../../.git/worktrees/wt", ".git/worktrees/wt", true},
		{"", "../elsewhere", "", false},
		{"", ".", "", false},
		{"", "/srv/proj/hooks", "hooks", true},
		{"", "/srv/project/hooks", "", false},
		{"", "/srv/proj", "", false},
		{"a", "../../x", "", false},
	} {
		got, ok := l.within(tc.w, tc.p)
		if got != tc.want || ok != tc.ok {
			t.Errorf("within(%q, %q) = %q, %v; want %q, %v", tc.w, tc.p, got, ok, tc.want, tc.ok)
		}
	}
}

// repoTree lays out a repository as git does, with a submodule, a nested
// repository and a worktree, under a new directory.
func repoTree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for rel, data := range map[string]string{
		".git/HEAD": "ref: x\n", ".git/config": "[core]\n\thooksPath = myhooks\n",
		".git/hooks/pre-commit": "", ".git/info/exclude": "",
		".git/modules/m/HEAD": "", ".git/modules/m/config": "", ".git/modules/m/hooks/x": "",
		".git/worktrees/wt/commondir": "../..\n", ".git/worktrees/wt/config.worktree": "",
		"a/wt/.git":     "gitdir: ../../.git/worktrees/wt\n",
		"sub/.git/HEAD": "", "sub/.git/config": "", "sub/.git/hooks/x": "",
		"myhooks/x": "", ".envrc": "", "src/main.go": "",
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../elsewhere", filepath.Join(dir, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func protectOf(t testing.TB, dir string) ([]string, error) {
	t.Helper()
	root, err := hostpath.Open(dir, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	return protectRoot(t, root, dir)
}

// protectRoot is protectOf with the bind's source opened, as a run has it.
func protectRoot(t testing.TB, root *hostpath.Object, dir string) ([]string, error) {
	objs, dests, err := Open(root, "/work", []string{".git/hooks", ".git/config", ".git/info", ".envrc", ".bashrc", ".gitmodules"})
	for i, o := range objs {
		if rel, ok := o.Within(root.ID()); !ok || "/work/"+rel != dests[i] {
			t.Errorf("object %s does not match %s", o.Path, dests[i])
		}
		o.Close()
	}
	return dests, err
}

func TestProtectIn(t *testing.T) {
	dir := repoTree(t)
	dests, err := protectOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/work/.envrc", "/work/.git/config", "/work/.git/hooks", "/work/.git/info",
		"/work/.git/modules/m/config", "/work/.git/modules/m/hooks", "/work/.git/worktrees/wt/config.worktree",
		"/work/a/wt/.git", "/work/myhooks", "/work/sub/.git/config", "/work/sub/.git/hooks"}
	if !slices.Equal(dests, want) {
		t.Errorf("protected %v\nwant %v", dests, want)
	}
	// What git needs to find hooks must exist: the run fails closed.
	for _, tc := range []struct{ remove, want string }{
		{"sub/.git/hooks", "sub/.git/hooks does not exist"},
		{".git/config", ".git/config does not exist"},
		{"myhooks", "myhooks does not exist"},
	} {
		dir := repoTree(t)
		if err := os.RemoveAll(filepath.Join(dir, tc.remove)); err != nil {
			t.Fatal(err)
		}
		if _, err := protectOf(t, dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("without %s: %v, want %q", tc.remove, err, tc.want)
		}
	}
	// A hooks directory that is a symlink cannot be bound over.
	dir = repoTree(t)
	os.RemoveAll(filepath.Join(dir, ".git/hooks"))
	os.Symlink("../myhooks", filepath.Join(dir, ".git/hooks"))
	if _, err := protectOf(t, dir); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("symlinked hooks: %v", err)
	}
	// Nothing to protect and no repository: nothing, no error.
	if dests, err := protectOf(t, t.TempDir()); err != nil || len(dests) != 0 {
		t.Errorf("empty directory: %v, %v", dests, err)
	}
}

// BenchmarkProtectLookup is the start-up cost protection adds to a run in
// a repository workdir (make bench reports the whole run's too): a .git
// with hooks, config and info, two submodules, a nested repository and a
// worktree, then with 16 and 64 top-level directories, each listed for a
// repository below it.
func BenchmarkProtectLookup(b *testing.B) {
	for _, n := range []int{0, 16, 64} {
		dir := repoTree(b)
		for _, f := range []string{".git/modules/m2/HEAD", ".git/modules/m2/config", ".git/modules/m2/hooks/x", ".gitmodules"} {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
			os.WriteFile(filepath.Join(dir, f), nil, 0o644)
		}
		for i := 0; i < n; i++ {
			os.MkdirAll(filepath.Join(dir, fmt.Sprintf("dir%02d", i), "sub"), 0o755)
		}
		root, err := hostpath.Open(dir, hostpath.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("repo+%ddirs", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := protectRoot(b, root, dir); err != nil {
					b.Fatal(err)
				}
			}
		})
		root.Close()
	}
}

// protectNamed is protectOf with the list names.
func protectNamed(t *testing.T, dir string, names ...string) ([]string, error) {
	t.Helper()
	root, err := hostpath.Open(dir, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	objs, dests, err := Open(root, "/work", names)
	for _, o := range objs {
		o.Close()
	}
	return dests, err
}

// A hook that is a symlink to a script in the bind: the script is what git
// runs, so it is protected; missing, or named through "a/..", the run
// fails; a target outside the bind is left alone.
func TestProtectHookLinks(t *testing.T) {
	dir := repoTree(t)
	os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
	os.WriteFile(filepath.Join(dir, "scripts/pre-push"), nil, 0o755)
	os.WriteFile(filepath.Join(dir, "scripts/post-merge"), nil, 0o755)
	os.Symlink("../../scripts/pre-push", filepath.Join(dir, ".git/hooks/pre-push"))
	os.Symlink("../scripts/post-merge", filepath.Join(dir, "myhooks/post-merge")) // core.hooksPath
	os.Symlink(filepath.Join(dir, "scripts/pre-push"), filepath.Join(dir, "sub/.git/hooks/abs"))
	os.Symlink("/usr/share/hooks/x", filepath.Join(dir, ".git/modules/m/hooks/outside"))
	dests, err := protectNamed(t, dir, ".git/hooks", ".git/config")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/work/scripts/pre-push", "/work/scripts/post-merge", "/work/.git/hooks", "/work/myhooks"} {
		if !slices.Contains(dests, want) {
			t.Errorf("protected %v: want %s in it", dests, want)
		}
	}
	for _, tc := range []struct{ link, target, want string }{
		{".git/hooks/pre-rebase", "../../scripts/missing", "scripts/missing does not exist"},
		{".git/hooks/pre-rebase", "../../sub/../scripts/pre-push", `"..`},
		{".git/hooks/pre-rebase", "../../abs", "abs is a symlink"},
	} {
		dir := repoTree(t)
		os.Symlink("/etc", filepath.Join(dir, "abs"))
		os.Symlink(tc.target, filepath.Join(dir, tc.link))
		if _, err := protectNamed(t, dir, ".git/hooks"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: %v, want %q", tc.link, tc.target, err, tc.want)
		}
	}
}

// The git rules follow the list: without .git/hooks and .git/config in it,
// a repository missing its hooks is no reason to fail, and nothing of .git
// is protected.
func TestProtectOnlyWhatIsNamed(t *testing.T) {
	dir := repoTree(t)
	os.RemoveAll(filepath.Join(dir, ".git/hooks"))
	dests, err := protectNamed(t, dir, ".envrc")
	if err != nil || !slices.Equal(dests, []string{"/work/.envrc"}) {
		t.Errorf("protect = [.envrc]: %v, %v", dests, err)
	}
	if _, err := protectNamed(t, dir, ".git/hooks"); err == nil {
		t.Errorf("protect = [.git/hooks] without hooks: no error")
	}
}

func TestOddDots(t *testing.T) {
	for p, want := range map[string]bool{
		"../../scripts/x": false, "scripts/x": false, "./x": false, "../x": false,
		"a/../x": true, "../a/../x": true, "/srv/p/x": false, "/srv/a/../x": true, "a/..": true,
	} {
		if got := oddDots(p); got != want {
			t.Errorf("oddDots(%q) = %v, want %v", p, got, want)
		}
	}
}
