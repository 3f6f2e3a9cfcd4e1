// Package hostside holds the rules of a run's host side, the part of a
// run that touches the host's files before the jail exists:
//
//   - every bind's source is opened once (package hostpath: never through
//     a symlink a run could have planted), checked on what was opened
//     (sources.go: Resolve), and for a root supervisor cloned into a
//     detached mount tree, idmapped where the jail's identity is not the
//     owner (identity.go: Detach, package hostmount);
//   - the jail's identity on the host is decided (identity.go: HostUser);
//   - what tooljail trusts and what a profile protects inside a read-write
//     bind is found, to be bound over itself (trusted.go: OverBinds,
//     ProtectIn, InsideWritable), and the directories tooljail itself
//     makes on the host are made by the same rules (MakeDirs, MakeCaches,
//     and privatetmp.go: the private TMPDIR of a run without namespaces);
//   - a command the jail cannot find is explained by what the host shows
//     through the jail's mounts (dangling.go: DanglingHint).
//   - the files the caller writes after the run (a report, an audit log)
//     are opened before anything runs, a regular file only, never
//     through a symlink, and refused inside a read-write bind (output.go:
//     Output).
//
// It decides on what it is given and returns descriptors and decisions;
// package jail orders the steps (before or after the init's fork) and
// hands the descriptors to the init. It imports hostpath, hostmount,
// hostprotect and seccomp (for the cache directory's place), never jail.
package hostside

import (
	"os"

	"github.com/tooljail/tooljail/hostpath"
)

// Kind is what a Mount puts at its destination.
type Kind int

const (
	Bind  Kind = iota + 1 // a host path, Source
	Tmpfs                 // a fresh tmpfs
	Mask                  // an empty read-only mount that hides what is below
)

// Mount is one mount of a run as the host side sees it: package jail's
// Mount without what only the jail's init needs. Lists of them are in the
// run's mount order, and Sources are indexed the same way.
type Mount struct {
	Kind   Kind
	Source string // a bind's host path
	Dest   string // inside the jail
	// Writable binds are checked against hostpath.Refuse; Optional ones
	// are left out when their source does not exist; KeepSymlink shows a
	// source that is a symlink as that symlink; InRoot takes the source
	// from the run's root directory instead of the host; Cache names the
	// build cache a writable bind is (its source is created when missing).
	Writable, Optional, KeepSymlink, InRoot bool
	Cache                                   string
}

// ID is a host identity: the uid and gid a jail runs as on the host.
type ID struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Source is one bind's source as the supervisor opened it.
type Source struct {
	Obj *hostpath.Object // nil: no bind, or an optional source that does not exist
	// Tree is a detached mount tree of Obj made by a root supervisor (its
	// attributes set, idmapped where needed), moved into the jail as it
	// is; nil: the init clones Obj itself.
	Tree *os.File
}

// FD is the descriptor the init mounts: the tree, else the object.
func (s Source) FD() int {
	if s.Tree != nil {
		return int(s.Tree.Fd())
	}
	return int(s.Obj.File.Fd())
}

// Close closes the tree and the object.
func (s Source) Close() {
	if s.Tree != nil {
		s.Tree.Close()
	}
	if s.Obj != nil {
		s.Obj.Close()
	}
}

// Over is a trusted file bound read-only over itself in the jail, or a
// directory above it in a read-write bind, bound over itself so that it
// cannot be renamed away.
type Over struct {
	Dest     string // inside the jail
	ID       hostpath.ID
	ReadOnly bool
}
