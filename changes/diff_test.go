package changes

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lcs is the length of a longest common subsequence (the slow, sure way).
func lcs(x, y []string) int {
	t := make([][]int, len(x)+1)
	for i := range t {
		t[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

// TestEditScript: the script turns x into y with the fewest edits.
func TestEditScript(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		out := make([]string, r.IntN(12))
		for i := range out {
			out[i] = string(rune('a'+r.IntN(3))) + "\n"
		}
		return out
	}
	for n := 0; n < 3000; n++ {
		x, y := gen(), gen()
		ops := editScript(x, y)
		var gx, gy []string
		edits := 0
		for _, o := range ops {
			if o.kind != '+' {
				gx = append(gx, o.line)
			}
			if o.kind != '-' {
				gy = append(gy, o.line)
			}
			if o.kind != ' ' {
				edits++
			}
		}
		if strings.Join(gx, "") != strings.Join(x, "") || strings.Join(gy, "") != strings.Join(y, "") {
			t.Fatalf("%q -> %q: script %q does not rebuild them", x, y, ops)
		}
		if want := len(x) + len(y) - 2*lcs(x, y); edits != want {
			t.Fatalf("%q -> %q: %d edits, the fewest is %d", x, y, edits, want)
		}
	}
	// Beyond maxEdits: the middle replaced whole, still right.
	var x, y []string
	for i := range maxEdits + 10 {
		x = append(x, fmt.Sprintf("x%d\n", i))
		y = append(y, fmt.Sprintf("y%d\n", i))
	}
	ops := editScript(append([]string{"same\n"}, x...), append([]string{"same\n"}, y...))
	if len(ops) != 1+2*len(x) || ops[0].kind != ' ' || ops[1].kind != '-' || ops[len(ops)-1].kind != '+' {
		t.Errorf("a big rewrite: %d ops", len(ops))
	}
}

func diffOf(t *testing.T, c Change, old, new []byte) string {
	t.Helper()
	var b bytes.Buffer
	var o, n *bytes.Reader
	if old != nil {
		o = bytes.NewReader(old)
	}
	if new != nil {
		n = bytes.NewReader(new)
	}
	var err error
	switch {
	case o == nil && n == nil:
		err = WriteDiff(&b, c, nil, nil)
	case o == nil:
		err = WriteDiff(&b, c, nil, n)
	case n == nil:
		err = WriteDiff(&b, c, o, nil)
	default:
		err = WriteDiff(&b, c, o, n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteDiff(t *testing.T) {
	file := Stamp{Exists: true, Mode: 0o100644}
	lines := func(n int, change map[int]string) []byte {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := change[i]; ok {
				b.WriteString(s)
				continue
			}
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name     string
		c        Change
		old, new []byte
		want     string
	}{
		{
			name: "modified",
			c:    Change{Entry: Entry{Path: "src/a.go", Kind: Modified, Type: TypeFile, Mode: "0644"}, Base: file},
			old:  lines(20, nil), new: lines(20, map[int]string{5: "five\n", 18: ""}),
			want: "--- a/src/a.go\n+++ b/src/a.go\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n line 6\n line 7\n line 8\n" +
				"@@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n",
		},
		{
			name: "created",
			c:    Change{Entry: Entry{Path: "new.txt", Kind: Created, Type: TypeFile, Mode: "0644"}},
			new:  []byte("a\nb"),
			want: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n",
		},
		{
			name: "deleted",
			c:    Change{Entry: Entry{Path: "old.txt", Kind: Deleted, Type: TypeFile}, Base: file},
			old:  []byte("gone\n"),
			want: "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
		},
		{
			name: "created empty",
			c:    Change{Entry: Entry{Path: "empty", Kind: Created, Type: TypeFile, Mode: "0644"}},
			new:  []byte{},
			want: "",
		},
		{
			name: "binary",
			c:    Change{Entry: Entry{Path: "x.bin", Kind: Modified, Type: TypeFile, Mode: "0644"}, Base: file},
			old:  []byte("a\x00b"), new: []byte("a\x00bc"),
			want: "Binary files a/x.bin and b/x.bin differ (3 -> 4 bytes)\n",
		},
		{
			name: "too big",
			c:    Change{Entry: Entry{Path: "big", Kind: Modified, Type: TypeFile, Mode: "0644"}, Base: file},
			old:  []byte("a\n"), new: bytes.Repeat([]byte("b\n"), DiffLimit),
			want: fmt.Sprintf("Files a/big and b/big differ (too large to compare by lines: over %d bytes)\n", DiffLimit),
		},
		{
			name: "modified and chmod",
			c:    Change{Entry: Entry{Path: "run.sh", Kind: Modified, Type: TypeFile, Mode: "0755"}, Base: file},
			old:  []byte("echo\n"), new: []byte("echo hi\n"),
			want: "mode of b/run.sh: 0644 -> 0755\n--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo\n+echo hi\n",
		},
		{
			name: "mode",
			c:    Change{Entry: Entry{Path: "run.sh", Kind: ModeChanged, Type: TypeFile, Mode: "0755"}, Base: file},
			want: "mode of b/run.sh: 0644 -> 0755\n",
		},
		{
			name: "new directory",
			c:    Change{Entry: Entry{Path: "d", Kind: Created, Type: TypeDir, Mode: "0755"}},
			want: "new directory b/d mode 0755\n",
		},
		{
			name: "deleted directory",
			c:    Change{Entry: Entry{Path: "d", Kind: Deleted, Type: TypeDir}, Base: Stamp{Exists: true, Mode: 0o40755}},
			want: "deleted directory a/d (and everything in it)\n",
		},
		{
			name: "symlink",
			c:    Change{Entry: Entry{Path: "l", Kind: Symlink, Type: TypeSymlink, Target: "../t"}},
			want: "symlink b/l -> ../t\n",
		},
		{
			name: "file to directory",
			c:    Change{Entry: Entry{Path: "f", Kind: TypeChanged, Type: TypeDir, Mode: "0755"}, Base: file},
			want: "type of b/f: file -> dir\n",
		},
		{
			name: "directory to file",
			c:    Change{Entry: Entry{Path: "f", Kind: TypeChanged, Type: TypeFile, Mode: "0644"}, Base: Stamp{Exists: true, Mode: 0o40755}},
			new:  []byte("x\n"),
			want: "type of b/f: dir -> file\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n",
		},
		{
			name: "hard link",
			c:    Change{Entry: Entry{Path: "b", Kind: Created, Type: TypeFile, Mode: "0644", Link: "a"}},
			new:  []byte("x\n"),
			want: "hard link b/b to b/a\n",
		},
		{
			name: "fifo",
			c:    Change{Entry: Entry{Path: "p", Kind: Created, Type: TypeFIFO, Mode: "0644", Skipped: "a FIFO: special files are not applied"}},
			want: "new fifo b/p (not applied: a FIFO: special files are not applied)\n",
		},
		{
			name: "protected",
			c:    Change{Entry: Entry{Path: ".git/hooks/pre-commit", Kind: Created, Type: TypeFile, Mode: "0755", Protected: true}},
			new:  []byte("evil\n"),
			want: "b/.git/hooks/pre-commit (protected: apply does not write it)\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+evil\n",
		},
		{
			name: "quoted name",
			c:    Change{Entry: Entry{Path: "new\nline", Kind: Created, Type: TypeFile, Mode: "0644"}},
			new:  []byte("x\n"),
			want: "--- /dev/null\n+++ \"b/new\\nline\"\n@@ -0,0 +1 @@\n+x\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := diffOf(t, tc.c, tc.old, tc.new); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestWriteDiffPatch: GNU patch applies the diff and gets the new file.
func TestWriteDiffPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no patch(1) on PATH")
	}
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() []byte {
		var b strings.Builder
		for range r.IntN(60) {
			fmt.Fprintf(&b, "%c%d\n", 'a'+r.IntN(4), r.IntN(3))
		}
		if r.IntN(4) == 0 {
			b.WriteString("no newline")
		}
		return []byte(b.String())
	}
	d := t.TempDir()
	for n := range 40 {
		old, new := gen(), gen()
		c := Change{Entry: Entry{Path: "f", Kind: Modified, Type: TypeFile, Mode: "0644"}, Base: Stamp{Exists: true, Mode: 0o100644}}
		p := filepath.Join(d, "f")
		if err := os.WriteFile(p, old, 0o644); err != nil {
			t.Fatal(err)
		}
		diff := diffOf(t, c, old, new)
		cmd := exec.Command("patch", "-s", "-p1", "--no-backup-if-mismatch")
		cmd.Dir, cmd.Stdin = d, strings.NewReader(diff)
		if out, err := cmd.CombinedOutput(); err != nil && diff != "" {
			t.Fatalf("case %d: patch: %v: %s\ndiff:\n%s", n, err, out, diff)
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, new) {
			t.Fatalf("case %d: patched file\n%q\nwant\n%q\ndiff:\n%s", n, got, new, diff)
		}
	}
}

func TestKindAndTypeLines(t *testing.T) {
	file := Stamp{Exists: true, Mode: 0o100644}
	for _, c := range []struct {
		name      string
		c         Change
		kind, typ string
		kindDone  bool
		typeDone  bool
	}{
		{"deleted dir", Change{Entry: Entry{Path: "d", Kind: Deleted, Type: TypeDir}}, "deleted directory a/d (and everything in it)\n", "", true, true},
		{"deleted file", Change{Entry: Entry{Path: "f", Kind: Deleted, Type: TypeFile}, Base: file}, "", "", false, false},
		{"mode only", Change{Entry: Entry{Path: "f", Kind: ModeChanged, Type: TypeFile, Mode: "0755"}, Base: file}, "mode of b/f: 0644 -> 0755\n", "", true, false},
		{"modified with mode", Change{Entry: Entry{Path: "f", Kind: Modified, Type: TypeFile, Mode: "0600"}, Base: file}, "mode of b/f: 0644 -> 0600\n", "", false, false},
		{"file to symlink", Change{Entry: Entry{Path: "l", Kind: TypeChanged, Type: TypeSymlink, Target: "t"}, Base: file}, "type of b/l: file -> symlink\n", "symlink b/l -> t\n", false, true},
		{"new fifo", Change{Entry: Entry{Path: "p", Kind: Created, Type: TypeFIFO}}, "", "new fifo b/p\n", false, true},
		{"protected file", Change{Entry: Entry{Path: "f", Kind: Modified, Type: TypeFile, Mode: "0644", Protected: true}, Base: file}, "", "b/f (protected: apply does not write it)\n", false, false},
	} {
		note := diffNote(c.c)
		kind, kd := kindLine(c.c, "a/"+c.c.Path, "b/"+c.c.Path, note)
		if kind != c.kind || kd != c.kindDone {
			t.Errorf("%s: kindLine = %q, %v; want %q, %v", c.name, kind, kd, c.kind, c.kindDone)
		}
		if kd {
			continue
		}
		typ, td := typeLine(c.c, "b/"+c.c.Path, note)
		if typ != c.typ || td != c.typeDone {
			t.Errorf("%s: typeLine = %q, %v; want %q, %v", c.name, typ, td, c.typ, c.typeDone)
		}
	}
}
