package hostside

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

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostprotect"
	"github.com/tooljail/tooljail/seccomp"
)

// OverBinds lists what must be bound over itself so that the command
// cannot change a trusted object: each that lies inside a writable bind
// (read-only), and the directories between the bind's root and it (over
// themselves, so they cannot be renamed away). Shallower ones first.
func OverBinds(trusted []*hostpath.Object, mounts []Mount, srcs []Source) []Over {
	byDest := map[string]Over{}
	for _, t := range trusted {
		for i, m := range mounts {
			if m.Kind != Bind || !m.Writable || srcs[i].Obj == nil {
				continue
			}
			rel, ok := t.Within(srcs[i].Obj.ID())
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
					byDest[dest] = Over{Dest: dest, ID: chain[k].ID}
				}
			}
			dest := path.Join(m.Dest, rel)
			byDest[dest] = Over{Dest: dest, ID: t.ID(), ReadOnly: true}
		}
	}
	out := make([]Over, 0, len(byDest))
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

// InsideWritable names the writable bind whose source holds chain's
// object, or "".
func InsideWritable(chain []hostpath.Elem, mounts []Mount, srcs []Source) string {
	o := hostpath.Object{Chain: chain}
	for i, m := range mounts {
		if m.Kind == Bind && m.Writable && srcs[i].Obj != nil {
			if _, ok := o.Within(srcs[i].Obj.ID()); ok {
				return m.Source
			}
		}
	}
	return ""
}

// Executable is this program's file, opened once per process: a file
// tooljail trusts (the next run executes it).
func Executable() *hostpath.Object { return executable() }

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

// CacheDir opens the seccomp cache directory, creating it and its missing
// parents (mode 0700, so that a run cannot plant one), or nil when there
// is none. Whether it may be used (owner, mode) is checked on the opened
// directory by seccomp.CompileDir.
func CacheDir() *hostpath.Object {
	dir := seccomp.DefaultCacheDir()
	if dir == "" {
		return nil
	}
	o, err := MakeDirs(dir, 0o700)
	if err != nil {
		return nil
	}
	return o
}

// MakeDirs opens the directory p, creating what is missing of it one
// component at a time, each with mkdirat in the parent it opened: by the
// rules of every host path, never through a symlink a run planted.
func MakeDirs(p string, perm uint32) (*hostpath.Object, error) {
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
	parent, err := MakeDirs(path.Dir(p), perm)
	if err != nil {
		return nil, err
	}
	err = unix.Mkdirat(int(parent.File.Fd()), path.Base(p), perm)
	parent.Close()
	if err != nil && err != unix.EEXIST {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return MakeDirs(p, perm)
}

// MakeCaches creates the missing source directories of the cache binds
// (Mount.Cache), as the supervisor's user, mode 0700: the directory is
// then opened and checked as every read-write bind's source is.
func MakeCaches(mounts []Mount) error {
	for _, m := range mounts {
		if m.Kind != Bind || m.Cache == "" {
			continue
		}
		o, err := MakeDirs(m.Source, 0o700)
		if err != nil {
			return fmt.Errorf("cache %s: %w; create %s yourself, or name another directory (%s=DIR)", m.Cache, err, m.Source, m.Cache)
		}
		o.Close()
	}
	return nil
}

// ProtectIn opens what names asks to protect in every writable bind of
// mounts (srcs their opened sources) and returns the objects, to be bound
// read-only over themselves, and their destinations in the jail, sorted.
// What to protect below one bind is package hostprotect's.
func ProtectIn(names []string, mounts []Mount, srcs []Source) (objs []*hostpath.Object, dests []string, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	for i, m := range mounts {
		if m.Kind != Bind || !m.Writable || i >= len(srcs) || srcs[i].Obj == nil || !srcs[i].Obj.IsDir() {
			continue
		}
		o, d, err := hostprotect.Open(srcs[i].Obj, m.Dest, names)
		if err != nil {
			for _, o := range objs {
				o.Close()
			}
			return nil, nil, err
		}
		objs, dests = append(objs, o...), append(dests, d...)
	}
	sort.Sort(byDest{objs, dests})
	return objs, dests, nil
}

// byDest sorts objects and their destinations together, by destination.
type byDest struct {
	objs  []*hostpath.Object
	dests []string
}

func (b byDest) Len() int           { return len(b.dests) }
func (b byDest) Less(i, j int) bool { return b.dests[i] < b.dests[j] }
func (b byDest) Swap(i, j int) {
	b.objs[i], b.objs[j] = b.objs[j], b.objs[i]
	b.dests[i], b.dests[j] = b.dests[j], b.dests[i]
}
