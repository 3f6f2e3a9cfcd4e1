package changes

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOldestOver(t *testing.T) {
	for _, c := range []struct {
		sizes        []int64
		total, limit int64
		want         int
	}{
		{nil, 0, 0, 0},
		{[]int64{10, 20}, 30, 30, 0},  // fits exactly
		{[]int64{10, 20}, 31, 30, 1},  // the oldest goes
		{[]int64{10, 20}, 40, 10, 2},  // both
		{[]int64{5, 5}, 100, 10, 2},   // not enough to remove: all kept sets go, no more
		{[]int64{0, 0, 50}, 50, 1, 3}, // empty sets count as steps
		{[]int64{50, 1}, 60, 10, 1},   // the first removal is enough
	} {
		if got := oldestOver(c.sizes, c.total, c.limit); got != c.want {
			t.Errorf("oldestOver(%v, %d, %d) = %d, want %d", c.sizes, c.total, c.limit, got, c.want)
		}
	}
}

func TestPickEntries(t *testing.T) {
	changes := []Change{
		{Entry: Entry{Bind: "/home/u/proj", Path: "a.txt"}},
		{Entry: Entry{Bind: "/home/u/proj", Path: "sub/b.txt"}},
		{Entry: Entry{Bind: "/data", Path: "a.txt"}},
	}
	for _, c := range []struct {
		p    string
		want []int
	}{
		{"", []int{0, 1, 2}},
		{"a.txt", []int{0, 2}},
		{"/home/u/proj/a.txt", []int{0}},
		{"/home/u/proj//sub/./b.txt", []int{1}},
		{"/data/a.txt", []int{2}},
		{"b.txt", nil},
		{"sub/b.txt", []int{1}},
	} {
		if got := pickEntries(changes, c.p); !slices.Equal(got, c.want) {
			t.Errorf("pickEntries(%q) = %v, want %v", c.p, got, c.want)
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

func TestKindByType(t *testing.T) {
	for _, c := range []struct {
		exists, same bool
		utype        uint32
		want         string
	}{
		{false, false, unix.S_IFLNK, Symlink},
		{false, false, unix.S_IFREG, Created},
		{false, false, unix.S_IFDIR, Created},
		{true, false, unix.S_IFREG, TypeChanged},
		{true, false, unix.S_IFLNK, TypeChanged},
		{true, true, unix.S_IFREG, ""}, // content and mode tell
		{true, true, unix.S_IFLNK, ""}, // the target tells
	} {
		if got := kindByType(c.exists, c.same, c.utype); got != c.want {
			t.Errorf("kindByType(%v, %v, %#o) = %q, want %q", c.exists, c.same, c.utype, got, c.want)
		}
	}
}
