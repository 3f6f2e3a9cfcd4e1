package jail

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/seccomp"
)

// The host side of a run: every host path it uses is opened once and
// checked on what was opened, by package hostside's rules in the order
// this file gives them; the jail's init mounts the descriptors.
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
	sources  []hostside.Source
	trusted  []*hostpath.Object
	cache    *hostpath.Object // the seccomp cache directory, or nil
	tree     *hostpath.Object // the root directory (Spec.Root), or nil
	over     []hostside.Over
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
	chg *changes.Run
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
	if exe := hostside.Executable(); exe != nil {
		h.trusted = append(h.trusted, exe)
	}
	if err := hostside.MakeCaches(p.host); err != nil {
		return err
	}
	if !h.root {
		var err error
		h.id, h.explicit, err = hostside.HostUser(false, os.Geteuid(), os.Getegid(), c.Spec.HostUser, nil, DefaultHostUser)
		if err != nil {
			return err
		}
		h.chg, err = changes.NewRun(p.changes, c.Spec.changesDir, h.id.UID, h.id.GID)
		return err
	}
	if err := h.resolveIn(c, "/"); err != nil {
		return err
	}
	var err error
	h.id, h.explicit, err = hostside.HostUser(true, 0, 0, c.Spec.HostUser, hostside.WorkdirOwner(p.host, h.sources, c.Spec.Dir), DefaultHostUser)
	if err != nil {
		return err
	}
	if h.chg, err = changes.NewRun(p.changes, c.Spec.changesDir, h.id.UID, h.id.GID); err != nil {
		return err
	}
	if h.idmapped, err = hostside.Detach(p.host, h.sources, c.Spec.Dir, h.id, h.explicit, p.compile); err != nil {
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
		if h.tree, err = hostside.OpenTree(f, c.Spec.Root); err != nil {
			return err
		}
	}
	h.sources, err = hostside.Resolve(f, h.tree, c.plan.host, c.Spec.Dir)
	return err
}

// finish makes the decisions that need both the sources and the other
// host objects: outputs and the seccomp cache must not lie inside a
// writable bind, trusted objects there are bound over themselves.
func (h *hostSide) finish(c *Cmd) error {
	if h.finished {
		return nil
	}
	h.finished = true
	mounts := c.plan.host
	for _, o := range c.Outputs {
		if b := hostside.InsideWritable(o.chain, mounts, h.sources); b != "" {
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
		if h.cache = hostside.CacheDir(); h.cache != nil {
			h.trusted = append(h.trusted, h.cache)
		}
	}
	if err := h.chg.NoteSources(mounts, h.sources, h.idmapped, h.root); err != nil {
		return err
	}
	// A bind under an overlay (--changes) is not written by the command:
	// what it protects and trusts there needs no bind over itself (the
	// overlay would hide it anyway); applying the set keeps the
	// protected paths instead (package changes).
	guarded := h.chg.LowerOnly(mounts)
	prot, dests, err := hostside.ProtectIn(c.Spec.Protect, guarded, h.sources)
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
	h.over = hostside.OverBinds(over, guarded, h.sources)
	var dir *os.File
	if h.cache != nil && hostside.InsideWritable(h.cache.Chain, mounts, h.sources) == "" {
		dir = h.cache.File
	}
	h.prog, err = c.plan.compileSeccomp(c.Spec, dir)
	return err
}

// close closes what the supervisor opened; the init has its own copies
// of the sources by then.
func (h *hostSide) close() {
	hostside.CloseSources(h.sources)
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
