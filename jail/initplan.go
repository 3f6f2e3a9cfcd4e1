package jail

/*
#include <stdlib.h>
#include "init.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/landlock"
)

// The init is C (init.c and the init_*.c files), forked by the supervisor
// without an exec. The supervisor compiles everything it does into one
// plan in C memory before the fork; the child has a copy of that memory
// and only makes system calls with it. The init and stage 2 report
// failures as records that failure.go turns into the run's error, and the
// command's end as a record too.

// arena is memory for a plan outside the Go heap and malloc's arenas:
// mappings of its own, which the fork keeps when it leaves the rest of the
// supervisor's memory out of the init (tj_init_start). The init reads its
// copy after the fork, and the supervisor unmaps the original once the
// init is started.
type arena struct {
	chunks [][]byte
	used   int // bytes taken in the last chunk
}

// arenaChunk is the first chunk's size: the default profile's plan takes
// under 10 KiB. Later chunks double, so a plan needs few.
const arenaChunk = 64 << 10

func (a *arena) alloc(size uintptr) (unsafe.Pointer, error) {
	n := (int(max(size, 1)) + 15) &^ 15
	if len(a.chunks) == 0 || a.used+n > len(a.chunks[len(a.chunks)-1]) {
		sz := arenaChunk << min(len(a.chunks), 8)
		for sz < n {
			sz *= 2
		}
		m, err := unix.Mmap(-1, 0, sz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, fmt.Errorf("memory for the jail's plan (%d bytes): %w", sz, err)
		}
		a.chunks, a.used = append(a.chunks, m), 0
	}
	p := unsafe.Pointer(&a.chunks[len(a.chunks)-1][a.used])
	a.used += n
	return p, nil
}

// allocN is room for n values of T in a, as a slice.
func allocN[T any](a *arena, n int) ([]T, error) {
	var v T
	p, err := a.alloc(uintptr(n) * unsafe.Sizeof(v))
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(p), n), nil
}

// keep tells the fork which mappings hold the plan.
func (a *arena) keep(c *C.struct_tj_init) {
	if len(a.chunks) > C.TJ_KEEP_MAX {
		c.nkeep = 0 // the fork keeps everything
		return
	}
	for i, m := range a.chunks {
		lo := uintptr(unsafe.Pointer(&m[0]))
		c.keep_lo[i], c.keep_hi[i] = C.uint64_t(lo), C.uint64_t(lo+uintptr(len(m)))
	}
	c.nkeep = C.int(len(a.chunks))
}

func (a *arena) cstring(v string) (*C.char, error) {
	p, err := allocN[byte](a, len(v)+1)
	if err != nil {
		return nil, err
	}
	copy(p, v)
	return (*C.char)(unsafe.Pointer(&p[0])), nil
}

// cstrings is a NULL-terminated array of l's strings.
func (a *arena) cstrings(l []string) (**C.char, error) {
	arr, err := allocN[*C.char](a, len(l)+1)
	if err != nil {
		return nil, err
	}
	for i, v := range l {
		if arr[i], err = a.cstring(v); err != nil {
			return nil, err
		}
	}
	return &arr[0], nil
}

func (a *arena) free() {
	for _, m := range a.chunks {
		unix.Munmap(m)
	}
	a.chunks, a.used = nil, 0
}

// region is memory the supervisor shares with the init (MAP_SHARED): the
// late part of the plan, which it fills in after the fork and before the
// sync byte. Its size is fixed before the fork, so nothing may be
// allocated in it that was not reserved then.
type region struct {
	mem  []byte
	used int
}

func newRegion(size int) (*region, error) {
	size = (size + 4095) &^ 4095
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("memory shared with the jail's init: %w", err)
	}
	return &region{mem: m}, nil
}

var errRegionFull = errors.New("the run's plan does not fit the memory reserved for it")

func (r *region) alloc(size uintptr) (unsafe.Pointer, error) {
	n := (int(max(size, 1)) + 15) &^ 15
	if r.used+n > len(r.mem) {
		return nil, errRegionFull
	}
	p := unsafe.Pointer(&r.mem[r.used])
	r.used += n
	return p, nil
}

func (r *region) cstring(v string) (*C.char, error) {
	p, err := r.alloc(uintptr(len(v)) + 1)
	if err != nil {
		return nil, err
	}
	copy(unsafe.Slice((*byte)(p), len(v)), v)
	return (*C.char)(p), nil
}

func (r *region) free() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// maxOver bounds the trusted files and directories bound over themselves
// in one run, and maxOverPaths the bytes of their paths.
const (
	maxOver      = 256
	maxOverPaths = 128 << 10
)

// devNodes are the device nodes bound from the host's /dev, the one list:
// the init gets them in its plan (tj_init.dev_nodes), Landlock's rules
// name them (landlockPolicy).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// initPlan is the init's plan, and what the supervisor needs to turn the
// records of the init and stage 2 into errors.
type initPlan struct {
	arena
	c        *C.struct_tj_init
	late     *region // shared with the init: c.late
	mounts   []Mount // in the order of c.mounts
	over     []overBind
	ll       *landlock.Plan
	enforced *landlock.Enforced // what Landlock enforces, for the report
	stage2   *stage2
}

// free releases the C plan; the init has its own copy once forked, and
// its own mapping of the late part.
func (ip *initPlan) free() {
	ip.arena.free()
	ip.late.free()
	ip.c = nil
}

// initFiles are the descriptors the init takes as 0 to 4.
type initFiles struct {
	stdin, stdout, stderr, sock, sync int
}

// newInitPlan compiles the run into the init's plan. Errors are setup
// errors (exit 125).
func newInitPlan(s *Spec, p *plan, files initFiles, cgroupFD int, st2 *stage2Config) (*initPlan, error) {
	ip := &initPlan{}
	if err := ip.compile(s, p, files, cgroupFD, st2); err != nil {
		ip.free()
		return nil, err
	}
	return ip, nil
}

func (ip *initPlan) compile(s *Spec, p *plan, files initFiles, cgroupFD int, st2 *stage2Config) error {
	cs, err := allocN[C.struct_tj_init](&ip.arena, 1)
	if err != nil {
		return err
	}
	c := &cs[0]
	ip.c = c
	setClone(c, s.Net, p.root, files, cgroupFD, st2.Session)
	base, err := pickBaseDir()
	if err != nil {
		return err
	}
	if c.base, err = ip.cstring(base); err != nil {
		return err
	}
	if err := ip.compileMounts(c, s, p); err != nil {
		return err
	}
	if err := ip.compileEtc(c, s); err != nil {
		return err
	}
	if err := ip.compileLandlock(c, p); err != nil {
		return err
	}
	if ip.stage2, err = prepareStage2(&ip.arena, &c.stage2, st2); err != nil {
		return err
	}
	if ip.enforced != nil {
		ip.stage2.abi = ip.enforced.ABI
	}
	return nil
}

// setClone sets how the init is cloned (its namespaces, its cgroup), the
// descriptors it takes and what it may do as root.
func setClone(c *C.struct_tj_init, net NetMode, root bool, files initFiles, cgroupFD int, session bool) {
	flags := unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
	if net != NetHost {
		flags |= unix.CLONE_NEWNET
		c.netnone = 1
	}
	if net == NetAllow {
		c.netallow = 1
		for i, port := range []int{ProxyHTTPPort, ProxySOCKS5Port, DNSPort} {
			c.net_ports[i] = C.int(port)
		}
	}
	c.clone_flags = C.ulong(flags)
	c.cgroup_fd = C.int(cgroupFD)
	for i, fd := range []int{files.stdin, files.stdout, files.stderr, files.sock, files.sync} {
		c.fds[i] = C.int(fd)
	}
	// Real root may drop its supplementary groups; an unprivileged user
	// namespace denies setgroups.
	if root {
		c.drop_groups = 1
	}
	if session {
		c.session = 1
	}
}

// compileMounts compiles the mounts in the plan's order, reserves the
// late part and names the device nodes.
func (ip *initPlan) compileMounts(c *C.struct_tj_init, s *Spec, p *plan) error {
	// planMounts sorted them, and the sources the supervisor opened are
	// indexed in that order: one slice, not a second sort.
	ip.mounts = p.mounts
	if len(ip.mounts) > C.TJ_MAX_SOURCES {
		return fmt.Errorf("%d mounts: a jail takes at most %d", len(ip.mounts), C.TJ_MAX_SOURCES)
	}
	ms, err := allocN[C.struct_tj_mount](&ip.arena, len(ip.mounts))
	if err != nil {
		return err
	}
	for i, m := range ip.mounts {
		if err := ip.cmount(&ms[i], m); err != nil {
			return err
		}
	}
	if len(ms) > 0 {
		c.mounts, c.nmounts = &ms[0], C.int(len(ms))
	}
	if err := ip.reserveLate(s.Seccomp != nil); err != nil {
		return err
	}
	nodes := make([]string, len(devNodes))
	for i, n := range devNodes {
		nodes[i] = "/dev/" + n
	}
	if c.dev_nodes, err = ip.cstrings(nodes); err != nil {
		return err
	}
	c.ndev_nodes = C.int(len(nodes))
	return nil
}

// compileEtc compiles the host name and the /etc files the jail writes
// for itself.
func (ip *initPlan) compileEtc(c *C.struct_tj_init, s *Spec) error {
	var err error
	hostname := s.Hostname
	if hostname == "" {
		hostname = "tooljail"
	}
	if c.hostname, err = ip.cstring(hostname); err != nil {
		return err
	}
	home := s.Home
	if home == "" {
		home = "/"
	}
	etc := [C.TJ_ETC_FILES][2]string{
		{"passwd", fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			JailUser, JailUID, JailGID, JailUser, home)},
		{"group", fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", JailUser, JailGID)},
		{"hostname", hostname + "\n"},
		{"hosts", fmt.Sprintf("127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", hostname)},
		{}, // resolv.conf, in the allow mode
	}
	if s.Net == NetAllow {
		etc[4] = [2]string{"resolv.conf", allowResolvConf}
	}
	for i, f := range etc {
		if f[0] == "" {
			continue // the init skips a NULL name
		}
		if c.etc_names[i], err = ip.cstring(f[0]); err != nil {
			return err
		}
		if c.etc_data[i], err = ip.cstring(f[1]); err != nil {
			return err
		}
	}
	return nil
}

// compileLandlock compiles the plan's Landlock policy, when it has one.
func (ip *initPlan) compileLandlock(c *C.struct_tj_init, p *plan) error {
	if p.landlock != nil {
		lp, en, err := landlock.Compile(*p.landlock)
		if err != nil {
			return err // each of Compile's errors begins with "landlock"
		}
		ip.ll, ip.enforced = &lp, &en
		if c.landlock, err = ip.clandlock(&lp); err != nil {
			return err
		}
	}
	return nil
}

func (ip *initPlan) cmount(cm *C.struct_tj_mount, m Mount) error {
	switch m.Kind {
	case MountBind:
		cm.kind = C.TJ_MOUNT_BIND
	case MountTmpfs:
		cm.kind = C.TJ_MOUNT_TMPFS
	case MountMask:
		cm.kind = C.TJ_MOUNT_MASK
	}
	cm.writable = cbool(m.Writable)
	cm.size = C.int64_t(m.Size)
	var err error
	if cm.src, err = ip.cstring(m.Source); err != nil {
		return err
	}
	cm.dest, err = ip.cstring(m.Dest)
	return err
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

func (ip *initPlan) clandlock(lp *landlock.Plan) (*C.struct_tj_landlock, error) {
	ls, err := allocN[C.struct_tj_landlock](&ip.arena, 1)
	if err != nil {
		return nil, err
	}
	l := &ls[0]
	l.fs, l.net, l.scoped = C.uint64_t(lp.HandledFS), C.uint64_t(lp.HandledNet), C.uint64_t(lp.Scoped)
	l.flags = C.uint(lp.Flags)
	if n := len(lp.Paths); n > 0 {
		// A rule at a bind's destination goes on the bind's source.
		binds := map[string]int{}
		for i, m := range ip.mounts {
			if m.Kind == MountBind {
				binds[m.Dest] = i
			}
		}
		ps, err := allocN[C.struct_tj_ll_path](&ip.arena, n)
		if err != nil {
			return nil, err
		}
		for i, pp := range lp.Paths {
			if ps[i].path, err = ip.cstring(pp.Path); err != nil {
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
		ps, err := allocN[C.struct_tj_ll_port](&ip.arena, n)
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

// forkInit forks the init with the plan; the calling thread must be
// locked (the init's parent death signal is tied to it).
func (ip *initPlan) forkInit() (*initProc, error) {
	ip.keep(ip.c)
	var pidfd C.int
	pid := int(C.tj_init_start(ip.c, &pidfd))
	if pid < 0 {
		return nil, syscall.Errno(-pid)
	}
	return newInitProc(pid, int(pidfd)), nil
}

// pickBaseDir finds a directory to mount the temporary root on. It is only
// covered inside the jail's private mount namespace.
func pickBaseDir() (string, error) {
	for _, d := range []string{"/tmp", "/mnt", "/run", "/var/tmp"} {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("no directory to build the jail on: the host has none of /tmp, /mnt, /run, /var/tmp")
}

// sortMounts orders mounts so that a mount never hides one made before it:
// by depth of the destination (stable, so equal depths keep their order),
// masks after everything else.
func sortMounts(ms []Mount) []Mount {
	out := append([]Mount(nil), ms...)
	depth := func(p string) int { return strings.Count(p, "/") }
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := out[i].Kind == MountMask, out[j].Kind == MountMask
		if mi != mj {
			return !mi
		}
		return depth(out[i].Dest) < depth(out[j].Dest)
	})
	return out
}
