package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
)

// A run with changes (Spec.Changes) mounts an overlay over each writable
// bind it records: the bind, read-only, is the lower layer; the upper
// layer is a change set's directory in the caller's store (package
// changes). The supervisor makes the set before the init is forked,
// opens its layers in the init's mount namespace (where overlayfs may
// take them), and after the run has the set scanned, kept, and applied
// where the mode says so.

// changeBinds are the indices, in mounts (the plan's order), of the binds
// a run with changes records: the writable binds of host directories,
// but not the build caches (tooljail's own, whose churn is no change of
// the project) nor a tree's.
func changeBinds(mounts []Mount) []int {
	var out []int
	for i, m := range mounts {
		if m.Kind == MountBind && m.Writable && m.Cache == "" && !m.InRoot {
			out = append(out, i)
		}
	}
	return out
}

// changesPlan is what a run does about Spec.Changes on this host.
type changesPlan struct {
	mode  changes.Mode
	binds []int // change binds (changeBinds); overlays only when record is true
	// record: overlays are mounted; false with a reason when the mode is
	// record and this host cannot (the run then writes the host as with
	// off, and says so).
	record bool
	reason string
}

// decideChanges decides, before anything is made, whether a run records
// its changes: review and apply-on-success fail closed where overlayfs
// cannot be had, record runs unrecorded and says why. overlayWhy is why
// this host cannot mount overlayfs in a user namespace ("" when it can);
// nons: the run has no namespaces.
func decideChanges(mode changes.Mode, nons bool, overlayWhy string) (changesPlan, error) {
	p := changesPlan{mode: mode}
	if !mode.Overlay() {
		return p, nil
	}
	why := overlayWhy
	if nons {
		why = "a run without namespaces cannot mount an overlay (overlayfs is mounted in the jail's own user namespace)"
	}
	if why == "" {
		p.record = true
		return p, nil
	}
	if mode == changes.Record {
		p.reason = "changes were not recorded: " + why
		return p, nil
	}
	return p, fmt.Errorf("--changes %s: %s; nothing ran (the host's files would have been written directly). Run with --changes off, or on a host that can (`tooljail check` has a line for it)", mode, why)
}

// ChangesDir is the change store a run of s uses: Spec.ChangesDir, or
// the default of the supervisor's user (changes.DefaultDir).
func (s *Spec) changesDir() (string, error) {
	if s.ChangesDir != "" {
		return s.ChangesDir, nil
	}
	return changes.DefaultDir(os.Geteuid(), os.Getenv("HOME"), os.Getenv("XDG_STATE_HOME"))
}

// runChanges is the change set of one run, on the supervisor's side.
type runChanges struct {
	plan    changesPlan
	store   *changes.Store
	pending *changes.Pending
	// Per change bind (plan.binds' order): what the set records of it,
	// the host directory (the lower layer, for the scan), and its layers
	// as opened in the init's mount namespace.
	info         []changes.BindInfo
	lowers       []*os.File
	upper, work  []*os.File
	started      time.Time
	finished     bool
	uid, gid     int // owner of the layers: the jail's host identity
	storeDirPath string
}

// createChanges makes the run's change set in the store, its layers
// owned by the jail's host identity id (overlayfs writes them with the
// credentials of the jail's init). An upper layer that cannot hold the
// user.* xattrs overlayfs keeps its marks in makes record run unrecorded
// and the other modes fail closed, as decideChanges.
func createChanges(s *Spec, cp changesPlan, id HostID) (*runChanges, error) {
	if !cp.mode.Overlay() {
		return nil, nil // a run without changes has nothing of this
	}
	rc := &runChanges{plan: cp, started: time.Now(), uid: id.UID, gid: id.GID}
	if !cp.record || len(cp.binds) == 0 {
		return rc, nil
	}
	dir, err := s.changesDir()
	if err != nil {
		return nil, fmt.Errorf("--changes %s: %w", cp.mode, err)
	}
	st, err := changes.Open(dir, changes.Options{})
	if err != nil {
		return nil, fmt.Errorf("--changes %s: the change store: %w", cp.mode, err)
	}
	// The store keeps to its expiry and size cap without anyone running
	// `changes gc` (at most hourly; before this run's set exists).
	st.GCIfDue(time.Now())
	p, err := st.Create(len(cp.binds), id.UID, id.GID)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("--changes %s: %w", cp.mode, err)
	}
	rc.store, rc.pending, rc.storeDirPath = st, p, dir
	if why := userXattrWhy(p.Upper[0], dir); why != "" {
		p.Abort()
		st.Close()
		rc.store, rc.pending = nil, nil
		if cp.mode != changes.Record {
			return nil, fmt.Errorf("--changes %s: %s; nothing ran. Keep the change store on ext4, xfs or btrfs (--changes-dir), or run with --changes off", cp.mode, why)
		}
		rc.plan.record = false
		rc.plan.reason = "changes were not recorded: " + why
	}
	return rc, nil
}

// userXattrWhy says why the upper layer cannot take user.* xattrs, which
// overlayfs needs in a user namespace (tmpfs has them only since Linux
// 6.6); "" when it can.
func userXattrWhy(upper *os.File, dir string) string {
	const name = "user.tooljail.probe"
	err := unix.Fsetxattr(int(upper.Fd()), name, []byte("1"), 0)
	if err == nil {
		unix.Fremovexattr(int(upper.Fd()), name)
		return ""
	}
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Sprintf("the change store %s is on a file system without user.* extended attributes, which overlayfs needs in a user namespace", dir)
	}
	return fmt.Sprintf("the change store %s: set an extended attribute: %v", dir, err)
}

// active says whether overlays are mounted for the run.
func (rc *runChanges) active() bool { return rc != nil && rc.pending != nil }

// bindIndex is the change bind of mount index i, or -1.
func (rc *runChanges) bindIndex(i int) int {
	if !rc.active() {
		return -1
	}
	return slices.Index(rc.plan.binds, i)
}

// noteSources records what the set needs of the opened bind sources:
// their host paths and identities, the lower layers to scan after the
// run (duplicates: the supervisor closes the sources once the init has
// them), and the owner files written through an idmapped bind get.
func (rc *runChanges) noteSources(mounts []hostside.Mount, srcs []hostside.Source, idmapped []string, root bool) error {
	if !rc.active() {
		return nil
	}
	// A store the command could write would let it rewrite a kept set
	// that the caller applies later.
	so, err := hostpath.Open(rc.storeDirPath, hostpath.Options{})
	if err != nil {
		return fmt.Errorf("--changes: the change store %s: %w", rc.storeDirPath, err)
	}
	b := hostside.InsideWritable(so.Chain, mounts, srcs)
	so.Close()
	if b != "" {
		return fmt.Errorf("--changes %s: the change store %s lies inside %s, which this run binds read-write: the command could rewrite the change sets you apply later; keep the store elsewhere (--changes-dir, TOOLJAIL_CHANGES_DIR)", rc.plan.mode, rc.storeDirPath, b)
	}
	for _, i := range rc.plan.binds {
		m, s := mounts[i], srcs[i]
		if s.Obj == nil || !s.Obj.IsDir() {
			return fmt.Errorf("--changes %s: %s is not a directory; changes are recorded for directories only: bind it another way or run with --changes off", rc.plan.mode, m.Source)
		}
		dup, err := unix.FcntlInt(s.Obj.File.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("--changes: keep %s open: %w", m.Source, err)
		}
		rc.lowers = append(rc.lowers, os.NewFile(uintptr(dup), s.Obj.Path))
		// The overlay's root takes the upper layer's mode: the workdir
		// keeps its own in the jail.
		k := len(rc.lowers) - 1
		if err := unix.Fchmod(int(rc.pending.Upper[k].Fd()), s.Obj.Stat.Mode&0o7777); err != nil {
			return fmt.Errorf("--changes: the upper layer of %s: %w", m.Source, err)
		}
		bi := changes.BindInfo{Dest: m.Dest, Host: s.Obj.Path, Dev: s.Obj.ID().Dev, Ino: s.Obj.ID().Ino, UID: -1, GID: -1}
		if root {
			// Root applies the set: what it writes gets the owner it
			// would have had through the bind.
			bi.UID, bi.GID = rc.uid, rc.gid
			if slices.Contains(idmapped, m.Dest) {
				o := hostside.OwnerOf(s.Obj)
				bi.UID, bi.GID = o.UID, o.GID
			}
		}
		rc.info = append(rc.info, bi)
	}
	return nil
}

// lowerOnly is mounts with the binds under an overlay read-only: what
// the command can write of the host once the overlays are mounted.
func (rc *runChanges) lowerOnly(mounts []hostside.Mount) []hostside.Mount {
	if !rc.active() {
		return mounts
	}
	out := slices.Clone(mounts)
	for _, i := range rc.plan.binds {
		out[i].Writable = false
	}
	return out
}

// openLayers opens the set's upper and work directories through root (the
// init's root, "/proc/PID/root"): overlayfs takes layers only from the
// mount namespace it is mounted in. The store's path has no symlink (the
// store resolved it), so none is followed; and each must be the very
// directory the store made, by device and inode.
func (rc *runChanges) openLayers(root string) error {
	if !rc.active() {
		return nil
	}
	rf, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("--changes: open %s: %w", root, err)
	}
	defer rf.Close()
	open := func(made *os.File) (*os.File, error) {
		fd, err := unix.Openat2(int(rf.Fd()), strings.TrimPrefix(made.Name(), "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return nil, fmt.Errorf("--changes: the change set's layer %s in the jail's mount namespace: %w", made.Name(), err)
		}
		var was, is unix.Stat_t
		if unix.Fstat(int(made.Fd()), &was) != nil || unix.Fstat(fd, &is) != nil || was.Dev != is.Dev || was.Ino != is.Ino {
			unix.Close(fd)
			return nil, fmt.Errorf("--changes: the change set's layer %s was replaced while the jail started", made.Name())
		}
		return os.NewFile(uintptr(fd), made.Name()), nil
	}
	for i := range rc.pending.Upper {
		u, err := open(rc.pending.Upper[i])
		if err != nil {
			return err
		}
		rc.upper = append(rc.upper, u)
		w, err := open(rc.pending.Work[i])
		if err != nil {
			return err
		}
		rc.work = append(rc.work, w)
	}
	return nil
}

// closeLayers closes the layers' descriptors once the init has its own.
func (rc *runChanges) closeLayers() {
	if rc == nil {
		return
	}
	for _, f := range append(rc.upper, rc.work...) {
		f.Close()
	}
	rc.upper, rc.work = nil, nil
}

// abort removes the set of a run whose command never ran.
func (rc *runChanges) abort() {
	if rc == nil || rc.finished {
		return
	}
	rc.finished = true
	rc.closeLayers()
	if rc.pending != nil {
		rc.pending.Abort()
	}
	rc.release()
}

func (rc *runChanges) release() {
	for _, f := range rc.lowers {
		f.Close()
	}
	rc.lowers = nil
	if rc.store != nil {
		rc.store.Close()
		rc.store = nil
	}
}

// finish scans the set once the jail is gone, keeps it, and applies it
// where the mode says so: record always, apply-on-success when the
// command exited 0 (ok). The report says what became of it; a failure
// to apply keeps the set for review and is in the report, never lost.
func (rc *runChanges) finish(s *Spec, exit int, ok bool) *changes.Report {
	if rc == nil || rc.finished {
		return nil
	}
	rc.finished = true
	defer rc.release()
	rc.closeLayers()
	if !rc.active() {
		if !rc.plan.mode.Overlay() {
			return nil
		}
		r := &changes.Report{Mode: rc.plan.mode, Recorded: rc.plan.record, Reason: rc.plan.reason, State: changes.StateEmpty, Entries: []changes.Entry{}}
		return r
	}
	owner := s.ChangesOwner
	if owner <= 0 && os.Geteuid() != 0 {
		owner = os.Geteuid()
	}
	run := changes.RunInfo{
		Argv: s.Args, Exit: exit, Started: rc.started, Ended: time.Now(), Mode: rc.plan.mode,
		Owner: owner, Binds: rc.info, Protect: s.Protect,
	}
	rep, err := rc.pending.Finish(run, rc.lowers)
	if err != nil {
		return &changes.Report{Mode: rc.plan.mode, Recorded: false, State: changes.StateFailed, Entries: []changes.Entry{},
			Error: fmt.Sprintf("recording the changes failed: %v; the upper layer is kept in %s", err, filepath.Join(rc.storeDirPath, rc.pending.ID))}
	}
	if rep.ID == "" || !applyAtEnd(rc.plan.mode, ok) {
		return rep
	}
	applyKept(rc.store, rep, false)
	return rep
}

// applyAtEnd says whether a run's kept set is applied when it ends.
func applyAtEnd(mode changes.Mode, ok bool) bool {
	return mode == changes.Record || mode == changes.ApplyOnSuccess && ok
}

// applyKept applies the kept set rep names and says in rep what became
// of it: applied, or kept with its conflicts or the error.
func applyKept(st *changes.Store, rep *changes.Report, force bool) {
	_, err := st.Apply(rep.ID, changes.ApplyOptions{Force: force})
	var ce *changes.ConflictError
	switch {
	case err == nil:
		rep.State = changes.StateApplied
	case errors.As(err, &ce):
		rep.State = changes.StateConflict
		rep.Conflicts = ce.Conflicts
	default:
		rep.State = changes.StateKept
		rep.Error = fmt.Sprintf("applying the changes failed: %v; the change set is kept: `tooljail changes show %s`", err, rep.ID)
	}
}

// finishChanges gives the run's change set its end: scanned and kept (and
// applied where the mode says so) once the jail's mount namespace, which
// holds the overlays, is gone; removed when the command never ran.
func (c *Cmd) finishChanges() {
	if c.chg == nil {
		return
	}
	if c.res.Status == StatusSetupError {
		c.chg.abort()
		if c.chg.plan.mode.Overlay() {
			c.res.Changes = &changes.Report{Mode: c.chg.plan.mode, Recorded: false, Reason: "the command never ran", State: changes.StateEmpty, Entries: []changes.Entry{}}
		}
		return
	}
	if c.early && c.chg.active() {
		// The init exits right after its exit record; its end is the
		// end of the overlays' mount namespace.
		<-c.waitCh
		<-c.msgDone
		c.early = false
	}
	ok := c.res.Status == StatusExited && c.res.ExitCode == 0
	c.res.Changes = c.chg.finish(c.Spec, c.res.ExitCode, ok)
}
