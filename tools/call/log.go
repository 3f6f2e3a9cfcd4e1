package call

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
)

// Log is an audit log that tool calls append to. It fails closed: once a
// line cannot be written (or the file is gone), Call admits nothing more.
// A nil *Log is no log.
type Log struct {
	path string
	f    *os.File
	obj  *hostpath.Object // the file, for Caller.Trusted

	mu     sync.Mutex
	broken error
}

// OpenLog opens (creating it 0600 when missing) the audit log at path,
// absolute, for appending: its directory by the rules of package hostpath
// (no symlink a run could have planted), the file itself never through a
// symlink, never anything but a regular file.
func OpenLog(path string) (*Log, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("audit log %s: want an absolute path", path)
	}
	path = filepath.Clean(path)
	dir, base := filepath.Split(path)
	d, err := hostpath.Open(filepath.Clean(dir), hostpath.Options{})
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	defer d.Close()
	if !d.IsDir() {
		return nil, fmt.Errorf("audit log %s: %s is not a directory", path, dir)
	}
	fd, err := unix.Openat(int(d.File.Fd()), base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("audit log %s: a symlink; give the path of the file itself", path)
		}
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		if err == nil {
			err = fmt.Errorf("not a regular file")
		}
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	// The same file as an object of the host, so that a jail whose
	// workdir holds it shows it read-only (jail.Spec.Trusted).
	obj, err := hostpath.Open(path, hostpath.Options{})
	if err != nil || obj.Stat.Dev != st.Dev || obj.Stat.Ino != st.Ino {
		f.Close()
		if obj != nil {
			obj.Close()
		}
		if err == nil {
			err = fmt.Errorf("it changed while it was opened")
		}
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return &Log{path: path, f: f, obj: obj}, nil
}

// Path is the log's path.
func (l *Log) Path() string { return l.path }

// Object is the log as a host object, for jail.Spec.Trusted.
func (l *Log) Object() *hostpath.Object {
	if l == nil {
		return nil
	}
	return l.obj
}

// Close closes the log, after any line being written.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obj.Close()
	return l.f.Close()
}

// ready says whether a call may be admitted: nothing failed to be
// written, and the file is still in place (a deleted log takes lines that
// no one can read).
func (l *Log) ready() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	var st unix.Stat_t
	err := unix.Fstat(int(l.f.Fd()), &st)
	if err == nil && st.Nlink == 0 {
		err = fmt.Errorf("the file was deleted")
	}
	if err != nil {
		l.broken = fmt.Errorf("%w: %s: %v", ErrLogBroken, l.path, err)
		return l.broken
	}
	return nil
}

// append writes one line; a failure breaks the log for every later call.
func (l *Log) append(line any) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	if err := report.AppendAuditLine(l.f, line); err != nil {
		l.broken = fmt.Errorf("%w: %v", ErrLogBroken, err)
		return l.broken
	}
	return nil
}

// Line is the audit line of a tool call: a run's line (report.AuditLine;
// status "refused" for a refused call) and the call's own fields.
type Line struct {
	report.AuditLine
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments as it gave them, each value
	// longer than MaxLogged bytes (as JSON, for one that is not a string)
	// replaced by a Clipped.
	Arguments map[string]any `json:"arguments"`
	// ArgumentsOmitted counts the arguments beyond MaxLoggedArgs.
	ArgumentsOmitted int `json:"arguments_omitted,omitempty"`
	// Stdin is what the call sent on stdin, in the same form as an
	// argument; absent when it sent none.
	Stdin    any    `json:"stdin,omitempty"`
	Decision string `json:"decision"`
	// OutputBytes is what the command wrote to stdout and stderr
	// together (admitted calls).
	OutputBytes *int64 `json:"output_bytes,omitempty"`
	// QueuedMS is how long an admitted call waited for a concurrency
	// slot; absent when it waited none.
	QueuedMS int64 `json:"queued_ms,omitempty"`
}

// MaxLogged is the longest argument value the log holds whole.
const MaxLogged = 1024

// Clipped stands for a value longer than MaxLogged: its first bytes,
// its length and its SHA-256, which identifies the whole. In the log an
// argument that is an object is always a Clipped: a value that is an
// array or an object (which no parameter type takes) is logged as its
// JSON text, a string.
type Clipped struct {
	Truncated bool   `json:"truncated"` // always true
	Head      string `json:"head"`      // the first MaxLogged bytes or fewer, cut at a character
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
}

// logValue is v as the log holds it.
func logValue(v any) any {
	switch x := v.(type) {
	case nil, bool, float64, json.Number, int, int64:
		return v
	case string:
		return clipString(x)
	case []byte:
		return clipString(string(x))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return clipString(string(b))
}

func clipString(s string) any {
	if len(s) <= MaxLogged {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return Clipped{Truncated: true, Head: clipUTF8(s, MaxLogged), Bytes: len(s), SHA256: hex.EncodeToString(sum[:])}
}

// clipUTF8 is s cut to at most n bytes, at a character boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MaxLoggedArgs is how many arguments a line holds at most (the first by
// name); a call with more (refused: a tool declares at most as many
// parameters as its file) has the rest counted in arguments_omitted.
const MaxLoggedArgs = 64

func logArgs(args map[string]any) (map[string]any, int) {
	out := make(map[string]any, min(len(args), MaxLoggedArgs))
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	omitted := 0
	if len(keys) > MaxLoggedArgs {
		keys, omitted = keys[:MaxLoggedArgs], len(keys)-MaxLoggedArgs
	}
	for _, k := range keys {
		out[clipUTF8(k, MaxLogged)] = logValue(args[k])
	}
	return out, omitted
}

func callLine(o *Outcome, req Request) Line {
	l := Line{
		CallID:   o.CallID,
		Tool:     clipUTF8(req.Tool, MaxLogged),
		Decision: o.Decision,
	}
	l.Arguments, l.ArgumentsOmitted = logArgs(req.Args)
	if req.Stdin != nil {
		l.Stdin = logValue(req.Stdin)
	}
	return l
}

// refusedLine is the line of a call refused at start.
func refusedLine(o *Outcome, req Request, start time.Time) Line {
	l := callLine(o, req)
	peer := req.Client
	l.AuditLine = report.NewAuditLine(&jail.Result{
		Command: []string{}, StartedAt: start.UTC(), Status: jail.StatusRefused,
		ExitCode: jail.ExitSetup, Reason: o.Error,
	}, os.Getuid(), &peer)
	return l
}

// admittedLine is the line of a call that ran (or failed to start).
func admittedLine(o *Outcome, req Request) Line {
	l := callLine(o, req)
	peer := req.Client
	l.AuditLine = report.NewAuditLine(o.Report, os.Getuid(), &peer)
	// The command holds the argument values: clipped as they are.
	l.Command = clipCommand(l.Command)
	if o.Error != "" && o.Report.Status == jail.StatusExited {
		// JSON output that is not JSON: the run's reason is empty.
		l.Reason = o.Error
	}
	n := o.Report.Stdout.Bytes + o.Report.Stderr.Bytes
	l.OutputBytes = &n
	l.QueuedMS = o.QueuedMS
	return l
}

// clipCommand is argv with each element longer than MaxLogged cut to its
// head, its length and its SHA-256, in one string: the line's command is
// a list of strings in every line.
func clipCommand(argv []string) []string {
	out := argv
	copied := false
	for i, a := range argv {
		if len(a) <= MaxLogged {
			continue
		}
		if !copied {
			out, copied = append([]string(nil), argv...), true
		}
		sum := sha256.Sum256([]byte(a))
		out[i] = fmt.Sprintf("%s… (%d bytes, sha256 %s)", clipUTF8(a, MaxLogged), len(a), hex.EncodeToString(sum[:]))
	}
	return out
}
