package changes

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteUnifiedAgainstDiff checks WriteUnified against GNU diff -u as
// the oracle, on hand-made and random pairs of texts.
func TestWriteUnifiedAgainstDiff(t *testing.T) {
	for _, tool := range []string{"diff", "patch"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s(1) is not installed", tool)
		}
	}
	cases := [][2]string{
		{"", "a\n"},
		{"a\n", ""},
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"a\nb\nc\n", "a\nb\nc"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n", "1\n2\nx\n4\n5\n6\n7\n8\n9\n10\n11\n12\ny\n14\n15\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\nx\n5\n6\n7\ny\n"},
		{"same\n", "same\n"},
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 60; i++ {
		var a, b []string
		for j := 0; j < r.Intn(40); j++ {
			a = append(a, fmt.Sprintf("l%d\n", r.Intn(8)))
		}
		b = append(b, a...)
		for j := 0; j < r.Intn(6); j++ {
			if len(b) > 0 && r.Intn(2) == 0 {
				k := r.Intn(len(b))
				b = append(b[:k], b[k+1:]...)
			} else {
				k := r.Intn(len(b) + 1)
				b = append(b[:k], append([]string{fmt.Sprintf("n%d\n", r.Intn(8))}, b[k:]...)...)
			}
		}
		cases = append(cases, [2]string{strings.Join(a, ""), strings.Join(b, "")})
	}
	dir := t.TempDir()
	for i, c := range cases {
		fa, fb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(fa, []byte(c[0]), 0o644)
		os.WriteFile(fb, []byte(c[1]), 0o644)
		out, _ := exec.Command("diff", "-u", "--label", "a/f", "--label", "b/f", fa, fb).Output()
		var got bytes.Buffer
		if err := WriteUnified(&got, "a/f", "b/f", []byte(c[0]), []byte(c[1])); err != nil {
			t.Fatal(err)
		}
		// Both are shortest edit scripts: as many lines added and
		// removed. Where several exist they may differ, so the patch
		// is also applied to a, which must give b.
		if counts(got.String()) != counts(string(out)) {
			t.Errorf("case %d %q -> %q:\ngot:\n%s\ndiff -u:\n%s", i, c[0], c[1], got.String(), out)
			continue
		}
		if got.Len() == 0 {
			continue
		}
		os.WriteFile(filepath.Join(dir, "p"), got.Bytes(), 0o644)
		os.WriteFile(fa, []byte(c[0]), 0o644)
		if msg, err := exec.Command("patch", "-s", "-o", filepath.Join(dir, "out"), fa, filepath.Join(dir, "p")).CombinedOutput(); err != nil {
			t.Errorf("case %d: patch: %v %s\n%s", i, err, msg, got.String())
			continue
		}
		if res, _ := os.ReadFile(filepath.Join(dir, "out")); string(res) != c[1] {
			t.Errorf("case %d: patched a is %q, want %q\n%s", i, res, c[1], got.String())
		}
	}
}

// counts are a unified diff's added and removed lines.
func counts(s string) [2]int {
	var n [2]int
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "+"):
			n[0]++
		case strings.HasPrefix(l, "-"):
			n[1]++
		}
	}
	return n
}

func TestIsText(t *testing.T) {
	for _, c := range []struct {
		b    string
		want bool
	}{{"hello\n", true}, {"", true}, {"a\x00b", false}, {"\xff\xfe", false}, {"é\n", true}} {
		if IsText([]byte(c.b)) != c.want {
			t.Errorf("IsText(%q) = %v", c.b, !c.want)
		}
	}
}
