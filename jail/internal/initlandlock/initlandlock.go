// Package initlandlock runs the jail init's Landlock step outside a jail,
// for its own tests: they build a ruleset with the C function the init
// runs (tj_landlock, jail/internal/initc/init_landlock.c, compiled from that file by
// shim.c), enter it on one thread, as stage 2 does, and check what it
// denies. A whole jail cannot show most denials: its read-only mounts
// fail writes with EROFS before Landlock is asked, nothing outside its
// mounts exists, and "/" always has a List rule. Nothing imports this
// package and it is not shipped.
package initlandlock

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	// The build cache does not see the C files shim.c includes from
	// ../initc; the initc package has them in its own directory, so
	// depending on it rebuilds this package whenever they change.
	_ "github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/landlock"
)

// Bind is one bind mount of the jail as its Landlock rules see it: a rule
// at Dest goes on the object opened at Source (the supervisor hands bind
// sources to the init as descriptors, and rules belong to the inode).
// Source is opened without following a final symlink, as a bind that keeps
// a symlink does; a Source that does not exist is an optional bind whose
// source is missing.
type Bind struct {
	Dest   string `json:"dest"`
	Source string `json:"source"`
}

// Ruleset is what the init hands stage 2: the ruleset's descriptor
// (close-on-exec) and the flags for landlock_restrict_self.
type Ruleset struct {
	FD    int
	Flags uint32
}

// Failure is the init's failure record for its Landlock step.
type Failure struct {
	Step  string // init_steps.h's name: LL_CREATE, LL_OPEN, LL_DIRONLY, LL_RULE, LL_PORT
	Op    string // the system call within the step (OPEN, STAT), "" for none
	Errno syscall.Errno
	Index int // the path rule (LL_OPEN, LL_DIRONLY, LL_RULE) or port rule (LL_PORT); -1 for none
	Path  string
}

func (f *Failure) Error() string {
	s := "init step " + f.Step
	if f.Index >= 0 {
		s += fmt.Sprintf(", rule %d", f.Index)
	}
	if f.Path != "" {
		s += " " + f.Path
	}
	if f.Op != "" {
		s += ": " + f.Op
	}
	if f.Errno != 0 {
		s += ": " + f.Errno.Error()
	}
	return s
}

// Build compiles p for this kernel (landlock.Compile) and builds its
// ruleset with the init's tj_landlock, returning what Compile says the
// ruleset enforces.
func Build(p landlock.Policy, binds ...Bind) (Ruleset, landlock.Enforced, error) {
	lp, en, err := landlock.Compile(p)
	if err != nil {
		return Ruleset{FD: -1}, en, err
	}
	rs, err := BuildPlan(lp, binds...)
	return rs, en, err
}

// mu guards the C builder, which is static.
var mu sync.Mutex

// BuildPlan builds lp's ruleset with the init's tj_landlock, after
// converting it as the supervisor does (initc's clandlock, plan.go). The
// error is a *Failure when tj_landlock fails.
func BuildPlan(lp landlock.Plan, binds ...Bind) (Ruleset, error) {
	var c cplan
	defer c.free()
	l := c.landlock(lp, binds)
	fds, err := c.sources(binds)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if err != nil {
		return Ruleset{FD: -1}, err
	}
	var cfds *C.int
	if len(fds) > 0 {
		cs := unsafe.Slice((*C.int)(c.alloc(len(fds), C.sizeof_int)), len(fds))
		for i, fd := range fds {
			cs[i] = C.int(fd)
		}
		cfds = &cs[0]
	}

	mu.Lock()
	defer mu.Unlock()
	var flags C.uint
	rec := (*C.struct_tj_record)(c.alloc(1, C.sizeof_struct_tj_record))
	fd := int(C.tjt_build(l, c.csources, cfds, C.int(len(fds)), &flags, rec))
	if fd < 0 {
		return Ruleset{FD: -1}, failure(rec)
	}
	return Ruleset{FD: fd, Flags: uint32(flags)}, nil
}

func failure(rec *C.struct_tj_record) *Failure {
	f := &Failure{
		Step:  fmt.Sprintf("step %d", rec.step),
		Errno: syscall.Errno(rec.err),
		Index: int(rec.index),
		Path:  C.GoString(&rec.path[0]),
	}
	if s := C.tjt_step_name(rec.step); s != nil {
		f.Step = C.GoString(s)
	}
	if rec.op != C.TJ_OP_NONE {
		f.Op = fmt.Sprintf("op %d", rec.op)
		if s := C.tjt_op_name(rec.op); s != nil {
			f.Op = C.GoString(s)
		}
	}
	return f
}

// cplan is a plan in C memory, freed at once after the call.
type cplan struct {
	mem      []unsafe.Pointer
	csources *C.struct_tj_source
}

func (c *cplan) alloc(n int, size C.size_t) unsafe.Pointer {
	p := C.calloc(C.size_t(max(n, 1)), size)
	if p == nil {
		panic("initlandlock: out of C memory")
	}
	c.mem = append(c.mem, p)
	return p
}

func (c *cplan) free() {
	for _, p := range c.mem {
		C.free(p)
	}
}

func (c *cplan) cstring(s string) *C.char {
	p := C.CString(s)
	c.mem = append(c.mem, unsafe.Pointer(p))
	return p
}

// landlock is clandlock's conversion: a rule at a bind's destination goes
// on the bind's source.
func (c *cplan) landlock(lp landlock.Plan, binds []Bind) *C.struct_tj_landlock {
	l := (*C.struct_tj_landlock)(c.alloc(1, C.sizeof_struct_tj_landlock))
	l.fs, l.net, l.scoped = C.uint64_t(lp.HandledFS), C.uint64_t(lp.HandledNet), C.uint64_t(lp.Scoped)
	l.flags = C.uint(lp.Flags)
	if n := len(lp.Paths); n > 0 {
		bound := map[string]int{}
		for i, b := range binds {
			bound[b.Dest] = i
		}
		ps := unsafe.Slice((*C.struct_tj_ll_path)(c.alloc(n, C.sizeof_struct_tj_ll_path)), n)
		for i, pp := range lp.Paths {
			ps[i].path = c.cstring(pp.Path)
			ps[i].mount = -1
			if m, ok := bound[pp.Path]; ok {
				ps[i].mount = C.int(m)
			}
			ps[i].dir, ps[i].file, ps[i].dev = C.uint64_t(pp.Dir), C.uint64_t(pp.File), C.uint64_t(pp.Device)
			if pp.DirOnly {
				ps[i].dir_only = 1
			}
		}
		l.paths, l.npaths = &ps[0], C.int(n)
	}
	if n := len(lp.Ports); n > 0 {
		ps := unsafe.Slice((*C.struct_tj_ll_port)(c.alloc(n, C.sizeof_struct_tj_ll_port)), n)
		for i, pr := range lp.Ports {
			ps[i].access, ps[i].port = C.uint64_t(pr.Access), C.uint64_t(pr.Port)
		}
		l.ports, l.nports = &ps[0], C.int(n)
	}
	return l
}

// sources opens the binds' sources as the supervisor does (jail/late.go):
// one tj_source per bind, with its descriptor's slot and file type.
func (c *cplan) sources(binds []Bind) ([]int, error) {
	if len(binds) == 0 {
		return nil, nil
	}
	if len(binds) > C.TJ_MAX_SOURCES {
		return nil, fmt.Errorf("%d binds, the init takes at most %d", len(binds), C.TJ_MAX_SOURCES)
	}
	cs := unsafe.Slice((*C.struct_tj_source)(c.alloc(len(binds), C.sizeof_struct_tj_source)), len(binds))
	c.csources = &cs[0]
	var fds []int
	for i, b := range binds {
		fd, err := unix.Open(b.Source, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			cs[i].slot = -1
			continue
		}
		if err != nil {
			return fds, fmt.Errorf("open bind source %s: %w", b.Source, err)
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fds, fmt.Errorf("stat bind source %s: %w", b.Source, err)
		}
		cs[i].slot = C.int(len(fds) - 1)
		cs[i]._type = C.uint(st.Mode & unix.S_IFMT)
	}
	return fds, nil
}
