package jail

import (
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/roottpl"
)

// templates are this process's root templates (package roottpl): a
// long-lived supervisor's runs of one shape get a clone of a jail root
// made once, with its read-only binds in it.
var templates = &roottpl.Cache{MaxAge: 10 * time.Minute, Max: 8}

// starts counts the runs this process has started with a root
// supervisor's host side: the first does nothing for templates, so that a
// process that runs one jail (the CLI) pays nothing for them.
var starts atomic.Int64

// rootUse is a run's use of a root template: the clone that becomes its
// root and which mounts it holds.
type rootUse struct {
	tree  *os.File
	in    []bool
	types []uint32 // the template's Types
}

func (u *rootUse) close() {
	if u != nil && u.tree != nil {
		u.tree.Close()
		u.tree = nil
	}
}

// templateMounts is the plan's mounts as a template sees them, for a
// root supervisor's run (an unprivileged one cannot detach the host's
// mounts); nil when the run cannot use one (no namespaces; a root
// directory, whose binds come from a tree of the run; a change set
// recorded through overlays; no bind a template can hold), is the
// process's first, or asks for a fresh root (Cmd.FreshRoot).
func templateMounts(c *Cmd) ([]roottpl.Mount, []bool) {
	s := c.Spec
	if c.FreshRoot || c.plan.nons != nil || s.Root != "" || c.plan.changes.Record || starts.Add(1) == 1 {
		return nil, nil
	}
	ms := make([]roottpl.Mount, len(c.plan.host))
	for i, m := range c.plan.host {
		t := roottpl.Mount{Dest: m.Dest, Source: m.Source, KeepSymlink: m.KeepSymlink, Optional: m.Optional}
		switch m.Kind {
		case hostside.Bind:
			t.Kind = roottpl.Bind
			t.Fixed = !m.Writable && m.Dest != s.Dir && m.Cache == "" && !m.InRoot
		case hostside.Tmpfs:
			t.Kind = roottpl.Tmpfs
		default:
			t.Kind = roottpl.Mask
		}
		ms[i] = t
	}
	in := roottpl.InTemplate(ms)
	if !slices.Contains(in, true) {
		return nil, nil
	}
	return ms, in
}

// useTemplate gives the run a clone of its shape's template, building
// one on the shape's second run; otherwise (the first run, or a template
// that cannot be made) it opens the binds a template would hold as any
// run does. The sources of the mounts outside the template are open.
func (h *hostSide) useTemplate(c *Cmd, f *os.File, ms []roottpl.Mount, in []bool) error {
	for i := range ms {
		if src := h.sources[i]; !in[i] && src.Obj != nil {
			typ := src.Obj.Stat.Mode & unix.S_IFMT
			ms[i].Dir, ms[i].Symlink = typ == unix.S_IFDIR, typ == unix.S_IFLNK
		}
	}
	points, ok := roottpl.MountPoints(ms, in)
	if !ok {
		return h.resolveSome(c, f, in)
	}
	shape := &roottpl.Shape{Mounts: ms, In: in, Points: points, UID: int(h.id.UID), GID: int(h.id.GID)}
	_, etc := etcFiles(c.Spec)
	for _, e := range etc {
		if e.Name != "" {
			shape.Etc = append(shape.Etc, roottpl.File{Name: e.Name, Data: e.Data})
		}
	}
	key := shape.Key()
	now := time.Now()
	tree, types, build, err := templates.Clone(key, now)
	if err != nil || (tree == nil && !build) {
		return h.resolveSome(c, f, in)
	}
	if tree == nil {
		if !roottpl.Supported() {
			templates.Failed(key, now)
			return h.resolveSome(c, f, in)
		}
		t, err := h.buildTemplate(c, f, shape)
		if err != nil {
			// The run builds its root itself, and meets whatever made
			// the template fail there, with the init's error.
			templates.Failed(key, now)
			return h.resolveSome(c, f, in)
		}
		templates.Put(key, t, now)
		if tree, err = t.Clone(); err != nil {
			return h.resolveSome(c, f, in)
		}
		types = t.Types
	}
	h.template = &rootUse{tree: tree, in: in, types: types}
	return nil
}

// buildTemplate opens the sources of the template's binds by hostside's
// rules, as a run opens them, and builds it.
func (h *hostSide) buildTemplate(c *Cmd, f *os.File, s *roottpl.Shape) (*roottpl.Template, error) {
	srcs, err := resolveMasked(f, h.tree, c.plan.host, c.Spec.Dir, s.In, true)
	if err != nil {
		return nil, err
	}
	defer hostside.CloseSources(srcs)
	if _, err := hostside.Detach(c.plan.host, srcs, c.Spec.Dir, h.id, h.explicit, c.plan.compile); err != nil {
		return nil, err
	}
	ts := make([]roottpl.Source, len(srcs))
	for i, src := range srcs {
		if !s.In[i] || src.Obj == nil {
			continue
		}
		st := &src.Obj.Stat
		t := roottpl.Source{Tree: src.Tree, Dev: st.Dev, Ino: st.Ino, Type: st.Mode & unix.S_IFMT}
		t.Dir = t.Type == unix.S_IFDIR
		if t.Type == unix.S_IFLNK {
			t.Symlink = true
			if t.Target, err = readlinkFD(src.Obj.File); err != nil {
				return nil, err
			}
		}
		ts[i] = t
	}
	return roottpl.Build(s, ts)
}

// resolveSome opens the binds a template would have held, into
// h.sources.
func (h *hostSide) resolveSome(c *Cmd, f *os.File, in []bool) error {
	srcs, err := resolveMasked(f, h.tree, c.plan.host, c.Spec.Dir, in, true)
	if err != nil {
		return err
	}
	for i, s := range srcs {
		if in[i] {
			h.sources[i] = s
		}
	}
	return nil
}

// resolveMasked opens the sources of the binds whose mask entry is want
// (all of them when mask is nil), by hostside.Resolve.
func resolveMasked(f *os.File, tree *hostpath.Object, ms []hostside.Mount, dir string, mask []bool, want bool) ([]hostside.Source, error) {
	if mask == nil {
		return hostside.Resolve(f, tree, ms, dir)
	}
	some := make([]hostside.Mount, len(ms))
	for i, m := range ms {
		if mask[i] == want {
			some[i] = m
		}
	}
	return hostside.Resolve(f, tree, some, dir)
}

// readlinkFD reads the symlink an O_PATH descriptor is of.
func readlinkFD(f *os.File) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(f.Fd()), "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
