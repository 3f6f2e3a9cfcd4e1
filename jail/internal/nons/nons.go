// Package nons holds the rules of the mode without namespaces
// ("landlock-seccomp"): for hosts and
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
//     AF_INET or AF_INET6 socket with no network (Seccomp);
//   - rlimits, no_new_privs, no capabilities; a supervisor that is root
//     runs the command as the jail's unprivileged host identity
//     (hostside.HostUser), never as root;
//   - the cgroup caps where a cgroup can be made;
//   - a reaper (nonsreap.c) that is the run's child subreaper and kills every
//     process the command leaves.
//
// Landlock is what confines the filesystem here, so the mode refuses to
// run without it even when "landlock" is allowed degraded. Binds must
// show a host path at its own path, and masks cannot hide anything below
// a Landlock rule (rules are inherited), so both refuse; so do trusted
// files inside a writable bind (they cannot be made read-only in it).
//
// This package is what the mode allows and refuses, as pure functions of
// a Spec and the host's Landlock ABI, and the identity checks of a root
// supervisor; package jail plans and starts the run (nons.go,
// nons_start.go) and the reaper is jail/internal/initc/nonsreap. It
// imports jail/spec, seccomp and hostside, never jail.
package nons

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/jail/spec"
	"github.com/tooljail/tooljail/seccomp"
)

// PrivateTmp stands for the run's private temporary directory in the
// plan's mounts: a writable bind whose source Start makes (nons_start.go).
const PrivateTmp = "/tooljail-private-tmp"

// DevNodes are the host device nodes the command may use: devNodes
// but /dev/tty (it has no controlling terminal); no /dev/pts or /dev/ptmx
// (the host's terminals) and no /dev/shm (shared with the host).
var DevNodes = []string{"null", "zero", "full", "random", "urandom"}

// GeneratedEtc are the /etc files the jail writes for itself; without a
// view of its own the command reads the host's.
var GeneratedEtc = []string{"passwd", "group", "hosts", "hostname"}

// Spec is s as the mode without namespaces runs it, on a kernel with
// Landlock ABI abi, or why it cannot run so.
func Spec(s *spec.Spec, abi int) (*spec.Spec, error) {
	ns := *s
	ns.AllowDegraded = slices.DeleteFunc(slices.Clone(s.AllowDegraded), func(l string) bool { return l == spec.LayerLandlock })
	var mounts, masks []spec.Mount
	for _, m := range s.Mounts {
		switch m.Kind {
		case spec.MountBind:
			if m.Source != m.Dest {
				return nil, fmt.Errorf("bind %s on %s: with no mount namespace a host path is seen only where it is; bind it at its own path", m.Source, m.Dest)
			}
			mounts = append(mounts, m)
		case spec.MountTmpfs:
			if m.Dest != "/tmp" && m.Dest != s.Home {
				return nil, fmt.Errorf("tmpfs %s: with no mount namespace there is no tmpfs; the run gets one private temporary directory (TMPDIR and HOME), which stands for /tmp and %s only", m.Dest, s.Home)
			}
		case spec.MountMask:
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
	for _, name := range GeneratedEtc {
		p := "/etc/" + name
		if !slices.ContainsFunc(mounts, func(m spec.Mount) bool { return m.Dest == p }) {
			mounts = append(mounts, spec.Mount{Kind: spec.MountBind, Source: p, Dest: p, Optional: true})
		}
	}
	ns.Mounts = append(mounts, spec.Mount{Kind: spec.MountBind, Source: PrivateTmp, Dest: PrivateTmp, Writable: true})
	switch s.Net {
	case spec.NetNone:
		// No network namespace: no TCP at all where Landlock can say so.
		if abi >= 4 {
			l := *s.Landlock
			l.RestrictTCP, l.BindTCP, l.ConnectTCP = true, nil, nil
			ns.Landlock = &l
		}
	case spec.NetHost:
	default:
		return nil, fmt.Errorf("network mode %q needs a network namespace", s.Net)
	}
	if s.Seccomp != nil {
		pol := Seccomp(*s.Seccomp, abi, s.Net)
		ns.Seccomp = &pol
	}
	return &ns, nil
}

// namespaceCalls are the policy entries that would let the command make
// namespaces: allowing clone or unshare by name lifts their check of the
// CLONE_NEW* flags.
var namespaceCalls = []string{"@namespaces", "clone", "unshare", "clone3", "setns"}

// Seccomp is p as the mode without namespaces applies it: nothing
// that would allow namespace creation (the default allowlist denies it,
// whatever the profile allows); below Landlock ABI 9, which alone can
// keep a connect to the host's pathname sockets (a D-Bus session bus, a
// container engine's socket) inside the run's directories, no AF_UNIX
// socket at all (socketpair stays); with no network, no AF_INET or
// AF_INET6 socket (the host's network is all there is).
func Seccomp(p seccomp.Policy, abi int, net spec.NetMode) seccomp.Policy {
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
	if net == spec.NetNone {
		add("inet")
	}
	return out
}

// UnixSockets is enforcement.unix_sockets without namespaces: from
// Landlock ABI 9 only sockets inside the run's writable directories can
// be reached; below it the filter refuses AF_UNIX sockets (filtered), or
// nothing stops a connect to any pathname socket of the host the
// command's user may write.
func UnixSockets(abi int, filtered bool) string {
	switch {
	case abi >= 9:
		return "landlock"
	case filtered:
		return "seccomp: no AF_UNIX socket can be made (socketpair can); without namespaces the host's sockets would be in reach, and Landlock ABI 9 is needed to keep them out"
	}
	return "not restricted: without namespaces the command can connect to any pathname unix socket of the host its user may write (a D-Bus session bus, a container engine's socket); needs Landlock ABI 9 or the seccomp filter"
}

// Paths gives the command its working directory and environment in
// the host's view: a directory on one of the Spec's tmpfs mounts (mounts)
// is in the private directory priv instead, which HOME and TMPDIR name.
func Paths(priv string, mounts []spec.Mount, dir string, env []string) (string, []string) {
	// The deepest mount holding dir decides.
	best := -1
	for i, m := range mounts {
		if (dir == m.Dest || strings.HasPrefix(dir, m.Dest+"/")) && (best < 0 || len(m.Dest) > len(mounts[best].Dest)) {
			best = i
		}
	}
	if best >= 0 && mounts[best].Kind == spec.MountTmpfs {
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
