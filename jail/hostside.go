package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostmount"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/seccomp"
)

// The host side of a run: every host path it uses is opened once, here,
// and checked on what was opened; the jail's init mounts the descriptors.
//
//   - A root supervisor opens the bind sources in its own mount namespace
//     before the init is forked, and clones each into a detached mount
//     tree (idmapped where the jail's host identity is not the owner):
//     only real root may clone a mount of the host's namespace.
//   - An unprivileged supervisor opens them through /proc/<init>/root
//     after the fork, so that the descriptors belong to the init's mount
//     namespace, where the init may clone them.
//
// Outputs (report, audit log), the files the caller trusts, the seccomp
// cache and this executable are opened in the supervisor's namespace;
// whether one of them lies inside a read-write bind is decided by device
// and inode, which are the same in every namespace.

// Output is a host file the caller writes after the run: a report, an
// audit log. Start opens it before anything runs in the jail, by the rules
// of every host path (no symlink a run could have planted, not even as the
// last component; a regular file only; opened without blocking, so a FIFO
// cannot hang tooljail), and refuses it inside a writable bind of the run,
// where the command could replace it before it is written. A missing file
// is created only once it is known not to be refused, or when the run
// fails before that is known (nothing ran, so the setup error's report
// can be written).
type Output struct {
	Path   string
	Append bool        // for a log: opened O_APPEND, never truncated
	Perm   os.FileMode // of a new file
	// File is the opened file, set by Start (nil when it was refused);
	// the caller writes and closes it.
	File *os.File

	dir     *hostpath.Object // the parent directory, until File is set
	chain   []hostpath.Elem
	refused bool
}

// open opens the parent directory and the file when it exists.
func (o *Output) open() error {
	if o.dir != nil || o.File != nil || o.refused {
		return nil
	}
	p := o.Path
	dir, base := path.Dir(p), path.Base(p)
	if !path.IsAbs(p) || base == "." || base == ".." || base == "/" {
		return fmt.Errorf("%s: want an absolute path of a file", p)
	}
	d, err := hostpath.Open(dir, hostpath.Options{})
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	if !d.IsDir() {
		d.Close()
		return fmt.Errorf("open %s: %s is not a directory", p, dir)
	}
	o.dir = d
	o.chain = d.Chain
	err = o.openFile(false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// create creates the file when it does not exist yet.
func (o *Output) create() error {
	if o.File != nil || o.dir == nil || o.refused {
		return nil
	}
	return o.openFile(true)
}

// openFile opens the file (creating it when create) without ever opening
// anything but a regular file for writing: an existing object is first
// opened O_PATH and checked, then reopened through its descriptor, so a
// device node or a FIFO with a reader is never opened at all.
func (o *Output) openFile(create bool) error {
	p, base := o.Path, path.Base(o.Path)
	dirfd := int(o.dir.File.Fd())
	wflags := unix.O_WRONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if o.Append {
		wflags |= unix.O_APPEND
	}
	for try := 0; ; try++ {
		pfd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && create && try < 10 {
			// O_EXCL: what this creates is a new regular file; if
			// something appeared meanwhile, look at it again.
			fd, err := unix.Openat(dirfd, base, wflags|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint32(o.Perm.Perm()))
			if err == unix.EEXIST {
				continue
			}
			if err != nil {
				return fmt.Errorf("create %s: %w", p, err)
			}
			return o.opened(os.NewFile(uintptr(fd), p))
		}
		if err != nil {
			if err == unix.ENOENT && !create {
				return err
			}
			return fmt.Errorf("open %s: %w", p, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(pfd, &st)
		if err == nil {
			err = outputType(p, st.Mode)
		}
		if err != nil {
			unix.Close(pfd)
			return err
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), wflags, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		f := os.NewFile(uintptr(fd), p)
		var st2 unix.Stat_t
		if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
			f.Close()
			return fmt.Errorf("open %s: it changed while it was opened", p)
		}
		return o.opened(f)
	}
}

// outputType refuses anything but a regular file, saying what it is.
func outputType(p string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return fmt.Errorf("%s is a symlink: refusing to write through it; give the path of a regular file", p)
	case unix.S_IFIFO, unix.S_IFSOCK:
		return fmt.Errorf("%s is a FIFO or socket: refusing it; give the path of a regular file", p)
	case unix.S_IFDIR:
		return fmt.Errorf("%s is a directory; give the path of a regular file", p)
	}
	return fmt.Errorf("%s is not a regular file (mode %#o): refusing it; give the path of a regular file", p, mode&unix.S_IFMT)
}

// opened records f as the output's file.
func (o *Output) opened(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", o.Path, err)
	}
	if err := outputType(o.Path, st.Mode); err != nil {
		f.Close()
		return err
	}
	o.File = f
	o.chain = append(append([]hostpath.Elem(nil), o.dir.Chain...), hostpath.Elem{Name: path.Base(o.Path), ID: hostpath.ID{Dev: st.Dev, Ino: st.Ino}})
	o.dir.Close()
	o.dir = nil
	return nil
}

// refuse gives the output up: it is neither created nor written.
func (o *Output) refuse() {
	o.refused = true
	if o.File != nil {
		o.File.Close()
		o.File = nil
	}
	if o.dir != nil {
		o.dir.Close()
		o.dir = nil
	}
}

// settleOutputs is for a Start that failed: every output not refused is
// opened and created, so the caller can write the setup error's report
// there (nothing ran in the jail, so nothing can have replaced it).
func settleOutputs(outs []*Output) {
	for _, o := range outs {
		if o.open() != nil || o.create() != nil {
			o.refuse()
		}
	}
}

// resolveSources opens the source of every bind of mounts with root
// standing for "/", or for a bind InRoot, in tree (Spec.Root, opened),
// and checks what it opened.
func resolveSources(root *os.File, tree *hostpath.Object, mounts []Mount, dir string) ([]source, error) {
	srcs := make([]source, len(mounts))
	for i, m := range mounts {
		if m.Kind != MountBind {
			continue
		}
		obj, err := openSource(root, tree, m)
		if err != nil {
			if m.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			closeSources(srcs)
			switch {
			case m.InRoot && errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%s: %s does not exist in the root directory %s", bindName(m, dir), m.Source, tree.Path)
			case m.InRoot:
				return nil, fmt.Errorf("%s of the root directory %s: %w (its symlinks are resolved in it: an absolute one starts at %s again)", bindName(m, dir), tree.Path, err, tree.Path)
			case errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%s: %s does not exist on the host", bindName(m, dir), m.Source)
			}
			return nil, fmt.Errorf("%s: %w", bindName(m, dir), err)
		}
		srcs[i].obj = obj
		if err := checkSource(m, obj, dir); err != nil {
			closeSources(srcs)
			return nil, err
		}
	}
	return srcs, nil
}

// openSource opens m's source: on the host from root, or in the tree.
func openSource(root *os.File, tree *hostpath.Object, m Mount) (*hostpath.Object, error) {
	opt := hostpath.Options{KeepSymlink: m.KeepSymlink}
	if !m.InRoot {
		return hostpath.OpenIn(root, m.Source, opt)
	}
	if tree == nil {
		return nil, fmt.Errorf("no root directory to take it from")
	}
	obj, err := tree.OpenInTree(m.Source, opt)
	if err != nil {
		return nil, err
	}
	if err := hostpath.CheckTreeEntry(obj); err != nil {
		obj.Close()
		return nil, err
	}
	return obj, nil
}

func closeSources(srcs []source) {
	for _, s := range srcs {
		s.close()
	}
}

// bindName names a bind in errors: the workdir is the bind at the working
// directory (read-write, or read-only with filesystem.workdir_readonly).
func bindName(m Mount, dir string) string {
	switch {
	case m.Dest == dir:
		return "workdir " + m.Source
	case m.Writable:
		return "read-write bind " + m.Source
	}
	return "bind " + m.Source
}

// checkSource decides whether what was opened may be bound as m asks.
func checkSource(m Mount, o *hostpath.Object, dir string) error {
	typ := o.Stat.Mode & unix.S_IFMT
	switch {
	case typ == unix.S_IFLNK && m.KeepSymlink, typ == unix.S_IFDIR, typ == unix.S_IFREG, typ == unix.S_IFSOCK:
	default:
		return fmt.Errorf("%s: not a directory, regular file or socket (mode %#o)", bindName(m, dir), typ)
	}
	if onProcfs(o) {
		return fmt.Errorf("%s: on a proc filesystem (the host's /proc); the jail has a /proc of its own, and the host's would show every host process and reach their files through /proc/PID/root; bind what you need from elsewhere", bindName(m, dir))
	}
	if m.Dest == dir && typ != unix.S_IFDIR {
		return fmt.Errorf("%s: not a directory (mode %#o); the working directory must be one", bindName(m, dir), typ)
	}
	if !m.Writable && m.Dest != dir {
		return nil
	}
	if typ == unix.S_IFLNK {
		return fmt.Errorf("%s: a symlink cannot be bound read-write", bindName(m, dir))
	}
	if !m.Writable {
		// A read-only workdir is refused where a writable one is: $HOME
		// or / as a project would show the caller's keys and every
		// other secret to the command.
		if err := hostpath.Refuse(o); err != nil {
			return fmt.Errorf("%s: refusing it as the workdir, even read-only: %w; the command could read the host's configuration, your credentials or other users' files there; choose a project directory as the workdir (tooljail run --workdir DIR), or run without one (--no-workdir)", bindName(m, dir), err)
		}
		return nil
	}
	if err := hostpath.Refuse(o); err != nil {
		fix := "bind a project directory instead"
		if m.Dest == dir {
			fix = "choose a project directory as the workdir (tooljail run --workdir DIR), or run without one (--no-workdir)"
		}
		return fmt.Errorf("%s: refusing to bind it read-write: %w; the command could change the host's software, configuration or other users' files there; %s", bindName(m, dir), err, fix)
	}
	return nil
}

// hostUser decides the host identity of the jail (see Spec.HostUser):
// root says the supervisor is real root (privileged), euid and egid are
// its ids, owner the owner of the workdir's bind (nil when there is none).
// Any other caller, root in a container without CAP_SYS_ADMIN too, runs
// the jail as itself.
func hostUser(root bool, euid, egid int, asked *HostID, owner *HostID) (id HostID, explicit bool, err error) {
	if !root {
		self := HostID{UID: euid, GID: egid}
		if asked != nil && *asked != self {
			return self, false, fmt.Errorf("host user %d:%d: only real root (uid 0 with CAP_SYS_ADMIN) can start a jail as another user (tooljail runs as %d:%d)", asked.UID, asked.GID, euid, egid)
		}
		return self, asked != nil, nil
	}
	switch {
	case asked != nil:
		return *asked, true, nil
	case owner != nil && owner.UID != 0:
		id = *owner
		if id.GID == 0 {
			// Never the host's root group either.
			id.GID = DefaultHostUser.GID
		}
		return id, false, nil
	}
	return DefaultHostUser, false, nil
}

// idmapFor is the idmapping a writable bind owned by owner needs for a
// jail running as id: nil when the owner is the jail's identity.
func idmapFor(owner, id HostID) *hostmount.Mapping {
	if owner == id {
		return nil
	}
	return &hostmount.Mapping{
		From: hostmount.IDs{UID: uint32(owner.UID), GID: uint32(owner.GID)},
		To:   hostmount.IDs{UID: uint32(id.UID), GID: uint32(id.GID)},
	}
}

func ownerOf(o *hostpath.Object) HostID { return HostID{UID: int(o.Stat.Uid), GID: int(o.Stat.Gid)} }

// workdirOwner is the owner of the bind at dir (the workdir, read-write
// or read-only), or nil.
func workdirOwner(mounts []Mount, srcs []source, dir string) *HostID {
	for i, m := range mounts {
		if m.Kind == MountBind && m.Dest == dir && srcs[i].obj != nil {
			o := ownerOf(srcs[i].obj)
			return &o
		}
	}
	return nil
}

// detachSources makes a root supervisor's detached mount trees of the
// sources, so that the init (which has no privilege over the host's mount
// namespace) can move them into the jail. Writable binds not owned by the
// jail's identity are idmapped to it, and so is a read-only workdir: the
// command sees the project as it would in a writable one (a root-owned
// project of mode 0700 would be unreadable to the unprivileged jail
// otherwise), and nothing can be written through it.
func detachSources(mounts []Mount, srcs []source, dir string, id HostID, explicit, filtered bool) (idmapped []string, err error) {
	for i, m := range mounts {
		s := &srcs[i]
		if m.Kind != MountBind || s.obj == nil || s.obj.IsSymlink() {
			continue
		}
		attr := hostmount.Attr{ReadOnly: !m.Writable, NoSuid: true, NoDev: true}
		var mp *hostmount.Mapping
		if m.Writable || m.Dest == dir {
			mp = idmapFor(ownerOf(s.obj), id)
		}
		if mp != nil && m.Writable && !filtered {
			// Through an idmapped mount the command is the owner of the
			// owner's files: only the filter's setuid/setgid denial stops
			// it from leaving a setuid binary of that owner on the host.
			if !explicit {
				return idmapped, fmt.Errorf("%s belongs to %d:%d and would be idmapped to the jail's user %d:%d, which needs the seccomp filter (it denies setuid and setgid files), and this run has none; enable seccomp, use a directory owned by an unprivileged user (the jail then runs as that user), or pass --host-user (the bind is then shown as it is, not idmapped)",
					bindName(m, dir), s.obj.Stat.Uid, s.obj.Stat.Gid, id.UID, id.GID)
			}
			mp = nil // the user chose the identity: shown as it is
		}
		tree, err := hostmount.Clone(s.obj.File, true, attr, mp)
		if err != nil && mp != nil && explicit && errors.Is(err, hostmount.ErrIdmapUnsupported) {
			// The user chose the identity: the bind is shown as it is,
			// and files the command writes belong to that user.
			mp = nil
			tree, err = hostmount.Clone(s.obj.File, true, attr, nil)
		}
		if err != nil {
			if errors.Is(err, hostmount.ErrIdmapUnsupported) && !m.Writable {
				return idmapped, fmt.Errorf("%s: its file system cannot be idmapped (%w), so its files, owned by %d:%d, could not be shown as the unprivileged jail's %d:%d; fix: pass --host-user %d:%d (the jail then runs as that user), or use a directory on a file system that supports idmapped mounts (ext4, xfs, btrfs; tmpfs from Linux 6.3)",
					bindName(m, dir), err, s.obj.Stat.Uid, s.obj.Stat.Gid, id.UID, id.GID, s.obj.Stat.Uid, s.obj.Stat.Gid)
			}
			if errors.Is(err, hostmount.ErrIdmapUnsupported) {
				return idmapped, fmt.Errorf("%s: its file system cannot be idmapped (%w), so files the jail writes there could not keep their owner %d:%d while the jail runs as the unprivileged %d:%d; fix: pass --host-user %d:%d (the jail then runs as that user), or use a directory on a file system that supports idmapped mounts (ext4, xfs, btrfs; tmpfs from Linux 6.3)",
					bindName(m, dir), err, s.obj.Stat.Uid, s.obj.Stat.Gid, id.UID, id.GID, s.obj.Stat.Uid, s.obj.Stat.Gid)
			}
			return idmapped, fmt.Errorf("%s: %w", bindName(m, dir), err)
		}
		s.tree = tree
		if mp != nil {
			idmapped = append(idmapped, m.Dest)
		}
	}
	return idmapped, nil
}

// overBinds lists what must be bound over itself so that the command
// cannot change a trusted object: each that lies inside a writable bind
// (read-only), and the directories between the bind's root and it (over
// themselves, so they cannot be renamed away). Shallower ones first.
func overBinds(trusted []*hostpath.Object, mounts []Mount, srcs []source) []overBind {
	byDest := map[string]overBind{}
	for _, t := range trusted {
		for i, m := range mounts {
			if m.Kind != MountBind || !m.Writable || srcs[i].obj == nil {
				continue
			}
			rel, ok := t.Within(srcs[i].obj.ID())
			if !ok {
				continue
			}
			var parts []string
			if rel != "" {
				parts = strings.Split(rel, "/")
			}
			// The chain ends with the parts' objects.
			chain := t.Chain[len(t.Chain)-len(parts):]
			for k := 0; k+1 < len(parts); k++ {
				dest := path.Join(m.Dest, strings.Join(parts[:k+1], "/"))
				if _, ok := byDest[dest]; !ok {
					byDest[dest] = overBind{Dest: dest, ID: chain[k].ID}
				}
			}
			dest := path.Join(m.Dest, rel)
			byDest[dest] = overBind{Dest: dest, ID: t.ID(), ReadOnly: true}
		}
	}
	out := make([]overBind, 0, len(byDest))
	for _, o := range byDest {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i].Dest, "/"), strings.Count(out[j].Dest, "/")
		if di != dj {
			return di < dj
		}
		return out[i].Dest < out[j].Dest
	})
	return out
}

// insideWritable names the writable bind whose source holds chain's
// object, or "".
func insideWritable(chain []hostpath.Elem, mounts []Mount, srcs []source) string {
	o := hostpath.Object{Chain: chain}
	for i, m := range mounts {
		if m.Kind == MountBind && m.Writable && srcs[i].obj != nil {
			if _, ok := o.Within(srcs[i].obj.ID()); ok {
				return m.Source
			}
		}
	}
	return ""
}

// executable is this program's file, opened once per process: a file
// tooljail trusts (the next run executes it).
var executable = sync.OnceValue(func() *hostpath.Object {
	p, err := os.Executable()
	if err != nil {
		return nil
	}
	o, err := hostpath.Open(p, hostpath.Options{})
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Stat("/proc/self/exe", &st) != nil || o.ID() != (hostpath.ID{Dev: st.Dev, Ino: st.Ino}) {
		o.Close()
		return nil // replaced or moved since it started: nothing to protect by this name
	}
	return o
})

// cacheDir opens the seccomp cache directory, creating it and its missing
// parents (mode 0700, so that a run cannot plant one), or nil when there
// is none. Whether it may be used (owner, mode) is checked on the opened
// directory by seccomp.CompileDir.
func cacheDir() *hostpath.Object {
	dir := seccomp.DefaultCacheDir()
	if dir == "" {
		return nil
	}
	o, err := makeDirs(dir, 0o700)
	if err != nil {
		return nil
	}
	return o
}

// makeDirs opens the directory p, creating what is missing of it one
// component at a time, each with mkdirat in the parent it opened: by the
// rules of every host path, never through a symlink a run planted.
func makeDirs(p string, perm uint32) (*hostpath.Object, error) {
	o, err := hostpath.Open(p, hostpath.Options{})
	if err == nil {
		if !o.IsDir() {
			o.Close()
			return nil, fmt.Errorf("%s is not a directory", p)
		}
		return o, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || p == "/" {
		return nil, err
	}
	parent, err := makeDirs(path.Dir(p), perm)
	if err != nil {
		return nil, err
	}
	err = unix.Mkdirat(int(parent.File.Fd()), path.Base(p), perm)
	parent.Close()
	if err != nil && err != unix.EEXIST {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return makeDirs(p, perm)
}

// makeCaches creates the missing source directories of the cache binds
// (Mount.Cache), as the supervisor's user, mode 0700: the directory is
// then opened and checked as every read-write bind's source is.
func makeCaches(mounts []Mount) error {
	for _, m := range mounts {
		if m.Kind != MountBind || m.Cache == "" {
			continue
		}
		o, err := makeDirs(m.Source, 0o700)
		if err != nil {
			return fmt.Errorf("cache %s: %w; create %s yourself, or name another directory (%s=DIR)", m.Cache, err, m.Source, m.Cache)
		}
		o.Close()
	}
	return nil
}

// cacheBinds are the report's list of the cache binds.
func cacheBinds(mounts []Mount) []CacheBind {
	var out []CacheBind
	for _, m := range mounts {
		if m.Kind == MountBind && m.Cache != "" {
			out = append(out, CacheBind{Name: m.Cache, Path: m.Dest, HostPath: m.Source})
		}
	}
	return out
}

// hostSide is what the supervisor opened on the host for one run.
type hostSide struct {
	root     bool   // the supervisor is real root (privileged)
	id       HostID // the jail's host identity
	explicit bool   // chosen by the caller (Spec.HostUser)
	sources  []source
	trusted  []*hostpath.Object
	cache    *hostpath.Object // the seccomp cache directory, or nil
	tree     *hostpath.Object // the root directory (Spec.Root), or nil
	over     []overBind
	// protected are the objects of Spec.Protect found in writable binds,
	// bound read-only over themselves with the trusted ones.
	protected []*hostpath.Object
	// protectedDests are their destinations, for the report (set by
	// Start once the cgroup, which rewrites the enforcement, is made);
	// protectDegraded: without namespaces, left writable (LayerProtect).
	protectedDests  []string
	protectDegraded bool
	prog            *seccomp.Program
	idmapped        []string // destinations of idmapped binds
	finished        bool
	// chg is the run's change set (Spec.Changes), or nil.
	chg *runChanges
}

// prepare opens what needs no init: the outputs, the files tooljail
// trusts; a root supervisor also opens the bind sources,
// decides the jail's host identity and detaches the sources' trees. It
// runs while Start makes the cgroup.
func (h *hostSide) prepare(c *Cmd, p *plan) error {
	for _, o := range c.Outputs {
		if err := o.open(); err != nil {
			return err
		}
	}
	h.trusted = append([]*hostpath.Object(nil), c.Spec.Trusted...)
	if exe := executable(); exe != nil {
		h.trusted = append(h.trusted, exe)
	}
	if err := makeCaches(p.mounts); err != nil {
		return err
	}
	if !h.root {
		var err error
		h.id, h.explicit, err = hostUser(false, os.Geteuid(), os.Getegid(), c.Spec.HostUser, nil)
		if err != nil {
			return err
		}
		h.chg, err = createChanges(c.Spec, p.changes, h.id)
		return err
	}
	if err := h.resolveIn(c, "/"); err != nil {
		return err
	}
	var err error
	h.id, h.explicit, err = hostUser(true, 0, 0, c.Spec.HostUser, workdirOwner(p.mounts, h.sources, c.Spec.Dir))
	if err != nil {
		return err
	}
	if h.chg, err = createChanges(c.Spec, p.changes, h.id); err != nil {
		return err
	}
	if h.idmapped, err = detachSources(p.mounts, h.sources, c.Spec.Dir, h.id, h.explicit, p.compile); err != nil {
		return err
	}
	return h.finish(c)
}

// resolveIn opens the root directory (Spec.Root) and the bind sources
// with root (a path of this process) standing for the host's "/".
func (h *hostSide) resolveIn(c *Cmd, root string) error {
	f, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s to reach the host's paths: %w", root, err)
	}
	defer f.Close()
	if c.Spec.Root != "" {
		if h.tree, err = openTree(f, c.Spec.Root); err != nil {
			return err
		}
	}
	h.sources, err = resolveSources(f, h.tree, c.plan.mounts, c.Spec.Dir)
	return err
}

// openTree opens the root directory p (Spec.Root) from root, by the rules
// of every host path, and checks it may be used (hostpath.CheckTree).
func openTree(root *os.File, p string) (*hostpath.Object, error) {
	tree, err := hostpath.OpenTreeIn(root, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("root directory %s does not exist; give the directory of an unpacked root file system", p)
	case err != nil:
		return nil, fmt.Errorf("root directory: %w", err)
	}
	return tree, nil
}

// finish makes the decisions that need both the sources and the other
// host objects: outputs and the seccomp cache must not lie inside a
// writable bind, trusted objects there are bound over themselves.
func (h *hostSide) finish(c *Cmd) error {
	if h.finished {
		return nil
	}
	h.finished = true
	mounts := c.plan.mounts
	for _, o := range c.Outputs {
		if b := insideWritable(o.chain, mounts, h.sources); b != "" {
			o.refuse()
			return fmt.Errorf("%s lies inside %s, which this run binds read-write: the command could replace it (with a symlink or a FIFO) before tooljail writes it; write it outside the run's read-write binds", o.Path, b)
		}
	}
	for _, o := range c.Outputs {
		if err := o.create(); err != nil {
			return err
		}
	}
	// The cache directory is made only for a run that got this far and
	// whose filter is not built into the binary.
	if c.plan.needsDiskCache(c.Spec) {
		if h.cache = cacheDir(); h.cache != nil {
			h.trusted = append(h.trusted, h.cache)
		}
	}
	if err := h.chg.noteSources(mounts, h.sources, h.idmapped, h.root); err != nil {
		return err
	}
	// A bind under an overlay (--changes) is not written by the command:
	// what it protects and trusts there needs no bind over itself (the
	// overlay would hide it anyway); applying the set keeps the
	// protected paths instead (package changes).
	guarded := h.chg.lowerOnly(mounts)
	prot, dests, err := protectIn(c.Spec.Protect, guarded, h.sources)
	if err != nil {
		return err
	}
	h.protected, h.protectedDests = prot, dests
	over := append(h.trusted[:len(h.trusted):len(h.trusted)], prot...)
	if h.tree != nil {
		// The next run's programs come from it: inside a writable bind
		// it is read-only, as the profile that names it is.
		over = append(over, h.tree)
	}
	h.over = overBinds(over, guarded, h.sources)
	var dir *os.File
	if h.cache != nil && insideWritable(h.cache.Chain, mounts, h.sources) == "" {
		dir = h.cache.File
	}
	h.prog, err = c.plan.compileSeccomp(c.Spec, dir)
	return err
}

// close closes what the supervisor opened; the init has its own copies
// of the sources by then.
func (h *hostSide) close() {
	closeSources(h.sources)
	h.sources = nil
	for _, o := range h.protected {
		o.Close()
	}
	h.protected = nil
	if h.cache != nil {
		h.cache.Close()
		h.cache = nil
	}
	if h.tree != nil {
		h.tree.Close()
		h.tree = nil
	}
}

// onProcfs says whether o lies on a proc filesystem. Any error reads as
// no: the bind then goes on to the other checks.
func onProcfs(o *hostpath.Object) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(int(o.File.Fd()), &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC
}
