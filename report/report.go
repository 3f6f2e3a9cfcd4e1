// Package report is what a run did, in the form every caller reads it:
// the Result that is also the JSON report (schema tooljail.report/v1),
// its streaming encoder (ReportJSON), a stopped session's final report,
// and the audit log's lines and their append. It decides nothing and runs
// nothing: package jail fills a Result, the CLI and the server write it,
// auditlog reads the lines back. It is a floor below the run: it imports
// changes (a run's change set has its own report) and network/runnet (the
// allow mode's log entries), never jail.
package report

import (
	"strings"
	"time"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/network/runnet"
)

// Schema names the report format; fields are added, never renamed or
// re-typed, within v1.
const Schema = "tooljail.report/v1"

// Status is how a run ended.
type Status string

const (
	StatusExited      Status = "exited"       // the command exited on its own
	StatusSignaled    Status = "signaled"     // a signal ended the command
	StatusTimeout     Status = "timeout"      // the wall-clock limit killed the tree
	StatusMemoryLimit Status = "memory_limit" // the memory cap's OOM killer ended it
	StatusViolation   Status = "violation"    // killed for a denied syscall (--on-violation kill) or a non-native syscall
	StatusSetupError  Status = "setup_error"  // the command never ran (tooljail failed, or it could not be executed)
	// The command started, but the jail ended under it (its init died or
	// failed): the command may have run and changed files.
	StatusAborted Status = "aborted"
	// The caller cancelled the run with Cmd.Cancel (a served run whose
	// client went away): the whole tree was killed.
	StatusCancelled Status = "cancelled"
	// Never a run's: the status of a served request the server refused
	// before any run, in the server's audit log only.
	StatusRefused Status = "refused"
	// StatusSession is a stopped session's audit line (never a report's).
	StatusSession Status = "session"
)

// Exit codes of tooljail itself.
const (
	ExitTimeout       = 124
	ExitSetup         = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// SetupError is a run that failed before the command started.
type SetupError struct {
	Code int // exit code: 125, or 126/127 when the command cannot be executed
	Err  error
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Result is what a run did; it is also the JSON report.
type Result struct {
	Schema    string    `json:"schema"`
	Version   string    `json:"version"`
	ID        string    `json:"id"`
	Command   []string  `json:"command"`
	Workdir   string    `json:"workdir"` // the working directory inside the jail
	Profile   string    `json:"profile,omitempty"`
	StartedAt time.Time `json:"started_at"`

	Status   Status `json:"status"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Reason   string `json:"reason,omitempty"`

	WallTimeMs  int64  `json:"wall_time_ms"`
	CPUUserMs   *int64 `json:"cpu_user_ms,omitempty"`
	CPUSystemMs *int64 `json:"cpu_system_ms,omitempty"`
	// MaxRSSBytes is the largest resident set of any one process of the tree
	// that was waited for (the kernel's rusage), not the tree's total.
	MaxRSSBytes *int64 `json:"max_rss_bytes,omitempty"`
	// From the run's cgroup; absent when not measured.
	MemoryPeakBytes *int64 `json:"memory_peak_bytes,omitempty"`
	OOMKills        *int64 `json:"oom_kills,omitempty"`
	PidsPeak        *int64 `json:"pids_peak,omitempty"`
	PidsLimitHits   *int64 `json:"pids_limit_hits,omitempty"`
	CPUThrottledMs  *int64 `json:"cpu_throttled_ms,omitempty"`

	// Session is the call's place in its session (Session.Command).
	Session *SessionCall `json:"session,omitempty"`

	Stdout Stream `json:"stdout"`
	Stderr Stream `json:"stderr"`

	Violations []Violation `json:"violations"`
	// EnvDropped names the caller's variables the command did not get
	// (Spec.EnvDropped); absent when none was dropped.
	EnvDropped  []EnvDrop    `json:"env_dropped,omitempty"`
	Limits      ReportLimits `json:"limits"`
	Enforcement Enforcement  `json:"enforcement"`

	// Network is what the command did through the allow mode's proxies
	// and resolver (NetAllow); absent in the other modes.
	Network []runnet.Entry `json:"network,omitempty"`
	// NetworkLimitHits counts, per limit ("connection limit", "byte
	// limit"), the connections the allow mode refused or cut for it.
	NetworkLimitHits map[string]int `json:"network_limit_hits,omitempty"`

	// Changes is what the command changed in its writable binds, and
	// what became of it (Spec.Changes, package changes); absent when the
	// run records nothing.
	Changes *changes.Report `json:"changes,omitempty"`

	// KilledLeftoverProcesses is how many processes of the jail were still
	// running when the command ended, and were killed: nothing outlives a
	// run. Absent when not counted (the run was killed, or never ran).
	KilledLeftoverProcesses *int64 `json:"killed_leftover_processes,omitempty"`
	// FullMounts are the jail's own tmpfs mounts that filled up
	// (fullmounts.go); absent when none did.
	FullMounts []FullMount `json:"full_mounts,omitempty"`
}

// ExecFailed says whether the run ended because its program was not
// found or could not be executed in the jail (setup_error, 127 or 126):
// the command never ran, and a shell tool shows its caller only the
// output, so the CLI and the server also write the reason to stderr.
func (r *Result) ExecFailed() bool {
	return r.Status == StatusSetupError && (r.ExitCode == ExitNotFound || r.ExitCode == ExitNotExecutable)
}

// ReasonLine is the reason as tooljail writes it to stderr: one line
// with a "tooljail: " prefix and a newline.
func (r *Result) ReasonLine() string {
	return "tooljail: " + strings.ReplaceAll(strings.TrimSpace(r.Reason), "\n", "; ") + "\n"
}

// Violation is something the jail denied or killed for.
type Violation struct {
	Kind    string `json:"kind"` // "syscall", "arch", "landlock", "network"
	Syscall string `json:"syscall,omitempty"`
	// Host, Port and Reason are a refusal of the allow mode (kind
	// "network"): what the command asked for and why it was refused.
	Host    string   `json:"host,omitempty"`
	Port    int      `json:"port,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Args    []string `json:"args,omitempty"`
	Path    string   `json:"path,omitempty"`
	Access  []string `json:"access,omitempty"`
	Pid     int      `json:"pid,omitempty"`      // host pid
	JailPid int      `json:"jail_pid,omitempty"` // pid inside the jail
	Count   int      `json:"count"`
	Action  string   `json:"action"` // "denied" or "killed"
}

// ReportLimits are the limits that applied, in report units: Limits.Report.
type ReportLimits struct {
	MemoryBytes      int64   `json:"memory_bytes,omitempty"`
	CPUs             float64 `json:"cpus,omitempty"`
	Pids             int64   `json:"pids,omitempty"`
	TimeoutMs        int64   `json:"timeout_ms,omitempty"`
	CPUTimeMs        int64   `json:"cpu_time_ms,omitempty"`
	NoFile           uint64  `json:"nofile,omitempty"`
	FSizeBytes       int64   `json:"fsize_bytes,omitempty"`
	OutputLimitBytes int64   `json:"output_limit_bytes,omitempty"`
	CoreBytes        int64   `json:"core_bytes"`
	MaxViolations    int     `json:"max_violations,omitempty"`
	NetConns         int     `json:"net_connections,omitempty"`
	NetBytes         int64   `json:"net_bytes,omitempty"`
}

// Enforcement is what was really enforced on this host.
type Enforcement struct {
	// Mode is how the command was confined: "namespaces" (its own
	// namespaces and filesystem view) or "landlock-seccomp" (no
	// namespaces: the host's filesystem view under Landlock rules, with
	// --allow-degraded namespaces where none can be made). Absent when
	// the run failed before it was decided.
	Mode       string     `json:"mode,omitempty"`
	Namespaces Namespaces `json:"namespaces"`
	// LandlockABI is the ABI the rules were applied with; 0 when Landlock
	// was not applied.
	LandlockABI    int      `json:"landlock_abi"`
	LandlockRights []string `json:"landlock_rights,omitempty"`
	LandlockNet    []string `json:"landlock_net_rights,omitempty"`
	LandlockScopes []string `json:"landlock_scopes,omitempty"`
	// LandlockDenials says whether Landlock denials can be reported here.
	LandlockDenials string `json:"landlock_denials,omitempty"`
	// Seccomp is "notify" (denied calls reported by name), "errno" (denied
	// without names) or "none".
	Seccomp string `json:"seccomp"`
	// Cgroup is "v2", "v1" or "none".
	Cgroup string `json:"cgroup"`
	// Caps says, for each cgroup cap that was asked for, whether it holds.
	Caps       map[string]bool `json:"caps,omitempty"`
	NoNewPrivs bool            `json:"no_new_privs"`
	// HostUID and HostGID are who the jail (its init and the command) is
	// on the host: the supervisor's own ids, or for a supervisor that is
	// root an unprivileged identity (never 0). Absent when the run failed
	// before it was decided.
	HostUID *int `json:"host_uid,omitempty"`
	HostGID *int `json:"host_gid,omitempty"`
	// Idmapped lists the destinations of writable binds that are idmapped
	// so that files the command writes keep the bind owner's ids.
	Idmapped []string `json:"idmapped,omitempty"`
	// Protected lists the paths in the jail bound read-only over
	// themselves because Spec.Protect names them (sorted).
	Protected []string `json:"protected,omitempty"`
	// Root is the root directory the jail's system directories came from
	// (Spec.Root, as opened: symlinks resolved); absent when they are
	// the host's.
	Root string `json:"root,omitempty"`
	// Caches lists the build caches bound read-write (Mount.Cache).
	Caches []CacheBind `json:"caches,omitempty"`
	// UnixSockets says whether pathname unix sockets inside binds can be
	// reached: "landlock" (only those in writable binds and the jail's
	// own directories, Landlock ABI 9+), or why not.
	UnixSockets string `json:"unix_sockets"`
	// Toolchains are the caller's toolchains shown read-only
	// (Spec.Toolchains); absent when none.
	Toolchains []Toolchain `json:"toolchains,omitempty"`
	// Degraded lists the layers that were asked for and are not enforced.
	Degraded []string `json:"degraded"`
	// Network is how the allow mode was enforced (NetAllow only).
	Network *NetworkEnforcement `json:"network,omitempty"`
}

// Modes of Enforcement.Mode.
const (
	ModeNamespaces      = "namespaces"
	ModeLandlockSeccomp = "landlock-seccomp"
)

// NetworkEnforcement is how the allow mode held on this host.
type NetworkEnforcement struct {
	Mode string `json:"mode"` // "allow"
	// The listeners the command reaches, on 127.0.0.1 in the jail.
	HTTPProxy   string `json:"http_proxy"`
	SOCKS5Proxy string `json:"socks5_proxy"`
	DNS         string `json:"dns"`
	// Route says what a connection that bypasses the proxies meets: the
	// jail's namespace has only lo, so no route leaves it.
	Route string `json:"route"`
	// LandlockConnect says whether Landlock also limits TCP connect to
	// the proxies' and the resolver's ports (ABI 4+), or why not.
	LandlockConnect string `json:"landlock_connect"`
}

// Namespaces the jail runs in.
type Namespaces struct {
	User   bool `json:"user"`
	Mount  bool `json:"mount"`
	PID    bool `json:"pid"`
	Net    bool `json:"net"`
	IPC    bool `json:"ipc"`
	UTS    bool `json:"uts"`
	Cgroup bool `json:"cgroup"`
}

// CacheBind is one build cache a run bound read-write.
type CacheBind struct {
	Name     string `json:"name"`      // "go-build", "npm", ...
	Path     string `json:"path"`      // inside the jail
	HostPath string `json:"host_path"` // its source on the host
}

// Toolchain is one toolchain a run shows (Spec.Toolchains), as the report
// lists it.
type Toolchain struct {
	Kind     string   `json:"kind"`
	Prefixes []string `json:"prefixes"`
	Bin      []string `json:"bin"`
	// Env are the variables set for it ("K=V").
	Env []string `json:"env,omitempty"`
	// From is where it was asked for: "auto" (found for the program by
	// --toolchain auto or a toolchains entry "auto"), "flag" (a path
	// named by --toolchain or a served request's toolchains) or
	// "profile" (a path named by filesystem.toolchains).
	From string `json:"from"`
}

// EnvDrop is one variable a caller gave that the command does not get.
type EnvDrop struct {
	Name string `json:"name"`
	// Reason is "jail" (a variable the jail sets itself, such as HOME) or
	// "credential" (the name matches the profile's env.deny).
	Reason string `json:"reason"`
}

// FullMount is one of the jail's own tmpfs mounts that filled up during
// the run: a write to it failed with ENOSPC (or would have). The init
// samples each writable tmpfs with a size, and the jail's /dev/shm, while
// the command runs and after it ends (init_reap.c); one that filled up and
// was emptied again within the sampling interval (10 ms) goes unseen.
type FullMount struct {
	// Path is the mount's path inside the jail.
	Path string `json:"path"`
	// SizeBytes is the mount's size as the kernel rounded it.
	SizeBytes int64 `json:"size_bytes"`
	// PeakUsedBytes is the most the samples saw in use.
	PeakUsedBytes int64 `json:"peak_used_bytes"`
	// Full is what ran out: "space" (no free block) or "inodes" (no
	// free inode; space wins when both did).
	Full string `json:"full"`
	// RaiseWith is how the caller gives the mount more room (Mount.Raise:
	// a flag or a profile key); absent for /dev/shm, whose size is fixed.
	RaiseWith string `json:"raise_with,omitempty"`
}

// SessionResult is a stopped session's final report.
type SessionResult struct {
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
	// WallTimeMs is the session's life, from its start to its stop.
	WallTimeMs int64 `json:"wall_time_ms"`
	Calls      int   `json:"calls"`
	// StoppedFor says why it stopped: "stop", "idle", "max_life", or
	// "ended" (its init ended: a failure, or killed).
	StoppedFor string `json:"stopped_for"`
	// KilledRunning says whether a call was running when the session
	// stopped (it was killed with it).
	KilledRunning bool `json:"killed_running_call,omitempty"`
	// The cgroup's figures over the session's life.
	MemoryPeakBytes *int64 `json:"memory_peak_bytes,omitempty"`
	OOMKills        *int64 `json:"oom_kills,omitempty"`
	PidsPeak        *int64 `json:"pids_peak,omitempty"`
	PidsLimitHits   *int64 `json:"pids_limit_hits,omitempty"`
	CPUUserMs       *int64 `json:"cpu_user_ms,omitempty"`
	CPUSystemMs     *int64 `json:"cpu_system_ms,omitempty"`
	// Violations are the denied calls of the processes calls kept, after
	// their calls ended (each call's report has its own).
	Violations []Violation `json:"violations"`
}

// SessionCall is a call's place in its session, in the call's report.
type SessionCall struct {
	ID   string `json:"id"`
	Call int    `json:"call"` // 1 for the first
	// KeepRunning: what the call left running stays in the session.
	KeepRunning bool `json:"keep_running,omitempty"`
}

// Session stop reasons (SessionResult.StoppedFor).
const (
	StopAsked   = "stop"
	StopIdle    = "idle"
	StopMaxLife = "max_life"
	StopEnded   = "ended"
)
