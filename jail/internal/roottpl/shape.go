// Package roottpl keeps templates of a jail's root for a long-lived
// supervisor (the embedded jail package, tooljail serve): a detached
// tmpfs holding the directories, mount points and /etc files the init
// would create on the jail's root, with the plan's read-only binds of
// host paths already in it. A run of the same shape gets a clone of the
// template (one open_tree) instead of opening, cloning and mounting
// every bind again; its init mounts only what is its own (/proc, /dev,
// the tmpfs mounts, the workdir) on the mount points the template has.
//
// What runs share is read-only: the template's tmpfs (directories,
// empty mount points, the generated /etc files) and the binds of
// read-only host paths, which every run of that shape would bind anyway.
// A template is used only while every source it binds is still the
// object it bound (Current): a host file replaced by a rename makes a
// new template.
package roottpl

import (
	"path"
	"strconv"
	"strings"
)

// Kind is what a mount of the plan is.
type Kind int

const (
	Bind Kind = iota + 1
	Tmpfs
	Mask
)

// Mount is one mount of a jail's plan, in the plan's order, as a
// template sees it.
type Mount struct {
	Kind Kind
	Dest string // absolute and clean, inside the jail
	// Fixed: a read-only bind of a host path that every run of the plan
	// takes from the same place (not the workdir, no cache, not from a
	// root directory); only those can be in a template.
	Fixed       bool
	Source      string
	KeepSymlink bool
	Optional    bool
	// Dir: the mount point is a directory (a tmpfs, or a bind whose
	// source is one); Symlink: a bind of a symlink, recreated as one.
	// For a fixed bind they are learned when the template is built.
	Dir, Symlink bool
}

// Early are the mounts the init makes before the plan's: a template
// never holds anything below them.
var Early = []string{"/proc", "/dev"}

// related says whether a and b are the same path or one lies below the
// other.
func related(a, b string) bool {
	if a == b || a == "/" || b == "/" {
		return true
	}
	return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// InTemplate says which mounts of ms a template holds: a fixed bind
// that no mount made before it in a run shares a path with (the
// template's binds are made before everything of the run, so one below
// a run's own mount would show where the run's mount hides it), and
// whose destination no other mount has (its Landlock rule goes on what
// that destination shows).
func InTemplate(ms []Mount) []bool {
	in := make([]bool, len(ms))
	for i, m := range ms {
		in[i] = m.Kind == Bind && m.Fixed
		for _, e := range Early {
			if in[i] && related(m.Dest, e) {
				in[i] = false
			}
		}
		for j := 0; in[i] && j < len(ms); j++ {
			switch {
			case j == i:
			case ms[j].Dest == m.Dest:
				in[i] = false
			case j < i && !in[j] && related(ms[j].Dest, m.Dest):
				in[i] = false
			}
		}
	}
	return in
}

// MountPoints are the mount points of a run's own mounts (those not in
// the template) that lie on the jail's root itself, which the init
// cannot create on a template: each with whether it is a directory.
// ok is false when one cannot be made ahead: a bind of a symlink there
// (the init recreates it on the root). in is InTemplate's.
func MountPoints(ms []Mount, in []bool) (points []Point, ok bool) {
	for _, e := range Early {
		points = append(points, Point{Path: e, Dir: true})
	}
	for i, m := range ms {
		if in[i] || m.Kind == Mask || onEarlier(ms, i) {
			continue
		}
		if m.Kind == Bind && m.Symlink {
			return nil, false
		}
		points = append(points, Point{Path: m.Dest, Dir: m.Kind == Tmpfs || m.Dir})
	}
	return points, true
}

// onEarlier says whether mount i lies in a mount made before it (its
// mount point is then not on the jail's root).
func onEarlier(ms []Mount, i int) bool {
	for _, e := range Early {
		if related(ms[i].Dest, e) {
			return true
		}
	}
	for j := 0; j < i; j++ {
		if ms[j].Kind != Mask && (ms[j].Dest == "/" || strings.HasPrefix(ms[i].Dest, ms[j].Dest+"/") || ms[j].Dest == ms[i].Dest) {
			return true
		}
	}
	return false
}

// Point is a mount point a template makes for a run's own mount.
type Point struct {
	Path string
	Dir  bool
}

// File is a file the init writes in the jail's /etc.
type File struct {
	Name, Data string
}

// Shape is everything a template is made of, and its key.
type Shape struct {
	Mounts   []Mount // the plan's, InTemplate's set Fixed ones in it
	In       []bool
	Points   []Point
	Etc      []File
	UID, GID int // the owner of the template's files: uid 0 of the jail
}

// Key identifies the shape: runs whose shapes have the same key can
// share a template.
func (s *Shape) Key() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(s.UID))
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(s.GID))
	for i, m := range s.Mounts {
		if !s.In[i] {
			// Only its place: Template.Types is by mount index.
			b.WriteString("\x00n")
			continue
		}
		b.WriteString("\x00b")
		b.WriteString(m.Source)
		b.WriteByte(0)
		b.WriteString(m.Dest)
		b.WriteByte(0)
		b.WriteString(strconv.FormatBool(m.KeepSymlink))
		b.WriteString(strconv.FormatBool(m.Optional))
	}
	for _, p := range s.Points {
		b.WriteString("\x00p")
		b.WriteString(p.Path)
		b.WriteString(strconv.FormatBool(p.Dir))
	}
	for _, f := range s.Etc {
		b.WriteString("\x00e")
		b.WriteString(f.Name)
		b.WriteByte(0)
		b.WriteString(f.Data)
	}
	return b.String()
}

// clean says whether p is absolute and clean.
func clean(p string) bool {
	return strings.HasPrefix(p, "/") && path.Clean(p) == p
}
