// Package call is the one path of a tool call: the arguments checked and
// turned into argv (tools.Tool.Check), path arguments resolved beneath
// their directories in the working directory, the tool's policy (its
// profile and limits over the server-wide default), the rate limit, the
// jail, the outcome (a JSON stdout parsed for a tool with output =
// "json"), and one audit line for every call, admitted or refused.
//
// `tooljail tools call` and `tooljail mcp` both call Caller.Call; neither
// decides anything of its own. Nothing in a Request reaches the profile,
// a limit or the program: those come from the tool file and the Caller.
package call

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
)

// Caller makes tool calls for one tool file in one working directory. It
// is safe for concurrent use; its fields must not change after the first
// call.
type Caller struct {
	File *tools.File
	// Defaults is what a tool gets for what it leaves unset (normally
	// tools.ServerDefaults).
	Defaults tools.Defaults
	// Workdir is the host directory the commands run in (absolute); path
	// arguments are relative to it.
	Workdir string
	// Limiter holds the rate limits across calls; nil builds one from
	// File and Defaults on the first call.
	Limiter *tools.Limiter
	// Log receives one line per call; nil: no audit log.
	Log *Log
	// AllowDegraded names jail layers the operator lets run degraded on
	// this host (added to every tool's profile); never from a request.
	AllowDegraded []string
	// Environ is the caller's environment, for a profile's env.pass.
	Environ []string
	// Trusted are host files later calls rely on (the tool file): bound
	// read-only over themselves in a jail whose workdir holds them.
	Trusted []*hostpath.Object
	// Now is the clock of the rate limits; nil is time.Now.
	Now func() time.Time
	// CheckSpec, when set, has the last word on a call's jail.Spec (a
	// server refuses one that would show its socket or its audit log); its
	// error fails the run as a setup error.
	CheckSpec func(*jail.Spec) error
	// ChangeStore, when set, says where a call's change set is kept and
	// whose it is, for the call's client (a server keeps each client's
	// apart, serve.peerStore); nil: the jail's default store, and the
	// caller's own uid. Its error fails the run as a setup error.
	ChangeStore func(client report.Peer) (dir string, owner int, err error)
	// Warn, when set, is told what a call's jail left on the host after
	// the call ended (a *jail.CleanupError, with the tool's name): the
	// call keeps its answer. nil: it goes unsaid.
	Warn func(err error)

	mu sync.Mutex // guards Limiter when the first call builds it
}

// Request is one call, as a client makes it.
type Request struct {
	Tool string
	// Args as decoded from JSON (string, float64, bool; see tools.Check).
	Args map[string]any
	// NotAnObject, when not "", is the JSON the client sent as the
	// arguments where an object belongs (a string, an array, ...): the
	// call is refused with rule "arguments", saying so.
	NotAnObject string
	// Stdin for a tool with stdin = true; nil for none. Refused for a
	// tool without it.
	Stdin []byte
	// Client is who asked (its uid, gid and pid as the kernel or the
	// process tree names it).
	Client report.Peer
}

// Outcome is what a call came to.
type Outcome struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Decision is "admitted", or "refused: RULE" (RULE as the error
	// names it: "undeclared", "pattern ...", "rate per_minute", ...).
	Decision string `json:"decision"`
	// Error says why a call was refused, why its run failed to start, or
	// why its JSON output is not JSON; "" when the command ran and ended
	// as reported. (Its JSON name is "message": a line with "error" is
	// the error line of tooljail serve's protocol.)
	Error string `json:"message,omitempty"`
	// Report is the run's report (admitted calls), stdout and stderr
	// text included.
	Report *jail.Result `json:"report,omitempty"`
	// Structured is stdout parsed as JSON, for a tool with output =
	// "json" whose command exited 0.
	Structured any `json:"structured,omitempty"`
	// ExitCode is what `tooljail tools call` exits with: the run's exit
	// code; 125 for a refusal or JSON output that is not JSON.
	ExitCode int `json:"exit_code"`
	// QueuedMS is how long an admitted call waited for a concurrency
	// slot (rate.queue); absent when it waited none.
	QueuedMS int64 `json:"queued_ms,omitempty"`
}

// Failed says whether the call did not do what the tool promises: it was
// refused, its run failed, it exited non-zero, or its JSON output is not
// JSON.
func (o *Outcome) Failed() bool {
	return o.Error != "" || o.ExitCode != 0 || o.Report == nil || o.Report.Status != jail.StatusExited
}

// Refusal is a call refused before any run.
type Refusal struct {
	Rule string // "undeclared", "rate per_minute", "stdin", "unknown tool", "cancelled", ...
	Err  error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// ErrLogBroken is a call that was not admitted because the audit log can
// no longer be written: every call is refused until the Caller is made
// again with a log that can be.
var ErrLogBroken = errors.New("the audit log cannot be written: no call is admitted until it can (fail closed)")

// Call checks, limits, runs and records one call. The error is non-nil
// only when the call could not be recorded: the audit log cannot be
// written (errors.Is ErrLogBroken). A refusal is an Outcome with Decision
// "refused: ..." and its Error; the command's own failure is in Report.
func (c *Caller) Call(ctx context.Context, req Request) (*Outcome, error) {
	start := c.now()
	out := &Outcome{CallID: newID(), Tool: req.Tool}
	if err := c.Log.ready(); err != nil {
		return nil, err
	}
	t, argv, timeout, err := c.admit(req)
	var release func()
	var queued time.Duration
	if err == nil {
		// A call over the tool's concurrency waits in line (rate.queue),
		// and leaves it when ctx ends: its client went away.
		release, queued, err = c.limiter().Acquire(ctx, t.Name, c.now)
		var qe *tools.QueueError
		switch {
		case errors.As(err, &qe):
			err = &Refusal{Rule: "cancelled", Err: err}
		case err != nil:
			err = &Refusal{Rule: "rate " + limitOf(err), Err: err}
		}
	}
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			r = &Refusal{Rule: "internal", Err: err}
		}
		out.Decision = "refused: " + r.Rule
		out.Error = r.Error()
		out.ExitCode = jail.ExitSetup
		if lerr := c.Log.append(refusedLine(out, req, start)); lerr != nil {
			return out, lerr
		}
		return out, nil
	}
	defer release()
	out.Decision = "admitted"
	if queued > 0 {
		// A call that waited says so, however briefly.
		out.QueuedMS = max(1, queued.Milliseconds())
	}
	res, runErr := c.run(ctx, t, argv, timeout, req.Stdin, req.Client)
	out.Report = res
	out.ExitCode = res.ExitCode
	if runErr != nil {
		out.Error = runErr.Error()
	} else if t.Output == "json" {
		v, err := parseJSON(res)
		if err != nil {
			out.Error = err.Error()
			out.ExitCode = jail.ExitSetup
		}
		out.Structured = v
	}
	if lerr := c.Log.append(admittedLine(out, req)); lerr != nil {
		return out, lerr
	}
	return out, nil
}

// admit checks everything but the rate: the tool, its arguments, stdin,
// each path argument where the command will open it, and the timeout a
// run_command call asks for (0: none asked).
func (c *Caller) admit(req Request) (*tools.Tool, []string, time.Duration, error) {
	t := c.File.Lookup(req.Tool)
	if t == nil {
		names := make([]string, len(c.File.Tools))
		for i, t := range c.File.Tools {
			names[i] = t.Name
		}
		return nil, nil, 0, &Refusal{Rule: "unknown tool", Err: fmt.Errorf("no tool %s in %s; declared: %s", clipQuote(req.Tool), c.File.Name, strings.Join(names, ", "))}
	}
	if req.NotAnObject != "" {
		return nil, nil, 0, &Refusal{Rule: "arguments", Err: fmt.Errorf("tool %s: arguments must be a JSON object, not %s: %s; give each parameter by name: {\"NAME\": VALUE, ...}", t.Name, jsonKind(req.NotAnObject), clipQuote(req.NotAnObject))}
	}
	argv, timeout, err := t.CheckCall(req.Args)
	if err != nil {
		var ae *tools.ArgError
		if errors.As(err, &ae) {
			return nil, nil, 0, &Refusal{Rule: ae.Rule, Err: err}
		}
		return nil, nil, 0, &Refusal{Rule: "arguments", Err: err}
	}
	if req.Stdin != nil && !t.Stdin {
		return nil, nil, 0, &Refusal{Rule: "stdin", Err: fmt.Errorf("tool %s: takes no stdin (its file does not say stdin = true)", t.Name)}
	}
	if err := c.resolvePaths(t, argv); err != nil {
		return nil, nil, 0, &Refusal{Rule: "beneath", Err: err}
	}
	if timeout > 0 {
		if err := c.holdTimeout(t, timeout); err != nil {
			return nil, nil, 0, err
		}
	}
	return t, argv, timeout, nil
}

// holdTimeout refuses a timeout a call asks for above the one the tool
// runs with (its profile's, under the default's and the file's limits):
// a call may only tighten it.
func (c *Caller) holdTimeout(t *tools.Tool, d time.Duration) error {
	r, err := Resolve(c.File, c.Defaults, t)
	if err != nil {
		return &Refusal{Rule: "internal", Err: err}
	}
	limit, err := units.ParseDuration(r.Limits["timeout"])
	if err != nil {
		return &Refusal{Rule: "internal", Err: fmt.Errorf("tool %s: its timeout %q: %v", t.Name, r.Limits["timeout"], err)}
	}
	if limit > 0 && d > limit {
		return &Refusal{Rule: "timeout", Err: fmt.Errorf("tool %s: parameter %s = %q: refused by rule timeout %s: above the limit the tool file sets; a call may only shorten it", t.Name, tools.TimeoutArg, d, limit)}
	}
	return nil
}

func (c *Caller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Caller) limiter() *tools.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Limiter == nil {
		// The first call builds it: a Caller is a struct literal.
		c.Limiter = tools.NewLimiter(c.Defaults.Rates(c.File))
	}
	return c.Limiter
}

// limitOf is the limit a *tools.LimitError names.
func limitOf(err error) string {
	var le *tools.LimitError
	if errors.As(err, &le) {
		return le.Limit
	}
	return "limit"
}

// parseJSON is the report's stdout as JSON: the tool's promise when its
// output is "json". A command that failed is reported as it failed, not
// as bad JSON.
func parseJSON(r *jail.Result) (any, error) {
	if r.Status != jail.StatusExited || r.ExitCode != 0 {
		return nil, nil
	}
	if r.Stdout.Truncated {
		return nil, fmt.Errorf("stdout is over the output limit (%d bytes written) and was cut: a tool with output = \"json\" must print one JSON value within it", r.Stdout.Bytes)
	}
	text := ""
	if r.Stdout.Text != nil {
		text = *r.Stdout.Text
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("stdout is not JSON (%v), and the tool's file says output = \"json\"", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("stdout holds more than one JSON value (or text after it), and the tool's file says output = \"json\": print one")
	}
	return v, nil
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw string) string {
	raw = strings.TrimLeft(raw, " \t\r\n")
	if raw == "" {
		return "empty"
	}
	switch raw[:1] {
	case `"`:
		return "a string"
	case "[":
		return "an array"
	case "t", "f":
		return "a boolean"
	case "n":
		return "null"
	case "{":
		return "an object"
	}
	return "a number"
}

// clipQuote quotes s for a message, cut to 64 bytes.
func clipQuote(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q…", clipUTF8(s, 64))
	}
	return fmt.Sprintf("%q", s)
}

// profileRef is a tool's profile as Load takes it: a file named
// relative to the tool file's directory, a shipped name as it is.
func profileRef(ref, toolFile string) string {
	if !profiles.IsFile(ref) || filepath.IsAbs(ref) || toolFile == "" {
		return ref
	}
	return filepath.Join(filepath.Dir(toolFile), ref)
}
