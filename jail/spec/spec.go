// Package spec is what a run is asked to be: the Spec (its command,
// environment, mounts, network mode, limits, Landlock and seccomp policy,
// the layers it may go without) and the checks that need no host. Package
// jail names these types by aliases (jail.Spec is spec.Spec) and turns a
// Spec into a plan; profiles fills one from a profile and a request. It
// decides nothing about a host and imports only what its fields are made
// of (changes, hostpath, hostprobe, hostside, network/allow, report,
// seccomp), never jail.
package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/seccomp"
)

// JailUID and JailGID are the identity the command runs as inside the jail.
const (
	JailUID  = 1000
	JailGID  = 1000
	JailUser = "sandbox"
)

// HostID is a user and group of the host.
type HostID = hostside.ID

// MountKind says what a Mount puts at its destination.
type MountKind string

const (
	// MountBind shows a host path (Source) at Dest.
	MountBind MountKind = "bind"
	// MountTmpfs puts an empty tmpfs of Size bytes at Dest.
	MountTmpfs MountKind = "tmpfs"
	// MountMask hides what a bind shows at Dest behind an empty read-only
	// file or directory.
	MountMask MountKind = "mask"
)

// Mount is one entry of the jail's filesystem view. Mounts are applied after
// the jail's frame (root tmpfs, /proc, /dev, generated /etc files), ordered by
// the depth of Dest (stable), with masks last.
type Mount struct {
	Kind MountKind `json:"kind"`
	// Source is the host path of a bind. The supervisor opens it once
	// (see package hostpath: a symlink is followed only where no run can
	// have planted it) and the jail mounts that descriptor. A writable
	// bind may not be the root, a system directory or anything below one,
	// a top-level directory or a home directory (hostpath.Refuse).
	Source string `json:"source,omitempty"`
	Dest   string `json:"dest"` // absolute path inside the jail
	// Writable makes a bind or tmpfs writable. Binds are always nosuid,nodev;
	// read-only binds are read-only recursively (submounts included).
	Writable bool `json:"writable,omitempty"`
	// Exec grants Landlock's execute right below Dest (system directories).
	// Writable mounts and tmpfs always allow execution.
	Exec bool `json:"exec,omitempty"`
	// Optional skips a bind whose Source does not exist instead of failing.
	Optional bool `json:"optional,omitempty"`
	// KeepSymlink recreates a Source that is a symlink as the same symlink at
	// Dest (how /bin -> usr/bin is shown on merged-/usr hosts).
	KeepSymlink bool `json:"keep_symlink,omitempty"`
	// Cache names the build cache a writable bind is (profiles'
	// filesystem.caches): the supervisor creates a missing Source
	// directory (mode 0700, one component at a time, by the rules of
	// every host path) before it opens it, and the report lists it
	// (Enforcement.Caches).
	Cache string `json:"cache,omitempty"`
	// Size of a tmpfs in bytes.
	Size int64 `json:"size,omitempty"`
	// Raise says how the caller gives a tmpfs more room (a flag or a
	// profile key): the report names it when the tmpfs fills up
	// (Result.FullMounts). The policy that set Size sets it.
	Raise string `json:"raise,omitempty"`
	// InRoot takes a read-only bind's Source from Spec.Root instead of
	// the host: Source is the path as that tree's own root sees it
	// ("/usr"), and symlinks on the way are resolved in the tree, an
	// absolute one from the tree's root (hostpath.OpenInTree), so none
	// leads to the host's files.
	InRoot bool `json:"in_root,omitempty"`
}

// NetMode selects the network namespace.
type NetMode string

const (
	// NetNone gives the jail its own network namespace with only lo up.
	NetNone NetMode = "none"
	// NetHost shares the host's network (trusted tools only).
	NetHost NetMode = "host"
	// NetAllow gives the jail its own network namespace with only lo up,
	// and in it an HTTP proxy, a SOCKS5 proxy and a DNS resolver that the
	// supervisor serves: the command reaches the hosts Spec.Allow names,
	// through them, and nothing else (network.go).
	NetAllow NetMode = "allow"
)

// NetModes are the network modes a Spec accepts, in the order the docs
// give them (shell completion offers them from here).
var NetModes = []NetMode{NetNone, NetHost, NetAllow}

// Limits are the resource caps of a run. Zero means "no limit" for every
// field except NoFile (0 keeps the inherited limit). This is the one
// definition of the limits: the report's form (report.ReportLimits, also the JSON
// form of a Spec), the cgroup caps (cgroup.Resources, in package jail's plan) and
// the profile keys (profiles' [limits]) are derived from it.
type Limits struct {
	Memory      int64         // cgroup memory.max (swap 0)
	CPUs        float64       // cgroup cpu.max, in CPUs
	Pids        int64         // cgroup pids.max
	Timeout     time.Duration // wall clock; the whole tree is killed
	CPUTime     time.Duration // RLIMIT_CPU
	NoFile      uint64        // RLIMIT_NOFILE
	FSize       int64         // RLIMIT_FSIZE
	OutputLimit int64         // stdout and stderr together, relayed by the supervisor
	// MaxViolations bounds the system calls the seccomp layer denies in
	// one run (OnViolation "deny"; counted where denied calls are seen,
	// that is with seccomp user notification): after this many, the next
	// denied call kills the whole run, with status violation. 0: no bound.
	// With "kill" the first denied call ends the run anyway.
	MaxViolations int
	// NetConns caps the connections the allow mode's proxies serve at
	// once (NetAllow); 0 is the proxy's default, 128. There is always a
	// cap: every connection costs the supervisor a goroutine and buffers.
	NetConns int
	// NetBytes caps the bytes the allow mode's proxies forward in one run,
	// both directions together (NetAllow). 0: no cap.
	NetBytes int64
}

// Report is l in the report's units, as the report's "limits" shows it.
func (l Limits) Report() report.ReportLimits {
	return report.ReportLimits{
		MemoryBytes:      l.Memory,
		CPUs:             l.CPUs,
		Pids:             l.Pids,
		TimeoutMs:        msCeil(l.Timeout),
		CPUTimeMs:        msCeil(l.CPUTime),
		NoFile:           l.NoFile,
		FSizeBytes:       l.FSize,
		OutputLimitBytes: l.OutputLimit,
		MaxViolations:    l.MaxViolations,
		NetConns:         l.NetConns,
		NetBytes:         l.NetBytes,
	}
}

// msCeil rounds d up to whole milliseconds: a limit below 1 ms must not
// read back as 0, which is no limit.
func msCeil(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MarshalJSON writes l in the report's form: a Spec's limits and a
// report's read the same.
func (l Limits) MarshalJSON() ([]byte, error) { return json.Marshal(l.Report()) }

// UnmarshalJSON reads the report's form. core_bytes must be 0: the jail
// never allows core dumps.
func (l *Limits) UnmarshalJSON(b []byte) error {
	var r report.ReportLimits
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	if r.CoreBytes != 0 {
		return fmt.Errorf("limits: core_bytes %d: the jail never writes core dumps (0 is the only value)", r.CoreBytes)
	}
	*l = Limits{
		Memory:        r.MemoryBytes,
		CPUs:          r.CPUs,
		Pids:          r.Pids,
		Timeout:       time.Duration(r.TimeoutMs) * time.Millisecond,
		CPUTime:       time.Duration(r.CPUTimeMs) * time.Millisecond,
		NoFile:        r.NoFile,
		FSize:         r.FSizeBytes,
		OutputLimit:   r.OutputLimitBytes,
		MaxViolations: r.MaxViolations,
		NetConns:      r.NetConns,
		NetBytes:      r.NetBytes,
	}
	return nil
}

// LandlockSpec asks for Landlock path rules mirroring the mounts.
type LandlockSpec struct {
	// MinABI is the lowest Landlock ABI the run accepts (0: any, even none
	// when "landlock" is allowed degraded).
	MinABI int `json:"min_abi,omitempty"`
	// RestrictTCP limits TCP bind/connect to the listed ports (ABI 4+).
	RestrictTCP bool     `json:"restrict_tcp,omitempty"`
	BindTCP     []uint16 `json:"bind_tcp,omitempty"`
	ConnectTCP  []uint16 `json:"connect_tcp,omitempty"`
}

// OnViolation is what happens when the command makes a denied syscall.
type OnViolation string

const (
	// ViolationDeny fails the call with EPERM and lets the run go on.
	ViolationDeny OnViolation = "deny"
	// ViolationKill kills the whole run; its status is "violation".
	ViolationKill OnViolation = "kill"
)

// OnViolations are the actions a Spec accepts for a denied system call.
var OnViolations = []OnViolation{ViolationDeny, ViolationKill}

// Layers that can be named in Spec.AllowDegraded. The names of enforced
// layers are check's (package hostprobe), so that a line of `tooljail
// check` and the flag that lets the run go without it spell it alike.
const (
	LayerLandlock      = hostprobe.LayerLandlock
	LayerSeccomp       = hostprobe.LayerSeccomp
	LayerSeccompNotify = hostprobe.LayerSeccompNotify
	LayerCgroup        = hostprobe.LayerCgroup // all three caps
	LayerMemory        = hostprobe.LayerMemory
	LayerCPU           = hostprobe.LayerCPU
	LayerPids          = hostprobe.LayerPids
	// LayerNamespaces lets a run go without every namespace where none
	// can be made, confined by Landlock and seccomp alone (nons.go).
	LayerNamespaces = "namespaces"
	// LayerProtect lets a run without namespaces leave the protected
	// paths of its writable binds writable (nothing can bind them over).
	LayerProtect = "protect"
)

// KnownLayers lists the names AllowDegraded accepts.
var KnownLayers = []string{LayerLandlock, LayerSeccomp, LayerSeccompNotify, LayerCgroup, LayerMemory, LayerCPU, LayerPids, LayerNamespaces, LayerProtect}

// CheckLayer says why name is not a layer AllowDegraded accepts, or nil.
// Profiles and the CLI check names with it, so that every caller refuses
// the same names with the same words.
func CheckLayer(name string) error {
	if slices.Contains(KnownLayers, name) {
		return nil
	}
	return fmt.Errorf("unknown layer %q (known: %s)", name, strings.Join(KnownLayers, ", "))
}

// Spec is everything a run needs, validated once. Build it with profiles or
// by hand; the jail applies it without adding policy of its own.
type Spec struct {
	// Args[0] is the command: a path inside the jail, or a name looked up in
	// the PATH of Env inside the jail.
	Args []string
	// Env is the command's complete environment (KEY=VALUE).
	Env []string
	// EnvDropped names the caller's variables left out of Env and why
	// (profiles decides), for the report; never their values.
	EnvDropped []report.EnvDrop
	// Dir is the working directory inside the jail.
	Dir string
	// Hostname of the jail's UTS namespace.
	Hostname string
	// Home is the jail user's home directory, written to /etc/passwd. The
	// profile makes it writable (usually a tmpfs mount).
	Home string
	Net  NetMode
	// Allow is what the command may reach with Net NetAllow: patterns of
	// package network/allow (a host name, a "*." wildcard, an IP or CIDR,
	// each with an optional ":port"; 80 and 443 without). Empty in the
	// allow mode allows nothing; it must be empty in the other modes.
	Allow []string
	// Mounts on top of the frame (see Mount).
	Mounts []Mount
	// Root is a host directory holding a root file system of its own
	// (an unpacked container image, a debootstrap) that the binds with
	// InRoot come from, such as its usr and etc/ssl/certs: the jail's
	// programs, libraries and loader are then the tree's, with the
	// jail's frame and the other mounts as without it. The supervisor
	// opens it once and refuses it unless it is a directory of root or
	// its own that no one else may write (hostpath.CheckTree). "": none.
	Root   string
	Limits Limits
	// RaiseMemory says how the caller raises Limits.Memory (a flag or a
	// profile key): the reason of a memory-limit kill names it. The policy
	// that set the limit sets it, as Mount.Raise.
	RaiseMemory string
	// Landlock, when not nil, asks for Landlock rules mirroring Mounts.
	Landlock *LandlockSpec
	// Seccomp, when not nil, asks for the syscall allowlist.
	Seccomp     *seccomp.Policy
	OnViolation OnViolation
	// AllowDegraded names the layers the run may go without when this host
	// cannot enforce them (see KnownLayers). Anything else fails closed.
	AllowDegraded []string
	// Profile names the profile the Spec came from, for the report.
	Profile string
	// HostUser is the host identity a jail started by root runs as (the
	// init and the command); it is never root. nil: the owner of the bind
	// at Dir when that is a writable bind not owned by root, else
	// DefaultHostUser. Writable binds owned by anyone else are idmapped so
	// that files keep their owner on the host; where the file system
	// cannot be idmapped the run fails, unless HostUser was given, in
	// which case the bind is mounted as it is. A supervisor that is not
	// root runs the jail as itself: HostUser must then be nil or its own.
	HostUser *HostID
	// Trusted are host files (or directories) the caller relies on for
	// later runs, such as the profile and the files it extends. Each that
	// lies inside a writable bind is bound read-only over itself in the
	// jail, and the directories above it in the bind over themselves (a
	// mount point cannot be renamed), so the command cannot change them
	// for the next run. The jail adds its own executable and the seccomp
	// cache directory.
	Trusted []*hostpath.Object
	// Toolchains are the caller's toolchains the policy found or was
	// named (package toolchain), for the report: their prefixes are among
	// Mounts (read-only binds with Exec), their bin directories first in
	// the PATH of Env, their variables in Env. The jail adds nothing for
	// them; it copies them to the report's enforcement.toolchains.
	Toolchains []report.Toolchain
	// Protect are names, relative to each writable bind, of files that
	// run on the host later (".git/hooks", ".envrc", ...): each that
	// exists when the run starts is bound read-only over itself, as a
	// trusted file. Entries under ".git/" apply to every repository at
	// the bind's root and two levels below it, and its submodules; a
	// repository's core.hooksPath inside the bind is protected too.
	Protect []string
	// Changes records what the command changes in its writable binds
	// (package changes): the workdir and the other writable binds but
	// the caches become the lower layers of overlays whose upper layers
	// are a change set in the store at ChangesDir. "" is changes.Off.
	Changes changes.Mode
	// ChangesDir is the change store; "" is changes.DefaultDir of the
	// supervisor's user.
	ChangesDir string
	// ChangesOwner is the uid a kept change set records as its owner (a
	// server's client); -1 or 0 with a non-root supervisor: the
	// supervisor's own.
	ChangesOwner int
}
