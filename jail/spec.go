// Package jail runs one command in a fresh set of namespaces with a minimal
// filesystem view, Landlock rules, a seccomp allowlist, rlimits and a cgroup,
// and reports what happened. Its API follows os/exec: build a Cmd from a Spec,
// set Stdin/Stdout/Stderr, then Run (or Start and Wait) and read the Result.
//
// The package turns a Spec into kernel operations; it makes no policy
// decisions of its own. Policy (which paths, which limits) lives in profiles.
//
// A program that uses this package must call jail.Init() first thing in main:
// hostprobe.Check re-executes the program's own binary (/proc/self/exe) to
// try the mount API in a fresh user namespace, and Init dispatches that run. The
// jail's init and stage 2 are forked C children of the supervisor (init.c,
// stage2.c), never a second Go program.
//
// It owns the run (Cmd, its plan, the status, the order of its steps),
// sessions, warm jails and the mode without namespaces. What a run is
// asked to be is package jail/spec's (Spec), what it did package
// report's (Result), both named here by aliases; the C init and stage 2
// are jail/internal/initc's, the link with them initlink's, an output
// stream relay's; what the host can enforce is package hostprobe's, the
// rules of the host side hostside's, the allow mode's servers
// network/runnet's. It may import those and the other floors below it
// (hostpath, hostmount, cgroup, seccomp, landlock, changes, network/*,
// internal/*); never profiles, tools, serve or cmd.
package jail

import (
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/spec"
)

// HostID is a user and group of the host.
type HostID = hostside.ID

// DefaultHostUser is the host identity of a jail that root starts when
// its working directory belongs to root, or when it has none: a uid and
// gid in a range systemd and the common distributions leave unassigned
// (65536-524287), so that it owns nothing on the host.
var DefaultHostUser = HostID{UID: 524287, GID: 524287}

// Output is a host file the caller writes after the run (a report, an
// audit log), opened by Start by package hostside's rules.
type Output = hostside.Output

// What a run is asked to be is package spec's: these names keep jail's API
// as it was (a Spec is a spec.Spec).
type (
	Spec         = spec.Spec
	Mount        = spec.Mount
	MountKind    = spec.MountKind
	NetMode      = spec.NetMode
	Limits       = spec.Limits
	LandlockSpec = spec.LandlockSpec
	OnViolation  = spec.OnViolation
)

// The identity inside the jail, mount kinds, network modes, violation
// actions and layers (package spec's).
const (
	JailUID  = spec.JailUID
	JailGID  = spec.JailGID
	JailUser = spec.JailUser

	MountBind  = spec.MountBind
	MountTmpfs = spec.MountTmpfs
	MountMask  = spec.MountMask

	NetNone  = spec.NetNone
	NetHost  = spec.NetHost
	NetAllow = spec.NetAllow

	ViolationDeny = spec.ViolationDeny
	ViolationKill = spec.ViolationKill

	LayerLandlock      = spec.LayerLandlock
	LayerSeccomp       = spec.LayerSeccomp
	LayerSeccompNotify = spec.LayerSeccompNotify
	LayerCgroup        = spec.LayerCgroup
	LayerMemory        = spec.LayerMemory
	LayerCPU           = spec.LayerCPU
	LayerPids          = spec.LayerPids
	LayerNamespaces    = spec.LayerNamespaces
	LayerProtect       = spec.LayerProtect
)

// The values Spec's fields accept (package spec's).
var (
	NetModes     = spec.NetModes
	OnViolations = spec.OnViolations
	KnownLayers  = spec.KnownLayers
)

// CheckLayer says why name is not a layer AllowDegraded accepts, or nil
// (spec.CheckLayer).
func CheckLayer(name string) error { return spec.CheckLayer(name) }
