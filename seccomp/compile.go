package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Program is a compiled filter, loadable in the jail without libseccomp.
// It must not be modified.
type Program struct {
	Filter []byte `json:"filter"` // struct sock_filter array, native byte order
	Notify bool   `json:"notify"` // denied calls go to the supervisor
}

// Instructions is the filter's length in BPF instructions.
func (p *Program) Instructions() int { return len(p.Filter) / 8 }

// cond is one argument check; conds in one alternative are ANDed.
type cond struct {
	arg  uint
	op   libseccomp.ScmpCompareOp
	vals []uint64
}

// nsFlags are the clone flags that create namespaces. CLONE_NEWTIME is in
// the exit-signal byte of clone's flags, so only unshare checks it.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// restricted lists the allowed calls that carry argument checks, as ORed
// alternatives. A policy that allows the call by name lifts the check.
// Built on first use, not in init (see groups).
var restricted = sync.OnceValue(func() map[string][][]cond {
	return map[string][][]cond{
		"clone":   {{{0, libseccomp.CompareMaskedEqual, []uint64{nsFlags, 0}}}},
		"unshare": {{{0, libseccomp.CompareMaskedEqual, []uint64{nsFlags | unix.CLONE_NEWTIME, 0}}}},
		// Whole-register equality: a family with high bits set is denied,
		// which is stricter than the kernel's int truncation.
		"socket": {
			{{0, libseccomp.CompareEqual, []uint64{unix.AF_UNIX}}},
			{{0, libseccomp.CompareEqual, []uint64{unix.AF_INET}}},
			{{0, libseccomp.CompareEqual, []uint64{unix.AF_INET6}}},
			{{0, libseccomp.CompareEqual, []uint64{unix.AF_NETLINK}}, {2, libseccomp.CompareEqual, []uint64{unix.NETLINK_ROUTE}}},
		},
		// The default persona, the query (0xffffffff), and the uname-only
		// variants Docker allows (PER_LINUX32 changes what uname reports, not
		// the syscall ABI, which stays native). personality takes an unsigned
		// int, so only the low 32 bits count.
		"personality": {
			{{0, libseccomp.CompareMaskedEqual, []uint64{0xffffffff, 0}}},
			{{0, libseccomp.CompareMaskedEqual, []uint64{0xffffffff, 0x0008}}},
			{{0, libseccomp.CompareMaskedEqual, []uint64{0xffffffff, 0x20000}}},
			{{0, libseccomp.CompareMaskedEqual, []uint64{0xffffffff, 0x20008}}},
			{{0, libseccomp.CompareMaskedEqual, []uint64{0xffffffff, 0xffffffff}}},
		},
	}
})

// Compiler compiles policies to Programs. It looks in turn in its memory
// cache, in the filters built into the binary for the shipped profiles
// (builtin_filters.go), and in the disk cache shared across processes that
// CompileDir is given; libseccomp runs only when all of them miss. Use one
// Compiler for many runs.
type Compiler struct {
	mu    sync.Mutex
	mem   map[string]*Program
	stats CacheStats
}

// Source says where a Program came from.
type Source string

const (
	FromMemory   Source = "memory"   // this Compiler's memory cache
	FromBuiltin  Source = "builtin"  // compiled into the binary
	FromDisk     Source = "disk"     // the disk cache
	FromCompiled Source = "compiled" // libseccomp, now
)

// CacheStats counts what a Compiler did, for tests and diagnostics.
type CacheStats struct {
	MemoryHits  int
	BuiltinHits int
	DiskHits    int
	Compiles    int    // libseccomp compilations
	Last        Source // where the last program returned came from
	DiskError   error  // last reason the disk cache was not used, if any
}

// Stats returns the counters so far.
func (c *Compiler) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// defaultCompiler is the package-level CompileDir's: its memory cache
// lasts the process.
var defaultCompiler = &Compiler{}

// DefaultCacheDir is the disk cache directory the jail opens and hands to
// CompileDir: $TOOLJAIL_CACHE_DIR/seccomp, else the user cache directory
// ($XDG_CACHE_HOME or ~/.cache) + tooljail/seccomp, or "" (no disk cache)
// when neither is known.
func DefaultCacheDir() string {
	if d := os.Getenv("TOOLJAIL_CACHE_DIR"); d != "" {
		return d + "/seccomp"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return d + "/tooljail/seccomp"
	}
	return ""
}

// CompileDir builds the filter for p with the package's default Compiler
// (see Compiler.CompileDir). With notify, denied calls and foreign
// architectures go to the supervisor's Monitor; without it they fail with
// EPERM, and foreign architectures kill the process.
func CompileDir(p Policy, notify bool, dir *os.File) (*Program, error) {
	return defaultCompiler.CompileDir(p, notify, dir)
}

// Compile is CompileDir without a disk cache.
func (c *Compiler) Compile(p Policy, notify bool) (*Program, error) {
	return c.CompileDir(p, notify, nil)
}

// CompileDir builds the filter for p, or returns the cached one, with dir
// as the disk cache: a directory the caller opened (O_PATH is enough) and
// decided may be used. The owner and mode are still checked on it (see
// Stats().DiskError), and entries are opened relative to it, so no path is
// looked up again. With dir nil only the memory cache and the built-in
// filters are used: the disk is not touched at all.
//
// It looks in memory, then in the built-in filters, then on disk, and
// compiles on a miss there too.
func (c *Compiler) CompileDir(p Policy, notify bool, dir *os.File) (*Program, error) {
	// The memory cache is keyed by the policy as written, so that a hit
	// costs no group expansion.
	memKey := fmt.Sprintf("%v\x00%q\x00%q\x00%q", notify, p.Allow, p.Deny, p.DenySockets)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prog, ok := c.mem[memKey]; ok {
		c.stats.MemoryHits++
		c.stats.Last = FromMemory
		return prog, nil
	}

	key := cacheKey(p, notify)
	if prog := builtin(key, notify); prog != nil {
		c.stats.BuiltinHits++
		c.stats.Last = FromBuiltin
		c.remember(memKey, prog)
		return prog, nil
	}
	var dc *diskCache
	if dir != nil {
		var err error
		if dc, err = useDiskCache(dir); err != nil {
			c.stats.DiskError = err
		}
	}
	if dc != nil {
		if prog, err := dc.load(key); err == nil {
			c.stats.DiskHits++
			c.stats.Last = FromDisk
			c.remember(memKey, prog)
			return prog, nil
		} else if !os.IsNotExist(err) {
			c.stats.DiskError = err
		}
	}
	prog, err := compileUncached(p, notify)
	if err != nil {
		return nil, err
	}
	c.stats.Compiles++
	c.stats.Last = FromCompiled
	c.remember(memKey, prog)
	if dc != nil {
		if err := dc.store(key, prog); err != nil {
			c.stats.DiskError = err
		}
	}
	return prog, nil
}

// compileUncached runs libseccomp for p.
func compileUncached(p Policy, notify bool) (*Program, error) {
	na, err := native()
	if err != nil {
		return nil, err
	}
	r, err := resolve(p)
	if err != nil {
		return nil, err
	}
	return build(r, notify, na)
}

// maxMemoryEntries bounds the memory cache for embedders that build many
// distinct policies; when full it starts over (the disk cache remains).
const maxMemoryEntries = 64

func (c *Compiler) remember(key string, prog *Program) {
	if c.mem == nil || len(c.mem) >= maxMemoryEntries {
		c.mem = make(map[string]*Program)
	}
	c.mem[key] = prog
}

// cacheKey identifies everything that determines the compiled bytes: the
// policy as written, the tables it is resolved against (groups, argument
// checks, prologue), the architecture and the libseccomp version (whose
// syscall table and code generator differ). A policy that resolves to the
// same set under other spellings gets its own entry; that costs a compile,
// never a wrong filter.
func cacheKey(p Policy, notify bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\nnotify %v\nallow %q\ndeny %q\n", tablesID(), notify, p.Allow, p.Deny)
	if len(p.DenySockets) > 0 {
		// Only when set: the keys of every other policy stay as they were.
		fmt.Fprintf(h, "deny sockets %q\n", p.DenySockets)
	}
	return hex.EncodeToString(h.Sum(nil))
}

var tablesID = sync.OnceValue(func() string {
	// Every item is written with its length (an unambiguous encoding) and
	// without fmt: this runs once in every supervisor, before its first
	// run, and formatting the ~350 names with %q was a visible share of
	// start-up (see BENCHMARKS.md).
	h := sha256.New()
	var buf []byte
	num := func(v uint64) { buf = binary.AppendUvarint(buf, v) }
	str := func(s string) { num(uint64(len(s))); buf = append(buf, s...) }
	list := func(l []string) {
		num(uint64(len(l)))
		for _, s := range l {
			str(s)
		}
	}
	maj, mnr, mic := libseccomp.GetLibraryVersion()
	str("tooljail-seccomp tables v2")
	num(prologueVersion)
	str(runtime.GOARCH)
	num(uint64(maj))
	num(uint64(mnr))
	num(uint64(mic))
	list(defaultAllow)
	list(required)
	names := make([]string, 0, len(groups()))
	for n := range groups() {
		names = append(names, n)
	}
	sort.Strings(names)
	num(uint64(len(names)))
	for _, n := range names {
		str(n)
		list(groups()[n])
	}
	names = names[:0]
	for n := range restricted() {
		names = append(names, n)
	}
	sort.Strings(names)
	num(uint64(len(names)))
	for _, n := range names {
		str(n)
		num(uint64(len(restricted()[n])))
		for _, alt := range restricted()[n] {
			num(uint64(len(alt)))
			for _, c := range alt {
				num(uint64(c.arg))
				num(uint64(c.op))
				num(uint64(len(c.vals)))
				for _, v := range c.vals {
					num(v)
				}
			}
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
})

// libseccompCeiling is the highest native syscall number libseccomp knows.
var libseccompCeiling = sync.OnceValues(func() (uint32, error) {
	max := -1
	for nr := 0; nr < 1024; nr++ {
		if _, err := libseccomp.ScmpSyscall(nr).GetName(); err == nil {
			max = nr
		}
	}
	if max < 0 {
		return 0, fmt.Errorf("seccomp: libseccomp knows no syscall of this architecture")
	}
	return uint32(max), nil
})

// compileMu serialises libseccomp use across Compilers.
var compileMu sync.Mutex

// build compiles r with libseccomp and puts the prologue in front.
func build(r *resolved, notify bool, na nativeArch) (*Program, error) {
	compileMu.Lock()
	defer compileMu.Unlock()

	ceiling, err := libseccompCeiling()
	if err != nil {
		return nil, err
	}
	act := actionsFor(notify)
	f, err := newFilter(act)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	if err := addAllowRules(f, r); err != nil {
		return nil, err
	}
	if err := addClone3Rule(f, r.allow); err != nil {
		return nil, err
	}
	body, err := exportBPF(f)
	if err != nil {
		return nil, err
	}
	return withPrologue(body, na, ceiling, act.denyRet, notify)
}

// actions are what a filter does with a denied call and a foreign
// architecture, as libseccomp's actions and as the prologue's return.
type actions struct {
	deny, badArch libseccomp.ScmpAction
	denyRet       uint32
}

// actionsFor: with notify both go to the supervisor; without it a denied
// call fails with EPERM and a foreign architecture kills the process.
func actionsFor(notify bool) actions {
	if notify {
		return actions{libseccomp.ActNotify, libseccomp.ActNotify, unix.SECCOMP_RET_USER_NOTIF}
	}
	return actions{
		deny:    libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)),
		badArch: libseccomp.ActKillProcess,
		denyRet: uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
	}
}

// newFilter is an empty libseccomp filter with act's actions; the caller
// releases it.
func newFilter(act actions) (*libseccomp.ScmpFilter, error) {
	f, err := libseccomp.NewFilter(act.deny)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	if err := f.SetBadArchAction(act.badArch); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: set bad-arch action %v: %w (notify needs libseccomp >= 2.5 and Linux >= 5.0)", act.badArch, err)
	}
	// The binary tree keeps lookups O(log n) over ~350 rules. libseccomp
	// API < 4 lacks it; the linear filter is still correct.
	_ = f.SetOptimize(2)
	return f, nil
}

// addAllowRules adds a rule for each allowed call this libseccomp knows
// on this architecture: plain, or one per argument-check alternative.
func addAllowRules(f *libseccomp.ScmpFilter, r *resolved) error {
	for _, name := range r.allow {
		sc, err := libseccomp.GetSyscallFromName(name)
		if err != nil || sc < 0 {
			// Not in this libseccomp's table (newer than it: above the
			// ceiling, so ENOSYS) or not on this architecture.
			continue
		}
		alts, ok := argChecks(name, r)
		switch {
		case !ok:
			continue
		case alts == nil:
			if err := f.AddRule(sc, libseccomp.ActAllow); err != nil {
				return fmt.Errorf("seccomp: allow %s: %w", name, err)
			}
		default:
			if err := addConditional(f, sc, name, alts); err != nil {
				return err
			}
		}
	}
	return nil
}

// argChecks decides the rule of an allowed call: ok false for none (every
// call refused), alts nil for a plain allow, else the alternatives to
// allow. socket(2) is checked against the refused families whatever the
// policy allows.
func argChecks(name string, r *resolved) (alts [][]cond, ok bool) {
	alts, lifted := restricted()[name], r.lifted[name]
	if name == "socket" && len(r.noFamilies) > 0 {
		alts = socketAlternatives(alts, lifted, r.noFamilies)
		return alts, len(alts) > 0
	}
	if lifted {
		return nil, true
	}
	return alts, true
}

// addConditional allows sc when one of alts holds.
func addConditional(f *libseccomp.ScmpFilter, sc libseccomp.ScmpSyscall, name string, alts [][]cond) error {
	for _, alt := range alts {
		conds := make([]libseccomp.ScmpCondition, 0, len(alt))
		for _, c := range alt {
			cd, err := libseccomp.MakeCondition(c.arg, c.op, c.vals...)
			if err != nil {
				return fmt.Errorf("seccomp: condition for %s: %w", name, err)
			}
			conds = append(conds, cd)
		}
		if err := f.AddRuleConditional(sc, libseccomp.ActAllow, conds); err != nil {
			return fmt.Errorf("seccomp: allow %s with argument checks: %w", name, err)
		}
	}
	return nil
}

// addClone3Rule makes clone3 fail with ENOSYS unless the policy allows
// it: not a violation, glibc tries clone3 first and falls back to clone,
// whose flags the filter can read.
func addClone3Rule(f *libseccomp.ScmpFilter, allow []string) error {
	if contains(allow, "clone3") {
		return nil
	}
	if sc, err := libseccomp.GetSyscallFromName("clone3"); err == nil && sc >= 0 {
		if err := f.AddRule(sc, libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
			return fmt.Errorf("seccomp: clone3 ENOSYS rule: %w", err)
		}
	}
	return nil
}

// withPrologue puts the prologue (architecture, ceiling, the checks
// libseccomp cannot express) before libseccomp's body, within the
// kernel's limit on a filter's length.
func withPrologue(body []unix.SockFilter, na nativeArch, ceiling, denyRet uint32, notify bool) (*Program, error) {
	nrs, err := prologueNumbers()
	if err != nil {
		return nil, err
	}
	pro, err := prologue(prologueParams{arch: na.audit, ceiling: ceiling, nrs: nrs, denyRet: denyRet})
	if err != nil {
		return nil, err
	}
	insns := append(pro, body...)
	if len(insns) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: filter has %d instructions, the kernel accepts at most %d; allow fewer argument-checked calls", len(insns), unix.BPF_MAXINSNS)
	}
	return &Program{Filter: encode(insns), Notify: notify}, nil
}

// socketAlternatives are socket(2)'s argument checks with the families
// no refused: the default ones without those families, or, where the
// policy lifted the check, any family but those: each other family by
// name, and any number past the kernel's last (which it refuses itself).
// libseccomp takes one check per argument in a rule, so "none of these"
// is one "not equal" check only while there is one.
func socketAlternatives(alts [][]cond, lifted bool, no []uint64) [][]cond {
	if lifted && len(no) == 1 {
		return [][]cond{{{0, libseccomp.CompareNotEqual, []uint64{no[0]}}}}
	}
	if lifted {
		var each [][]cond
		for f := uint64(0); f < unix.AF_MAX; f++ {
			if !slices.Contains(no, f) {
				each = append(each, []cond{{0, libseccomp.CompareEqual, []uint64{f}}})
			}
		}
		return append(each, []cond{{0, libseccomp.CompareGreaterEqual, []uint64{unix.AF_MAX}}})
	}
	var out [][]cond
	for _, alt := range alts {
		if alt[0].arg == 0 && alt[0].op == libseccomp.CompareEqual && slices.Contains(no, alt[0].vals[0]) {
			continue
		}
		out = append(out, alt)
	}
	return out
}

// prologueNumbers are the native numbers of the calls the prologue checks
// that exist on this architecture (arm64 has no open, chmod, mkdir...).
func prologueNumbers() (map[string]uint32, error) {
	nrs := make(map[string]uint32)
	for _, name := range prologueCalls() {
		if sc, err := libseccomp.GetSyscallFromName(name); err == nil && sc >= 0 {
			nrs[name] = uint32(sc)
		}
	}
	if _, ok := nrs["ioctl"]; !ok {
		return nil, errors.New("seccomp: libseccomp does not know ioctl on this architecture")
	}
	if _, ok := nrs["socket"]; !ok {
		return nil, errors.New("seccomp: libseccomp does not know socket on this architecture")
	}
	return nrs, nil
}

// exportBPF gets libseccomp's program through a memfd: ExportBPFMem needs
// libseccomp 2.6, and distributions ship 2.5.
func exportBPF(f *libseccomp.ScmpFilter) ([]unix.SockFilter, error) {
	fd, err := unix.MemfdCreate("tooljail-seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd for the filter: %w", err)
	}
	mf := os.NewFile(uintptr(fd), "tooljail-seccomp-bpf")
	defer mf.Close()
	if err := f.ExportBPF(mf); err != nil {
		return nil, fmt.Errorf("seccomp: export filter: %w", err)
	}
	if _, err := mf.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: read filter: %w", err)
	}
	b, err := io.ReadAll(mf)
	if err != nil {
		return nil, fmt.Errorf("seccomp: read filter: %w", err)
	}
	return decode(b)
}

func contains(sorted []string, s string) bool {
	i := sort.SearchStrings(sorted, s)
	return i < len(sorted) && sorted[i] == s
}
