package jail

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/jail/internal/nons"
	"github.com/tooljail/tooljail/landlock"
)

// The mode without namespaces: its rules are package jail/internal/nons's;
// this file plans a run in it (planNoNS), Start runs it (nons_start.go).

// nonsPlan is what a plan without namespaces adds.
type nonsPlan struct {
	// spec is the Spec as this mode runs it: binds on host paths, the
	// private directory instead of tmpfs mounts, seccomp without
	// namespace creation.
	spec *Spec
	// tmp is the index of the private directory in plan.mounts.
	tmp int
}

// planNoNS plans s without namespaces on h, where none can be made.
func planNoNS(s *Spec, h hostprobe.Host) (*plan, error) {
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
	ns, err := nons.Spec(s, h.Landlock.ABI)
	if err != nil {
		return nil, fmt.Errorf("without namespaces: %w", err)
	}
	hn := h
	hn.UserNS.Enforced = true
	p, err := makePlan(ns, hn)
	if err != nil {
		if strings.Contains(err.Error(), "--allow-degraded "+LayerLandlock) {
			err = fmt.Errorf("%w (without namespaces Landlock cannot be allowed degraded: it is what confines the command's files)", err)
		}
		return nil, err
	}
	if p.changes, err = changes.Decide(s.Changes, true, ""); err != nil {
		return nil, err
	}
	p.nons = &nonsPlan{spec: ns, tmp: slices.IndexFunc(p.mounts, func(m Mount) bool { return m.Source == nons.PrivateTmp })}
	p.landlock = nonsLandlock(ns, p.mounts)
	p.enf.Mode = ModeLandlockSeccomp
	p.enf.Toolchains = s.Toolchains
	p.enf.Namespaces = Namespaces{}
	p.enf.Degraded = append(p.enf.Degraded, LayerNamespaces)
	p.enf.UnixSockets = nons.UnixSockets(p.enf.LandlockABI, p.compile && ns.Seccomp != nil)
	return p, nil
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
	for _, n := range nons.DevNodes {
		add("/dev/"+n, landlock.Device)
	}
	for _, m := range mounts {
		if m.Kind == MountBind {
			add(m.Dest, mountAccess(m))
		}
	}
	return p
}

// hostFor is what s is planned against: hostprobe.Probe, and where s may run
// without namespaces and the cheap probe found them usable, whether a
// real set of them can be made (once per process), so that the mode runs
// only where they cannot.
func hostFor(s *Spec) hostprobe.Host {
	h := hostprobe.Probe()
	if h.UserNS.Enforced && s != nil && s.DegradedAllowed(LayerNamespaces) {
		if why := hostprobe.NamespacesFailure(); why != "" {
			h.UserNS.Enforced = false
			h.UserNS.Reason = why
			h.UserNS.Fix = "see `tooljail check` and docs/containers.md"
		}
	}
	return h
}
