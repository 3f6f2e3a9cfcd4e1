package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/tooljail/tooljail/"

// floorRows are the packages of docs/architecture.md's table, by row from
// the top floor down: the names in code spans in each row's first cell.
func floorRows(table string) [][]string {
	var rows [][]string
	name := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		var row []string
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			row = append(row, strings.TrimSuffix(m[1], "/"))
		}
		rows = append(rows, row)
	}
	return rows
}

// moduleImports maps each directory of the repository holding non-test Go
// files of an importable package (not main) to the module's packages they
// import, read from the sources.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, s := range f.Imports {
			if q := strings.Trim(s.Path.Value, `"`); strings.HasPrefix(q, modulePath) {
				out[dir] = append(out[dir], strings.TrimPrefix(q, modulePath))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// floorFaults says where a table of floors (rows, top down) is wrong for
// the packages' imports: a package that imports one of a floor above its
// own, or a package the table does not name. Packages under a directory
// of unlisted are not part of the binary's floors.
func floorFaults(rows [][]string, imports map[string][]string, unlisted []string) []string {
	floor := map[string]int{}
	for i, row := range rows {
		for _, p := range row {
			floor[p] = i
		}
	}
	var faults []string
	for p, deps := range imports {
		if slices.ContainsFunc(unlisted, func(u string) bool { return p == u || strings.HasPrefix(p, u+"/") }) {
			continue
		}
		f, ok := floor[p]
		if !ok {
			faults = append(faults, p+" is not in the table")
			continue
		}
		for _, q := range deps {
			if g, ok := floor[q]; ok && g < f {
				faults = append(faults, p+" imports "+q+", a floor above it")
			}
		}
	}
	slices.Sort(faults)
	return slices.Compact(faults) // one line per import, not per file
}

// docs/architecture.md's table of packages goes from the top floor down:
// every package of the binary is in it, and none imports a package of a
// row above its own.
func TestArchitectureFloors(t *testing.T) {
	table := section(t, readDoc(t, "architecture.md"), "## The packages")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	// Tests, benchmarks, packaging and generators are not floors of tooljail.
	unlisted := []string{"integration", "bench", "packaging", "seccomp/internal/genbuiltin"}
	for _, f := range floorFaults(floorRows(table), moduleImports(t, root), unlisted) {
		t.Errorf("docs/architecture.md, The packages: %s", f)
	}
}

func TestFloorFaults(t *testing.T) {
	rows := [][]string{{"cmd/tooljail"}, {"jail"}, {"network/allow", "network/proxy"}, {"hostpath"}}
	for _, c := range []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{"downwards", map[string][]string{"jail": {"hostpath", "network/proxy"}, "network/allow": {"network/proxy"}}, nil},
		{"upwards", map[string][]string{"hostpath": {"jail"}}, []string{"hostpath imports jail, a floor above it"}},
		{"missing", map[string][]string{"report": nil}, []string{"report is not in the table"}},
		{"unlisted", map[string][]string{"bench/x": {"jail"}, "integration": nil}, nil},
	} {
		if got := floorFaults(rows, c.imports, []string{"bench", "integration"}); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := floorRows("| package | what |\n|---|---|\n| `a`, `b/` | x |\n| `c` | y `d` |\n"); len(got) != 2 || !slices.Equal(got[0], []string{"a", "b"}) || !slices.Equal(got[1], []string{"c"}) {
		t.Errorf("floorRows: %q", got)
	}
}
