package tools

import (
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	parse := func(name, text string) *File {
		t.Helper()
		f, err := Parse(name, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := parse("/x/a.toml", "[tools.one]\ndescription = \"d\"\ncommand = [\"true\"]\n[tools.two]\ndescription = \"d\"\ncommand = [\"true\"]\n")
	b := parse("/y/b.toml", "[tools.three]\ndescription = \"d\"\ncommand = [\"true\"]\n[run_command]\nprofile = \"strict\"\n")
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var names, files []string
	for _, tool := range m.Tools {
		names, files = append(names, tool.Name), append(files, tool.File)
	}
	if strings.Join(names, " ") != "one two three run_command" || strings.Join(files, " ") != "/x/a.toml /x/a.toml /y/b.toml /y/b.toml" || m.Name != "/x/a.toml, /y/b.toml" {
		t.Errorf("merged %q from %q as %q", names, files, m.Name)
	}
	if m, err := Merge(a); err != nil || m != a {
		t.Errorf("one file: %v %v", m, err)
	}
	c := parse("/z/c.toml", "[tools.two]\ndescription = \"d\"\ncommand = [\"false\"]\n[run_command]\nprofile = \"default\"\n")
	_, err = Merge(a, b, c)
	if err == nil || !strings.Contains(err.Error(), "tool two is declared in /x/a.toml and again in /z/c.toml") ||
		!strings.Contains(err.Error(), "tool run_command is declared in /y/b.toml and again in /z/c.toml") {
		t.Errorf("a name twice: %v", err)
	}
}
