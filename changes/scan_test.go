package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsProtected(t *testing.T) {
	names := []string{".git/hooks", ".git/config", ".gitmodules", ".bashrc", ".vscode"}
	for _, c := range []struct {
		rel  string
		want bool
	}{
		{".git/hooks", true},
		{".git/hooks/pre-commit", true},
		{".git/config", true},
		{".git/HEAD", false},
		{".git", false},
		{".bashrc", true},
		{"a/.bashrc", true},
		{"a/b/.bashrc", true},
		{"a/b/c/.bashrc", false}, // the reach of jail/protect.go
		{"a/b/c/d/.git/hooks/post-checkout", true},
		{"deep/er/and/deeper/.gitmodules", true},
		{".vscode/settings.json", true},
		{"src/.vscode", true},
		{"bashrc", false},
		{".bashrc.d/x", false},
		{"x/.git/hooksy", false},
	} {
		if got := IsProtected(c.rel, names); got != c.want {
			t.Errorf("IsProtected(%q) = %v, want %v", c.rel, got, c.want)
		}
	}
}

func TestProtectedChange(t *testing.T) {
	names := []string{".git/hooks", ".bashrc"}
	for _, c := range []struct {
		e    Entry
		want bool
	}{
		{Entry{Path: ".git", Kind: Deleted}, true},       // takes .git/hooks with it
		{Entry{Path: ".git", Kind: TypeChanged}, true},   // replaced by a file or symlink
		{Entry{Path: ".git", Kind: Created}, false},      // the hooks below it are refused one by one
		{Entry{Path: "sub/.git", Kind: Deleted}, true},   // a repository one level down
		{Entry{Path: "src", Kind: Deleted}, false},       // holds no protected name by itself
		{Entry{Path: ".git/hooks", Kind: Created}, true}, // the name itself
		{Entry{Path: ".bashrc", Kind: ModeChanged}, true},
	} {
		if got := protectedChange(c.e, names); got != c.want {
			t.Errorf("protectedChange(%+v) = %v, want %v", c.e, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var all []Change
	for i := 0; i < MaxEntries+5; i++ {
		all = append(all, Change{Entry: Entry{Path: fmt.Sprint(i), Kind: Created, Type: TypeFile, Size: 2}})
	}
	all = append(all, Change{Entry: Entry{Path: "d", Kind: Deleted, Type: TypeFile}})
	e, tot, trunc := Summarize(all)
	if len(e) != MaxEntries || !trunc || tot.Entries != MaxEntries+6 || tot.Created != MaxEntries+5 || tot.Deleted != 1 || tot.Bytes != 2*(MaxEntries+5) {
		t.Fatalf("Summarize: %d entries, truncated %v, totals %+v", len(e), trunc, tot)
	}
}

// overlayRun mounts an overlay of lower and upper in a user namespace of
// its own (unshare -Urm), runs script in it and unmounts it: what a jail
// does, without one.
func overlayRun(t *testing.T, lower, upper, script string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare(1) is not installed")
	}
	work, merged := t.TempDir(), t.TempDir()
	// overlayfs leaves work/work mode 0, which its owner cannot list
	// for removal.
	t.Cleanup(func() { os.Chmod(filepath.Join(work, "work"), 0o700) })
	sh := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s,userxattr %s
cd %s
%s
cd /
umount %s`, lower, upper, work, merged, merged, script, merged)
	out, err := exec.Command("unshare", "-Urm", "sh", "-c", sh).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "mount") && strings.Contains(string(out), "ermission") {
			t.Skipf("overlayfs in a user namespace: %s", out)
		}
		t.Fatalf("overlay script: %v\n%s", err, out)
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestScanOverlay(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	write := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(lower, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("keep", "same\n", 0o644)
	write("touched", "same\n", 0o644)
	write("modify", "old\n", 0o644)
	write("trunc", "some bytes\n", 0o644)
	write("gone", "x\n", 0o644)
	write("renamed", "r\n", 0o644)
	write("chmod", "c\n", 0o644)
	write("tree/a", "a\n", 0o644)
	write("tree/b/c", "c\n", 0o644)
	write("redo/old", "o\n", 0o644)
	write("redo/kept", "k\n", 0o644)
	write("file2dir", "f\n", 0o644)
	write("dir2file/x", "x\n", 0o644)
	write(".git/hooks/pre-commit.sample", "#!/bin/sh\n", 0o755)
	os.Symlink("keep", filepath.Join(lower, "link"))
	if err := os.Mkdir(filepath.Join(lower, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}

	overlayRun(t, lower, upper, `
touch touched; : >> touched
echo new > modify
: > trunc
rm gone
mv renamed renamed2
chmod 600 chmod
rm -r tree
rm -r redo; mkdir redo; echo k > redo/kept; echo n > redo/new
rm file2dir; mkdir file2dir
rm -r dir2file; echo now a file > dir2file
echo created > created
ln created hardlink
ln -sf other link
ln -s target newlink
mkdir -p newdir/sub; echo deep > newdir/sub/f
mkfifo fifo
printf 'x' > "$(printf 'new\nline')"
echo evil > .git/hooks/pre-commit
rmdir emptydir
`)
	cs, err := Scan(mustOpen(t, upper), mustOpen(t, lower), "/w", []string{".git/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	var order []string
	for _, c := range cs {
		got[c.Path] = c
		order = append(order, c.Path)
	}
	want := []struct{ path, kind, typ string }{
		{".git/hooks/pre-commit", Created, TypeFile},
		{"chmod", ModeChanged, TypeFile},
		{"created", Created, TypeFile},
		{"dir2file", TypeChanged, TypeFile},
		{"emptydir", Deleted, TypeDir},
		{"fifo", Created, TypeFIFO},
		{"file2dir", TypeChanged, TypeDir},
		{"gone", Deleted, TypeFile},
		{"hardlink", Created, TypeFile},
		{"link", Symlink, TypeSymlink},
		{"modify", Modified, TypeFile},
		{"new\nline", Created, TypeFile},
		{"newdir", Created, TypeDir},
		{"newdir/sub", Created, TypeDir},
		{"newdir/sub/f", Created, TypeFile},
		{"newlink", Symlink, TypeSymlink},
		{"redo/new", Created, TypeFile},
		{"redo/old", Deleted, TypeFile},
		{"renamed", Deleted, TypeFile},
		{"renamed2", Created, TypeFile},
		{"tree", Deleted, TypeDir},
		{"trunc", Modified, TypeFile},
	}
	if len(cs) != len(want) {
		t.Errorf("%d changes, want %d: %q", len(cs), len(want), order)
	}
	for i, w := range want {
		c, ok := got[w.path]
		if !ok {
			t.Errorf("no change for %q (have %q)", w.path, order)
			continue
		}
		if c.Kind != w.kind || c.Type != w.typ || c.Bind != "/w" {
			t.Errorf("%q: kind %s type %s bind %s, want %s %s /w", w.path, c.Kind, c.Type, c.Bind, w.kind, w.typ)
		}
		if i < len(order) && order[i] != w.path {
			t.Errorf("change %d is %q, want %q (sorted by path)", i, order[i], w.path)
		}
	}
	if c := got["modify"]; c.SHA256 != sum("new\n") || c.Size != 4 || c.Base.SHA256 != sum("old\n") || !c.Base.Exists {
		t.Errorf("modify: %+v", c)
	}
	if c := got["created"]; c.Base.Exists || c.Mode != "0644" || c.Link != "" {
		t.Errorf("created: %+v", c)
	}
	if c := got["hardlink"]; c.Link != "created" {
		t.Errorf("hardlink: Link %q, want created", c.Link)
	}
	if c := got["link"]; c.Target != "other" {
		t.Errorf("link: target %q", c.Target)
	}
	if c := got["chmod"]; c.Mode != "0600" {
		t.Errorf("chmod: mode %q", c.Mode)
	}
	if c := got["fifo"]; c.Skipped == "" {
		t.Errorf("fifo: not marked skipped")
	}
	if c := got[".git/hooks/pre-commit"]; !c.Protected {
		t.Errorf("a new hook is not protected")
	}
	if c := got["modify"]; c.Protected {
		t.Errorf("modify: protected")
	}
}

// TestScanCostIsTheUpperLayers: a lower layer of many files that the run
// did not touch adds nothing to what Scan reads (it would fail here if
// Scan walked the lower tree: the files are unreadable to it).
func TestScanCostIsTheUpperLayers(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	big := filepath.Join(lower, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		os.WriteFile(filepath.Join(big, fmt.Sprint(i)), []byte("x"), 0o644)
	}
	if err := os.WriteFile(filepath.Join(upper, "new"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory Scan must not list: make it unlistable.
	if os.Geteuid() != 0 {
		os.Chmod(big, 0o311)
		defer os.Chmod(big, 0o755)
	}
	cs, err := Scan(mustOpen(t, upper), mustOpen(t, lower), "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Path != "new" || cs[0].Kind != Created {
		t.Fatalf("changes: %+v", cs)
	}
}

func mustOpen(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
