package jail

import (
	"fmt"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/seccomp"
)

// The late part of the init's plan: what the supervisor learns only once
// the host paths are opened, which for an unprivileged run is after the
// init is forked (they are opened in its mount namespace, so that it may
// clone them). It lives in memory shared with the init (region) and is
// complete before the sync byte.

// fillLate writes the late part: the sources (srcs, by mount index), the
// root template's clone and the binds it holds (tpl, or nil), the
// trusted files to bind over themselves and the seccomp filter. It returns
// the descriptors to send with the sync, in slot order.
func (ip *initPlan) fillLate(srcs []hostside.Source, tpl *rootUse, over []hostside.Over, prog *seccomp.Program, chg *changes.Run) ([]int, error) {
	cs := make([]initc.Source, len(ip.mounts))
	root := -1
	if tpl != nil {
		root = int(tpl.tree.Fd())
	}
	for i, m := range ip.mounts {
		if tpl != nil && tpl.in[i] {
			if typ := tpl.types[i]; typ != 0 {
				cs[i] = initc.Source{Open: true, InTree: true, Type: typ}
			}
			continue
		}
		if m.Kind != MountBind || srcs[i].Obj == nil {
			continue
		}
		cs[i] = initc.Source{Open: true, FD: srcs[i].FD(), Type: srcs[i].Obj.Stat.Mode, Detached: srcs[i].Tree != nil}
		if b := chg.BindIndex(i); b >= 0 {
			// The bind is the lower layer of an overlay (--changes).
			upper, work := chg.Layers(b)
			cs[i].Overlay, cs[i].UpperFD, cs[i].WorkFD = true, int(upper.Fd()), int(work.Fd())
		}
	}
	if len(over) > initc.MaxOver {
		return nil, fmt.Errorf("%d trusted and protected files and directories inside read-write binds: at most %d can be bound read-only; protect fewer (filesystem.protect) or bind a smaller directory", len(over), initc.MaxOver)
	}
	co := make([]initc.Over, len(over))
	for i, o := range over {
		co[i] = initc.Over{Dest: o.Dest, Dev: o.ID.Dev, Ino: o.ID.Ino, ReadOnly: o.ReadOnly}
	}
	var filter *initc.Filter
	if prog != nil {
		insns, flags, err := seccomp.ThreadArgs(prog)
		if err != nil {
			return nil, fmt.Errorf("seccomp: %w", err)
		}
		filter = &initc.Filter{Insns: insns, Flags: uint(flags), Notify: prog.Notify}
		ip.stage2.seccompFlags = uint(flags)
	}
	fds, err := ip.cp.FillLate(cs, root, co, filter)
	if err != nil {
		return nil, err
	}
	ip.over = over
	return fds, nil
}
