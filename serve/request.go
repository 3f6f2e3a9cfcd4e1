package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
)

// MaxRequest is the longest request line a server reads.
const MaxRequest = 64 << 20

// Request is one call: the request line of the protocol (docs/serve.md).
type Request struct {
	// ID is the client's own name for the call; only the audit log shows it.
	ID   string   `json:"id,omitempty"`
	Argv []string `json:"argv"`
	// Workdir is an absolute host directory, bound read-write at the same
	// path and used as the working directory; "" means none (--no-workdir).
	Workdir string `json:"workdir,omitempty"`
	// Env is added over the profile's env.set, as --env is.
	Env map[string]string `json:"env,omitempty"`
	// Stdin is the command's standard input (base64 on the wire); nil is
	// /dev/null.
	Stdin []byte `json:"stdin,omitempty"`
	// Profile names one of the server's profiles; "" is its first.
	Profile string `json:"profile,omitempty"`
	// ProfileTOML is a profile of the client's own, the text of a profile
	// file, in place of Profile: taken only by a server started with
	// AllowClientProfiles, and only if it extends a shipped or served
	// profile (clientprofile.go).
	ProfileTOML string `json:"profile_toml,omitempty"`
	// Limits override the profile's [limits], key by key, with the values
	// a profile takes ("256M", "10s", "0.5"), as the CLI's flags do: up to
	// the profile's [limits.max].
	Limits map[string]string `json:"limits,omitempty"`
	// Network overrides the profile's mode, as --net does.
	Network string `json:"network,omitempty"`
	// Stream asks for stdout and stderr chunks as they come; the report
	// then counts the output but does not hold it.
	Stream bool `json:"stream,omitempty"`
	// ExecEvent asks for an exec line ({"exec":true}) once the command has
	// been exec'd in the jail (jail.Cmd.WaitExec), among the stream lines,
	// before the final line; none when it never ran (the report says why).
	ExecEvent bool `json:"exec_event,omitempty"`
	// MergeStderr makes the command's stdout and stderr one pipe
	// (jail.Cmd.MergeStderr): its output, in the order it wrote it, is
	// the stdout stream and the report's stdout.
	MergeStderr bool `json:"merge_stderr,omitempty"`
	// TTY gives the command a terminal of the jail's own (jail.Cmd.TTY) of
	// TTYRows by TTYCols (0: 24 by 80): its output, stderr included, is
	// the stdout stream and the report's stdout; Stdin is typed into it,
	// then an end-of-file character; with StdinStream, the input lines
	// (keys and resizes) as they come.
	TTY     bool   `json:"tty,omitempty"`
	TTYRows uint16 `json:"tty_rows,omitempty"`
	TTYCols uint16 `json:"tty_cols,omitempty"`
	// StdinStream: the command's stdin comes after the request line, as
	// InputLines (chunks, its end, and with TTY the terminal's new
	// sizes), while the run goes on: an interactive call. Not with Stdin.
	StdinStream bool `json:"stdin_stream,omitempty"`
	// Toolchains are the client's toolchains to show, as --toolchain:
	// "auto" (argv[0]'s, found in Path, the workdir and the client's
	// passwd home) or absolute prefixes. A client other than root gets
	// only prefixes it could read itself (toolchain.PeerMayRead).
	Toolchains []string `json:"toolchains,omitempty"`
	// Path is the client's PATH, where "auto" (the request's or the
	// served profile's) looks argv[0] up; the command never sees it.
	Path string `json:"path,omitempty"`
	// Tool, in place of Argv, calls a tool of the server's tool file
	// (Server.Tools) with Arguments; with it only ID, Workdir and Stdin
	// may be given (tools.go).
	Tool      string         `json:"tool,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	// Changes is the run's change mode (--changes: off, record, review,
	// apply-on-success); "" is the profile's. A kept set is the client's:
	// it is applied or discarded later with a ChangesOp request.
	Changes string `json:"changes,omitempty"`
	// ChangesOp, in place of a run, acts on one of the client's kept
	// change sets (changesop.go); only ID may come with it.
	ChangesOp *ChangesOp `json:"changes_op,omitempty"`
	// SessionOp, in place of a run, starts, lists or stops sessions
	// (session.go).
	SessionOp *SessionOp `json:"session_op,omitempty"`
	// Session runs the call in one of the client's sessions: the session's
	// jail with this command, env, cwd, stdin, timeout and output limit.
	Session string `json:"session,omitempty"`
	// KeepRunning keeps what the session's call leaves running in the
	// session (jail.Cmd.KeepRunning); else it is killed when the call ends.
	KeepRunning bool `json:"keep_running,omitempty"`
	// Cwd is a session's call's working directory in the jail; "": the
	// session's workdir.
	Cwd string `json:"cwd,omitempty"`
}

// Error is the protocol's error line: a request refused before any run.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Conflicts name the paths a changes_op apply found changed on the
	// host (Code 1: nothing was applied).
	Conflicts []changes.Conflict `json:"conflicts,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// refuseShutdown is the refusal of anything asked of a server that is
// shutting down.
func refuseShutdown() *Error {
	return refuse("the server is shutting down; retry with a new server")
}

// refuse is the error of a refused request: exit code 125, one line.
func refuse(format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	msg = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg)
	return &Error{Code: jail.ExitSetup, Message: msg}
}

// limitText is a limit value as its text: a JSON string, or a number as
// written.
func limitText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("%s: want a string (\"256M\", \"10s\") or a number", raw)
}

// spec checks r against the profile p, served or the client's, and
// builds the jail.Spec of the call. p is not changed: the call's limits
// and env go into a copy. peer is the client (nil: unknown), whose view
// the toolchains are found in (toolchainFinder).
func spec(p *profiles.Profile, r *Request, peer *report.Peer) (*jail.Spec, error) {
	c, vars, err := callParts(p, r)
	if err != nil {
		return nil, err
	}
	workdir := r.Workdir != ""
	c.Filesystem.Workdir = &workdir
	cwd := r.Workdir
	if !workdir {
		// Relative binds of a profile would be taken against it.
		cwd = "/"
	}
	// The profile's caches are the server user's (tooljail's own directory
	// in its cache directory): only that user and root can connect.
	cacheDir, _ := os.UserCacheDir()
	req := profiles.Request{Args: r.Argv, Cwd: cwd, Vars: vars, CacheDir: cacheDir}
	if len(r.Toolchains) > 0 || len(p.Filesystem.Toolchains) > 0 {
		f, e := toolchainFinder(r.Path, peer)
		if e != nil {
			return nil, e
		}
		req.Toolchains, req.Finder = r.Toolchains, f
	}
	// No Environ: a call never sees the server's environment.
	s, err := c.Spec(req)
	if err != nil {
		return nil, refuse("%v", err)
	}
	return s, nil
}

// callSpec is the Spec of a call in a jail already built from p (a
// session's, base): a run's checks of the request and its environment
// rules, with the jail's part taken from base (profiles.CallSpec).
func callSpec(p *profiles.Profile, r *Request, base *jail.Spec) (*jail.Spec, error) {
	c, vars, err := callParts(p, r)
	if err != nil {
		return nil, err
	}
	s, err := c.CallSpec(base, profiles.Request{Args: r.Argv, Vars: vars})
	if err != nil {
		return nil, refuse("%v", err)
	}
	return s, nil
}

// callParts checks the request's shape and gives the call's copy of p
// (its limits and the rest, callProfile) and its variables ("K=V").
func callParts(p *profiles.Profile, r *Request) (*profiles.Profile, []string, error) {
	if e := checkCallShape(r); e != nil {
		return nil, nil, e
	}
	c, err := callProfile(p, r)
	if err != nil {
		return nil, nil, err
	}
	vars, e := callVars(r.Env)
	if e != nil {
		return nil, nil, e
	}
	return c, vars, nil
}

// checkCallShape refuses a request whose fields cannot go together or
// cannot be a command: no argv, a NUL in it, a relative workdir, a
// session's fields outside a session, stdin twice, a size without a tty.
func checkCallShape(r *Request) *Error {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return refuse("argv: empty; give the command and its arguments, [\"cmd\", \"arg\", ...]")
	}
	for i, a := range r.Argv {
		if strings.ContainsRune(a, 0) {
			return refuse("argv[%d]: contains a NUL byte", i)
		}
	}
	if r.Workdir != "" && !filepath.IsAbs(r.Workdir) {
		return refuse("workdir %q: must be an absolute host path", r.Workdir)
	}
	if r.Session == "" && (r.KeepRunning || r.Cwd != "") {
		return refuse("keep_running, cwd: taken only by a call in a session (\"session\": ID)")
	}
	if r.StdinStream && r.Stdin != nil {
		return refuse("stdin and stdin_stream: give the input in the request or after it, not both")
	}
	if !r.TTY && (r.TTYRows != 0 || r.TTYCols != 0) {
		return refuse("tty_rows, tty_cols: the size of a terminal, taken only with \"tty\": true")
	}
	return nil
}

// callProfile is a copy of p with the call's limits, network mode and
// changes mode laid over it, as the CLI's flags are; p is not changed.
func callProfile(p *profiles.Profile, r *Request) (*profiles.Profile, error) {
	c := *p
	c.Limits = maps.Clone(p.Limits)
	c.Env.Set = maps.Clone(p.Env.Set)
	for _, key := range sortedKeys(r.Limits) {
		if err := setLimit(&c, key, r.Limits[key]); err != nil {
			return nil, err
		}
	}
	if r.Network != "" {
		// As --net: any mode, the profile's hosts for "allow".
		mode := r.Network
		c.Network.Mode = &mode
	}
	if r.Changes != "" {
		// As --changes: over the profile's filesystem.changes.
		m, e := changesMode(r.Changes)
		if e != nil {
			return nil, e
		}
		mode := string(m)
		c.Filesystem.Changes = &mode
	}
	return &c, nil
}

// callVars are the request's variables as "K=V", sorted by name, or the
// refusal of a name that is not one.
func callVars(env map[string]string) ([]string, *Error) {
	var vars []string
	for _, k := range sortedKeys(env) {
		if k == "" || strings.Contains(k, "=") {
			return nil, refuse("env: name %q: want a variable name without '='", k)
		}
		vars = append(vars, k+"="+env[k])
	}
	return vars, nil
}

// setLimit sets limit key of p to value, as `tooljail run --KEY value`
// does for the same profile: any value the key takes, up to the profile's
// ceiling ([limits.max]), refused above it with the CLI's words.
func setLimit(p *profiles.Profile, key, value string) error {
	if err := p.SetLimit(key, value); err != nil {
		var ke *profiles.KeyError
		if errors.As(err, &ke) {
			return refuse("%v", err)
		}
		return refuse("limits.%s: %v", key, err)
	}
	if err := p.CheckCeiling(key, value); err != nil {
		return refuse("%v", err)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
