package jail

import (
	"fmt"
	"os"

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
	// template: the run's root is a root template's clone, or nil.
	template *rootUse
}

// prepare opens what needs no init: the outputs, the files tooljail
// trusts; a root supervisor also opens the bind sources,
// decides the jail's host identity and detaches the sources' trees. It
// runs while Start makes the cgroup.
func (h *hostSide) prepare(c *Cmd, p *plan) error {
	for _, o := range c.Outputs {
		if err := o.Open(); err != nil {
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
		h.chg, err = changes.NewRun(p.changes, c.changesDir, h.id.UID, h.id.GID)
		return err
	}
	// The binds a root template can hold are opened once its shape is
	// known (useTemplate), which needs the others and the identity.
	tms, in := templateMounts(c)
	root, err := openRoot("/")
	if err != nil {
		return err
	}
	defer root.Close()
	if err := h.resolveFrom(c, root, in); err != nil {
		return err
	}
	h.id, h.explicit, err = hostside.HostUser(true, 0, 0, c.Spec.HostUser, hostside.WorkdirOwner(p.host, h.sources, c.Spec.Dir), DefaultHostUser)
	if err != nil {
		return err
	}
	if in != nil {
		if err := h.useTemplate(c, root, tms, in); err != nil {
			return err
		}
	}
	if h.chg, err = changes.NewRun(p.changes, c.changesDir, h.id.UID, h.id.GID); err != nil {
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
	f, err := openRoot(root)
	if err != nil {
		return err
	}
	defer f.Close()
	return h.resolveFrom(c, f, nil)
}

// openRoot opens root, a path of this process standing for the host's
// "/", to open the host's paths from.
func openRoot(root string) (*os.File, error) {
	f, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s to reach the host's paths: %w", root, err)
	}
	return f, nil
}

// resolveFrom is resolveIn from an open root, leaving out the binds a
// root template may hold (in; nil: none).
func (h *hostSide) resolveFrom(c *Cmd, f *os.File, in []bool) error {
	var err error
	if c.Spec.Root != "" {
		if h.tree, err = hostside.OpenTree(f, c.Spec.Root); err != nil {
			return err
		}
	}
	h.sources, err = resolveMasked(f, h.tree, c.plan.host, c.Spec.Dir, in, false)
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
		if b := hostside.InsideWritable(o.Chain(), mounts, h.sources); b != "" {
			o.Refuse()
			return fmt.Errorf("%s lies inside %s, which this run binds read-write: the command could replace it (with a symlink or a FIFO) before tooljail writes it; write it outside the run's read-write binds", o.Path, b)
		}
	}
	for _, o := range c.Outputs {
		if err := o.Create(); err != nil {
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
	h.template.close()
}
