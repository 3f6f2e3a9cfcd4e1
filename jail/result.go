package jail

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail/internal/relay"
)

// Schema names the report format; fields are added, never renamed or
// re-typed, within v1.
const Schema = "tooljail.report/v1"

// Version is the tooljail version, set at build time.
var Version = "dev"

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
	Network []NetworkEntry `json:"network,omitempty"`
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

// Stream is what the command wrote to stdout or stderr.
type Stream struct {
	Bytes     int64 `json:"bytes"`     // everything the command wrote
	Truncated bool  `json:"truncated"` // some of it was over the output limit and dropped
	// Text is the captured output (CaptureOutput): what was relayed, and when
	// truncated also the last bytes of the stream after a marker line. It
	// is at most the output limit, plus 4 KiB and the marker line when
	// truncated, and shares the buffer it was captured in. In Go it is
	// the bytes exactly. In JSON it is written only when it is valid
	// UTF-8 (else Base64 is), and a byte takes at most six bytes
	// (\u0001): WriteTextJSON writes that form without holding it whole.
	Text *string `json:"text,omitempty"`
	// Base64 is the same bytes as Text, and is set (sharing Text's
	// buffer: do not modify it) exactly when they are not valid UTF-8,
	// which a JSON string cannot carry. In JSON it takes the text's place
	// (MarshalJSON): the standard base64 of the bytes, written by
	// WriteBase64JSON without holding it whole. A client that decodes a
	// report (serve.Client) makes Text of it again (Exact).
	Base64 []byte `json:"base64,omitempty"`
	// Merged is set on the stderr entry of a run whose stderr was its
	// stdout (Cmd.MergeStderr): everything is in the stdout entry, in the
	// order it was written, and this one counts nothing.
	Merged bool `json:"merged,omitempty"`
	// TTY is set on the stdout entry of a run with a terminal (Cmd.TTY):
	// it holds what the command wrote to the terminal, stderr included,
	// as the terminal gave it ("\n" became "\r\n", input was echoed).
	TTY bool `json:"tty,omitempty"`
}

// MarshalJSON writes text or base64, never both: a JSON text of bytes
// that are not UTF-8 would turn each invalid byte into a six-byte
// \ufffd, losing them at up to six times their size.
func (s Stream) MarshalJSON() ([]byte, error) {
	type plain Stream
	p := plain(s)
	if p.Base64 != nil {
		p.Text = nil
	}
	return json.Marshal(p)
}

// withBase64 is s with Base64 set as a run's capture sets it: Text's
// streamOf is the report's entry of what a relay saw of a stream.
func streamOf(r relay.Result) Stream {
	return Stream{Bytes: r.Bytes, Truncated: r.Truncated, Text: r.Text}.withBase64()
}

// bytes when they are not valid UTF-8, else none.
func (s Stream) withBase64() Stream {
	s.Base64 = nil
	if s.Text != nil && !utf8.ValidString(*s.Text) {
		s.Base64 = unsafe.Slice(unsafe.StringData(*s.Text), len(*s.Text))
	}
	return s
}

// Exact sets Text from Base64 when there is one: what a reader of the
// JSON does to get the exact bytes back (Text in JSON is lossy then).
func (s *Stream) Exact() {
	if s.Base64 != nil {
		t := string(s.Base64)
		s.Text = &t
	}
}

// textPiece is how much of a text WriteTextJSON escapes at a time.
const textPiece = 32 << 10

// WriteTextJSON writes s.Text to w as a JSON string, byte for byte what
// encoding/json makes of it (null when there is none), a piece at a time:
// the escaped form, up to six times the text, is never in memory whole.
// A report writer puts it where json.Marshal of the Result has the text.
func (s Stream) WriteTextJSON(w io.Writer) error {
	if s.Text == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	text := *s.Text
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	for len(text) > 0 {
		n := textCut(text, textPiece)
		buf.Reset()
		if err := enc.Encode(text[:n]); err != nil {
			return err
		}
		// Encode wrote the piece in quotes and a newline.
		if _, err := w.Write(buf.Bytes()[1 : buf.Len()-2]); err != nil {
			return err
		}
		text = text[n:]
	}
	_, err := io.WriteString(w, `"`)
	return err
}

// base64Piece is how many bytes WriteBase64JSON encodes at a time: a
// multiple of 3, so that the pieces make the base64 of the whole.
const base64Piece = 48 << 10

// WriteBase64JSON writes s.Base64 to w as encoding/json writes a []byte
// (a JSON string of its standard base64; null when there is none), a
// piece at a time.
func (s Stream) WriteBase64JSON(w io.Writer) error {
	if s.Base64 == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	b := s.Base64
	buf := make([]byte, 0, 1+base64.StdEncoding.EncodedLen(min(len(b), base64Piece))+1)
	buf = append(buf, '"')
	for {
		n := min(len(b), base64Piece)
		buf = base64.StdEncoding.AppendEncode(buf, b[:n])
		b = b[n:]
		if len(b) == 0 {
			buf = append(buf, '"')
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		buf = buf[:0]
	}
}

// textCut is where to end the piece of text that starts it, near n: where
// a UTF-8 decoder ends a rune or an invalid byte when it decodes the whole
// text, so that the pieces escape as the whole does (no rune is split into
// two U+FFFD). That is before a byte that is not a continuation byte, or
// after three continuation bytes: no rune has more.
func textCut(text string, n int) int {
	if n >= len(text) {
		return len(text)
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(text[i]) {
			return i
		}
	}
	return n
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

func ms(d time.Duration) int64 { return d.Milliseconds() }

func int64p(v int64) *int64 { return &v }

// CacheBind is one build cache a run bound read-write.
type CacheBind struct {
	Name     string `json:"name"`      // "go-build", "npm", ...
	Path     string `json:"path"`      // inside the jail
	HostPath string `json:"host_path"` // its source on the host
}
