package jail

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// plan is a Spec checked against this host: the mounts that exist, and for
// each layer whether it is applied. A layer that was asked for and cannot be
// enforced fails the run unless the Spec allows it degraded.
type plan struct {
	mounts    []Mount          // in the order they are made (sortMounts)
	host      []hostside.Mount // mounts as the host side sees them, same order
	enf       Enforcement
	landlock  *landlock.Policy
	notify    bool
	compile   bool // a seccomp filter is to be compiled (compileSeccomp)
	root      bool // the supervisor is real root (privileged)
	resources cgroup.Resources
	// stage2 is what stage 2 applies before execve; launch adds what only
	// the running supervisor knows (WaitAck, NoHugePages).
	stage2 stage2Config
	// nons is the run without namespaces (nons.go), or nil.
	nons *nonsPlan
	// changes is what the run records of its writes (changes.go).
	changes changes.Plan
}

// compileSeccomp compiles the seccomp filter the plan calls for, or takes
// it from the filters built into the binary, the memory cache or the disk
// cache in dir (nil: no disk). Start decides on dir once it knows whether
// the cache lies inside a writable bind of the run.
func (p *plan) compileSeccomp(s *Spec, dir *os.File) (*seccomp.Program, error) {
	if !p.compile || s.Seccomp == nil {
		return nil, nil
	}
	prog, err := seccomp.CompileDir(*s.Seccomp, p.notify, dir)
	if err != nil {
		return nil, fmt.Errorf("seccomp policy: %w", err)
	}
	return prog, nil
}

// needsDiskCache says whether the filter may have to be compiled: it is
// not one of those built into the binary.
func (p *plan) needsDiskCache(s *Spec) bool {
	return p.compile && s.Seccomp != nil && seccomp.Builtin(*s.Seccomp, p.notify) == nil
}

// Preflight says what a run of s would enforce on this host, or why it
// cannot run.
func Preflight(s *Spec) (Enforcement, error) {
	p, err := makePlan(s, hostFor(s))
	if err != nil {
		return Enforcement{}, err
	}
	return p.enf, nil
}

// plan checks s against h, without touching a host path (Start opens them
// once, when it runs). A seccomp policy that names syscalls is checked
// against libseccomp's table here.
func makePlan(s *Spec, h hostprobe.Host) (*plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !h.UserNS.Enforced {
		if s.DegradedAllowed(LayerNamespaces) {
			return planNoNS(s, h)
		}
		return nil, fmt.Errorf("user namespaces are not available: %s; fix: %s; or run without namespaces, confined by Landlock and seccomp alone: --allow-degraded namespaces (docs/containers.md)", h.UserNS.Reason, h.UserNS.Fix)
	}
	p := emptyPlan(s)
	if s.Changes.Overlay() {
		// Only a run that records asks the kernel's version.
		cp, err := changes.Decide(s.Changes, false, hostprobe.OverlayFailure())
		if err != nil {
			return nil, err
		}
		cp.Binds = changes.Binds(p.host)
		p.changes = cp
	}
	d := &degrader{s: s, enf: &p.enf}
	p.planLandlock(s, h.Landlock, d)
	p.enf.UnixSockets = unixSockets(p.enf.LandlockABI, p.mounts)
	if s.Net == NetAllow {
		p.enf.Network = allowEnforcement(p.landlock, p.enf.LandlockABI)
	}
	if err := p.planSeccomp(s, h.Seccomp, d); err != nil {
		return nil, err
	}
	p.planCaps(s, h.Cgroup, d)
	if len(d.missing) > 0 {
		return nil, fmt.Errorf("cannot enforce on this host: %s", strings.Join(d.missing, "; "))
	}
	return p, nil
}

// newPlan is the plan of s before the host is asked: every namespace,
// no layer yet, the mounts in their order and stage 2's settings.
func emptyPlan(s *Spec) *plan {
	mounts := planMounts(s)
	return &plan{
		enf: Enforcement{
			Mode:       ModeNamespaces,
			Namespaces: Namespaces{User: true, Mount: true, PID: true, Net: s.Net != NetHost, IPC: true, UTS: true, Cgroup: true},
			Seccomp:    "none",
			Cgroup:     string(cgroup.ModeNone),
			NoNewPrivs: true,
			Degraded:   []string{},
			Toolchains: s.Toolchains,
		},
		mounts: mounts,
		host:   hostMounts(mounts),
		root:   hostprobe.Privileged(),
		stage2: stage2Config{
			Args:    s.Args,
			Env:     commandEnv(s),
			Dir:     s.Dir,
			NoFile:  s.Limits.NoFile,
			FSize:   s.Limits.FSize,
			CPUTime: int64((s.Limits.CPUTime + time.Second - 1) / time.Second), // RLIMIT_CPU counts whole seconds
		},
	}
}

// degrader sorts the layers a run cannot have on this host: allowed
// degraded (listed in the enforcement) or missing (the run fails closed,
// each with its fix).
type degrader struct {
	s       *Spec
	enf     *Enforcement
	missing []string
}

func (d *degrader) degrade(layer, why, fix string) {
	if d.s.DegradedAllowed(layer) {
		d.enf.Degraded = append(d.enf.Degraded, layer)
		return
	}
	d.missing = append(d.missing, fmt.Sprintf("%s: %s (fix: %s, or allow it with --allow-degraded %s)", layer, why, fix, layer))
}

// planLandlock plans s's Landlock policy on a kernel with ll.
func (p *plan) planLandlock(s *Spec, ll landlock.Support, d *degrader) {
	if s.Landlock == nil {
		return
	}
	abi := ll.ABI
	switch {
	case abi == 0:
		d.degrade(LayerLandlock, orDefault(ll.Reason, "Landlock is not available"), orDefault(ll.Fix, "use a kernel with Landlock enabled"))
	case abi < s.Landlock.MinABI:
		d.degrade(LayerLandlock, fmt.Sprintf("the profile needs Landlock ABI %d and this kernel has %d", s.Landlock.MinABI, abi), "use a newer kernel or lower landlock.min_abi")
	case s.Landlock.RestrictTCP && abi < 4:
		// Without ABI 4 the domain cannot handle TCP at all: running
		// would claim port rules nobody enforces.
		d.degrade(LayerLandlock, fmt.Sprintf("TCP port rules (landlock.restrict_tcp) need Landlock ABI 4 and this kernel has %d", abi), "use Linux 6.7 or newer, or set landlock.restrict_tcp = false")
	default:
		p.landlock = landlockPolicy(s, p.mounts)
		p.enf.LandlockABI = abi
	}
}

// planSeccomp plans s's seccomp filter with sc: notify, errno or none.
// A policy naming a system call libseccomp does not know fails the run.
func (p *plan) planSeccomp(s *Spec, sc seccomp.Support, d *degrader) error {
	if s.Seccomp == nil {
		return nil
	}
	switch {
	case !sc.Filter:
		d.degrade(LayerSeccomp, orDefault(sc.Reason, "seccomp filters are not available"), orDefault(sc.Fix, "use a kernel with seccomp filters"))
	case !sc.Notify:
		d.degrade(LayerSeccompNotify, orDefault(sc.Reason, "seccomp user notification is not available, denied syscalls cannot be named"), orDefault(sc.Fix, "use Linux 5.7+ and libseccomp 2.5+"))
		p.enf.Seccomp = "errno"
	default:
		p.notify = true
		p.enf.Seccomp = "notify"
	}
	p.compile = sc.Filter
	if p.compile && len(s.Seccomp.Allow)+len(s.Seccomp.Deny) > 0 {
		// A name the policy gets wrong fails the run here, before
		// Start builds anything; the default policy names none.
		if err := seccomp.Validate(*s.Seccomp); err != nil {
			return fmt.Errorf("seccomp policy: %w", err)
		}
	}
	if !sc.Filter {
		p.enf.Seccomp = "none"
	}
	return nil
}

// planCaps plans s's cgroup caps with the controllers cg can write: a
// cap that cannot be set is degraded where allowed; the others are
// missing together, with one fix.
func (p *plan) planCaps(s *Spec, cg cgroup.Support, d *degrader) {
	caps := map[string]bool{}
	want := map[string]bool{LayerMemory: s.Limits.Memory > 0, LayerCPU: s.Limits.CPUs > 0, LayerPids: s.Limits.Pids > 0}
	var refused []string // caps that cannot be set and are not allowed degraded
	for _, c := range []string{LayerMemory, LayerCPU, LayerPids} {
		if !want[c] {
			continue
		}
		caps[c] = cg.Controllers[c]
		if caps[c] {
			continue
		}
		if s.DegradedAllowed(c) {
			p.enf.Degraded = append(p.enf.Degraded, c)
		} else {
			refused = append(refused, c)
		}
	}
	if len(refused) > 0 {
		why := orDefault(cg.Reason, fmt.Sprintf("the cgroup controllers cannot be written here (cgroup %s)", cg.Mode))
		fix := orDefault(cg.Fix, "run as root or in a delegated cgroup v2 subtree")
		d.missing = append(d.missing, fmt.Sprintf("cgroup caps %s: %s (fix: %s; or allow them with --allow-degraded cgroup)",
			strings.Join(refused, ", "), why, fix))
	}
	if len(caps) > 0 {
		p.enf.Caps = caps
	}
	if caps[LayerMemory] {
		p.resources.Memory = s.Limits.Memory
	}
	if caps[LayerCPU] {
		p.resources.CPUs = s.Limits.CPUs
	}
	if caps[LayerPids] {
		p.resources.Pids = s.Limits.Pids
	}
}

// planMounts is the Spec's mounts in the order they are made, with the
// host's resolv.conf when the network is shared, and without masks below
// another mask (the outer one hides them already: the inner path is not
// there to mask).
func planMounts(s *Spec) []Mount {
	ms := append([]Mount(nil), s.Mounts...)
	if s.Net == NetHost && !slices.ContainsFunc(ms, func(m Mount) bool { return m.Dest == resolvConf }) {
		ms = append(ms, Mount{Kind: MountBind, Source: resolvConf, Dest: resolvConf, Optional: true})
	}
	var masks []string
	out := ms[:0]
	for _, m := range sortMounts(ms) {
		if m.Kind == MountMask {
			if slices.ContainsFunc(masks, func(d string) bool { return strings.HasPrefix(m.Dest, d+"/") }) {
				continue
			}
			masks = append(masks, m.Dest)
		}
		out = append(out, m)
	}
	return out
}

const resolvConf = "/etc/resolv.conf"

// unixSockets says what stops the command from connecting to a pathname
// unix socket of the host inside a bind (enforcement.unix_sockets). A
// read-only mount does not: connect(2) needs no write access to the file.
// Landlock ABI 9 handles it (resolve_unix, which only ReadWrite rules
// grant); below that nothing in the jail can, short of checking every
// connect and sendmsg in the supervisor, which the seccomp filter cannot
// tell apart from inet ones. Even then a read-only bind inside a writable
// mount is not covered: Landlock rules apply to everything beneath their
// path, across mount points, so the writable mount's rule grants it.
func unixSockets(landlockABI int, mounts []Mount) string {
	if landlockABI < 9 {
		return "not restricted: pathname sockets inside binds can be connected (needs Landlock ABI 9; bind no directory that holds a host service's socket)"
	}
	if ro, rw, ok := roBindInWritable(mounts); ok {
		return fmt.Sprintf("not restricted in %s: it is a read-only bind inside the writable %s, whose Landlock rule reaches it (bind it elsewhere, outside writable mounts)", ro, rw)
	}
	return "landlock"
}

// roBindInWritable finds a read-only bind below (or on) a writable mount.
func roBindInWritable(mounts []Mount) (ro, rw string, ok bool) {
	for _, m := range mounts {
		if m.Kind != MountBind || m.Writable {
			continue
		}
		for _, w := range mounts {
			if w.Writable && w.Kind != MountMask && (m.Dest == w.Dest || strings.HasPrefix(m.Dest, w.Dest+"/")) {
				return m.Dest, w.Dest, true
			}
		}
	}
	return "", "", false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// specLandlock is a Landlock policy with the Spec's ABI floor and TCP
// rules and no path rule yet: both modes add their own.
func specLandlock(s *Spec) *landlock.Policy {
	return &landlock.Policy{
		MinABI:      s.Landlock.MinABI,
		RestrictTCP: s.Landlock.RestrictTCP,
		BindTCP:     s.Landlock.BindTCP,
		ConnectTCP:  s.Landlock.ConnectTCP,
	}
}

// landlockPolicy mirrors the mounts: read+exec on system directories, read
// on read-only binds and /etc, read-write on writable binds and tmpfs, device
// access on the jail's device nodes.
func landlockPolicy(s *Spec, mounts []Mount) *landlock.Policy {
	p := specLandlock(s)
	add := func(path string, a landlock.Access) { p.Rules = append(p.Rules, landlock.Rule{Path: path, Access: a}) }
	// Listing directories is harmless (the view holds only what was
	// mounted) and tools expect `ls /` to work.
	add("/", landlock.List)
	add("/proc", landlock.Read)
	add("/etc", landlock.Read)
	for _, n := range devNodes {
		add("/dev/"+n, landlock.Device)
	}
	add("/dev/pts", landlock.Device)
	add("/dev/ptmx", landlock.Device)
	add("/dev/shm", landlock.ReadWrite)
	for _, m := range mounts {
		if m.Kind != MountMask {
			add(m.Dest, mountAccess(m))
		}
	}
	return p
}

// mountAccess is what Landlock allows beneath a mount of the Spec: what
// the mount itself allows.
func mountAccess(m Mount) landlock.Access {
	switch {
	case m.Writable:
		return landlock.ReadWrite
	case m.Exec:
		return landlock.ReadExec
	default:
		return landlock.Read
	}
}

// mountKinds are a Mount's kind as the host side and the init name it.
var mountKinds = map[MountKind]struct {
	host hostside.Kind
	init initc.MountKind
}{
	MountBind:  {hostside.Bind, initc.Bind},
	MountTmpfs: {hostside.Tmpfs, initc.Tmpfs},
	MountMask:  {hostside.Mask, initc.Mask},
}

// hostMounts are mounts as the host side (package hostside) sees them.
func hostMounts(ms []Mount) []hostside.Mount {
	out := make([]hostside.Mount, len(ms))
	for i, m := range ms {
		out[i] = hostside.Mount{Kind: mountKinds[m.Kind].host, Source: m.Source, Dest: m.Dest, Writable: m.Writable,
			Optional: m.Optional, KeepSymlink: m.KeepSymlink, InRoot: m.InRoot, Cache: m.Cache}
	}
	return out
}
