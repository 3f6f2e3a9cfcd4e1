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
	type held struct {
		id      string
		created time.Time
		size    int64
		dir     *os.File
	}
	var sets []held
	defer func() {
		for _, h := range sets {
			if h.dir != nil {
				h.dir.Close()
			}
		}
	}()
	var removed []string
	var errs []error
	remove := func(h *held) {
		// Removed under its lock, which goes with the last descriptor.
		err := removeAllAt(int(s.root.Fd()), h.id)
		h.dir.Close()
		h.dir = nil
		if err != nil {
			errs = append(errs, fmt.Errorf("change set %s: %w", h.id, err))
			return
		}
		removed = append(removed, h.id)
	}
	var total int64
	for _, id := range ids {
		dir, err := s.openSet(id, false)
		if err != nil {
			continue // in use, or gone meanwhile
		}
		h := held{id: id, dir: dir}
		// An applied set's copies (apply's finish moved them aside).
		if err := removeAllAt(int(dir.Fd()), trashDir); err != nil {
			errs = append(errs, fmt.Errorf("change set %s: %w", id, err))
		}
		if err := s.recoverSet(dir, id); err != nil {
			// Its journal is the only record of an interrupted apply:
			// keep it, and count it.
			errs = append(errs, err)
			h.size, _ = sizeAt(int(s.root.Fd()), id)
			total += h.size
			dir.Close()
			continue
		}
		set, err := readSet(dir)
		if err != nil {
			var st unix.Stat_t
			if errors.Is(err, unix.ENOENT) && unix.Fstat(int(dir.Fd()), &st) == nil &&
				now.Sub(time.Unix(st.Mtim.Unix())) > orphanAge {
				remove(&h)
			} else {
				dir.Close()
			}
			continue
		}
		h.created = set.Created
		h.size, _ = sizeAt(int(s.root.Fd()), id)
		if now.Sub(set.Created) > s.opt.Expiry {
			remove(&h)
			continue
		}
		total += h.size
		sets = append(sets, h)
	}
	sort.SliceStable(sets, func(i, j int) bool { return sets[i].created.Before(sets[j].created) })
	for i := range sets {
		if total <= s.opt.MaxSize {
			break
		}
		total -= sets[i].size
		remove(&sets[i])
	}
	return removed, errors.Join(errs...)
}
