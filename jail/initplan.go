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
	"path"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/landlock"
)

// The init is C (init.c), forked by the supervisor without an exec. The
// supervisor compiles everything it does into one plan in C memory before
// the fork; the child has a copy of that memory and only makes system
// calls with it. The init and stage 2 report failures as records (step,
// system call, errno, index, path) that this file turns into the run's
// error, and the command's end as a record too.

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

func (a *arena) alloc(size uintptr) unsafe.Pointer {
	n := (int(max(size, 1)) + 15) &^ 15
	if len(a.chunks) == 0 || a.used+n > len(a.chunks[len(a.chunks)-1]) {
		sz := arenaChunk << min(len(a.chunks), 8)
		for sz < n {
			sz *= 2
		}
		m, err := unix.Mmap(-1, 0, sz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			panic(fmt.Sprintf("jail: no memory for the init's plan: %v", err))
		}
		a.chunks, a.used = append(a.chunks, m), 0
	}
	p := unsafe.Pointer(&a.chunks[len(a.chunks)-1][a.used])
	a.used += n
	return p
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

func (a *arena) cstring(v string) *C.char {
	p := (*C.char)(a.alloc(uintptr(len(v)) + 1))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), len(v)), v)
	return p
}

func (a *arena) cstrings(l []string) **C.char {
	arr := unsafe.Slice((**C.char)(a.alloc(uintptr(len(l)+1)*unsafe.Sizeof((*C.char)(nil)))), len(l)+1)
	for i, v := range l {
		arr[i] = a.cstring(v)
	}
	return &arr[0]
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

// Device nodes bound from the host's /dev: init.c's tj_dev_nodes lists
// the same names.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// initPlan is the init's plan, and what the supervisor needs to turn the
// records of the init and stage 2 into errors.
type initPlan struct {
	arena
	c        *C.struct_tj_init
	late     *region // shared with the init: c.late
	base     string
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
	ip.c = (*C.struct_tj_init)(ip.alloc(unsafe.Sizeof(C.struct_tj_init{})))
	c := ip.c
	flags := unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
	if s.Net == NetNone {
		flags |= unix.CLONE_NEWNET
		c.netnone = 1
	}
	c.clone_flags = C.ulong(flags)
	c.cgroup_fd = C.int(cgroupFD)
	for i, fd := range []int{files.stdin, files.stdout, files.stderr, files.sock, files.sync} {
		c.fds[i] = C.int(fd)
	}
	// Real root may drop its supplementary groups; an unprivileged user
	// namespace denies setgroups.
	if os.Geteuid() == 0 {
		c.drop_groups = 1
	}
	base, err := pickBaseDir()
	if err != nil {
		ip.free()
		return nil, err
	}
	ip.base = base
	c.base = ip.cstring(base)

	// planMounts sorted them, and the sources the supervisor opened are
	// indexed in that order: one slice, not a second sort.
	ip.mounts = p.mounts
	if len(ip.mounts) > C.TJ_MAX_SOURCES {
		ip.free()
		return nil, fmt.Errorf("%d mounts: a jail takes at most %d", len(ip.mounts), C.TJ_MAX_SOURCES)
	}
	ms := unsafe.Slice((*C.struct_tj_mount)(ip.alloc(uintptr(len(ip.mounts))*unsafe.Sizeof(C.struct_tj_mount{}))), len(ip.mounts))
	for i, m := range ip.mounts {
		ip.cmount(&ms[i], m)
	}
	if len(ms) > 0 {
		c.mounts, c.nmounts = &ms[0], C.int(len(ms))
	}
	if err := ip.reserveLate(s.Seccomp != nil); err != nil {
		ip.free()
		return nil, err
	}

	hostname := s.Hostname
	if hostname == "" {
		hostname = "tooljail"
	}
	c.hostname = ip.cstring(hostname)
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
	}
	for i, f := range etc {
		c.etc_names[i], c.etc_data[i] = ip.cstring(f[0]), ip.cstring(f[1])
	}

	if p.landlock != nil {
		lp, en, err := landlock.Compile(*p.landlock)
		if err != nil {
			ip.free()
			return nil, fmt.Errorf("landlock: %w", err)
		}
		ip.ll, ip.enforced = &lp, &en
		c.landlock = ip.clandlock(&lp)
	}
	ip.stage2, err = prepareStage2(&ip.arena, &c.stage2, st2)
	if err != nil {
		ip.free()
		return nil, err
	}
	if ip.enforced != nil {
		ip.stage2.abi = ip.enforced.ABI
	}
	return ip, nil
}

func (ip *initPlan) cmount(cm *C.struct_tj_mount, m Mount) {
	switch m.Kind {
	case MountBind:
		cm.kind = C.TJ_MOUNT_BIND
	case MountTmpfs:
		cm.kind = C.TJ_MOUNT_TMPFS
	case MountMask:
		cm.kind = C.TJ_MOUNT_MASK
	}
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	cm.writable = b(m.Writable)
	cm.size = C.int64_t(m.Size)
	cm.src, cm.dest = ip.cstring(m.Source), ip.cstring(m.Dest)
}

func (ip *initPlan) clandlock(lp *landlock.Plan) *C.struct_tj_landlock {
	l := (*C.struct_tj_landlock)(ip.alloc(unsafe.Sizeof(C.struct_tj_landlock{})))
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
		ps := unsafe.Slice((*C.struct_tj_ll_path)(ip.alloc(uintptr(n)*unsafe.Sizeof(C.struct_tj_ll_path{}))), n)
		for i, pp := range lp.Paths {
			ps[i].path = ip.cstring(pp.Path)
			ps[i].mount = -1
			if m, ok := binds[pp.Path]; ok {
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
		ps := unsafe.Slice((*C.struct_tj_ll_port)(ip.alloc(uintptr(n)*unsafe.Sizeof(C.struct_tj_ll_port{}))), n)
		for i, pr := range lp.Ports {
			ps[i].access, ps[i].port = C.uint64_t(pr.Access), C.uint64_t(pr.Port)
		}
		l.ports, l.nports = &ps[0], C.int(n)
	}
	return l
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

// record is one packet of the init or stage 2 (struct tj_record).
type record struct {
	typ, step, op, err, index, code int
	exitCode, signal                int
	rusage                          rusage
	path                            string
}

// rusage is what the init's children (the command and every orphan the init
// reaped) used, from getrusage(RUSAGE_CHILDREN).
type rusage struct {
	UserUsec   int64
	SystemUsec int64
	MaxRSSKiB  int64
}

const recordHeader = C.sizeof_struct_tj_record - C.sizeof_char*4096

func parseRecord(b []byte) (record, bool) {
	if len(b) < int(recordHeader) {
		return record{}, false
	}
	var c C.struct_tj_record
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&c)), unsafe.Sizeof(c)), b)
	r := record{
		typ: int(c._type), step: int(c.step), op: int(c.op), err: int(c.err), index: int(c.index), code: int(c.code),
		exitCode: int(c.exit_code), signal: int(c.signal),
		rusage: rusage{UserUsec: int64(c.utime_us), SystemUsec: int64(c.stime_us), MaxRSSKiB: int64(c.maxrss_kib)},
	}
	p := b[recordHeader:]
	if i := strings.IndexByte(string(p), 0); i >= 0 {
		p = p[:i]
	}
	r.path = string(p)
	return r, true
}

// failure turns a failure record into the run's error.
func (ip *initPlan) failure(r record) *SetupError {
	errno := syscall.Errno(r.err)
	if r.typ == C.TJ_REC_STAGE2_FAIL {
		code := r.code
		if code == 0 {
			code = ExitSetup
		}
		return ip.stage2.failure(r.step, errno, r.index, code, r.op == 1)
	}
	return &SetupError{Code: ExitSetup, Err: ip.initError(r, errno)}
}

var initOps = map[int]string{
	C.TJ_OP_OPEN: "open", C.TJ_OP_STAT: "stat", C.TJ_OP_CREATE: "create", C.TJ_OP_MKDIR: "mkdir",
	C.TJ_OP_WRITE: "write", C.TJ_OP_FSOPEN: "fsopen", C.TJ_OP_FSCONFIG: "fsconfig", C.TJ_OP_FSMOUNT: "fsmount",
	C.TJ_OP_MOVE_MOUNT: "move_mount", C.TJ_OP_OPEN_TREE: "open_tree", C.TJ_OP_SETATTR: "mount_setattr",
	C.TJ_OP_STATX: "statx", C.TJ_OP_READLINK: "readlink", C.TJ_OP_SYMLINK: "symlink", C.TJ_OP_SOCKET: "socket",
	C.TJ_OP_IOCTL_GET: "get flags", C.TJ_OP_IOCTL_SET: "set flags", C.TJ_OP_CHDIR: "chdir",
	C.TJ_OP_TOO_MANY: fmt.Sprintf("more than %d tmpfs mounts", C.TJ_MAX_OWNED),
}

// initError says what failed in the init, in the words of the plan.
func (ip *initPlan) initError(r record, errno syscall.Errno) error {
	// cause is the failed call and its errno: "move_mount: operation not permitted".
	cause := error(errno)
	if op, ok := initOps[r.op]; ok {
		cause = fmt.Errorf("%s: %w", op, errno)
	}
	mount := func() Mount {
		if r.index >= 0 && r.index < len(ip.mounts) {
			return ip.mounts[r.index]
		}
		return Mount{Dest: r.path}
	}
	switch r.step {
	case C.TJ_I_FDS:
		return fmt.Errorf("set up the init's descriptors: %w", errno)
	case C.TJ_I_SETGROUPS:
		return fmt.Errorf("drop supplementary groups: %w", errno)
	case C.TJ_I_SETID:
		what := "uid"
		if r.index == 0 {
			what = "gid"
		}
		return fmt.Errorf("become %s 0 of the jail's user namespace (its host identity): %w", what, errno)
	case C.TJ_I_RECVFDS:
		return fmt.Errorf("receive the host paths' descriptors (%d so far): %w", r.index, errno)
	case C.TJ_I_PRIVATE:
		return fmt.Errorf("make mounts private: %w", errno)
	case C.TJ_I_BASE:
		if r.op == C.TJ_OP_MKDIR {
			return fmt.Errorf("mkdir %s: %w", r.path, errno)
		}
		return fmt.Errorf("mount temporary root on %s: %w", ip.base, cause)
	case C.TJ_I_PIVOT_TMP:
		return fmt.Errorf("pivot_root to temporary root: %w", cause)
	case C.TJ_I_OLDROOT:
		return fmt.Errorf("open old root: %w", errno)
	case C.TJ_I_MASKFILE:
		return fmt.Errorf("create mask file: %w", errno)
	case C.TJ_I_ROOTFS:
		return fmt.Errorf("mount jail root: %w", cause)
	case C.TJ_I_PROC, C.TJ_I_DEV, C.TJ_I_PTS, C.TJ_I_SHM:
		return fmt.Errorf("mount %s: %w", r.path, cause)
	case C.TJ_I_DEVNODE:
		return fmt.Errorf("host /dev/%s: %w (the jail needs the host's basic device nodes)", r.path, errno)
	case C.TJ_I_DEVBIND:
		return fmt.Errorf("bind /dev/%s: %w", r.path, cause)
	case C.TJ_I_DEVLINK:
		return fmt.Errorf("symlink /dev/%s: %w", r.path, errno)
	case C.TJ_I_DEVDIR:
		return fmt.Errorf("mkdir /dev/%s: %w", r.path, errno)
	case C.TJ_I_ETC:
		if r.op == C.TJ_OP_WRITE {
			return fmt.Errorf("write /etc/%s: %w", r.path, errno)
		}
		return fmt.Errorf("create /etc/%s: %w", r.path, errno)
	case C.TJ_I_DEST:
		return destError(r, errno)
	case C.TJ_I_BIND:
		m := mount()
		return fmt.Errorf("bind %s on %s: %w", m.Source, m.Dest, cause)
	case C.TJ_I_SYMLINK:
		if r.op == C.TJ_OP_READLINK {
			return fmt.Errorf("read symlink %s: %w", r.path, errno)
		}
		return fmt.Errorf("symlink %s: %w", r.path, errno)
	case C.TJ_I_TMPFS:
		return fmt.Errorf("tmpfs %s: %w", r.path, cause)
	case C.TJ_I_MASK:
		if r.op == C.TJ_OP_MISSING {
			return fmt.Errorf("mask %s: nothing is there in the jail, so there is nothing to hide; refusing to run, since an earlier run that could write the directory may have moved what the mask hides: check the host path, or remove the mask", r.path)
		}
		return fmt.Errorf("mask %s: %w", r.path, cause)
	case C.TJ_I_OVER:
		what := "a file tooljail trusts"
		if r.index >= 0 && r.index < len(ip.over) && !ip.over[r.index].ReadOnly {
			what = "a directory holding a file tooljail trusts"
		}
		switch r.op {
		case C.TJ_OP_MISSING:
			return fmt.Errorf("%s, %s, is gone from the jail's view: it was moved while the jail started", r.path, what)
		case C.TJ_OP_CHANGED:
			return fmt.Errorf("%s, %s, was replaced while the jail started", r.path, what)
		}
		return fmt.Errorf("bind %s (%s) over itself: %w", r.path, what, cause)
	case C.TJ_I_PROCRO:
		return fmt.Errorf("make /proc/%s read-only or masked: %w", r.path, cause)
	case C.TJ_I_RDONLY:
		return fmt.Errorf("make jail root read-only: %w", errno)
	case C.TJ_I_PIVOT:
		return fmt.Errorf("pivot_root into jail root: %w", cause)
	case C.TJ_I_DETACH:
		return fmt.Errorf("detach host root: %w", cause)
	case C.TJ_I_HOSTNAME:
		return fmt.Errorf("set hostname %q: %w", r.path, errno)
	case C.TJ_I_LOOPBACK:
		return fmt.Errorf("bring loopback up: %w", cause)
	case C.TJ_I_LL_CREATE:
		return fmt.Errorf("landlock: landlock create ruleset (ABI %d): %w", ip.stage2.abi, errno)
	case C.TJ_I_LL_OPEN:
		access := landlock.Access("?")
		if ip.ll != nil && r.index >= 0 && r.index < len(ip.ll.Paths) {
			access = ip.ll.Paths[r.index].Access
		}
		return fmt.Errorf("landlock: landlock rule %s (%s): %w (the jail must only pass paths it mounted)", r.path, access, cause)
	case C.TJ_I_LL_DIRONLY:
		return fmt.Errorf("landlock: landlock rule %s: access %q applies to directories only", r.path, landlock.List)
	case C.TJ_I_LL_RULE:
		return fmt.Errorf("landlock: landlock rule %s: %w", r.path, errno)
	case C.TJ_I_LL_PORT:
		port := -1
		if ip.ll != nil && r.index >= 0 && r.index < len(ip.ll.Ports) {
			port = int(ip.ll.Ports[r.index].Port)
		}
		return fmt.Errorf("landlock: landlock rule for TCP port %d: %w", port, errno)
	case C.TJ_I_STAGE2:
		return fmt.Errorf("start stage 2: %w", cause)
	case C.TJ_I_STAGE2_MAP:
		name := "?"
		if r.index >= 0 && r.index < 3 {
			name = []string{"setgroups", "uid_map", "gid_map"}[r.index]
		}
		return fmt.Errorf("stage 2 %s: %w", name, errno)
	case C.TJ_I_WAIT:
		return fmt.Errorf("wait for the command: %w", errno)
	}
	return fmt.Errorf("the jail's init failed at step %d: %w", r.step, cause)
}

func destError(r record, errno syscall.Errno) error {
	dest := r.path
	switch r.op {
	case C.TJ_OP_KIND:
		want := "a file"
		if r.index == 1 {
			want = "a directory"
		}
		return fmt.Errorf("mount destination %s: exists in the jail but is not %s like its source", dest, want)
	case C.TJ_OP_OWN:
		return fmt.Errorf("mount destination %s does not exist, and creating it would create %s on the host (inside a bind mount); create it on the host first or choose another destination",
			dest, path.Base(dest))
	case C.TJ_OP_CREATE:
		return fmt.Errorf("create mount point %s: %w", dest, errno)
	case C.TJ_OP_STATX:
		return fmt.Errorf("mount destination %s: statx: %w", dest, errno)
	}
	if errno == unix.EXDEV || errno == unix.ELOOP {
		return fmt.Errorf("mount destination %s: its path goes through a symlink that leaves the jail root; give the real path instead", dest)
	}
	return fmt.Errorf("mount destination %s: %w", dest, errno)
}
