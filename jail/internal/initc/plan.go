package initc

/*
#include <stdlib.h>
#include "init.h"
*/
import "C"

import (
	"fmt"
	"syscall"

	"github.com/tooljail/tooljail/landlock"
)

// The init is C, forked by the supervisor without an exec. The supervisor
// compiles everything it does into one plan in C memory before the fork;
// the child has a copy of that memory and only makes system calls with
// it. The init and stage 2 report failures, and the command's end, as
// records (record.go).

// MountKind is what a Mount makes.
type MountKind int

const (
	Bind  MountKind = C.TJ_MOUNT_BIND  // a host path, from the descriptor of its Source (FillLate)
	Tmpfs MountKind = C.TJ_MOUNT_TMPFS // a fresh tmpfs of Size bytes (0: the kernel's default)
	Mask  MountKind = C.TJ_MOUNT_MASK  // an empty, read-only tmpfs or file over Dest
)

// Mount is one mount of a plan; a plan's list is in the order the mounts
// are made. A bind's Source only names it in errors: the supervisor opens
// it and hands over its descriptor (FillLate).
type Mount struct {
	Kind     MountKind
	Writable bool
	Size     int64
	Source   string
	Dest     string
}

// Files are the supervisor's descriptors the init takes as 0 to 4: stdio,
// the supervisor's socket and the sync pipe's read end.
type Files struct {
	Stdin, Stdout, Stderr, Sock, Sync int
}

// EtcFiles is how many files the init writes in the jail's /etc.
const EtcFiles = C.TJ_ETC_FILES

// Plan is everything the init does.
type Plan struct {
	CloneFlags uintptr // CLONE_NEW* of the init
	CgroupFD   int     // >= 0: clone straight into this cgroup
	Files      Files
	DropGroups bool // real root: drop the supplementary groups
	Session    bool // the init serves a session's calls (init_session.c)
	// NoNS: no namespaces and no mounts; the init is the reaper of nonsreap.c
	// and Mounts only index the bind sources for Landlock's rules.
	NoNS bool
	// NetNone: the jail has a network namespace of its own (loopback up);
	// NetAllow: the init makes the allow mode's listeners on 127.0.0.1 at
	// NetPorts (HTTP proxy, SOCKS5, DNS) and sends them to the supervisor.
	NetNone, NetAllow bool
	NetPorts          [3]int
	Base              string // the host directory the temporary root goes on
	Hostname          string
	Etc               [EtcFiles]EtcFile
	Mounts            []Mount
	DevNodes          []string // bound from the host's /dev: "/dev/null", ...
	Landlock          *landlock.Plan
	// Seccomp reserves room for a filter in the late part.
	Seccomp bool
	Stage2  Stage2
}

// EtcFile is a file of the jail's /etc; a Name "" is none.
type EtcFile struct{ Name, Data string }

// Compiled is a plan in the init's memory. Free it once the init is
// forked: the init has its own copy, and its own mapping of the late part.
type Compiled struct {
	arena
	c       *C.struct_tj_init
	late    *region
	nmounts int
}

// Compile compiles p into the init's memory.
func Compile(p *Plan) (*Compiled, error) {
	cp := &Compiled{}
	if err := cp.compile(p); err != nil {
		cp.Free()
		return nil, err
	}
	return cp, nil
}

func (cp *Compiled) compile(p *Plan) error {
	cs, err := allocN[C.struct_tj_init](&cp.arena, 1)
	if err != nil {
		return err
	}
	c := &cs[0]
	cp.c = c
	setClone(c, p)
	if len(p.Mounts) > MaxSources {
		return fmt.Errorf("%d mounts: a jail takes at most %d", len(p.Mounts), MaxSources)
	}
	cp.nmounts = len(p.Mounts)
	if !p.NoNS {
		if err := cp.compileView(c, p); err != nil {
			return err
		}
	}
	if err := cp.reserveLate(p.Seccomp); err != nil {
		return err
	}
	if p.Landlock != nil {
		if c.landlock, err = cp.clandlock(p.Landlock, p.Mounts); err != nil {
			return err
		}
	}
	if err := cp.compileStage2(&c.stage2, &p.Stage2); err != nil {
		return err
	}
	if p.NoNS {
		c.stage2.clone_flags = 0
		c.stage2.nons = 1
	}
	return nil
}

// setClone sets how the init is cloned (its namespaces, its cgroup), the
// descriptors it takes and what it may do as root.
func setClone(c *C.struct_tj_init, p *Plan) {
	c.clone_flags = C.ulong(p.CloneFlags)
	c.cgroup_fd = C.int(p.CgroupFD)
	f := p.Files
	for i, fd := range []int{f.Stdin, f.Stdout, f.Stderr, f.Sock, f.Sync} {
		c.fds[i] = C.int(fd)
	}
	c.drop_groups = cbool(p.DropGroups)
	c.session = cbool(p.Session)
	c.nons = cbool(p.NoNS)
	c.netnone = cbool(p.NetNone)
	if p.NetAllow {
		c.netallow = 1
		for i, port := range p.NetPorts {
			c.net_ports[i] = C.int(port)
		}
	}
}

// compileView compiles the jail's filesystem view: the base directory,
// the mounts, the device nodes, the host name and the /etc files.
func (cp *Compiled) compileView(c *C.struct_tj_init, p *Plan) error {
	var err error
	if c.base, err = cp.cstring(p.Base); err != nil {
		return err
	}
	ms, err := allocN[C.struct_tj_mount](&cp.arena, len(p.Mounts))
	if err != nil {
		return err
	}
	for i, m := range p.Mounts {
		if err := cp.cmount(&ms[i], m); err != nil {
			return err
		}
	}
	if len(ms) > 0 {
		c.mounts, c.nmounts = &ms[0], C.int(len(ms))
	}
	if c.dev_nodes, err = cp.cstrings(p.DevNodes); err != nil {
		return err
	}
	c.ndev_nodes = C.int(len(p.DevNodes))
	if c.hostname, err = cp.cstring(p.Hostname); err != nil {
		return err
	}
	for i, f := range p.Etc {
		if f.Name == "" {
			continue // the init skips a NULL name
		}
		if c.etc_names[i], err = cp.cstring(f.Name); err != nil {
			return err
		}
		if c.etc_data[i], err = cp.cstring(f.Data); err != nil {
			return err
		}
	}
	return nil
}

func (cp *Compiled) cmount(cm *C.struct_tj_mount, m Mount) error {
	cm.kind = C.int(m.Kind)
	cm.writable = cbool(m.Writable)
	cm.size = C.int64_t(m.Size)
	var err error
	if cm.src, err = cp.cstring(m.Source); err != nil {
		return err
	}
	cm.dest, err = cp.cstring(m.Dest)
	return err
}

// clandlock compiles the Landlock rules; a rule at a bind's destination
// goes on the bind's source.
func (cp *Compiled) clandlock(lp *landlock.Plan, mounts []Mount) (*C.struct_tj_landlock, error) {
	ls, err := allocN[C.struct_tj_landlock](&cp.arena, 1)
	if err != nil {
		return nil, err
	}
	l := &ls[0]
	l.fs, l.net, l.scoped = C.uint64_t(lp.HandledFS), C.uint64_t(lp.HandledNet), C.uint64_t(lp.Scoped)
	l.flags = C.uint(lp.Flags)
	if n := len(lp.Paths); n > 0 {
		binds := map[string]int{}
		for i, m := range mounts {
			if m.Kind == Bind {
				binds[m.Dest] = i
			}
		}
		ps, err := allocN[C.struct_tj_ll_path](&cp.arena, n)
		if err != nil {
			return nil, err
		}
		for i, pp := range lp.Paths {
			if ps[i].path, err = cp.cstring(pp.Path); err != nil {
				return nil, err
			}
			ps[i].mount = -1
			if m, ok := binds[pp.Path]; ok {
				ps[i].mount = C.int(m)
			}
			ps[i].dir, ps[i].file, ps[i].dev = C.uint64_t(pp.Dir), C.uint64_t(pp.File), C.uint64_t(pp.Device)
			ps[i].dir_only = cbool(pp.DirOnly)
		}
		l.paths, l.npaths = &ps[0], C.int(n)
	}
	if n := len(lp.Ports); n > 0 {
		ps, err := allocN[C.struct_tj_ll_port](&cp.arena, n)
		if err != nil {
			return nil, err
		}
		for i, pr := range lp.Ports {
			ps[i].access, ps[i].port = C.uint64_t(pr.Access), C.uint64_t(pr.Port)
		}
		l.ports, l.nports = &ps[0], C.int(n)
	}
	return l, nil
}

// IntoCgroup says whether the init is to be cloned straight into a cgroup.
func (cp *Compiled) IntoCgroup() bool { return cp.c.cgroup_fd >= 0 }

// NoCgroup makes the next Fork clone the init without a cgroup (the clone
// into one was refused; the supervisor moves it there itself).
func (cp *Compiled) NoCgroup() { cp.c.cgroup_fd = -1 }

// Fork forks the init with the plan and returns its pid and a pidfd for
// it. The calling thread must be locked to its goroutine: the init's
// parent death signal is tied to it.
func (cp *Compiled) Fork() (pid, pidfd int, err error) {
	cp.keep(cp.c)
	var fd C.int
	n := int(C.tj_init_start(cp.c, &fd))
	if n < 0 {
		return 0, -1, syscall.Errno(-n)
	}
	return n, int(fd), nil
}

// Free releases the plan's memory.
func (cp *Compiled) Free() {
	cp.arena.free()
	cp.late.free()
	cp.c = nil
}
