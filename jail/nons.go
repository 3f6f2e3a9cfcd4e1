package jail

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// The mode without namespaces ("landlock-seccomp"): for hosts and
// containers that refuse user namespaces outright, a run that the Spec
// allows to go without them (AllowDegraded "namespaces") runs the command
// in the host's own filesystem view, PID space and network, confined by
//
//   - Landlock rules on host paths, and on nothing else: read+execute on
//     the system binds, read on the /etc entries and /proc, the basic
//     device nodes, read-write on the writable binds (the workdir) and on
//     a private temporary directory made for the run (mode 0700, removed
//     after it), which stands for /tmp and HOME (TMPDIR and HOME point at
//     it). With no network (NetNone) and Landlock ABI 4, no TCP bind or
//     connect at all. From ABI 6 the command cannot signal processes
//     outside the run, nor reach abstract unix sockets;
//   - the Spec's seccomp allowlist with namespace creation always denied
//     (unshare and clone with CLONE_NEW*, setns; clone3 ENOSYS), and no
//     AF_UNIX socket below Landlock ABI 9 (the host's sockets), no
//     AF_INET or AF_INET6 socket with no network (nonsSeccomp);
//   - rlimits, no_new_privs, no capabilities; a supervisor that is root
//     runs the command as the jail's unprivileged host identity
//     (hostUser), never as root;
//   - the cgroup caps where a cgroup can be made;
//   - a reaper (nons.c) that is the run's child subreaper and kills every
//     process the command leaves.
//
// Landlock is what confines the filesystem here, so the mode refuses to
// run without it even when "landlock" is allowed degraded. Binds must
// show a host path at its own path, and masks cannot hide anything below
// a Landlock rule (rules are inherited), so both refuse; so do trusted
// files inside a writable bind (they cannot be made read-only in it).

// Modes of Enforcement.Mode.
const (
	ModeNamespaces      = "namespaces"
	ModeLandlockSeccomp = "landlock-seccomp"
)

// privateTmp stands for the run's private temporary directory in the
// plan's mounts: a writable bind whose source Start makes (nons_start.go).
const privateTmp = "/tooljail-private-tmp"

// nonsPlan is what a plan without namespaces adds.
type nonsPlan struct {
	// spec is the Spec as this mode runs it: binds on host paths, the
	// private directory instead of tmpfs mounts, seccomp without
	// namespace creation.
	spec *Spec
	// tmp is the index of the private directory in plan.mounts.
	tmp int
}

// nonsDevNodes are the host device nodes the command may use: devNodes
// but /dev/tty (it has no controlling terminal); no /dev/pts or /dev/ptmx
// (the host's terminals) and no /dev/shm (shared with the host).
var nonsDevNodes = []string{"null", "zero", "full", "random", "urandom"}

// generatedEtc are the /etc files the jail writes for itself; without a
// view of its own the command reads the host's.
var generatedEtc = []string{"passwd", "group", "hosts", "hostname"}

// planNoNS plans s without namespaces on h, where none can be made.
func (s *Spec) planNoNS(h hostprobe.Host) (*plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	why := fmt.Sprintf("user namespaces are not available (%s)", h.UserNS.Reason)
	if s.Root != "" {
		return nil, fmt.Errorf("%s, and the root directory %s can only be shown in a mount namespace of the jail's own: without namespaces the command sees the host's system directories; fix: %s, or run without a root directory", why, s.Root, h.UserNS.Fix)
	}
	if s.Landlock == nil {
		return nil, fmt.Errorf("%s and this profile turns Landlock off: without namespaces Landlock is what confines the command's files, so tooljail refuses to run; enable Landlock ([landlock] enabled = true) or fix the namespaces: %s", why, h.UserNS.Fix)
	}
	if h.Landlock.ABI == 0 {
		return nil, fmt.Errorf("%s and Landlock is not available (%s): with neither, nothing would confine the command's files, so tooljail refuses to run, even with --allow-degraded landlock; fix: %s, or %s",
			why, orDefault(h.Landlock.Reason, "no Landlock"), orDefault(h.Landlock.Fix, "use a kernel with Landlock enabled"), h.UserNS.Fix)
	}
	ns, err := s.noNSSpec(h.Landlock.ABI)
	if err != nil {
		return nil, fmt.Errorf("without namespaces: %w", err)
	}
	hn := h
	hn.UserNS.Enforced = true
	p, err := ns.plan(hn)
	if err != nil {
		if strings.Contains(err.Error(), "--allow-degraded "+LayerLandlock) {
			err = fmt.Errorf("%w (without namespaces Landlock cannot be allowed degraded: it is what confines the command's files)", err)
		}
		return nil, err
	}
	if p.changes, err = changes.Decide(s.Changes, true, ""); err != nil {
		return nil, err
	}
	p.nons = &nonsPlan{spec: ns, tmp: slices.IndexFunc(p.mounts, func(m Mount) bool { return m.Source == privateTmp })}
	p.landlock = nonsLandlock(ns, p.mounts)
	p.enf.Mode = ModeLandlockSeccomp
	p.enf.Toolchains = s.Toolchains
	p.enf.Namespaces = Namespaces{}
	p.enf.Degraded = append(p.enf.Degraded, LayerNamespaces)
	p.enf.UnixSockets = nonsUnixSockets(p.enf.LandlockABI, p.compile && ns.Seccomp != nil)
	return p, nil
}

// noNSSpec is s as the mode without namespaces runs it, on a kernel with
// Landlock ABI abi, or why it cannot run so.
func (s *Spec) noNSSpec(abi int) (*Spec, error) {
	ns := *s
	ns.AllowDegraded = slices.DeleteFunc(slices.Clone(s.AllowDegraded), func(l string) bool { return l == LayerLandlock })
	var mounts, masks []Mount
	for _, m := range s.Mounts {
		switch m.Kind {
		case MountBind:
			if m.Source != m.Dest {
				return nil, fmt.Errorf("bind %s on %s: with no mount namespace a host path is seen only where it is; bind it at its own path", m.Source, m.Dest)
			}
			mounts = append(mounts, m)
		case MountTmpfs:
			if m.Dest != "/tmp" && m.Dest != s.Home {
				return nil, fmt.Errorf("tmpfs %s: with no mount namespace there is no tmpfs; the run gets one private temporary directory (TMPDIR and HOME), which stands for /tmp and %s only", m.Dest, s.Home)
			}
		case MountMask:
			masks = append(masks, m)
		}
	}
	for _, k := range masks {
		for _, m := range mounts {
			if k.Dest == m.Dest || strings.HasPrefix(k.Dest, m.Dest+"/") {
				return nil, fmt.Errorf("mask %s: with no mount namespace nothing can hide it, and the rule on %s grants it; remove the mask or the bind", k.Dest, m.Dest)
			}
		}
		// Outside every bind: no rule reaches it, it is hidden already.
	}
	for _, name := range generatedEtc {
		p := "/etc/" + name
		if !slices.ContainsFunc(mounts, func(m Mount) bool { return m.Dest == p }) {
			mounts = append(mounts, Mount{Kind: MountBind, Source: p, Dest: p, Optional: true})
		}
	}
	ns.Mounts = append(mounts, Mount{Kind: MountBind, Source: privateTmp, Dest: privateTmp, Writable: true})
	switch s.Net {
	case NetNone:
		// No network namespace: no TCP at all where Landlock can say so.
		if abi >= 4 {
			l := *s.Landlock
			l.RestrictTCP, l.BindTCP, l.ConnectTCP = true, nil, nil
			ns.Landlock = &l
		}
	case NetHost:
	default:
		return nil, fmt.Errorf("network mode %q needs a network namespace", s.Net)
	}
	if s.Seccomp != nil {
		pol := nonsSeccomp(*s.Seccomp, abi, s.Net)
		ns.Seccomp = &pol
	}
	return &ns, nil
}

// namespaceCalls are the policy entries that would let the command make
// namespaces: allowing clone or unshare by name lifts their check of the
// CLONE_NEW* flags.
var namespaceCalls = []string{"@namespaces", "clone", "unshare", "clone3", "setns"}

// nonsSeccomp is p as the mode without namespaces applies it: nothing
// that would allow namespace creation (the default allowlist denies it,
// whatever the profile allows); below Landlock ABI 9, which alone can
// keep a connect to the host's pathname sockets (a D-Bus session bus, a
// container engine's socket) inside the run's directories, no AF_UNIX
// socket at all (socketpair stays); with no network, no AF_INET or
// AF_INET6 socket (the host's network is all there is).
func nonsSeccomp(p seccomp.Policy, abi int, net NetMode) seccomp.Policy {
	out := seccomp.Policy{Deny: slices.Clone(p.Deny), DenySockets: slices.Clone(p.DenySockets)}
	for _, a := range p.Allow {
		if !slices.Contains(namespaceCalls, a) {
			out.Allow = append(out.Allow, a)
		}
	}
	add := func(f string) {
		if !slices.Contains(out.DenySockets, f) {
			out.DenySockets = append(out.DenySockets, f)
		}
	}
	if abi < 9 {
		add("unix")
	}
	if net == NetNone {
		add("inet")
	}
	return out
}

// nonsLandlock is the Landlock policy of a run without namespaces: rules
// on the host paths of the mounts (the bind sources, opened by the
// supervisor), /proc and the basic device nodes, nothing else. There is
// no rule on / or on /etc as a whole: they are the host's.
func nonsLandlock(s *Spec, mounts []Mount) *landlock.Policy {
	p := specLandlock(s)
	add := func(path string, a landlock.Access) { p.Rules = append(p.Rules, landlock.Rule{Path: path, Access: a}) }
	// The host's (or the container's) /proc: other processes are listed,
	// but Landlock keeps their memory, environment and descriptors from
	// a process of another domain (its ptrace rule).
	add("/proc", landlock.Read)
	for _, n := range nonsDevNodes {
		add("/dev/"+n, landlock.Device)
	}
	for _, m := range mounts {
		if m.Kind == MountBind {
			add(m.Dest, mountAccess(m))
		}
	}
	return p
}

// nonsUnixSockets is enforcement.unix_sockets without namespaces: from
// Landlock ABI 9 only sockets inside the run's writable directories can
// be reached; below it the filter refuses AF_UNIX sockets (filtered), or
// nothing stops a connect to any pathname socket of the host the
// command's user may write.
func nonsUnixSockets(abi int, filtered bool) string {
	switch {
	case abi >= 9:
		return "landlock"
	case filtered:
		return "seccomp: no AF_UNIX socket can be made (socketpair can); without namespaces the host's sockets would be in reach, and Landlock ABI 9 is needed to keep them out"
	}
	return "not restricted: without namespaces the command can connect to any pathname unix socket of the host its user may write (a D-Bus session bus, a container engine's socket); needs Landlock ABI 9 or the seccomp filter"
}

// nonsPaths gives the command its working directory and environment in
// the host's view: a directory on one of the Spec's tmpfs mounts (mounts)
// is in the private directory priv instead, which HOME and TMPDIR name.
func nonsPaths(priv string, mounts []Mount, dir string, env []string) (string, []string) {
	// The deepest mount holding dir decides.
	best := -1
	for i, m := range mounts {
		if (dir == m.Dest || strings.HasPrefix(dir, m.Dest+"/")) && (best < 0 || len(m.Dest) > len(mounts[best].Dest)) {
			best = i
		}
	}
	if best >= 0 && mounts[best].Kind == MountTmpfs {
		dir = path.Join(priv, strings.TrimPrefix(dir, mounts[best].Dest))
	}
	out := make([]string, 0, len(env)+2)
	for _, e := range env {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "TMPDIR=") {
			out = append(out, e)
		}
	}
	return dir, append(out, "HOME="+priv, "TMPDIR="+priv)
}

// hostFor is what s is planned against: hostprobe.Probe, and where s may run
// without namespaces and the cheap probe found them usable, whether a
// real set of them can be made (once per process), so that the mode runs
// only where they cannot.
func hostFor(s *Spec) hostprobe.Host {
	h := hostprobe.Probe()
	if h.UserNS.Enforced && s != nil && s.degradedAllowed(LayerNamespaces) {
		if why := hostprobe.NamespacesFailure(); why != "" {
			h.UserNS.Enforced = false
			h.UserNS.Reason = why
			h.UserNS.Fix = "see `tooljail check` and docs/containers.md"
		}
	}
	return h
}
