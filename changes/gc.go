package changes

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// GC removes the change sets that expired (created more than Expiry
// before now), then the oldest until the store takes at most MaxSize,
// and the remains of runs whose supervisor died before finishing them
// (a set directory without set.json, unlocked, older than an hour). A
// set another process holds (a run recording it, an apply) is never
// touched. It returns the ids removed, in the order removed.
func (s *Store) GC(now time.Time) ([]string, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	g := &gcRun{s: s, now: now}
	defer g.closeAll()
	for _, id := range ids {
		g.visit(id)
	}
	g.trim()
	return g.removed, errors.Join(g.errs...)
}

// gcRun is one GC: the sets it keeps open (locked) and their total size,
// what it removed and what failed.
type gcRun struct {
	s       *Store
	now     time.Time
	sets    []heldSet // kept so far; trim may remove the oldest
	total   int64     // every kept set's size, damaged ones too
	removed []string
	errs    []error
}

// heldSet is a set GC holds the lock of while it decides.
type heldSet struct {
	id      string
	created time.Time
	size    int64
	dir     *os.File
}

func (g *gcRun) closeAll() {
	for _, h := range g.sets {
		if h.dir != nil {
			h.dir.Close()
		}
	}
}

// remove removes a held set under its lock, which goes with the last
// descriptor.
func (g *gcRun) remove(h *heldSet) {
	err := removeAllAt(int(g.s.root.Fd()), h.id)
	h.dir.Close()
	h.dir = nil
	if err != nil {
		g.errs = append(g.errs, fmt.Errorf("change set %s: %w", h.id, err))
		return
	}
	g.removed = append(g.removed, h.id)
}

// visit cleans one set and removes it if expired or orphaned; a set it
// keeps is held for trim.
func (g *gcRun) visit(id string) {
	dir, err := g.s.openSet(id, false)
	if err != nil {
		return // in use, or gone meanwhile
	}
	h := heldSet{id: id, dir: dir}
	// An applied set's copies (apply's finish moved them aside).
	if err := removeAllAt(int(dir.Fd()), trashDir); err != nil {
		g.errs = append(g.errs, fmt.Errorf("change set %s: %w", id, err))
	}
	if err := g.s.recoverSet(dir, id); err != nil {
		// Its journal is the only record of an interrupted apply:
		// keep it, and count it.
		g.errs = append(g.errs, err)
		h.size, _ = sizeAt(int(g.s.root.Fd()), id)
		g.total += h.size
		dir.Close()
		return
	}
	set, err := readSet(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) && g.orphaned(dir) {
			g.remove(&h)
		} else {
			dir.Close()
		}
		return
	}
	h.created = set.Created
	h.size, _ = sizeAt(int(g.s.root.Fd()), id)
	if g.now.Sub(set.Created) > g.s.opt.Expiry {
		g.remove(&h)
		return
	}
	g.total += h.size
	g.sets = append(g.sets, h)
}

// orphaned says whether a set directory without set.json was left long
// enough ago that no run can still be starting to record it.
func (g *gcRun) orphaned(dir *os.File) bool {
	var st unix.Stat_t
	return unix.Fstat(int(dir.Fd()), &st) == nil && g.now.Sub(time.Unix(st.Mtim.Unix())) > orphanAge
}

// trim removes the oldest kept sets until the store fits in MaxSize.
func (g *gcRun) trim() {
	sort.SliceStable(g.sets, func(i, j int) bool { return g.sets[i].created.Before(g.sets[j].created) })
	sizes := make([]int64, len(g.sets))
	for i, h := range g.sets {
		sizes[i] = h.size
	}
	for i := range oldestOver(sizes, g.total, g.s.opt.MaxSize) {
		g.remove(&g.sets[i])
	}
}

// oldestOver is how many sets, oldest first (sizes in that order), must go
// for total to fit in limit.
func oldestOver(sizes []int64, total, limit int64) int {
	n := 0
	for n < len(sizes) && total > limit {
		total -= sizes[n]
		n++
	}
	return n
}
