package changes

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// A store keeps one user's change sets, one directory each:
//
//	<store>/<id>/set.json   the run's Meta and every change with its baseline
//	<store>/<id>/upper/<n>  the upper layer of the n-th change bind
//	<store>/<id>/work/<n>   overlayfs's work directory (only during the run)
//	<store>/<id>/journal    an apply under way (see apply.go)
//
// The store directory and every set directory are 0700 and the caller's.
// Everything below the store is reached from its descriptor, one
// component at a time, following no symlink: a name another process put
// there cannot send the store's writes elsewhere. A process working on a
// set (recording, applying, discarding, collecting) holds an exclusive
// flock on the set's directory.

const (
	// DefaultMaxSize is the size the store is kept under by GC.
	DefaultMaxSize int64 = 2 << 30
	// DefaultExpiry is how long a change set is kept.
	DefaultExpiry = 7 * 24 * time.Hour
)

// Options tune a store; zero values take the defaults.
type Options struct {
	MaxSize int64         // GC removes the oldest sets until the store is under it
	Expiry  time.Duration // GC removes sets created longer ago than this
}

// Store is an opened change store.
type Store struct {
	dir  string
	root *os.File // O_RDONLY directory
	opt  Options
}

// Set is a change set as the store keeps it (set.json).
type Set struct {
	Meta
	Totals  Totals   `json:"totals"`
	Changes []Change `json:"changes"`
	// Conflicts are paths the host changed while the run went on (their
	// baseline is newer than the run's start): apply refuses them unless
	// forced, since the baseline already has the other writer's change.
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// Summary is a change set in List.
type Summary struct {
	Meta
	Totals Totals `json:"totals"`
	Size   int64  `json:"size"` // bytes the set takes on disk
}

const (
	setFile     = "set.json"
	journalFile = "journal"
	upperDir    = "upper"
	trashDir    = "applied" // an applied set's copies, for GC to remove
	// replacedDir, in upperDir, holds what an apply replaced in the
	// project (objects named by their step) until GC removes trashDir.
	replacedDir = "replaced"
	workDir     = "work"
	// orphanAge is how old a set directory without set.json must be
	// before GC takes it for the remains of a supervisor that died.
	orphanAge = time.Hour
)

// DefaultDir is the store of a user: root's is /var/lib/tooljail/changes,
// anyone else's $XDG_STATE_HOME/tooljail/changes, or
// $HOME/.local/state/tooljail/changes when XDG_STATE_HOME is unset or not
// absolute (the XDG rule).
func DefaultDir(euid int, home, xdgState string) (string, error) {
	switch {
	case euid == 0:
		return "/var/lib/tooljail/changes", nil
	case path.IsAbs(xdgState):
		return path.Join(xdgState, "tooljail", "changes"), nil
	case path.IsAbs(home):
		return path.Join(home, ".local", "state", "tooljail", "changes"), nil
	}
	return "", errors.New("no change store: neither XDG_STATE_HOME nor HOME is an absolute path; give one with --changes-dir or TOOLJAIL_CHANGES_DIR")
}

// ValidID says whether id can name a change set: 32 lowercase hex
// digits, as NewID makes them. Nothing else is ever joined to a path.
func ValidID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func checkID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%q is not a change set id (32 lowercase hex digits, as `tooljail changes list` shows them)", id)
	}
	return nil
}

func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// storeRefusal says why a directory with this stat may not be euid's
// store, or "".
func storeRefusal(st *unix.Stat_t, euid int) string {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "is not a directory"
	case int(st.Uid) != euid:
		return fmt.Sprintf("belongs to uid %d, not to you (uid %d): a store is its user's alone; give your own with --changes-dir", st.Uid, euid)
	case st.Mode&0o077 != 0:
		return fmt.Sprintf("has mode %#o: its group or others may use it; fix: chmod 700 it", st.Mode&0o7777)
	}
	return ""
}

// Open opens the store dir (absolute), creating what is missing of it
// (0700), and finishes or rolls back any apply that was interrupted
// (Recover). The path is walked as hostpath walks it: a symlink is
// followed only where no jailed run and no other user can have planted
// it. The directory must be the caller's and closed to group and others.
func Open(dir string, opt Options) (*Store, error) {
	if !path.IsAbs(dir) {
		return nil, fmt.Errorf("change store %s: not an absolute path", dir)
	}
	dir = path.Clean(dir)
	if opt.MaxSize <= 0 {
		opt.MaxSize = DefaultMaxSize
	}
	if opt.Expiry <= 0 {
		opt.Expiry = DefaultExpiry
	}
	o, err := openOrMake(dir)
	if err != nil {
		return nil, fmt.Errorf("change store %s: %w", dir, err)
	}
	defer o.Close()
	if why := storeRefusal(&o.Stat, os.Geteuid()); why != "" {
		return nil, fmt.Errorf("change store %s %s", dir, why)
	}
	fd, err := unix.Openat(int(o.File.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("change store %s: %w", dir, err)
	}
	s := &Store{dir: o.Path, root: os.NewFile(uintptr(fd), o.Path), opt: opt}
	// An apply that cannot be finished now (its project is gone) keeps
	// its journal; Apply and Discard retry, and say why.
	_ = s.Recover()
	return s, nil
}

// openOrMake opens dir, making its missing components 0700 below the
// deepest one that exists.
func openOrMake(dir string) (*hostpath.Object, error) {
	var missing []string
	p := dir
	for {
		o, err := hostpath.Open(p, hostpath.Options{})
		if err == nil {
			if !o.IsDir() {
				o.Close()
				return nil, fmt.Errorf("%s is not a directory", p)
			}
			for i := len(missing) - 1; i >= 0; i-- {
				name := missing[i]
				if err := unix.Mkdirat(int(o.File.Fd()), name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
					o.Close()
					return nil, fmt.Errorf("create %s: %w", path.Join(o.Path, name), err)
				}
				next, err := o.OpenBeneath(name)
				o.Close()
				if err != nil {
					return nil, err
				}
				o = next
			}
			return o, nil
		}
		if !errors.Is(err, unix.ENOENT) || p == "/" {
			return nil, err
		}
		missing = append(missing, path.Base(p))
		p = path.Dir(p)
	}
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the store.
func (s *Store) Close() error { return s.root.Close() }

// openSet opens the set directory id (O_RDONLY) and takes its lock.
func (s *Store) openSet(id string, wait bool) (*os.File, error) {
	fd, err := s.setDir(id)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX | unix.LOCK_NB
	if wait {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(fd, how); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("change set %s is in use by another process (a run still recording it, or an apply); try again when it ends", id)
		}
		return nil, fmt.Errorf("change set %s: lock: %w", id, err)
	}
	return os.NewFile(uintptr(fd), path.Join(s.dir, id)), nil
}

// Pending is a change set being recorded: made before the run, its
// layers mounted by the jail, finished (or aborted) after it. It holds
// the set's lock until then.
type Pending struct {
	ID string
	// Upper and Work are the layers of each change bind (O_DIRECTORY
	// descriptors), owned by the uid and gid given to Create.
	Upper, Work []*os.File
	s           *Store
	dir         *os.File // the set's directory, locked
	created     time.Time
}

// Create makes a change set for nbinds change binds: upper/n (0755) and
// work/n (0700), owned by uid:gid (the jail's identity on the host), in a
// new set directory.
func (s *Store) Create(nbinds int, uid, gid int) (*Pending, error) {
	var id string
	for {
		var err error
		if id, err = newID(); err != nil {
			return nil, err
		}
		err = unix.Mkdirat(int(s.root.Fd()), id, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("change store %s: create a change set: %w", s.dir, err)
		}
	}
	dir, err := s.openSet(id, false)
	if err != nil {
		return nil, err
	}
	p := &Pending{ID: id, s: s, dir: dir, created: time.Now()}
	if err := p.makeLayers(nbinds, uid, gid); err != nil {
		p.Abort()
		return nil, fmt.Errorf("change set %s: %w", id, err)
	}
	return p, nil
}

func (p *Pending) makeLayers(nbinds, uid, gid int) error {
	d := int(p.dir.Fd())
	for _, sub := range []string{upperDir, workDir} {
		if err := unix.Mkdirat(d, sub, 0o700); err != nil {
			return err
		}
		sfd, err := openBeneath(d, sub, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		for n := 0; n < nbinds; n++ {
			name := fmt.Sprint(n)
			mode := uint32(0o700)
			if sub == upperDir {
				mode = 0o755 // the bind's root in the jail until the jail sets it
			}
			if err := unix.Mkdirat(sfd, name, mode); err != nil {
				unix.Close(sfd)
				return err
			}
			fd, err := openBeneath(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err != nil {
				unix.Close(sfd)
				return err
			}
			f := os.NewFile(uintptr(fd), path.Join(p.dir.Name(), sub, name))
			if sub == upperDir {
				p.Upper = append(p.Upper, f)
			} else {
				p.Work = append(p.Work, f)
			}
			if err := unix.Fchmod(fd, mode); err != nil { // past the umask
				unix.Close(sfd)
				return err
			}
			if err := unix.Fchown(fd, uid, gid); err != nil {
				unix.Close(sfd)
				return fmt.Errorf("give %s/%s to %d:%d: %w", sub, name, uid, gid, err)
			}
		}
		unix.Close(sfd)
	}
	return nil
}

// RunInfo is what Finish records of the run.
type RunInfo struct {
	Argv           []string
	Exit           int
	Started, Ended time.Time
	Mode           Mode
	Owner          int // the uid whose set it is
	Binds          []BindInfo
	Protect        []string
}

func (p *Pending) closeLayers() {
	for _, f := range append(p.Upper, p.Work...) {
		f.Close()
	}
	p.Upper, p.Work = nil, nil
}

// Abort removes the set: the run never ran.
func (p *Pending) Abort() error {
	p.closeLayers()
	defer p.dir.Close()
	return removeAllAt(int(p.s.root.Fd()), p.ID)
}

// Finish scans each bind's upper layer against its host directory
// (lowers, in the order of the binds) and keeps the set (Report.ID), or
// removes it when nothing changed (StateEmpty). The layers must be
// unmounted. On an error the set is still pending: Abort removes it
// (else GC does, an hour on).
func (p *Pending) Finish(run RunInfo, lowers []*os.File) (*Report, error) {
	if len(lowers) != len(p.Upper) || len(run.Binds) != len(p.Upper) {
		return nil, fmt.Errorf("change set %s: %d upper layers, %d host directories, %d binds", p.ID, len(p.Upper), len(lowers), len(run.Binds))
	}
	var all []Change
	for i, up := range p.Upper {
		cs, err := Scan(up, lowers[i], run.Binds[i].Dest, run.Protect)
		if err != nil {
			return nil, fmt.Errorf("change set %s: %w", p.ID, err)
		}
		all = append(all, cs...)
	}
	return p.finishWith(run, all)
}

// finishWith is Finish once the binds are scanned.
func (p *Pending) finishWith(run RunInfo, all []Change) (*Report, error) {
	p.closeLayers()
	defer p.dir.Close()
	if err := removeAllAt(int(p.dir.Fd()), workDir); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("change set %s: remove the work directory: %w", p.ID, err)
	}
	rep := &Report{Mode: run.Mode, Recorded: true, Entries: []Entry{}}
	if len(all) == 0 {
		rep.State = StateEmpty
		return rep, removeAllAt(int(p.s.root.Fd()), p.ID)
	}
	set := &Set{
		Meta: Meta{
			ID: p.ID, Created: p.created, Started: run.Started, Ended: run.Ended,
			Argv: run.Argv, Exit: run.Exit, Mode: run.Mode, Owner: run.Owner,
			Binds: run.Binds, Protect: run.Protect, State: StateKept,
		},
		Changes:   all,
		Conflicts: duringRun(all, run.Started),
	}
	if set.Argv == nil {
		set.Argv = []string{}
	}
	_, set.Totals, _ = Summarize(all)
	if len(set.Conflicts) > 0 {
		set.State = StateConflict
	}
	if err := writeSet(p.dir, set, true); err != nil {
		return nil, fmt.Errorf("change set %s: %w", p.ID, err)
	}
	rep.ID, rep.State, rep.Conflicts = p.ID, set.State, set.Conflicts
	rep.Entries, rep.Totals, rep.Truncated = Summarize(all)
	return rep, nil
}

// duringRun are the changes whose host path changed after the run
// started: the command cannot write the lower layer, so someone else did,
// and applying would undo it.
func duringRun(all []Change, started time.Time) []Conflict {
	var out []Conflict
	for _, c := range all {
		if c.Base.Exists && c.Base.Ctime >= started.UnixNano() && !c.Protected && c.Skipped == "" {
			out = append(out, Conflict{Bind: c.Bind, Path: c.Path, Why: "changed on the host while the run went on"})
		}
	}
	return out
}

// writeSet replaces dir/set.json atomically; durably when sync (not
// needed where a synced journal redoes the write after a crash).
func writeSet(dir *os.File, set *Set, sync bool) error {
	b, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAt(int(dir.Fd()), setFile, append(b, '\n'), sync)
}

// writeFileAt writes name in dir through a temporary name and renames it
// over; with sync, it fsyncs the file first and dir after.
func writeFileAt(dir int, name string, b []byte, sync bool) error {
	tmp := name + ".tmp"
	unix.Unlinkat(dir, tmp, 0)
	fd, err := openBeneath(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err == nil && sync {
		err = unix.Fsync(dir)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// openInSet opens a set's own file (set.json, the journal) for reading.
func openInSet(dir *os.File, name string) (*os.File, error) {
	fd, err := openBeneath(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func readSet(dir *os.File) (*Set, error) {
	f, err := openInSet(dir, setFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var set Set
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", path.Join(dir.Name(), setFile), err)
	}
	return &set, nil
}

// setDir opens the directory of set id, which must be a valid id, without
// its lock.
func (s *Store) setDir(id string) (int, error) {
	if err := checkID(id); err != nil {
		return -1, err
	}
	fd, err := openBeneath(int(s.root.Fd()), id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("no change set %s in %s (`tooljail changes list` shows them)", id, s.dir)
	}
	if err != nil {
		return -1, fmt.Errorf("change set %s: %w", id, err)
	}
	return fd, nil
}

// Get reads the change set id.
func (s *Store) Get(id string) (*Set, error) {
	fd, err := s.setDir(id)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), path.Join(s.dir, id))
	defer dir.Close()
	return readRecorded(dir, id)
}

// ids are the names in the store that are change set ids.
func (s *Store) ids() ([]string, error) {
	fd, err := unix.Openat(int(s.root.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), s.dir)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("change store %s: %w", s.dir, err)
	}
	var out []string
	for _, n := range names {
		if ValidID(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// List summarizes the store's change sets, oldest first. Sets still being
// recorded are left out.
func (s *Store) List() ([]Summary, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := []Summary{}
	for _, id := range ids {
		set, err := s.Get(id)
		if err != nil {
			continue // being recorded, or gone meanwhile
		}
		size, _ := sizeAt(int(s.root.Fd()), id)
		out = append(out, Summary{Meta: set.Meta, Totals: set.Totals, Size: size})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Discard removes the change set id (an interrupted apply of it is first
// finished or rolled back).
func (s *Store) Discard(id string) error {
	dir, err := s.openSet(id, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := s.recoverSet(dir, id); err != nil {
		return err
	}
	if err := removeAllAt(int(s.root.Fd()), id); err != nil {
		return fmt.Errorf("discard change set %s: %w", id, err)
	}
	return nil
}

// openBeneath opens rel below the directory dir: never above it, through
// no symlink and no other mount.
func openBeneath(dir int, rel string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags) | unix.O_CLOEXEC,
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dir, rel, &how)
		if errors.Is(err, unix.EAGAIN) && i < 100 {
			continue // a rename raced with the walk
		}
		return fd, err
	}
}

// removeAllAt removes name in dir and everything below it, by
// descriptor, following no symlink. A directory it may not list (mode 0,
// as overlayfs leaves work/work) is opened up first: it is ours.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	fd, err := openBeneath(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.EACCES) {
		if pfd, perr := openBeneath(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); perr == nil {
			// chmod through the descriptor's magic link: no name is
			// looked up again.
			os.Chmod(fmt.Sprintf("/proc/self/fd/%d", pfd), 0o700)
			unix.Close(pfd)
		}
		fd, err = openBeneath(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	// A directory the command left without its owner's write bit
	// (chmod 500) lists, but keeps its entries.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&0o700 != 0o700 {
		unix.Fchmod(fd, st.Mode&0o7777|0o700)
	}
	for {
		names, err := f.Readdirnames(-1)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			if err := removeAllAt(fd, n); err != nil {
				return err
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil { // read again: nothing may be left
			return err
		}
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// sizeAt is the disk space of name in dir and below it.
func sizeAt(dir int, name string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	total := st.Blocks * 512
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return total, nil
	}
	fd, err := openBeneath(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return total, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	for _, n := range names {
		sz, _ := sizeAt(fd, n)
		total += sz
	}
	return total, err
}
