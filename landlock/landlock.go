// Package landlock compiles the jail's Landlock policy (path rights
// mirroring the mounts, TCP port rules, IPC scoping) for the running
// kernel, says what it really enforces there, and, where the host lets it,
// watches the kernel's audit records for the denials of one run. The jail
// applies the compiled Plan: its init (C) builds the ruleset, its stage 2
// enters it right before exec.
//
// What a run gets depends on the kernel's Landlock ABI (see Probe):
//
//   - ABI 0: nothing. Compile returns ErrNotEnforced; the jail must either
//     refuse the run or report Landlock as degraded.
//   - ABI 1: the 13 basic filesystem rights. Linking or renaming a file
//     across directories is always denied.
//   - ABI 2: "refer" is handled, so ReadWrite rules allow cross-directory
//     link/rename between them (and only between them).
//   - ABI 3: "truncate" is handled: Read rules no longer allow truncate(2).
//   - ABI 4: TCP bind/connect port rules (when Policy.RestrictTCP).
//   - ABI 5: "ioctl_dev": ioctls on device files need a Device rule.
//   - ABI 6: IPC scoping: the jailed command cannot signal processes outside
//     its domain (the jail's init, the supervisor, the host) nor connect to
//     abstract unix sockets created outside it. Kernels without the
//     signal-scoping fix (erratum 2) are treated as ABI 5, as go-landlock does.
//   - ABI 7: audit logging flags; denials of the executed command are logged
//     (LOG_NEW_EXEC_ON) and those of the jail's own stage 2 are not
//     (LOG_SAME_EXEC_OFF). See WatchDenials.
//   - ABI 8: enforcement on all threads at once (TSYNC). Not used: stage 2,
//     which enters the domain, has one thread. No new rights.
//   - ABI 9: "resolve_unix": connecting to pathname unix sockets created
//     outside the domain needs a ReadWrite rule on them.
//   - ABI 10, 11: UDP rules and quiet flags (not used: Policy has no UDP
//     ports), no_new_privs set by the kernel.
package landlock

import "errors"

// Access is the set of rights a rule grants below its path.
type Access string

const (
	// ReadExec: read files, list directories, execute.
	ReadExec Access = "rx"
	// Read: read files, list directories. Executing is denied, though an
	// interpreter may still read a script.
	Read Access = "r"
	// ReadWrite: every filesystem right except device ioctls: read, write,
	// execute, create, remove, truncate, refer (cross-directory link and
	// rename between ReadWrite rules) and resolve_unix (ABI 9). On a device
	// node it is the same as Device.
	ReadWrite Access = "rw"
	// Device: read and write a device node (or the nodes below a directory
	// such as /dev/pts), truncate, and device ioctls (ABI 5+).
	Device Access = "dev"
	// List: list directories below the path, nothing else. Meant for "/"
	// so `ls /` works without granting reads of everything mounted there.
	List Access = "list"
)

// Rule grants Access below Path (a path inside the jail, after pivot_root).
// Path may name a directory or a file (symlinks are followed); file rules get
// only the file rights of Access.
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
}

// Policy is the whole Landlock request of a run.
type Policy struct {
	Rules []Rule `json:"rules"`
	// MinABI is the lowest ABI Compile accepts; below it Compile fails
	// closed with ErrBelowMinABI. 0 accepts any kernel, even one without
	// Landlock (then Compile returns ErrNotEnforced).
	MinABI int `json:"min_abi,omitempty"`
	// RestrictTCP handles TCP bind and connect (ABI 4+): only the listed
	// ports are allowed; empty lists deny all TCP binds/connects.
	RestrictTCP bool     `json:"restrict_tcp,omitempty"`
	BindTCP     []uint16 `json:"bind_tcp,omitempty"`
	ConnectTCP  []uint16 `json:"connect_tcp,omitempty"`
	// RestrictConnect handles TCP connect alone (ABI 4+): only the ports
	// of ConnectTCP may be connected to, binds are not restricted (unless
	// RestrictTCP). The jail's network allow mode sets it, so that a
	// command still serves on loopback and reaches only the proxies.
	RestrictConnect bool `json:"restrict_connect,omitempty"`
}

// ErrNotEnforced is returned (wrapped, with the reason and the fix) by
// Compile when the kernel has no usable Landlock and Policy.MinABI is 0;
// the jail reports Landlock as not enforced.
var ErrNotEnforced = errors.New("landlock not enforced")

// ErrBelowMinABI is returned (wrapped) by Compile when the kernel's ABI is
// below Policy.MinABI.
var ErrBelowMinABI = errors.New("landlock ABI below the required minimum")
