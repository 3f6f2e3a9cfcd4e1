package changes

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Apply copies a change set onto the host as one transaction.
//
// Every bind's host directory is opened by its path and must still be the
// directory the run had (device and inode); every path below it is reached
// from that descriptor (openat2 RESOLVE_BENEATH, no symlink, no other
// mount). Before anything is written each entry's host state is compared
// with its baseline: a difference is a Conflict, and nothing is applied
// unless forced. A path with a symlink or another mount on the way is
// refused even when forced.
//
// Each entry is one step: the new object is made under a temporary name
// in its directory (.tooljail-<id>-<step>) and renamed into place; a path
// it replaces is exchanged with it (renameat2 RENAME_EXCHANGE), so the
// old one waits under the temporary name, and a deleted path is renamed
// there. A journal in the set's directory holds the plan and, per step,
// that it started and what it made. Once every step is done the journal
// says commit, and the old objects are removed. An apply that stops
// before the commit (killed, an error) is rolled back: each started step
// is undone in reverse, identifying objects by device and inode, so
// nothing of someone else's is touched. One that stops after it is
// finished. Open does either for any journal it finds (Recover).

// ApplyOptions change how Apply treats conflicts.
type ApplyOptions struct {
	// Force applies in spite of conflicts (they are listed in the result).
	Force bool
}

// ApplyResult is what Apply did.
type ApplyResult struct {
	ID      string `json:"id"`
	Applied int    `json:"applied"`
	// Skipped are the entries never written: protected paths and special
	// files.
	Skipped []Entry `json:"skipped"`
	// Conflicts are those that Force overrode.
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// ConflictError is Apply's answer when the host changed under the set:
// nothing was applied.
type ConflictError struct {
	ID        string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "change set %s: %d conflict(s), nothing applied:", e.ID, len(e.Conflicts))
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s", path.Join(c.Bind, c.Path), c.Why)
	}
	b.WriteString("\nreview them (`tooljail changes diff`), then apply with --force to overwrite, or discard the set")
	return b.String()
}

// Step operations.
const (
	opPlace  = "place"  // a new file, directory, symlink or hard link at Path
	opDelete = "delete" // Path removed
	opChmod  = "chmod"  // Path's permission bits set to Mode
)

// step is one entry's part of an apply, as the journal records it.
type step struct {
	Bind   int    `json:"bind"`
	Path   string `json:"path"`
	Op     string `json:"op"`
	Tmp    string `json:"tmp"`  // the temporary name in Path's directory
	Base   Stamp  `json:"base"` // what Path was before (checked)
	Mode   uint32 `json:"mode,omitempty"`
	Change int    `json:"change"` // index in Set.Changes
}

// journal is a set's journal file as read back.
type journal struct {
	Steps   []step
	started map[int]bool
	made    map[int]objID
	commit  bool
}

type objID struct{ Dev, Ino uint64 }

type journalLine struct {
	Plan   []step `json:"plan,omitempty"`
	Start  *int   `json:"start,omitempty"`
	Made   *int   `json:"made,omitempty"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Commit bool   `json:"commit,omitempty"`
}

// testHookStep, when set, is called after each step (done counts the
// steps done) and after the commit is journaled (committed): the tests
// stop an apply there.
var testHookStep func(done int, committed bool)

// testHookMade, when set, is called when step k made its new object,
// before it is renamed into place.
var testHookMade func(k int)

// tmpName is step k's temporary name: unique to the set and the step.
func tmpName(id string, k int) string { return fmt.Sprintf(".tooljail-%s-%d", id[:12], k) }

// refusedError is a path no apply may write, forced or not.
type refusedError struct{ bind, rel, why string }

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s: %s; nothing applied", path.Join(e.bind, e.rel), e.why)
}

// Apply applies the change set id (see above). A *ConflictError says
// nothing was applied.
func (s *Store) Apply(id string, opt ApplyOptions) (*ApplyResult, error) {
	dir, err := s.openSet(id, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if err := s.recoverSet(dir, id); err != nil {
		return nil, err
	}
	set, err := readRecorded(dir, id)
	if err != nil {
		return nil, err
	}
	if set.State == StateApplied {
		return nil, fmt.Errorf("change set %s is already applied", id)
	}
	a, err := newApplier(dir, set)
	if err != nil {
		return nil, err
	}
	defer a.close()
	res := &ApplyResult{ID: id, Skipped: []Entry{}}
	steps, err := a.plan(res)
	if err != nil {
		return nil, err
	}
	conflicts, err := a.conflicts(steps)
	if err != nil {
		return nil, fmt.Errorf("change set %s: %w", id, err)
	}
	if len(conflicts) > 0 && !opt.Force {
		if set.State != StateConflict {
			set.State = StateConflict // for `changes list`; the entries are unchanged
			writeSet(dir, set, true)
		}
		return nil, &ConflictError{ID: id, Conflicts: conflicts}
	}
	res.Conflicts = conflicts
	if err := a.readable(); err != nil {
		return nil, fmt.Errorf("change set %s: nothing applied: %w", id, err)
	}
	if err := a.runOrRollback(dir, id, steps); err != nil {
		return nil, err
	}
	if err := a.finish(); err != nil {
		return nil, fmt.Errorf("change set %s: applied, but cleaning up failed (the next open of the store finishes it): %w", id, err)
	}
	res.Applied = len(steps)
	if err := a.finalModes(); err != nil {
		return res, fmt.Errorf("change set %s: applied, but %w", id, err)
	}
	return res, nil
}

// readRecorded reads the set in dir, which its run must have finished
// recording.
func readRecorded(dir *os.File, id string) (*Set, error) {
	set, err := readSet(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("change set %s is still being recorded", id)
	}
	if err != nil {
		return nil, fmt.Errorf("change set %s: %w", id, err)
	}
	return set, nil
}

// conflicts are the set's recorded conflicts and those of each step with
// the host as it is now. A conflicting step's base becomes what is there
// now: forced, the step replaces it, and a rollback puts it back.
func (a *applier) conflicts(steps []step) ([]Conflict, error) {
	conflicts := append([]Conflict(nil), a.set.Conflicts...)
	dirs := placedDirs(a.set, steps)
	for i, st := range steps {
		c, now, err := a.check(st, dirs)
		if err != nil {
			return nil, err
		}
		if c != "" {
			conflicts = append(conflicts, Conflict{Bind: a.set.Binds[st.Bind].Dest, Path: st.Path, Why: c})
			steps[i].Base = now
		}
	}
	return conflicts, nil
}

// runOrRollback does the steps; if one fails, it undoes those done and
// marks the set failed, or keeps the journal when the rollback fails too.
func (a *applier) runOrRollback(dir *os.File, id string, steps []step) error {
	err := a.run(steps)
	if err == nil {
		return nil
	}
	if rerr := a.rollback(); rerr != nil {
		return fmt.Errorf("change set %s: apply failed (%v) and its rollback too (%v); the journal is kept for the next try", id, err, rerr)
	}
	a.set.State = StateFailed
	writeSet(dir, a.set, true)
	return fmt.Errorf("change set %s: apply failed, nothing applied: %w", id, err)
}

// applier holds what one apply (or recovery) works on.
type applier struct {
	set   *Set
	dir   *os.File // the set's directory (locked)
	binds []*hostpath.Object
	upper []int // upper/<n> descriptors, -1 when gone
	// parents caches directories below the binds: bind index and rel.
	parents map[parentKey]int
	j       *os.File // the journal, when open for appending
	jr      journal
	euid    int
	// closed are the directories an unprivileged apply made that their
	// owner may not write or search: they get their mode once their
	// children are in (finalModes).
	closed []closedDir
}

type parentKey struct {
	bind int
	rel  string
}

func newApplier(dir *os.File, set *Set) (*applier, error) {
	a := &applier{set: set, dir: dir, parents: map[parentKey]int{}, euid: os.Geteuid()}
	for i, b := range set.Binds {
		o, err := hostpath.Open(b.Host, hostpath.Options{})
		if err != nil {
			a.close()
			return nil, fmt.Errorf("change set %s: bind %s: %w", set.ID, b.Dest, err)
		}
		a.binds = append(a.binds, o)
		if !o.IsDir() || o.Stat.Dev != b.Dev || o.Stat.Ino != b.Ino {
			a.close()
			return nil, fmt.Errorf("change set %s: %s is no longer the directory the run had (device %d inode %d, now %d %d): it was moved or replaced; nothing applied", set.ID, b.Host, b.Dev, b.Ino, o.Stat.Dev, o.Stat.Ino)
		}
		fd, err := openBeneath(int(dir.Fd()), path.Join(upperDir, fmt.Sprint(i)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			fd = -1 // recovery needs no upper layer; plan() reports its absence
		}
		a.upper = append(a.upper, fd)
	}
	return a, nil
}

func (a *applier) close() {
	for _, o := range a.binds {
		o.Close()
	}
	for _, fd := range a.upper {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	for _, fd := range a.parents {
		unix.Close(fd)
	}
	if a.j != nil {
		a.j.Close()
	}
}

// plan turns the set's changes into steps: protected and skipped entries
// go to res.Skipped; hard links come last, after the paths they name.
func (a *applier) plan(res *ApplyResult) ([]step, error) {
	bindOf := map[string]int{}
	for i, b := range a.set.Binds {
		bindOf[b.Dest] = i
	}
	var steps, links []step
	for i, c := range a.set.Changes {
		if c.Protected || c.Skipped != "" {
			res.Skipped = append(res.Skipped, c.Entry)
			continue
		}
		b, ok := bindOf[c.Bind]
		if !ok || !validRel(c.Path) {
			return nil, fmt.Errorf("change set %s: entry %q in %q: not a path of one of its binds; the set is damaged", a.set.ID, c.Path, c.Bind)
		}
		st := step{Bind: b, Path: c.Path, Base: c.Base, Change: i}
		switch {
		case c.Kind == Deleted:
			st.Op = opDelete
		case c.Base.Exists && c.Type == TypeDir && c.Base.Mode&unix.S_IFMT == unix.S_IFDIR,
			c.Kind == ModeChanged && c.Type != TypeSymlink && c.Base.Exists:
			// A directory over a directory keeps its children; only its
			// mode can change (its entries are steps of their own).
			st.Op, st.Mode = opChmod, parseMode(c.Mode)
		default:
			st.Op = opPlace
		}
		if c.Link != "" && st.Op == opPlace {
			links = append(links, st)
		} else {
			steps = append(steps, st)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool {
		if steps[i].Bind != steps[j].Bind {
			return steps[i].Bind < steps[j].Bind
		}
		return steps[i].Path < steps[j].Path
	})
	steps = append(steps, links...)
	for k := range steps {
		steps[k].Tmp = tmpName(a.set.ID, k)
	}
	return steps, nil
}

// validRel says whether rel is an Entry.Path: relative, clean, not ".".
func validRel(rel string) bool {
	return rel != "" && rel != "." && !path.IsAbs(rel) && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
}

func parseMode(s string) uint32 {
	var m uint32
	fmt.Sscanf(s, "%o", &m)
	return m & 0o7777
}

// parent opens (once) the directory of rel in bind b.
func (a *applier) parent(b int, rel string) (int, string, error) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return int(a.binds[b].File.Fd()), name, nil
	}
	key := parentKey{b, dir}
	if fd, ok := a.parents[key]; ok {
		return fd, name, nil
	}
	fd, err := openBeneath(int(a.binds[b].File.Fd()), dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, name, err
	}
	a.parents[key] = fd
	return fd, name, nil
}

// forget drops the cached directories at or below rel: rel was replaced.
func (a *applier) forget(b int, rel string) {
	for k, fd := range a.parents {
		if k.bind == b && (k.rel == rel || strings.HasPrefix(k.rel, rel+"/")) {
			unix.Close(fd)
			delete(a.parents, k)
		}
	}
}

// check compares the host path of st with its baseline: "" when it is
// as the run left it, else why not. A path the apply may not write at
// all is an error.
func (a *applier) check(st step, placed map[parentKey]bool) (string, Stamp, error) {
	dest := a.set.Binds[st.Bind].Dest
	pfd, name, err := a.parent(st.Bind, st.Path)
	var now Stamp
	switch {
	case errors.Is(err, unix.ENOENT):
		// The directory is missing: the path is absent.
	case errors.Is(err, unix.ELOOP):
		return "", now, &refusedError{dest, st.Path, "a symlink is on the way (the project changed since the run); the apply writes through none"}
	case errors.Is(err, unix.EXDEV):
		return "", now, &refusedError{dest, st.Path, "another file system is mounted on the way; the apply writes into none"}
	case errors.Is(err, unix.ENOTDIR) && underPlaced(placed, st.Bind, st.Path):
		// Below a directory the set puts where a file is: absent.
	case errors.Is(err, unix.ENOTDIR):
		return "", now, &refusedError{dest, st.Path, "a directory above it is no longer a directory"}
	case err != nil:
		return "", now, fmt.Errorf("%s: %w", path.Join(dest, st.Path), err)
	default:
		var fst unix.Stat_t
		err := unix.Fstatat(pfd, name, &fst, unix.AT_SYMLINK_NOFOLLOW)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return "", now, fmt.Errorf("%s: %w", path.Join(dest, st.Path), err)
		}
		if err == nil {
			now = stampOfStat(&fst)
		}
	}
	why := stampDiff(st.Base, now)
	if why == "" && st.Base.SHA256 != "" && now.Mode&unix.S_IFMT == unix.S_IFREG {
		sum, err := hashAt(pfd, name)
		if err != nil {
			return "", now, fmt.Errorf("%s: %w", path.Join(dest, st.Path), err)
		}
		if sum != st.Base.SHA256 {
			why = "its content changed since the run"
		}
	}
	return why, now, nil
}

// placedDirs are the directories the steps make.
func placedDirs(set *Set, steps []step) map[parentKey]bool {
	out := map[parentKey]bool{}
	for _, st := range steps {
		if st.Op == opPlace && set.Changes[st.Change].Type == TypeDir {
			out[parentKey{st.Bind, st.Path}] = true
		}
	}
	return out
}

// underPlaced says whether a directory above rel is one the set makes.
func underPlaced(placed map[parentKey]bool, b int, rel string) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if placed[parentKey{b, d}] {
			return true
		}
	}
	return false
}

func stampOfStat(st *unix.Stat_t) Stamp {
	return Stamp{
		Exists: true, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}
}

// stampDiff says how the host path now differs from base, or "". Sizes
// count for files and symlinks only (a directory's size is the file
// system's business).
func stampDiff(base, now Stamp) string {
	switch {
	case !base.Exists && !now.Exists:
		return ""
	case !base.Exists:
		return "created on the host since the run"
	case !now.Exists:
		return "deleted on the host since the run"
	case base.Dev != now.Dev || base.Ino != now.Ino:
		return "replaced on the host since the run (another file now)"
	case base.Mode&unix.S_IFMT != now.Mode&unix.S_IFMT:
		return "its type changed since the run"
	case base.Mode != now.Mode:
		return fmt.Sprintf("its mode changed since the run (%04o -> %04o)", base.Mode&0o7777, now.Mode&0o7777)
	case base.Size != now.Size && now.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Sprintf("modified since the run (size %d -> %d)", base.Size, now.Size)
	case base.Mtime != now.Mtime || base.Ctime != now.Ctime:
		return "modified since the run"
	}
	return ""
}

func hashAt(dir int, name string) (string, error) {
	fd, err := openBeneath(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// journal writing

func (a *applier) jwrite(l journalLine, sync bool) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if _, err := a.j.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if sync {
		return a.j.Sync()
	}
	return nil
}

// run writes the plan to the journal and does every step.
func (a *applier) run(steps []step) error {
	d := int(a.dir.Fd())
	unix.Unlinkat(d, journalFile, 0)
	fd, err := openBeneath(d, journalFile, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	a.j = os.NewFile(uintptr(fd), journalFile)
	a.jr = journal{Steps: steps, started: map[int]bool{}, made: map[int]objID{}}
	// Nothing is synced. A process killed half way leaves the page cache
	// behind, which is all the next Open needs to finish or roll back.
	// Forcing the apply to disk would cost more than the apply (100
	// fsyncs take longer than 100 files; a syncfs writes out whatever
	// else the file system holds dirty, without bound): like git's
	// checkout and the package managers, an apply cut by a power loss
	// may be left partial (docs/changes.md says so).
	if err := a.jwrite(journalLine{Plan: steps}, false); err != nil {
		return err
	}
	if testHookStep != nil {
		testHookStep(0, false)
	}
	placed := map[parentKey]bool{}
	for k, st := range steps {
		if err := a.jwrite(journalLine{Start: &k}, false); err != nil {
			return err
		}
		a.jr.started[k] = true
		if err := a.do(k, st, placed); err != nil {
			return fmt.Errorf("%s: %w", path.Join(a.set.Binds[st.Bind].Dest, st.Path), err)
		}
		if testHookStep != nil {
			testHookStep(k+1, false)
		}
	}
	if err := a.jwrite(journalLine{Commit: true}, false); err != nil {
		return err
	}
	a.jr.commit = true
	if testHookStep != nil {
		testHookStep(len(steps), true)
	}
	return nil
}

// do is step k.
func (a *applier) do(k int, st step, placed map[parentKey]bool) error {
	pfd, name, err := a.parent(st.Bind, st.Path)
	if st.Op == opDelete && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
		return nil // the check saw it: an earlier step removed a directory above it
	}
	if err != nil {
		return err
	}
	c := a.set.Changes[st.Change]
	switch st.Op {
	case opDelete:
		err := unix.Renameat2(pfd, name, pfd, st.Tmp, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.ENOENT) {
			return nil // gone with a directory an earlier step removed
		}
		a.forget(st.Bind, st.Path)
		return err
	case opChmod:
		if !st.Base.Exists {
			return nil // forced over a path deleted since the run
		}
		return chmodAt(pfd, name, st.Mode)
	}
	var old *unix.Stat_t
	if st.Base.Exists {
		var ost unix.Stat_t
		if err := unix.Fstatat(pfd, name, &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		old = &ost
	}
	if _, err := a.make(k, st, c, pfd, old, placed); err != nil {
		return err
	}
	if testHookMade != nil {
		testHookMade(k)
	}
	if old != nil {
		err = unix.Renameat2(pfd, st.Tmp, pfd, name, unix.RENAME_EXCHANGE)
		a.forget(st.Bind, st.Path)
	} else {
		err = unix.Renameat2(pfd, st.Tmp, pfd, name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		return err
	}
	placed[parentKey{st.Bind, st.Path}] = true
	return nil
}

// make makes step k's new object under its temporary name and journals
// its identity before it is renamed anywhere.
func (a *applier) make(k int, st step, c Change, pfd int, old *unix.Stat_t, placed map[parentKey]bool) (objID, error) {
	m := making{a: a, k: k, st: st, c: c, pfd: pfd, old: old}
	switch c.Type {
	case TypeSymlink:
		return m.symlink()
	case TypeDir:
		return m.dir()
	case TypeFile:
		// A hard link to a path this apply placed already links to it;
		// one to a path left as it was gets its own copy.
		if c.Link != "" && placed[parentKey{st.Bind, c.Link}] {
			return m.link()
		}
		return m.file()
	}
	return objID{}, fmt.Errorf("cannot apply a %s", c.Type)
}

// making is one step's new object, made in the directory pfd under the
// step's temporary name.
type making struct {
	a   *applier
	k   int
	st  step
	c   Change
	pfd int
	old *unix.Stat_t // what the path held, nil if nothing
}

// made journals the identity of what was made (fd itself, or its entry
// name when name is not ""), so that recovery removes only that object.
func (m making) made(fd int, name string) (objID, error) {
	var s unix.Stat_t
	var err error
	if name != "" {
		err = unix.Fstatat(fd, name, &s, unix.AT_SYMLINK_NOFOLLOW)
	} else {
		err = unix.Fstat(fd, &s)
	}
	if err != nil {
		return objID{}, err
	}
	id := objID{s.Dev, s.Ino}
	m.a.jr.made[m.k] = id
	return id, m.a.jwrite(journalLine{Made: &m.k, Dev: id.Dev, Ino: id.Ino}, false)
}

// openMade opens the object at the temporary name (flags and mode as for
// openat2) and journals it; the caller closes fd.
func (m making) openMade(flags int, mode uint32) (fd int, id objID, err error) {
	fd, err = openBeneath(m.pfd, m.st.Tmp, flags, mode)
	if err != nil {
		return -1, objID{}, err
	}
	if id, err = m.made(fd, ""); err != nil {
		unix.Close(fd)
		return -1, id, err
	}
	return fd, id, nil
}

// bind is the bind the step writes to.
func (m making) bind() BindInfo { return m.a.set.Binds[m.st.Bind] }

// symlink makes a symbolic link, owned as the path's old entry was.
func (m making) symlink() (objID, error) {
	if err := unix.Symlinkat(m.c.Target, m.pfd, m.st.Tmp); err != nil {
		return objID{}, err
	}
	id, err := m.made(m.pfd, m.st.Tmp)
	if err != nil {
		return id, err
	}
	if uid, gid, ok := ownerFor(m.bind(), m.a.euid, nil, m.old); ok {
		if err := unix.Fchownat(m.pfd, m.st.Tmp, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return id, err
		}
	}
	return id, nil
}

// openCopy opens the set's copy of the changed path in its upper layer.
func (m making) openCopy(flags int) (int, error) {
	up := m.a.upper[m.st.Bind]
	if up < 0 {
		return -1, errors.New("the set's upper layer is gone")
	}
	fd, err := openBeneath(up, m.c.Path, flags|unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, fmt.Errorf("the set's copy: %w", err)
	}
	return fd, nil
}

// dir makes an empty directory with the copy's attributes; its entries
// are steps of their own.
func (m making) dir() (objID, error) {
	src, err := m.openCopy(unix.O_DIRECTORY)
	if err != nil {
		return objID{}, err
	}
	defer unix.Close(src)
	if err := unix.Mkdirat(m.pfd, m.st.Tmp, 0o700); err != nil {
		return objID{}, err
	}
	dst, id, err := m.openMade(unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return id, err
	}
	defer unix.Close(dst)
	return id, m.a.attrs(src, dst, m.bind(), m.old, m.c)
}

// link makes a hard link to the path c.Link, placed by this apply.
func (m making) link() (objID, error) {
	lfd, lname, err := m.a.parent(m.st.Bind, m.c.Link)
	if err != nil {
		return objID{}, err
	}
	if err := unix.Linkat(lfd, lname, m.pfd, m.st.Tmp, 0); err != nil {
		return objID{}, err
	}
	return m.made(m.pfd, m.st.Tmp)
}

// file copies the set's regular file, holes kept, with its attributes.
func (m making) file() (objID, error) {
	src, err := m.openCopy(0)
	if err != nil {
		return objID{}, err
	}
	defer unix.Close(src)
	var sst unix.Stat_t
	if err := unix.Fstat(src, &sst); err != nil {
		return objID{}, err
	}
	if sst.Mode&unix.S_IFMT != unix.S_IFREG {
		return objID{}, fmt.Errorf("the set's copy is not a regular file (mode %#o)", sst.Mode)
	}
	dst, id, err := m.openMade(unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return id, err
	}
	defer unix.Close(dst)
	if err := copySparse(dst, src, sst.Size); err != nil {
		return id, err
	}
	return id, m.a.attrs(src, dst, m.bind(), m.old, m.c)
}

// attrs gives dst (new) src's user.* extended attributes (not
// overlayfs's own), the owner ownerFor says, and src's permission bits
// (a file's setuid and setgid bits are not carried over: a jailed
// command does not get to make set-id programs on the host).
func (a *applier) attrs(src, dst int, b BindInfo, old *unix.Stat_t, c Change) error {
	var sst unix.Stat_t
	if err := unix.Fstat(src, &sst); err != nil {
		return err
	}
	if err := copyUserXattrs(src, dst); err != nil {
		return err
	}
	if uid, gid, ok := ownerFor(b, a.euid, &sst, old); ok {
		if err := unix.Fchown(dst, uid, gid); err != nil {
			return fmt.Errorf("chown %d:%d: %w", uid, gid, err)
		}
	}
	// The permission bits the scan recorded: readable() may have added
	// the owner's read bits to the set's copy since.
	mode := sst.Mode & 0o7777
	if c.Mode != "" {
		mode = mode&0o7000 | parseMode(c.Mode)&0o777
	}
	if sst.Mode&unix.S_IFMT == unix.S_IFREG {
		mode &^= unix.S_ISUID | unix.S_ISGID
	}
	if sst.Mode&unix.S_IFMT == unix.S_IFDIR && a.euid != 0 && mode&0o700 != 0o700 {
		a.closed = append(a.closed, closedDir{c.Bind, c.Path, mode})
		mode |= 0o700
	}
	return unix.Fchmod(dst, mode)
}

// ownerFor is the owner to give an object apply writes, if any: a path
// it replaces keeps its owner (as a write through the bind would); a new
// one gets the bind's owner (root's apply of an idmapped bind), else,
// applied by root, the owner the jail gave it (src; nil for a symlink:
// root's then). An unprivileged apply leaves it its own.
func ownerFor(b BindInfo, euid int, src, old *unix.Stat_t) (uid, gid int, ok bool) {
	switch {
	case old != nil && euid == 0:
		return int(old.Uid), int(old.Gid), true
	case old != nil:
		return 0, 0, false
	case b.UID >= 0:
		return b.UID, b.GID, true
	case euid == 0 && src != nil:
		return int(src.Uid), int(src.Gid), true
	}
	return 0, 0, false
}

func copyUserXattrs(src, dst int) error {
	sz, err := unix.Flistxattr(src, nil)
	if err != nil || sz == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	buf := make([]byte, sz)
	sz, err = unix.Flistxattr(src, buf)
	if err != nil {
		return err
	}
	for _, n := range bytes.Split(buf[:sz], []byte{0}) {
		name := string(n)
		if !strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "user.overlay.") {
			continue
		}
		vsz, err := unix.Fgetxattr(src, name, nil)
		if err != nil {
			return err
		}
		val := make([]byte, vsz)
		if vsz, err = unix.Fgetxattr(src, name, val); err != nil {
			return err
		}
		if err := unix.Fsetxattr(dst, name, val[:vsz], 0); err != nil {
			return fmt.Errorf("set xattr %s: %w", name, err)
		}
	}
	return nil
}

// copySparse copies size bytes of src to dst, data only: holes stay holes.
func copySparse(dst, src int, size int64) error {
	var off int64
	for off < size {
		data, err := unix.Seek(src, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // the rest is a hole
		}
		if err != nil {
			data = off // no SEEK_DATA here: all data
		}
		hole, err := unix.Seek(src, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		if hole > size {
			hole = size
		}
		if err := copyRange(dst, src, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(dst, size)
}

func copyRange(dst, src int, off, n int64) error {
	roff, woff := off, off
	for n > 0 {
		c, err := unix.CopyFileRange(src, &roff, dst, &woff, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
				return preadCopy(dst, src, roff, n)
			}
			return err
		}
		if c == 0 {
			return io.ErrUnexpectedEOF // the copy shrank under us
		}
		n -= int64(c)
	}
	return nil
}

func preadCopy(dst, src int, off, n int64) error {
	buf := make([]byte, 1<<20)
	for n > 0 {
		c, err := unix.Pread(src, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if c == 0 {
			return io.ErrUnexpectedEOF
		}
		if _, err := unix.Pwrite(dst, buf[:c], off); err != nil {
			return err
		}
		off += int64(c)
		n -= int64(c)
	}
	return nil
}

// chmodAt sets name's permission bits, through its descriptor's magic
// link (a name is not looked up twice, and no symlink is followed).
func chmodAt(dir int, name string, mode uint32) error {
	fd, err := openBeneath(dir, name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
}

// finish completes a committed apply: the objects the steps replaced
// leave the project (into the set's copies, or removed), the set is
// marked applied, its copies set aside for GC, the journal last.
func (a *applier) finish() error {
	aside := a.replacedDir()
	if aside >= 0 {
		defer unix.Close(aside)
	}
	for k, st := range a.jr.Steps {
		if !a.jr.started[k] {
			continue
		}
		pfd, _, err := a.parent(st.Bind, st.Path)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		// The temporary name holds what the step replaced. Freeing a
		// file's blocks is most of an apply's time (an unlink each), so
		// it moves into the set's copies, which GC removes later, when
		// the project and the store share a mount; else it goes now.
		if aside >= 0 && unix.Renameat2(pfd, st.Tmp, aside, fmt.Sprint(k), unix.RENAME_NOREPLACE) == nil {
			continue
		}
		if err := removeAllAt(pfd, st.Tmp); err != nil {
			return err
		}
	}
	// Until the journal is gone, a killed process has the next Open
	// redo this.
	a.set.State = StateApplied
	a.set.Conflicts = nil
	if err := writeSet(a.dir, a.set, false); err != nil {
		return err
	}
	// The set's copies are of no more use. Removing them is half of an
	// apply's system calls, so they are moved aside for the store's
	// next collection (GC, which a run starts at most hourly) instead.
	if err := unix.Renameat(int(a.dir.Fd()), upperDir, int(a.dir.Fd()), trashDir); err != nil && !errors.Is(err, unix.ENOENT) {
		if err := removeAllAt(int(a.dir.Fd()), upperDir); err != nil {
			return err
		}
	}
	return a.dropJournal(false)
}

// replacedDir opens (making it) the directory of the set's copies that
// finish moves the replaced objects into, or returns -1: they are then
// removed at once. It lies in upper/, which finish moves aside whole.
func (a *applier) replacedDir() int {
	d := int(a.dir.Fd())
	name := path.Join(upperDir, replacedDir)
	if err := unix.Mkdirat(d, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1
	}
	fd, err := openBeneath(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1
	}
	return fd
}

func (a *applier) dropJournal(sync bool) error {
	if a.j != nil {
		a.j.Close()
		a.j = nil
	}
	if err := unix.Unlinkat(int(a.dir.Fd()), journalFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if !sync {
		return nil
	}
	return unix.Fsync(int(a.dir.Fd()))
}

// rollback undoes the started steps, last first. Objects are told apart
// by identity: the baseline's (the host's old object) and the journaled
// one (what the step made); a name holding neither is left alone, except
// the step's temporary name, which is the apply's own.
func (a *applier) rollback() error {
	var errs []error
	for k := len(a.jr.Steps) - 1; k >= 0; k-- {
		if !a.jr.started[k] {
			continue
		}
		if err := a.undo(k, a.jr.Steps[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path.Join(a.set.Binds[a.jr.Steps[k].Bind].Dest, a.jr.Steps[k].Path), err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := a.restamp(); err != nil {
		return err
	}
	return a.dropJournal(true)
}

// restamp updates the baselines a rollback made stale: putting an object
// back by rename, or its mode back, changes its ctime, and making and
// removing names in a directory its mtime. Only objects that are the
// baseline's own (device and inode) are restamped, and of a file only
// the ctime: a change of its content still shows in its size, mtime and
// hash, one of its mode in the mode.
func (a *applier) restamp() error {
	changed := false
	for _, st := range a.jr.Steps {
		base := &a.set.Changes[st.Change].Base
		if !base.Exists {
			continue
		}
		pfd, name, err := a.parent(st.Bind, st.Path)
		if err != nil {
			continue
		}
		var now unix.Stat_t
		if unix.Fstatat(pfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			now.Dev != base.Dev || now.Ino != base.Ino || now.Mode != base.Mode {
			continue
		}
		if c := now.Ctim.Nano(); c != base.Ctime {
			base.Ctime, changed = c, true
		}
		if m := now.Mtim.Nano(); now.Mode&unix.S_IFMT == unix.S_IFDIR && m != base.Mtime {
			base.Mtime, changed = m, true
		}
	}
	if !changed {
		return nil
	}
	return writeSet(a.dir, a.set, true)
}

func (a *applier) undo(k int, st step) error {
	// The cache may hold st.Path, which this may remove or put back.
	defer a.forget(st.Bind, st.Path)
	pfd, name, err := a.parent(st.Bind, st.Path)
	if errors.Is(err, unix.ENOENT) {
		return nil // its directory was made by a step already undone
	}
	if err != nil {
		return err
	}
	idAt := func(n string) (objID, bool) {
		var s unix.Stat_t
		if unix.Fstatat(pfd, n, &s, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return objID{}, false
		}
		return objID{s.Dev, s.Ino}, true
	}
	base := objID{st.Base.Dev, st.Base.Ino}
	made, haveMade := a.jr.made[k]
	tmp, haveTmp := idAt(st.Tmp)
	cur, haveCur := idAt(name)
	switch st.Op {
	case opChmod:
		if haveCur && cur == base {
			return chmodAt(pfd, name, st.Base.Mode&0o7777)
		}
	case opDelete:
		if haveTmp && tmp == base {
			return unix.Renameat2(pfd, st.Tmp, pfd, name, unix.RENAME_NOREPLACE)
		}
	case opPlace:
		switch {
		case haveTmp && st.Base.Exists && tmp == base:
			// Exchanged: put the old one back, then drop ours.
			if err := unix.Renameat2(pfd, st.Tmp, pfd, name, unix.RENAME_EXCHANGE); err != nil {
				return err
			}
			return removeAllAt(pfd, st.Tmp)
		case haveTmp:
			return removeAllAt(pfd, st.Tmp) // made, not yet renamed
		case !st.Base.Exists && haveMade && haveCur && cur == made:
			return removeAllAt(pfd, name)
		}
	}
	return nil
}

// readJournal reads a set's journal; a torn last line (the process died
// writing it) is ignored.
func readJournal(dir *os.File) (*journal, error) {
	f, err := openInSet(dir, journalFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	j := &journal{started: map[int]bool{}, made: map[int]objID{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	first := true
	for sc.Scan() {
		var l journalLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			break
		}
		if first {
			j.Steps, first = l.Plan, false
			continue
		}
		switch {
		case l.Start != nil:
			j.started[*l.Start] = true
		case l.Made != nil:
			j.made[*l.Made] = objID{l.Dev, l.Ino}
		case l.Commit:
			j.commit = true
		}
	}
	return j, sc.Err()
}

// Recover finishes or rolls back every interrupted apply in the store
// whose set no other process holds. Open runs it; the error names the
// sets it could not recover (their journals stay for the next try).
func (s *Store) Recover() error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		var st unix.Stat_t
		if unix.Fstatat(int(s.root.Fd()), path.Join(id, journalFile), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		dir, err := s.openSet(id, false)
		if err != nil {
			continue // another process has it
		}
		if err := s.recoverSet(dir, id); err != nil {
			errs = append(errs, err)
		}
		dir.Close()
	}
	return errors.Join(errs...)
}

// recoverSet finishes or rolls back the apply the journal of the set
// (dir, locked) records, if any.
func (s *Store) recoverSet(dir *os.File, id string) error {
	j, err := readJournal(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("change set %s: journal: %w", id, err)
	}
	set, err := readSet(dir)
	if err != nil {
		return fmt.Errorf("change set %s: %w", id, err)
	}
	a, err := newApplier(dir, set)
	if err != nil {
		return fmt.Errorf("an interrupted apply cannot be recovered: %w", err)
	}
	defer a.close()
	a.jr = *j
	if j.commit {
		err = a.finish()
	} else {
		err = a.rollback()
	}
	if err != nil {
		return fmt.Errorf("change set %s: recover an interrupted apply: %w", id, err)
	}
	return nil
}
