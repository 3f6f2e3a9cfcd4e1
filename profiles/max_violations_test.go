package profiles

import (
	"strings"
	"testing"
)

// limits.max_violations: written as a TOML integer or as text, checked
// like every count, inherited along extends and overridden by a child.
func TestMaxViolationsKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "base.toml", "extends = \"default\"\n[limits]\nmax_violations = 7\n")
	writeFile(t, dir, "off.toml", "extends = \"base.toml\"\n[limits]\nmax_violations = \"unlimited\"\n")
	cases := []struct {
		content string
		want    int
	}{
		{"extends = \"default\"\n", 10000},
		{"extends = \"strict\"\n", 10000},
		{"extends = \"default\"\n[limits]\nmax_violations = 5\n", 5},
		{"extends = \"default\"\n[limits]\nmax_violations = \"5\"\n", 5},
		{"extends = \"default\"\n[limits]\nmax_violations = 0\n", 0},
		{"extends = \"base.toml\"\n", 7},
		{"extends = \"base.toml\"\n[limits]\nmemory = \"1G\"\n", 7},
		{"extends = \"base.toml\"\n[limits]\nmax_violations = 1\n", 1},
		{"extends = \"off.toml\"\n", 0},
		{"extends = \"off.toml\"\n[limits]\nmax_violations = 2147483647\n", 1<<31 - 1},
	}
	for _, c := range cases {
		f := writeFile(t, dir, "p.toml", c.content)
		p := mustLoadFile(t, f)
		s, err := p.Spec(Request{Args: []string{"true"}, Cwd: dir})
		p.Close()
		if err != nil {
			t.Errorf("%q: %v", c.content, err)
			continue
		}
		if s.Limits.MaxViolations != c.want {
			t.Errorf("%q: max violations %d, want %d", c.content, s.Limits.MaxViolations, c.want)
		}
	}
	bad := []struct{ value, want string }{
		{"-1", `invalid count "-1"`},
		{"1.5", `invalid count "1.5"`},
		{`"many"`, `invalid count "many"`},
		{"2147483648", "too large"},
		{"true", "want a string or a number"},
	}
	for _, c := range bad {
		f := writeFile(t, dir, "bad.toml", "extends = \"default\"\n[limits]\nmax_violations = "+c.value+"\n")
		wantPos(t, loadErr(t, f), f, 3, "limits.max_violations", c.want)
	}
	// The flag's way in.
	p := mustLoad(t, "default")
	if err := p.SetLimit("max_violations", "3"); err != nil || p.Limits["max_violations"] != "3" {
		t.Errorf("SetLimit: %v", err)
	}
	if err := p.SetLimit("max_violations", "x"); err == nil || !strings.Contains(err.Error(), "limits.max_violations") {
		t.Errorf("SetLimit bad: %v", err)
	}
}

// A root profile must set max_violations like every other limit, and
// `profile show` prints it, as an integer, with its comment.
func TestMaxViolationsShownAndRequired(t *testing.T) {
	out, err := mustLoad(t, "default").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "max_violations = 10000\n") || !strings.Contains(string(out), "fsize = '1G'\n") ||
		!strings.Contains(string(out), "# denied system calls after which the next one kills the whole run") {
		t.Errorf("profile show default:\n%s", out)
	}
	root := strings.Replace(string(out), "max_violations = 10000\n", "", 1)
	f := writeFile(t, t.TempDir(), "root.toml", root)
	if err := loadErr(t, f); !strings.Contains(err.Error(), "missing: limits.max_violations") {
		t.Errorf("root profile without max_violations: %v", err)
	}
}

func mustLoadFile(t *testing.T, f string) *Profile {
	t.Helper()
	p, err := Load(f)
	if err != nil {
		t.Fatalf("Load(%s): %v", f, err)
	}
	return p
}
