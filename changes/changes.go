// Package changes records what a jailed command changed in its writable
// binds, keeps it as a change set, and applies or discards it later.
//
// A run with changes on mounts an overlay over each writable bind: the
// host directory is the lower layer (read-only), the upper layer is a
// directory of the change set in the caller's store. What the command
// wrote is then exactly the upper layer: Scan reads it (never the whole
// tree), Apply copies it onto the host as one transaction.
//
// The package imports hostpath and nothing of the jail: the jail creates a
// Pending change set before the run, mounts its layers, and finishes it
// after the run.
package changes

import (
	"fmt"
	"time"
)

// Mode is how a run records its changes (--changes, filesystem.changes).
type Mode string

const (
	// Off: the writable binds are bound as they are; nothing is recorded.
	Off Mode = "off"
	// Record: the run's writes are applied to the host when it ends, and
	// the report lists them.
	Record Mode = "record"
	// Review: the host is untouched; the change set is kept for review.
	Review Mode = "review"
	// ApplyOnSuccess: as Review, applied when the command exited 0.
	ApplyOnSuccess Mode = "apply-on-success"
)

// Modes are the modes in the order the docs give them.
var Modes = []Mode{Off, Record, Review, ApplyOnSuccess}

// ParseMode reads a mode; "" is Off.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Off, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("changes mode %q: want off, record, review or apply-on-success", s)
}

// Overlay says whether the mode mounts an overlay over the writable binds.
func (m Mode) Overlay() bool { return m != Off && m != "" }

// Kinds of change (Entry.Kind).
const (
	Created     = "created"
	Modified    = "modified"
	Deleted     = "deleted"
	TypeChanged = "type_changed" // a file became a directory, a symlink, ...
	ModeChanged = "mode_changed" // only the permission bits changed
	Symlink     = "symlink"      // a symlink created or pointed elsewhere
)

// Types of file (Entry.Type).
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeFIFO    = "fifo"
	TypeSocket  = "socket"
	TypeDevice  = "device"
)

// HashLimit is the largest regular file whose sha256 a change set records.
const HashLimit = 64 << 20

// MaxEntries is how many entries a report lists; the rest are counted in
// Totals and the report says Truncated. The kept change set has them all.
const MaxEntries = 1000

// Entry is one changed path.
type Entry struct {
	// Bind is the destination of the writable bind in the jail ("/work").
	Bind string `json:"bind"`
	// Path is relative to the bind's root, "/"-separated, never "" or
	// with "." or ".." components.
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Type is what the path is now (for Deleted: what it was).
	Type string `json:"type"`
	Size int64  `json:"size"` // regular files: bytes now (Deleted: 0)
	// SHA256 of a regular file up to HashLimit, hex; "" otherwise.
	SHA256 string `json:"sha256,omitempty"`
	Mode   string `json:"mode,omitempty"`   // permission bits, octal "0644"; "" for Deleted
	Target string `json:"target,omitempty"` // a symlink's target
	// Link names another entry's Path (same bind) that is the same file:
	// a hard link the command made between two new names.
	Link string `json:"link,omitempty"`
	// Protected is set when the path is one of the run's protected paths
	// (jail.Spec.Protect) or below one: apply never writes it.
	Protected bool `json:"protected,omitempty"`
	// Skipped says why apply will not write this entry ("a FIFO: special
	// files are not applied"); "" when it will.
	Skipped string `json:"skipped,omitempty"`
}

// Totals count a change set's entries by kind, and the bytes of the
// regular files it writes.
type Totals struct {
	Entries     int   `json:"entries"`
	Created     int   `json:"created"`
	Modified    int   `json:"modified"`
	Deleted     int   `json:"deleted"`
	TypeChanged int   `json:"type_changed"`
	ModeChanged int   `json:"mode_changed"`
	Symlink     int   `json:"symlink"`
	Bytes       int64 `json:"bytes"`
}

// Conflict is a path whose host state is not what the change set's
// baseline says: someone else changed it, and apply would lose that.
type Conflict struct {
	Bind string `json:"bind"`
	Path string `json:"path"`
	Why  string `json:"why"` // "modified since the run (size 10 -> 12)", "created since the run", ...
}

// Report is the report's "changes" block (jail.Result.Changes).
type Report struct {
	Mode Mode `json:"mode"`
	// Recorded is false when the mode asked for recording and this host
	// could not (Reason says why; the run then wrote the host directly
	// in Record mode, and failed closed in the others).
	Recorded bool   `json:"recorded"`
	Reason   string `json:"reason,omitempty"`
	// ID names the kept change set ("" when none is kept: nothing
	// changed, or it was applied and needs no review).
	ID string `json:"id,omitempty"`
	// State: "kept" (waiting for review), "applied", "empty",
	// "conflict" (kept; apply found conflicts), "failed".
	State     string     `json:"state"`
	Entries   []Entry    `json:"entries"`
	Totals    Totals     `json:"totals"`
	Truncated bool       `json:"truncated,omitempty"`
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Error is why an apply at the end of the run failed (the set is kept).
	Error string `json:"error,omitempty"`
}

// Set states (Set.State, Report.State).
const (
	StateKept     = "kept"
	StateApplied  = "applied"
	StateEmpty    = "empty"
	StateConflict = "conflict"
	StateFailed   = "failed"
)

// Stamp is what a host path was, for conflict checks: absent, or an
// object with these properties.
type Stamp struct {
	Exists bool   `json:"exists"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Mode   uint32 `json:"mode,omitempty"` // st_mode, type and permissions
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime_ns,omitempty"`
	Ctime  int64  `json:"ctime_ns,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // regular files the set replaces or deletes
}

// BindInfo is one writable bind of a change set.
type BindInfo struct {
	Dest string `json:"dest"` // in the jail
	Host string `json:"host"` // the host directory (the lower layer)
	Dev  uint64 `json:"dev"`  // what Host was when the run started
	Ino  uint64 `json:"ino"`
	// Owner is the uid:gid files the command creates get on the host,
	// as they would through the bind (a root supervisor's idmapped bind:
	// the directory's owner); -1 keeps what the upper layer has.
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Meta is what a change set records about its run.
type Meta struct {
	ID      string     `json:"id"`
	Created time.Time  `json:"created"`
	Started time.Time  `json:"started"` // when the run started
	Ended   time.Time  `json:"ended"`
	Argv    []string   `json:"argv"`
	Exit    int        `json:"exit_code"`
	Mode    Mode       `json:"mode"`
	Owner   int        `json:"owner_uid"` // whose it is (a server's peer)
	Binds   []BindInfo `json:"binds"`
	// Protect are the run's protected names (jail.Spec.Protect).
	Protect []string `json:"protect,omitempty"`
	State   string   `json:"state"`
}
