package changes

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gcSet keeps a set created at created, with a file of size bytes.
func gcSet(t *testing.T, s *Store, host string, created time.Time, size int) string {
	t.Helper()
	f := newFixtureIn(t, s, host)
	f.p.created = created
	f.file("blob", strings.Repeat("x", size), 0o644)
	return f.finish()
}

func TestGC(t *testing.T) {
	s := newStore(t)
	host := t.TempDir()
	now := time.Now()
	expired := gcSet(t, s, host, now.Add(-8*24*time.Hour), 1000)
	old := gcSet(t, s, host, now.Add(-3*time.Hour), 300<<10)
	mid := gcSet(t, s, host, now.Add(-2*time.Hour), 300<<10)
	recent := gcSet(t, s, host, now.Add(-time.Hour), 300<<10)
	// Expired, but another process holds it (an apply): never touched.
	heldID := gcSet(t, s, host, now.Add(-9*24*time.Hour), 10)
	held, err := s.openSet(heldID, false)
	must(t, err)
	// A pending set (a run recording it) is locked too.
	pending, err := s.Create(1, os.Getuid(), os.Getgid())
	must(t, err)
	defer pending.Abort()
	// The remains of a supervisor that died: no set.json, unlocked, old.
	orphan, err := s.Create(1, os.Getuid(), os.Getgid())
	must(t, err)
	orphan.closeLayers()
	orphan.dir.Close()
	hourAgo := now.Add(-2 * time.Hour)
	must(t, os.Chtimes(filepath.Join(s.Dir(), orphan.ID), hourAgo, hourAgo))
	// One as fresh is still starting: kept.
	young, err := s.Create(1, os.Getuid(), os.Getgid())
	must(t, err)
	young.closeLayers()
	young.dir.Close()

	s2, err := Open(s.Dir(), Options{MaxSize: 700 << 10})
	must(t, err)
	defer s2.Close()
	removed, err := s2.GC(now)
	must(t, err)
	want := []string{expired, orphan.ID, old}
	sortedEq := func(a, b []string) bool {
		m := map[string]int{}
		for _, x := range a {
			m[x]++
		}
		for _, x := range b {
			m[x]--
		}
		for _, v := range m {
			if v != 0 {
				return false
			}
		}
		return len(a) == len(b)
	}
	if !sortedEq(removed, want) || removed[len(removed)-1] != old {
		t.Errorf("GC removed %v, want %v (the oldest last)", removed, want)
	}
	for _, id := range []string{mid, recent, heldID, pending.ID, young.ID} {
		if _, err := os.Stat(filepath.Join(s.Dir(), id)); err != nil {
			t.Errorf("%s removed: %v", id, err)
		}
	}
	held.Close()
	// Released, the expired one goes; under the size now, nothing else.
	removed, err = s2.GC(now)
	must(t, err)
	if !reflect.DeepEqual(removed, []string{heldID}) {
		t.Errorf("second GC removed %v, want [%s]", removed, heldID)
	}
	list, err := s2.List()
	must(t, err)
	if len(list) != 2 || list[0].ID != mid || list[1].ID != recent {
		t.Errorf("List after GC = %+v", list)
	}
}

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
