package changes

import (
	"slices"
	"testing"
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
