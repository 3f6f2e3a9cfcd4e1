package changes

import (
	"errors"
	"fmt"
	"path"
	"sort"

	"golang.org/x/sys/unix"
)

// readable gives the owner of the set's copies the read (and, for a
// directory, search) bits it needs to copy them: a command that ran
// chmod 000 leaves files its user cannot read back, which root reads
// anyway. What apply writes takes the mode the scan recorded (attrs), so
// the copies' own modes no longer matter. Parents come before children:
// the changes are sorted by path.
func (a *applier) readable() error {
	if a.euid == 0 {
		return nil
	}
	for _, c := range a.set.Changes {
		if c.Kind == Deleted || c.Protected || c.Skipped != "" || c.Type != TypeFile && c.Type != TypeDir {
			continue
		}
		up := a.upper[a.bindIndex(c.Bind)]
		if up < 0 {
			continue
		}
		for _, p := range selfAndParents(c.Path) {
			need := uint32(0o400)
			if p != c.Path || c.Type == TypeDir {
				need = 0o500
			}
			var st unix.Stat_t
			err := unix.Fstatat(up, p, &st, unix.AT_SYMLINK_NOFOLLOW)
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) {
				break // a parent is still closed: it comes first in the list
			}
			if err != nil {
				return err
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK || int(st.Uid) != a.euid || st.Mode&need == need {
				continue
			}
			if err := unix.Fchmodat(up, p, st.Mode&0o7777|need, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// selfAndParents are "a", "a/b", "a/b/c" for "a/b/c".
func selfAndParents(rel string) []string {
	var out []string
	for p := rel; p != "." && p != "" && p != "/"; p = path.Dir(p) {
		out = append([]string{p}, out...)
	}
	return out
}

// bindIndex is the index of the bind whose destination is dest.
func (a *applier) bindIndex(dest string) int {
	for i, b := range a.set.Binds {
		if b.Dest == dest {
			return i
		}
	}
	return 0
}

// closedDir is a directory apply made whose mode shuts its owner out.
type closedDir struct {
	bind, rel string
	mode      uint32
}

// finalModes gives the closed directories their modes, the deepest
// first (a closed parent would keep its owner from its children).
func (a *applier) finalModes() error {
	sort.Slice(a.closed, func(i, j int) bool { return len(a.closed[i].rel) > len(a.closed[j].rel) })
	for _, d := range a.closed {
		pfd, name, err := a.parent(a.bindIndex(d.bind), d.rel)
		if err != nil {
			return fmt.Errorf("setting the mode of %s: %w", d.rel, err)
		}
		if err := unix.Fchmodat(pfd, name, d.mode, 0); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", d.rel, err)
		}
	}
	return nil
}
