package mcpserver

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/changes"
)

const setID = "0123456789abcdef0123456789abcdef"

func TestChangesText(t *testing.T) {
	kept := &changes.Report{Mode: changes.Review, Recorded: true, ID: setID, State: changes.StateKept,
		Entries: []changes.Entry{
			{Bind: "/w", Path: "gen.go", Kind: changes.Created, Type: changes.TypeFile, Size: 10},
			{Bind: "/w", Path: "go.sum", Kind: changes.Modified, Type: changes.TypeFile},
			{Bind: "/w", Path: "a\nb", Kind: changes.Deleted, Type: changes.TypeFile},
			{Bind: "/w", Path: "l", Kind: changes.Symlink, Type: changes.TypeSymlink, Target: "gen.go"},
			{Bind: "/w", Path: ".git/hooks/pre-commit", Kind: changes.Created, Type: changes.TypeFile, Protected: true},
			{Bind: "/w", Path: "fifo", Kind: changes.Created, Type: changes.TypeFIFO, Skipped: "a FIFO: special files are not applied"},
		},
		Totals: changes.Totals{Entries: 6, Created: 3, Modified: 1, Deleted: 1, Symlink: 1}}
	got := changesText(kept)
	for _, want := range []string{
		"tooljail: changes kept for review as change set " + setID + ", not applied to the workdir (3 created, 1 modified, 1 deleted, 1 symlink):\n",
		"  created gen.go\n", "  modified go.sum\n", `  deleted "a\nb"` + "\n", "  symlink l (-> gen.go)\n",
		"  created .git/hooks/pre-commit (protected: never applied)\n",
		"  created fifo (not applied: a FIFO: special files are not applied)\n",
		"apply: tooljail changes apply " + setID + "   discard: tooljail changes discard " + setID,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("kept: %q lacks %q", got, want)
		}
	}
	for _, c := range []struct {
		name string
		r    *changes.Report
		want string
	}{
		{"none", nil, ""},
		{"off", &changes.Report{Mode: changes.Off}, ""},
		{"not recorded", &changes.Report{Mode: changes.Record, Reason: "overlayfs: not available in a user namespace on this kernel"}, "tooljail: changes (record) were not recorded: overlayfs: not available"},
		{"empty", &changes.Report{Mode: changes.Review, Recorded: true, State: changes.StateEmpty}, "tooljail: the command changed nothing in its workdir"},
		{"applied, its record kept", &changes.Report{Mode: changes.Record, Recorded: true, ID: setID, State: changes.StateApplied, Entries: []changes.Entry{{Path: "x", Kind: changes.Created}}, Totals: changes.Totals{Entries: 1, Created: 1}}, "tooljail: changes applied to the workdir (1 created):\n  created x"},
		{"conflict", &changes.Report{Mode: changes.ApplyOnSuccess, Recorded: true, ID: setID, State: changes.StateConflict, Entries: []changes.Entry{{Path: "x", Kind: changes.Modified}}, Totals: changes.Totals{Entries: 1, Modified: 1}, Conflicts: []changes.Conflict{{Path: "x", Why: "modified since the run"}}}, "nothing was applied (1 modified):\n  modified x\n  conflict: x: modified since the run\napply:"},
	} {
		got := changesText(c.r)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) || c.r != nil && c.r.State == changes.StateApplied && strings.Contains(got, "apply:") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Many entries: the text lists the first ones and counts the rest.
	many := &changes.Report{Mode: changes.Review, Recorded: true, ID: setID, State: changes.StateKept, Truncated: true, Totals: changes.Totals{Entries: 5000, Created: 5000}}
	for i := 0; i < 1000; i++ {
		many.Entries = append(many.Entries, changes.Entry{Path: "f", Kind: changes.Created})
	}
	if got := changesText(many); strings.Count(got, "\n  created f") != maxChangeLines || !strings.Contains(got, "  ... 4950 more\n") {
		t.Errorf("many: %d lines, %q", strings.Count(got, "\n"), got[len(got)-200:])
	}
}
