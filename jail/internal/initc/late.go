package initc

/*
#include "init.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The late part of the init's plan: what the supervisor learns only once
// the host paths are opened, which for an unprivileged run is after the
// init is forked (they are opened in its mount namespace, so that it may
// clone them). It lives in memory shared with the init (region) and is
// complete before the sync byte.

// MaxOver bounds the trusted files and directories bound over themselves
// in one run, and maxOverPaths the bytes of their paths.
const (
	MaxOver      = 256
	maxOverPaths = 128 << 10
)

// Source is one bind's source as the supervisor opened it, by the plan's
// mount index. Open is false for a mount that is no bind, and for an
// optional source that does not exist.
type Source struct {
	Open     bool
	FD       int    // the opened object, or a detached mount tree of it
	Type     uint32 // its S_IFMT; S_IFLNK: the init recreates the symlink
	Detached bool   // FD is a detached mount tree made by a root supervisor: moved as it is
	// InTree: the bind is in the root template (FillLate's root): no
	// descriptor is sent (FD is unused), the init mounts nothing for it.
	InTree bool
	// Overlay: the bind is the read-only lower layer of an overlay with
	// these upper and work directories (--changes).
	Overlay         bool
	UpperFD, WorkFD int
}

// Over is a trusted file bound read-only over itself in the jail, or a
// directory above it in a read-write bind, bound over itself so that it
// cannot be renamed away; Dev and Ino are what Dest must be.
type Over struct {
	Dest     string
	Dev, Ino uint64
	ReadOnly bool
}

// Filter is the seccomp filter stage 2 loads, with seccomp(2)'s flags.
type Filter struct {
	Insns  []unix.SockFilter
	Flags  uint
	Notify bool // the filter returns a listener, sent with the ready record
}

// reserveLate reserves the shared memory for the late part.
func (cp *Compiled) reserveLate(withSeccomp bool) error {
	n := uintptr(cp.nmounts)
	size := unsafe.Sizeof(C.struct_tj_late{}) + n*unsafe.Sizeof(C.struct_tj_source{}) +
		MaxOver*unsafe.Sizeof(C.struct_tj_over{}) + maxOverPaths + 64*16
	if withSeccomp {
		size += unix.BPF_MAXINSNS * unsafe.Sizeof(unix.SockFilter{})
	}
	r, err := newRegion(int(size))
	if err != nil {
		return err
	}
	cp.late = r
	alloc := func(size uintptr) unsafe.Pointer {
		p, err := r.alloc(size)
		if err != nil {
			panic(err) // sized above
		}
		return p
	}
	l := (*C.struct_tj_late)(alloc(unsafe.Sizeof(C.struct_tj_late{})))
	l.sources = (*C.struct_tj_source)(alloc(max(n, 1) * unsafe.Sizeof(C.struct_tj_source{})))
	l.over = (*C.struct_tj_over)(alloc(MaxOver * unsafe.Sizeof(C.struct_tj_over{})))
	if withSeccomp {
		l.filter = (*C.struct_sock_filter)(alloc(unix.BPF_MAXINSNS * unsafe.Sizeof(unix.SockFilter{})))
	}
	cp.c.late = l
	return nil
}

// FillLate writes the late part: the sources (one per mount of the plan),
// the jail's root (a clone of a root template, or -1: the init builds
// it), the files to bind over themselves and the seccomp filter (nil:
// none). It returns the descriptors to send with the sync, in slot order.
func (cp *Compiled) FillLate(srcs []Source, root int, over []Over, filter *Filter) ([]int, error) {
	if len(srcs) != cp.nmounts {
		return nil, fmt.Errorf("%d sources for a plan of %d mounts", len(srcs), cp.nmounts)
	}
	l := cp.c.late
	fds := fillSources(unsafe.Slice(l.sources, cp.nmounts), srcs)
	l.root = -1
	if root >= 0 {
		l.root = C.int(len(fds))
		fds = append(fds, root)
	}
	if len(fds) > MaxSources {
		return nil, fmt.Errorf("%d descriptors for the binds and their overlays: a jail takes at most %d", len(fds), MaxSources)
	}
	l.nfds = C.int(len(fds))
	if err := cp.fillOver(l, over); err != nil {
		return nil, err
	}
	if filter != nil {
		if l.filter == nil {
			return nil, errors.New("seccomp: a filter for a plan without seccomp")
		}
		if len(filter.Insns) > unix.BPF_MAXINSNS {
			return nil, fmt.Errorf("seccomp: a filter of %d instructions, at most %d", len(filter.Insns), unix.BPF_MAXINSNS)
		}
		copy(unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(l.filter)), unix.BPF_MAXINSNS), filter.Insns)
		l.filter_len = C.ushort(len(filter.Insns))
		l.seccomp_flags = C.uint(filter.Flags)
		l.notify = cbool(filter.Notify)
	}
	return fds, nil
}

// fillSources gives each opened source its slot among the descriptors
// sent with the sync, and returns them in that order.
func fillSources(cs []C.struct_tj_source, srcs []Source) []int {
	var fds []int
	for i, s := range srcs {
		cs[i].slot, cs[i].upper, cs[i].work, cs[i].intree = -1, -1, -1, 0
		if !s.Open {
			continue
		}
		cs[i]._type = C.uint(s.Type & unix.S_IFMT)
		if s.InTree {
			cs[i].intree = 1
			continue
		}
		cs[i].slot = C.int(len(fds))
		cs[i].detached = cbool(s.Detached)
		fds = append(fds, s.FD)
		if s.Overlay {
			cs[i].upper = C.int(len(fds))
			cs[i].work = C.int(len(fds) + 1)
			fds = append(fds, s.UpperFD, s.WorkFD)
		}
	}
	return fds
}

func (cp *Compiled) fillOver(l *C.struct_tj_late, over []Over) error {
	if len(over) > MaxOver {
		return fmt.Errorf("%d files to bind over themselves: at most %d", len(over), MaxOver)
	}
	co := unsafe.Slice(l.over, MaxOver)
	for i, o := range over {
		dest, err := cp.late.cstring(o.Dest)
		if err != nil {
			return fmt.Errorf("trusted files inside read-write binds: %w", err)
		}
		co[i].dest, co[i].dev, co[i].ino = dest, C.uint64_t(o.Dev), C.uint64_t(o.Ino)
		co[i].readonly = cbool(o.ReadOnly)
	}
	l.nover = C.int(len(over))
	return nil
}
