package changes

import (
	"fmt"
	"testing"
)

func TestSummarize(t *testing.T) {
	all := []Change{
		{Entry: Entry{Path: "a", Kind: Created, Type: TypeFile, Size: 10}},
		{Entry: Entry{Path: "b", Kind: Modified, Type: TypeFile, Size: 20}},
		{Entry: Entry{Path: "c", Kind: Deleted, Type: TypeFile}},
		{Entry: Entry{Path: "d", Kind: TypeChanged, Type: TypeFile, Size: 40}},
		{Entry: Entry{Path: "e", Kind: TypeChanged, Type: TypeDir}},
		{Entry: Entry{Path: "f", Kind: ModeChanged, Type: TypeFile, Size: 1000}},
		{Entry: Entry{Path: "g", Kind: Symlink, Type: TypeSymlink, Target: "x"}},
		{Entry: Entry{Path: "h", Kind: Created, Type: TypeFile, Size: 10, Link: "a"}},
		{Entry: Entry{Path: ".bashrc", Kind: Created, Type: TypeFile, Size: 100, Protected: true}},
		{Entry: Entry{Path: "p", Kind: Created, Type: TypeFIFO, Skipped: "a FIFO"}},
	}
	entries, tot, trunc := Summarize(all)
	want := Totals{Entries: 10, Created: 4, Modified: 1, Deleted: 1, TypeChanged: 2, ModeChanged: 1, Symlink: 1, Bytes: 70}
	if tot != want || trunc || len(entries) != len(all) {
		t.Errorf("got %+v truncated=%v %d entries, want %+v", tot, trunc, len(entries), want)
	}
	for i := range entries {
		if entries[i] != all[i].Entry {
			t.Errorf("entry %d: %+v, want %+v", i, entries[i], all[i].Entry)
		}
	}

	// Beyond MaxEntries: the first ones listed, all counted.
	many := make([]Change, MaxEntries+5)
	for i := range many {
		many[i] = Change{Entry: Entry{Path: fmt.Sprintf("f%05d", i), Kind: Created, Type: TypeFile, Size: 1}}
	}
	entries, tot, trunc = Summarize(many)
	if len(entries) != MaxEntries || !trunc || tot.Entries != MaxEntries+5 || tot.Created != MaxEntries+5 || tot.Bytes != MaxEntries+5 {
		t.Errorf("capped: %d entries, truncated=%v, totals %+v", len(entries), trunc, tot)
	}
	if entries[MaxEntries-1].Path != many[MaxEntries-1].Path {
		t.Errorf("the first entries are kept in order")
	}
	entries, tot, trunc = Summarize(nil)
	if entries == nil || len(entries) != 0 || tot != (Totals{}) || trunc {
		t.Errorf("nothing: %#v %+v %v (entries must be [] in JSON, not null)", entries, tot, trunc)
	}
}
