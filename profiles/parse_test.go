package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A text parses as the same text in a file loads: the same resolved
// profile, and for a bad one the same error, file:line and all.
func TestParseAgreesWithLoad(t *testing.T) {
	dir := t.TempDir()
	for _, text := range []string{
		"extends = \"default\"\n",
		"extends = \"strict\"\ndescription = \"mine\"\n[limits]\nmemory = \"128M\"\npids = 17\n[env]\nset = { MINE = \"1\" }\n",
		"extends = \"network\"\nallow_degraded = [\"cgroup\"]\n[filesystem]\nro = [\"data\"]\ntmpfs = [\"/scratch:1G\"]\n[seccomp]\ndeny = [\"@mount\"]\n",
		"extends = \"default\"\nfoo = 1\n[seccomp]\nbar = 2\n",
		"extends = \"default\"\n[limits]\nmemory = \"lots\"\n",
		"extends = \"default\"\n[network]\nmode = \"sideways\"\n",
		"extends = \"default\"\n[limits\n",
		"extends = \"default\"\nhost_user = true\n",
		"extends = \"\"\n",
	} {
		f := writeFile(t, dir, "p.toml", text)
		loaded, lerr := Load(f)
		parsed, perr := Parse(f, []byte(text))
		if (lerr == nil) != (perr == nil) || lerr != nil && lerr.Error() != perr.Error() {
			t.Errorf("%q: Load: %v; Parse: %v", text, lerr, perr)
			continue
		}
		if lerr != nil {
			continue
		}
		if parsed.Source != "text:"+f || parsed.Name != f || parsed.Files() != nil {
			t.Errorf("%q: Name %q Source %q Files %v", text, parsed.Name, parsed.Source, parsed.Files())
		}
		loaded.Close()
		parsed.Name, parsed.Source = loaded.Name, loaded.Source
		loaded.files = nil
		if !reflect.DeepEqual(loaded, parsed) {
			t.Errorf("%q: Parse gives\n%+v\nLoad gives\n%+v", text, parsed, loaded)
		}
	}
}

// What a text may not say, and how the error reads: one line, naming the
// text, the line of the key, and what to write instead.
func TestParseRefuses(t *testing.T) {
	// A file by each of these names sits in the current directory: Parse
	// must refuse them for what they are, not find them.
	dir := t.TempDir()
	writeFile(t, dir, "base.toml", "extends = \"default\"\n")
	writeFile(t, dir, "sub/base.toml", "extends = \"default\"\n")
	t.Chdir(dir)
	fill := func(n int) string {
		head := "extends = \"default\"\n"
		return head + strings.Repeat("#", n-len(head)-1) + "\n"
	}
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"relative file", "extends = \"base.toml\"\n", []string{"t:1:1: extends: ", `"base.toml" is a file`, "only extend a shipped profile (build, default, fetch, go, network, node, python, readonly, strict)"}},
		{"dot slash", "# a comment\nextends = \"./sub/base.toml\"\n", []string{"t:2:1: extends: ", `"./sub/base.toml" is a file`}},
		{"absolute", "extends = \"" + filepath.Join(dir, "base.toml") + "\"\n", []string{"t:1:1: extends:", "is a file"}},
		{"unknown name", "extends = \"nosuch\"\n", []string{"t:1:1: extends: ", `"nosuch": no such profile`, "(build, default, fetch, go, network, node, python, readonly, strict)"}},
		{"empty extends", "extends = \"\"\n", []string{"t:1:1: extends: empty"}},
		{"no extends", "description = \"root\"\n", []string{"t: extends: missing", `extends = "default"`}},
		{"complete root", rootText(t), []string{"t: extends: missing"}},
		{"too large", fill(MaxSize + 1), []string{"t: larger than 1 MiB"}},
		{"unknown key", "extends = \"default\"\n[limits]\nmemroy = \"1G\"\n", []string{"t:3:1: limits.memroy: unknown key (did you mean limits.memory?)"}},
		{"bad value", "extends = \"default\"\n[limits]\nmemory = \"lots\"\n", []string{"t:3:1: limits.memory: ", `"lots"`}},
		{"newline in a value", "extends = \"a\\nb\"\n", []string{`a\nb`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("t", []byte(c.text))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", p)
			}
			checkOneLine(t, err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := Parse("t", []byte(fill(MaxSize))); err != nil {
		t.Errorf("a text of exactly MaxSize bytes: %v", err)
	}
}

// rootText is the default profile written out whole, without extends: a
// complete root, which a file may be but a text may not.
func rootText(t *testing.T) string {
	t.Helper()
	b, err := mustLoad(t, "default").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, t.TempDir(), "root.toml", string(b))
	if _, err := Load(f); err != nil {
		t.Fatalf("the control: the written-out default does not load as a file: %v", err)
	}
	return string(b)
}

// A base is extended by the name it is given under, even one that looks
// like a file; the text is laid over a copy, so the base is as it was,
// and the base's files are shared, not closed with the text's profile.
func TestBasesParse(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "served.toml", "extends = \"strict\"\nallow_degraded = [\"cgroup\"]\n[limits]\nmemory = \"200M\"\n[env]\nset = { SERVED = \"1\" }\n[filesystem]\ntmpfs = [\"/data:8M\"]\n")
	served := mustLoad(t, f)
	defer served.Close()
	before, err := served.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	bases := Bases{"./served.toml": served}
	text := "extends = \"./served.toml\"\n[limits]\nmemory = \"100M\"\n[env]\nset = { MINE = \"2\" }\n[filesystem]\ntmpfs = [\"/more:8M\"]\n"
	p, err := bases.Parse("profile_toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits["memory"] != "100M" || p.Limits["pids"] != served.Limits["pids"] ||
		p.Env.Set["SERVED"] != "1" || p.Env.Set["MINE"] != "2" || p.Env.Set["PATH"] != served.Env.Set["PATH"] ||
		!reflect.DeepEqual(p.AllowDegraded, []string{"cgroup"}) ||
		!reflect.DeepEqual(p.Filesystem.Tmpfs, append(append([]string(nil), served.Filesystem.Tmpfs...), "/more:8M")) {
		t.Errorf("parsed over the base: %+v", p)
	}
	if after, _ := served.Marshal(); string(after) != string(before) {
		t.Errorf("the base changed:\n%s\nwas\n%s", after, before)
	}
	if len(p.Files()) != 1 || p.Files()[0] != served.Files()[0] {
		t.Errorf("files %v, want the base's %v", p.Files(), served.Files())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(served.Files()[0].File.Fd()), &st); err != nil {
		t.Errorf("closing the parsed profile closed its base's file: %v", err)
	}

	// A shipped name is still a shipped profile; a name that is neither
	// is refused with both lists; a file that is not a base is refused.
	if p, err := bases.Parse("t", []byte("extends = \"strict\"\n")); err != nil || p.Limits["memory"] != mustLoad(t, "strict").Limits["memory"] {
		t.Errorf("extends strict next to bases: %v", err)
	}
	_, err = bases.Parse("t", []byte("extends = \"served.toml\"\n"))
	if err == nil || !strings.Contains(err.Error(), `"served.toml" is a file`) || !strings.Contains(err.Error(), "or one of ./served.toml") {
		t.Errorf("a file that is not a base: %v", err)
	}
	// A base wins over the shipped profile of its name.
	own := mustLoad(t, "strict")
	p, err = Bases{"default": own}.Parse("t", []byte("extends = \"default\"\n"))
	if err != nil || p.Limits["memory"] != own.Limits["memory"] {
		t.Errorf("a base named default: %v, %+v", err, p)
	}
}

// FuzzParse: Parse never panics, its error is one line, and what it
// accepts a file with the same text loads to the same profile (a text
// that Parse takes extends only a shipped profile, which Load reads the
// same way).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"extends = \"default\"\n",
		"extends = \"strict\"\n[limits]\nmemory = 1073741824\npids = \"unlimited\"\n[env]\nset = { A = \"b\" }\n",
		"extends = \"self.toml\"\n",
		"extends = \"/dev/zero\"\n",
		"extends = \"default\"\n[limits]\nmemroy = \"1G\"\n",
		"[[filesystem]]\n",
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "self.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(path, data)
		if err != nil {
			checkOneLine(t, err)
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Load(path)
		if err != nil {
			t.Fatalf("Parse took what Load refuses: %v", err)
		}
		l.Close()
		p.Source, l.files = l.Source, nil
		if !reflect.DeepEqual(p, l) {
			t.Fatalf("Parse and Load differ:\n%+v\n%+v", p, l)
		}
	})
}
