package changes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
)

// A jailed run with changes (jail's Spec.Changes) mounts an overlay over
// each writable bind it records: the bind, read-only, is the lower layer; the upper
// layer is a change set's directory in the caller's store. The supervisor makes the set before the init is forked,
// opens its layers in the init's mount namespace (where overlayfs may
// take them), and after the run has the set scanned, kept, and applied
// where the mode says so.

// Binds are the indices, in mounts (the plan's order), of the binds
// a run with changes records: the writable binds of host directories,
// but not the build caches (tooljail's own, whose churn is no change of
// the project) nor a tree's.
func Binds(mounts []hostside.Mount) []int {
	var out []int
	for i, m := range mounts {
		if m.Kind == hostside.Bind && m.Writable && m.Cache == "" && !m.InRoot {
			out = append(out, i)
		}
	}
	return out
}

// Plan is what a run does about its changes mode on this host.
type Plan struct {
	Mode  Mode
	Binds []int // change binds (Binds); overlays only when Record is true
	// Record: overlays are mounted; false with a Reason when the mode is
	// record and this host cannot (the run then writes the host as with
	// off, and says so).
	Record bool
	Reason string
}

// Decide decides, before anything is made, whether a run records
// its changes: review and apply-on-success fail closed where overlayfs
// cannot be had, record runs unrecorded and says why. overlayWhy is why
// this host cannot mount overlayfs in a user namespace ("" when it can);
// nons: the run has no namespaces.
func Decide(mode Mode, nons bool, overlayWhy string) (Plan, error) {
	p := Plan{Mode: mode}
	if !mode.Overlay() {
		return p, nil
	}
	why := overlayWhy
	if nons {
		why = "a run without namespaces cannot mount an overlay (overlayfs is mounted in the jail's own user namespace)"
	}
	if why == "" {
		p.Record = true
		return p, nil
	}
	if mode == Record {
		p.Reason = "changes were not recorded: " + why
		return p, nil
	}
	return p, fmt.Errorf("--changes %s: %s; nothing ran (the host's files would have been written directly). Run with --changes off, or on a host that can (`tooljail check` has a line for it)", mode, why)
}

// Run is the change set of one run, on the supervisor's side.
type Run struct {
	plan    Plan
	store   *Store
	pending *Pending
	// Per change bind (plan.Binds' order): what the set records of it,
	// the host directory (the lower layer, for the scan), and its layers
	// as opened in the init's mount namespace.
	info         []BindInfo
	lowers       []*os.File
	upper, work  []*os.File
	started      time.Time
	finished     bool
	uid, gid     int // owner of the layers: the jail's host identity
	storeDirPath string
}

// NewRun makes the run's change set in the store, its layers
// owned by the jail's host identity id (overlayfs writes them with the
// credentials of the jail's init). An upper layer that cannot hold the
// user.* xattrs overlayfs keeps its marks in makes record run unrecorded
// and the other modes fail closed, as Decide.
func NewRun(cp Plan, storeDir func() (string, error), uid, gid int) (*Run, error) {
	if !cp.Mode.Overlay() {
		return nil, nil // a run without changes has nothing of this
	}
	rc := &Run{plan: cp, started: time.Now(), uid: uid, gid: gid}
	if !cp.Record || len(cp.Binds) == 0 {
		return rc, nil
	}
	dir, err := storeDir()
	if err != nil {
		return nil, fmt.Errorf("--changes %s: %w", cp.Mode, err)
	}
	st, err := Open(dir, Options{})
	if err != nil {
		return nil, fmt.Errorf("--changes %s: the change store: %w", cp.Mode, err)
	}
	// The store keeps to its expiry and size cap without anyone running
	// `changes gc` (at most hourly; before this run's set exists).
	st.GCIfDue(time.Now())
	p, err := st.Create(len(cp.Binds), uid, gid)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("--changes %s: %w", cp.Mode, err)
	}
	rc.store, rc.pending, rc.storeDirPath = st, p, dir
	if why := userXattrWhy(p.Upper[0], dir); why != "" {
		p.Abort()
		st.Close()
		rc.store, rc.pending = nil, nil
		if cp.Mode != Record {
			return nil, fmt.Errorf("--changes %s: %s; nothing ran. Keep the change store on ext4, xfs or btrfs (--changes-dir), or run with --changes off", cp.Mode, why)
		}
		rc.plan.Record = false
		rc.plan.Reason = "changes were not recorded: " + why
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
func (rc *Run) Active() bool { return rc != nil && rc.pending != nil }

// bindIndex is the change bind of mount index i, or -1.
func (rc *Run) BindIndex(i int) int {
	if !rc.Active() {
		return -1
	}
	return slices.Index(rc.plan.Binds, i)
}

// noteSources records what the set needs of the opened bind sources:
// their host paths and identities, the lower layers to scan after the
// run (duplicates: the supervisor closes the sources once the init has
// them), and the owner files written through an idmapped bind get.
func (rc *Run) NoteSources(mounts []hostside.Mount, srcs []hostside.Source, idmapped []string, root bool) error {
	if !rc.Active() {
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
		return fmt.Errorf("--changes %s: the change store %s lies inside %s, which this run binds read-write: the command could rewrite the change sets you apply later; keep the store elsewhere (--changes-dir, TOOLJAIL_CHANGES_DIR)", rc.plan.Mode, rc.storeDirPath, b)
	}
	for _, i := range rc.plan.Binds {
		m, s := mounts[i], srcs[i]
		if s.Obj == nil || !s.Obj.IsDir() {
			return fmt.Errorf("--changes %s: %s is not a directory; changes are recorded for directories only: bind it another way or run with --changes off", rc.plan.Mode, m.Source)
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
		bi := BindInfo{Dest: m.Dest, Host: s.Obj.Path, Dev: s.Obj.ID().Dev, Ino: s.Obj.ID().Ino, UID: -1, GID: -1}
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
func (rc *Run) LowerOnly(mounts []hostside.Mount) []hostside.Mount {
	if !rc.Active() {
		return mounts
	}
	out := slices.Clone(mounts)
	for _, i := range rc.plan.Binds {
		out[i].Writable = false
	}
	return out
}

// openLayers opens the set's upper and work directories through root (the
// init's root, "/proc/PID/root"): overlayfs takes layers only from the
// mount namespace it is mounted in. The store's path has no symlink (the
// store resolved it), so none is followed; and each must be the very
// directory the store made, by device and inode.
func (rc *Run) OpenLayers(root string) error {
	if !rc.Active() {
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
func (rc *Run) CloseLayers() {
	if rc == nil {
		return
	}
	for _, f := range append(rc.upper, rc.work...) {
		f.Close()
	}
	rc.upper, rc.work = nil, nil
}

// abort removes the set of a run whose command never ran.
func (rc *Run) Abort() {
	if rc == nil || rc.finished {
		return
	}
	rc.finished = true
	rc.CloseLayers()
	if rc.pending != nil {
		rc.pending.Abort()
	}
	rc.release()
}

func (rc *Run) release() {
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
func (rc *Run) Finish(run RunInfo, ok bool) *Report {
	if rc == nil || rc.finished {
		return nil
	}
	rc.finished = true
	defer rc.release()
	rc.CloseLayers()
	if !rc.Active() {
		if !rc.plan.Mode.Overlay() {
			return nil
		}
		r := &Report{Mode: rc.plan.Mode, Recorded: rc.plan.Record, Reason: rc.plan.Reason, State: StateEmpty, Entries: []Entry{}}
		return r
	}
	if run.Owner <= 0 && os.Geteuid() != 0 {
		run.Owner = os.Geteuid()
	}
	run.Started, run.Ended, run.Mode, run.Binds = rc.started, time.Now(), rc.plan.Mode, rc.info
	rep, err := rc.pending.Finish(run, rc.lowers)
	if err != nil {
		return &Report{Mode: rc.plan.Mode, Recorded: false, State: StateFailed, Entries: []Entry{},
			Error: fmt.Sprintf("recording the changes failed: %v; the upper layer is kept in %s", err, filepath.Join(rc.storeDirPath, rc.pending.ID))}
	}
	if rep.ID == "" || !applyAtEnd(rc.plan.Mode, ok) {
		return rep
	}
	ApplyKept(rc.store, rep, false)
	return rep
}

// applyAtEnd says whether a run's kept set is applied when it ends.
func applyAtEnd(mode Mode, ok bool) bool {
	return mode == Record || mode == ApplyOnSuccess && ok
}

// ApplyKept applies the kept set rep names and says in rep what became
// of it: applied, or kept with its conflicts or the error.
func ApplyKept(st *Store, rep *Report, force bool) {
	_, err := st.Apply(rep.ID, ApplyOptions{Force: force})
	var ce *ConflictError
	switch {
	case err == nil:
		rep.State = StateApplied
	case errors.As(err, &ce):
		rep.State = StateConflict
		rep.Conflicts = ce.Conflicts
	default:
		rep.State = StateKept
		rep.Error = fmt.Sprintf("applying the changes failed: %v; the change set is kept: `tooljail changes show %s`", err, rep.ID)
	}
}

// Unrecorded is the change set of a run that mounts no overlay for cp (a
// run without namespaces): it records nothing, and Finish reports why.
func Unrecorded(cp Plan) *Run { return &Run{plan: cp} }

// Mode is the run's changes mode.
func (rc *Run) Mode() Mode { return rc.plan.Mode }

// Layers are the upper and work directories of change bind b, as opened in
// the init's mount namespace (OpenLayers).
func (rc *Run) Layers(b int) (upper, work *os.File) { return rc.upper[b], rc.work[b] }
