package jail

/*
#include "init.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/seccomp"
)

// The late part of the init's plan: what the supervisor learns only once
// the host paths are opened, which for an unprivileged run is after the
// init is forked (they are opened in its mount namespace, so that it may
// clone them). It lives in memory shared with the init (region) and is
// complete before the sync byte.

// source is one bind's source as the supervisor opened it.
type source struct {
	obj *hostpath.Object // nil: an optional source that does not exist
	// tree is a detached mount tree of obj made by a root supervisor (its
	// attributes set, idmapped where needed), moved into the jail as it
	// is; nil: the init clones obj itself.
	tree *os.File
}

func (s source) fd() int {
	if s.tree != nil {
		return int(s.tree.Fd())
	}
	return int(s.obj.File.Fd())
}

func (s source) close() {
	if s.tree != nil {
		s.tree.Close()
	}
	if s.obj != nil {
		s.obj.Close()
	}
}

// overBind is a trusted file bound read-only over itself in the jail, or a
// directory above it in a read-write bind, bound over itself so that it
// cannot be renamed away.
type overBind struct {
	Dest     string // inside the jail
	ID       hostpath.ID
	ReadOnly bool
}

// reserveLate reserves the shared memory for the late part.
func (ip *initPlan) reserveLate(withSeccomp bool) error {
	n := uintptr(len(ip.mounts))
	size := unsafe.Sizeof(C.struct_tj_late{}) + n*unsafe.Sizeof(C.struct_tj_source{}) +
		maxOver*unsafe.Sizeof(C.struct_tj_over{}) + maxOverPaths + 64*16
	if withSeccomp {
		size += unix.BPF_MAXINSNS * unsafe.Sizeof(unix.SockFilter{})
	}
	r, err := newRegion(int(size))
	if err != nil {
		return err
	}
	ip.late = r
	alloc := func(size uintptr) unsafe.Pointer {
		p, err := r.alloc(size)
		if err != nil {
			panic(err) // sized above
		}
		return p
	}
	l := (*C.struct_tj_late)(alloc(unsafe.Sizeof(C.struct_tj_late{})))
	l.sources = (*C.struct_tj_source)(alloc(max(n, 1) * unsafe.Sizeof(C.struct_tj_source{})))
	l.over = (*C.struct_tj_over)(alloc(maxOver * unsafe.Sizeof(C.struct_tj_over{})))
	if withSeccomp {
		l.filter = (*C.struct_sock_filter)(alloc(unix.BPF_MAXINSNS * unsafe.Sizeof(unix.SockFilter{})))
	}
	ip.c.late = l
	return nil
}

// fillLate writes the late part: the sources (srcs, by mount index), the
// trusted files to bind over themselves and the seccomp filter. It returns
// the descriptors to send with the sync, in slot order.
func (ip *initPlan) fillLate(srcs []source, over []overBind, prog *seccomp.Program, chg *runChanges) ([]int, error) {
	l := ip.c.late
	cs := unsafe.Slice(l.sources, len(ip.mounts))
	var fds []int
	for i, m := range ip.mounts {
		cs[i].slot, cs[i].upper, cs[i].work = -1, -1, -1
		if m.Kind != MountBind || srcs[i].obj == nil {
			continue
		}
		cs[i].slot = C.int(len(fds))
		cs[i]._type = C.uint(srcs[i].obj.Stat.Mode & unix.S_IFMT)
		if srcs[i].tree != nil {
			cs[i].detached = 1
		}
		fds = append(fds, srcs[i].fd())
		if b := chg.bindIndex(i); b >= 0 {
			// The bind is the lower layer of an overlay (--changes).
			cs[i].upper = C.int(len(fds))
			cs[i].work = C.int(len(fds) + 1)
			fds = append(fds, int(chg.upper[b].Fd()), int(chg.work[b].Fd()))
		}
	}
	if len(fds) > C.TJ_MAX_SOURCES {
		return nil, fmt.Errorf("%d descriptors for the binds and their overlays: a jail takes at most %d", len(fds), C.TJ_MAX_SOURCES)
	}
	l.nfds = C.int(len(fds))
	if len(over) > maxOver {
		return nil, fmt.Errorf("%d trusted and protected files and directories inside read-write binds: at most %d can be bound read-only; protect fewer (filesystem.protect) or bind a smaller directory", len(over), maxOver)
	}
	co := unsafe.Slice(l.over, maxOver)
	for i, o := range over {
		dest, err := ip.late.cstring(o.Dest)
		if err != nil {
			return nil, fmt.Errorf("trusted files inside read-write binds: %w", err)
		}
		co[i].dest, co[i].dev, co[i].ino = dest, C.uint64_t(o.ID.Dev), C.uint64_t(o.ID.Ino)
		co[i].readonly = 0
		if o.ReadOnly {
			co[i].readonly = 1
		}
	}
	l.nover = C.int(len(over))
	ip.over = over
	if prog != nil {
		if l.filter == nil {
			return nil, fmt.Errorf("seccomp: a filter for a plan without seccomp")
		}
		insns, flags, err := seccomp.ThreadArgs(prog)
		if err != nil {
			return nil, fmt.Errorf("seccomp: %w", err)
		}
		copy(unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(l.filter)), unix.BPF_MAXINSNS), insns)
		l.filter_len = C.ushort(len(insns))
		l.seccomp_flags = C.uint(flags)
		l.notify = 0
		if prog.Notify {
			l.notify = 1
		}
		ip.stage2.seccompFlags = uint(flags)
	}
	return fds, nil
}

// sendFDs sends the sources' descriptors to the init, before the sync byte.
func sendFDs(sock int, fds []int) error {
	for len(fds) > 0 {
		n := min(len(fds), C.TJ_FDS_PER_MSG)
		if err := sendPacket(sock, []byte{0}, unix.UnixRights(fds[:n]...)); err != nil {
			return fmt.Errorf("send the host paths' descriptors to the jail's init: %w", err)
		}
		fds = fds[n:]
	}
	return nil
}
