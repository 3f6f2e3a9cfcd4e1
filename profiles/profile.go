// Package profiles loads tooljail's TOML profiles and turns a profile plus a
// request (the command, the caller's directory and environment) into a
// jail.Spec. This is where policy lives: which host paths the jail sees,
// which limits apply; the jail package applies the Spec verbatim.
//
// Profiles are strict: an unknown key, a value of the wrong type or a value
// that does not parse is an error naming the file, line and key. A profile
// names its parent with `extends` (a shipped name, or a file path relative to
// the child); lists append to the parent's, scalars override it. A profile
// without `extends` is a root and must set every scalar, so that no limit or
// layer is ever switched off by omission. A profile can also be given as
// text (Parse, a server's client profile): parsed the same way, it reads
// nothing of the host, so it must extend a shipped profile or a base the
// caller supplies (Bases), never a file.
package profiles

import (
	"errors"

	"github.com/tooljail/tooljail/hostpath"
)

// Profile is one profile, as decoded or as resolved along its `extends`
// chain. Scalars are pointers, and each limit an entry of the Limits map,
// so that a child overrides only what it sets; after Load every scalar and
// every limit is set. The CLI overlays its flags by appending to the lists
// and assigning the pointers (or with SetLimit, AddEnv, AddAllowDegraded
// and SetHostUser, which also check the value).
type Profile struct {
	// Name is the shipped name, or the file path as given to Load.
	Name string `toml:"-"`
	// Source is where the profile came from: "embedded:default.toml", an
	// absolute file path, or "text:NAME" for Parse's.
	Source string `toml:"-"`

	Description   *string  `toml:"description"`
	AllowDegraded []string `toml:"allow_degraded"`
	// HostUser is the host identity of a jail started by root: a user
	// name, "UID" or "UID:GID", never root; "" lets the jail choose (see
	// jail.Spec.HostUser). A supervisor that is not root runs the jail as
	// itself, so there it may only name the caller (the jail checks).
	HostUser   *string    `toml:"host_user"`
	Filesystem Filesystem `toml:"filesystem"`
	Limits     Limits     `toml:"limits"`
	// LimitsMax is the [limits.max] table: the ceiling of each limit a
	// caller may ask for with a flag (tooljail run --memory) or a served
	// request's limits; unset keys have none (ceiling.go).
	LimitsMax LimitsMax `toml:"limits.max"`
	Network   Network   `toml:"network"`
	Env       Env       `toml:"env"`
	Seccomp   Seccomp   `toml:"seccomp"`
	Landlock  Landlock  `toml:"landlock"`

	// files are the profile files Load read (the one named and those it
	// extends), held open: see Files. borrowed says they are the base's of
	// a parsed text (Bases.Parse), which Close leaves to their owner.
	files    []*hostpath.Object
	borrowed bool
}

// Files returns the profile files Load read, the one named and every file
// in its extends chain, as the descriptors they were read from (nil for a
// shipped profile). Spec hands them to the jail as files the caller
// trusts: one that lies inside a read-write bind of the run is bound
// read-only over itself, so the command cannot rewrite the profile of the
// next run.
func (p *Profile) Files() []*hostpath.Object { return p.files }

// Close closes the descriptors of Files, except those of a parsed
// text's base, which stay its base's. A Spec built from p must not be
// started afterwards.
func (p *Profile) Close() error {
	var errs []error
	if !p.borrowed {
		for _, f := range p.files {
			errs = append(errs, f.Close())
		}
	}
	p.files, p.borrowed = nil, false
	return errors.Join(errs...)
}

// Filesystem is the [filesystem] table: what the jail shows of the host.
type Filesystem struct {
	// Root is a host directory holding a root file system of its own (an
	// unpacked container image, a debootstrap): System and Etc entries are
	// taken from it instead of the host, its symlinks resolved in it
	// (root.go). "" takes them from the host. Relative to the caller's
	// directory, as Ro and Rw.
	Root *string `toml:"root"`
	// System directories bound read-only with execute rights, symlinks kept
	// as symlinks, missing ones skipped.
	System []string `toml:"system"`
	// Etc names entries of the host /etc (relative paths, "ssl/certs") bound
	// read-only at the same place; missing ones skipped, symlinks followed.
	Etc []string `toml:"etc"`
	// Ro and Rw are "PATH[:DEST]": a host path (relative to the caller's
	// directory) shown read-only or read-write at DEST (default PATH).
	Ro []string `toml:"ro"`
	Rw []string `toml:"rw"`
	// Tmpfs is "DEST[:SIZE]", an empty writable tmpfs. SIZE is a size or
	// "memory" (SizeMemory, also when omitted): as large as the memory
	// limit, whose cap its pages count against anyway.
	Tmpfs []string `toml:"tmpfs"`
	// Caches are build caches bound read-write at the tool's default
	// place in HOME: "NAME" (tooljail's own directory for it, below the
	// caller's cache directory) or "NAME=HOSTPATH" (caches.go).
	Caches []string `toml:"caches"`
	// Mask hides these paths inside the jail.
	Mask []string `toml:"mask"`
	// Workdir binds the working directory read-write and starts there.
	Workdir *bool `toml:"workdir"`
	// WorkdirReadOnly binds it read-only instead (readable, not
	// executable where Landlock applies): for tools that search and read
	// a project and must not change it. Moot without Workdir.
	WorkdirReadOnly *bool `toml:"workdir_readonly"`
	// Changes records what the command changes in the workdir and the
	// rw binds: "off", "record", "review" or "apply-on-success"
	// (package changes, docs/changes.md).
	Changes *string `toml:"changes"`
	// HomeSize is the size of the private HOME tmpfs: a size or "memory"
	// (SizeMemory).
	HomeSize *string `toml:"home_size"`
	// Toolchains are the caller's toolchains shown read-only with
	// execute rights: "auto" finds the command's own (a virtualenv, a
	// pyenv version, an nvm Node, a rustup toolchain, a Go root...), an
	// absolute path names a prefix (package toolchain). Their bin
	// directories go first in PATH.
	Toolchains []string `toml:"toolchains"`
	// Protect names paths, relative to the root of each read-write bind,
	// that run code on the host later (.git/hooks, .envrc, shell rc files,
	// editor and agent configuration): each that exists when the run
	// starts is bound read-only over itself. Entries under ".git/" apply
	// to every repository found in the bind. Unlike the other lists, a
	// child's list replaces its parent's, so that `protect = []` lifts it.
	Protect *[]string `toml:"protect"`
}

// Network is the [network] table.
type Network struct {
	// Mode is "none" (own namespace, loopback only), "host" or "allow"
	// (own namespace; the hosts Allow names, through the supervisor's
	// proxies and resolver).
	Mode *string `toml:"mode"`
	// Allow is what mode "allow" lets the command reach: a host name, a
	// "*." wildcard, an IP or a CIDR, each with an optional ":port" (80
	// and 443 without); see package network/allow. Other modes ignore it,
	// so a child (or a served request) may turn the network off.
	Allow []string `toml:"allow"`
}

// Env is the [env] table. The command's environment is Set, then the Pass
// names present in the caller's environment, then the variables a caller
// gives (--env, a served request's env, a client's env=) less those the
// jail owns and those Deny matches, then HOME.
type Env struct {
	Set  map[string]string `toml:"set"`
	Pass []string          `toml:"pass"`
	// Deny is a list of case-insensitive name patterns ("*" matches any
	// run of characters) of variables that look like credentials: a
	// caller's variable that matches one is dropped unless Pass names it.
	// Like filesystem.protect, a child's list replaces its parent's, so
	// that `deny = []` lifts it.
	Deny *[]string `toml:"deny"`
}

// Seccomp is the [seccomp] table.
type Seccomp struct {
	Enabled *bool `toml:"enabled"`
	// OnViolation is "deny" (EPERM, the run goes on) or "kill".
	OnViolation *string `toml:"on_violation"`
	// Allow and Deny adjust the built-in allowlist with syscall names or
	// "@group" names (checked by the seccomp package).
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
}

// Landlock is the [landlock] table.
type Landlock struct {
	Enabled     *bool    `toml:"enabled"`
	MinABI      *int     `toml:"min_abi"`
	RestrictTCP *bool    `toml:"restrict_tcp"`
	BindTCP     []uint16 `toml:"bind_tcp"`
	ConnectTCP  []uint16 `toml:"connect_tcp"`
}

// Info describes a shipped profile.
type Info struct {
	Name        string
	Description string
}
