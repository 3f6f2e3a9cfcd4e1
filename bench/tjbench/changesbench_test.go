package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func changesFixture(off, review, record, small, large float64) *changesResult {
	ms := func(v float64) timing {
		if v == 0 {
			return toTiming(nil)
		}
		return toTiming([]time.Duration{time.Duration(v * 0.9 * 1e6), time.Duration(v * 1e6), time.Duration(v * 1.2 * 1e6)})
	}
	return &changesResult{Runs: 3, Applies: 3,
		Startup:  map[string]timing{"off": ms(off), "review": ms(review), "record": ms(record)},
		Apply:    map[int]timing{10_000: ms(small), 100_000: ms(large)},
		Commands: map[string]string{"off": "tooljail run OFF", "review": "tooljail run REVIEW", "record": "tooljail run RECORD", "apply": "tooljail changes apply ID"}}
}

func TestChangesRows(t *testing.T) {
	for _, c := range []struct {
		off, review, record, small, large float64
		want                              [3]string
	}{
		{10, 11, 10.5, 20, 49, [3]string{"met", "met", "met"}},
		{10, 11.2, 10, 20, 50, [3]string{"**not met**", "met", "**not met**"}},
		{0, 11, 11, 0, 0, [3]string{"not measured", "not measured", "not measured"}},
	} {
		rows := changesRows(changesFixture(c.off, c.review, c.record, c.small, c.large))
		if len(rows) != 3 {
			t.Fatalf("%d rows, want 3", len(rows))
		}
		for i, r := range rows {
			if r[3] != c.want[i] {
				t.Errorf("%+v row %d: %v, want %q", c, i, r, c.want[i])
			}
		}
	}
	rows := changesRows(changesFixture(10, 11, 10.5, 20, 49))
	if !strings.HasPrefix(rows[0][2], "1.10× (11.0 ms vs 10.0 ms)") || !strings.HasPrefix(rows[2][2], "49.0 ms (10000 files: 20.0 ms, 2.45×)") {
		t.Errorf("figures: %q, %q", rows[0][2], rows[2][2])
	}
}

func TestRenderChanges(t *testing.T) {
	var b strings.Builder
	renderChanges(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, changesFixture(10, 11, 12, 20, 30))
	out := b.String()
	if !strings.HasPrefix(out, changesHeading+"\n") {
		t.Errorf("no heading first:\n%s", out)
	}
	for _, want := range []string{
		"| `--changes off` | 10.0 ms | 9.20 ms | 11.6 ms | 1.00× |",
		"| `--changes review` | 11.0 ms |",
		"| 1.20× |",
		"| 100000 | 30.0 ms |",
		"    tooljail run OFF\n    tooljail run REVIEW\n    tooljail run RECORD\n    tooljail changes apply ID\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// The tree has the count asked for, 100 directories, and each
// directory's f0 (what the script changes).
func TestChangesTree(t *testing.T) {
	d := filepath.Join(t.TempDir(), "wd")
	if err := changesTree(d, 1000, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	files, dirs := 0, 0
	filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
		switch {
		case p == d:
		case e.IsDir():
			dirs++
		default:
			files++
		}
		return err
	})
	if files != 1000 || dirs != 100 {
		t.Errorf("%d files in %d directories, want 1000 in 100", files, dirs)
	}
	if _, err := os.Stat(filepath.Join(d, "d99", "f0")); err != nil {
		t.Error(err)
	}
}

func TestSpliceTargetRows(t *testing.T) {
	doc := "# B\n\n## Design targets (DESIGN.md section 8)\n\n| target | goal | measured | met |\n|---|---|---|---|\n| a | 1 | 2 | met |\n| supervisor memory | < 15 MiB | 6 MiB | met |\n\n## Start-up\n\n| x | y |\n"
	got, err := spliceTargetRows(doc, [][]string{{"new", "g", "m", "met"}})
	want := "| a | 1 | 2 | met |\n| new | g | m | met |\n| supervisor memory |"
	if err != nil || !strings.Contains(got, want) || !strings.HasSuffix(got, "## Start-up\n\n| x | y |\n") {
		t.Fatalf("insert: %v\n%s", err, got)
	}
	// Again: the row is replaced, not added twice.
	got2, err := spliceTargetRows(got, [][]string{{"new", "g", "m2", "**not met**"}})
	if err != nil || strings.Count(got2, "| new |") != 1 || !strings.Contains(got2, "| new | g | m2 | **not met** |\n| supervisor memory |") {
		t.Fatalf("replace: %v\n%s", err, got2)
	}
	// A row measured with other counts is the same row; two left by an
	// older version become one.
	twice := strings.Replace(got2, "| new | g | m2 | **not met** |\n", "| x, medians of 200 | g | 1 | met |\n| x, medians of 100 | g | 2 | met |\n", 1)
	got3, err := spliceTargetRows(twice, [][]string{{"x, medians of 150", "g", "3", "met"}})
	if err != nil || strings.Count(got3, "| x, medians") != 1 || !strings.Contains(got3, "| a | 1 | 2 | met |\n| x, medians of 150 | g | 3 | met |\n| supervisor memory |") {
		t.Fatalf("same row, other counts: %v\n%s", err, got3)
	}
	if _, err := spliceTargetRows("# B\n\n## Start-up\n", nil); err == nil {
		t.Error("a report without the targets section: want an error")
	}
}
