package bench

import (
	"strings"
	"testing"
)

func TestAssembleKeepsNotes(t *testing.T) {
	first := Assemble("# gen 1\n", "")
	if _, ok := Notes(first); !ok {
		t.Fatalf("a fresh document has no notes section:\n%s", first)
	}
	// Someone writes a log entry; the next generation keeps it verbatim.
	entry := "\n| 2025-11-21 | cache the filter | 31 → 19 ms | 1.9× → 1.1× | |\n"
	edited := strings.Replace(first, NotesEnd, entry+NotesEnd, 1)
	want, _ := Notes(edited)
	second := Assemble("# gen 2\n", edited)
	got, ok := Notes(second)
	if !ok || got != want {
		t.Errorf("notes not kept:\n got %q\nwant %q", got, want)
	}
	if !strings.HasPrefix(second, "# gen 2\n") || strings.Contains(second, "gen 1") {
		t.Errorf("the generated part was not replaced:\n%s", second)
	}
	if strings.Count(second, NotesBegin) != 1 || strings.Count(second, NotesEnd) != 1 {
		t.Errorf("markers duplicated:\n%s", second)
	}
	if third := Assemble("# gen 2\n", second); third != second {
		t.Errorf("Assemble is not stable:\n%s\n---\n%s", second, third)
	}
}

func TestNotesNeedsBothMarkers(t *testing.T) {
	for _, doc := range []string{"", NotesBegin + " x", "x " + NotesEnd, NotesEnd + " x " + NotesBegin} {
		if _, ok := Notes(doc); ok {
			t.Errorf("Notes(%q) found a section", doc)
		}
	}
}

func TestTable(t *testing.T) {
	got := Table([]string{"a", "b"}, [][]string{{"1", "x|y"}, {"2"}})
	want := "| a | b |\n|---|---|\n| 1 | x\\|y |\n| 2 |  |\n"
	if got != want {
		t.Errorf("Table:\n%s\nwant\n%s", got, want)
	}
}
