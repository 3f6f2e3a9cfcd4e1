package jail

import (
	"sort"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostprotect"
)

// protectIn opens what names asks to protect in every writable bind of
// mounts (srcs their opened sources) and returns the objects, to be bound
// read-only over themselves, and their destinations in the jail, sorted.
// What to protect below one bind is package hostprotect's.
func protectIn(names []string, mounts []Mount, srcs []source) (objs []*hostpath.Object, dests []string, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	for i, m := range mounts {
		if m.Kind != MountBind || !m.Writable || i >= len(srcs) || srcs[i].obj == nil || !srcs[i].obj.IsDir() {
			continue
		}
		o, d, err := hostprotect.Open(srcs[i].obj, m.Dest, names)
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
