package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tooljail/tooljail/auditlog"
	"github.com/tooljail/tooljail/internal/completion"
	"github.com/tooljail/tooljail/jail"
)

const auditUsage = `Usage: tooljail audit show [flags] FILE

Reads an audit log back (docs/report.md, The audit log): runs, requests a
server refused and tool calls, one row each, oldest first. Text from the log
(arguments, commands, reasons) is shown with control characters escaped.

A last line without its newline (a writer that died mid-line, or one writing
it now) is skipped with a note; --follow waits for the rest of it. A line that
is not an audit line is named on stderr and skipped, and show then exits 1.

Flags:
`

// auditFlags are the parsed `audit show` flags.
type auditFlags struct {
	tool, status scalar
	since        scalar
	json         bool
	follow       bool
}

func newAuditFlagSet(f *auditFlags) *flag.FlagSet { return flagSetOf("audit show", auditFlagTable(f)) }

func auditFlagTable(f *auditFlags) []flagDef {
	return []flagDef{
		{name: "tool", value: "NAME", set: once(&f.tool, nonEmpty("a tool name")), help: "only the calls of the tool NAME"},
		{name: "status", value: "S", set: once(&f.status, auditStatus),
			complete: func() completion.Value { return completion.Value{Words: stringsOf(auditlog.Statuses)} },
			help:     "only the lines of status S: exited, signaled, timeout, memory_limit, violation, setup_error, aborted, cancelled or refused"},
		{name: "since", value: "DUR|TIME", set: once(&f.since, func(v string) error { _, err := sinceTime(v, time.Now()); return err }),
			help: "only the lines of the last DUR (10m, 2h) or since a TIME (RFC 3339)"},
		{name: "json", set: boolFlag{&f.json}, help: "print the selected lines as they are in the log (JSON lines) instead of a table"},
		{name: "follow", set: boolFlag{&f.follow}, help: "after the last line, wait for more and show them as they are written, like tail -f (until interrupted)"},
	}
}

// auditStatus refuses what is not a status of an audit line.
func auditStatus(v string) error {
	if !slices.Contains(auditlog.Statuses, jail.Status(v)) {
		return fmt.Errorf("unknown status (known: %s)", strings.Join(stringsOf(auditlog.Statuses), ", "))
	}
	return nil
}

// sinceTime reads --since: a duration back from now, or a time.
func sinceTime(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a negative duration; give how far back, e.g. 10m")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("want a duration (10m, 2h) or a time (RFC 3339, 2026-01-02T15:04:05Z)")
}

func auditCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		if len(args) == 0 {
			return fail(stderr, "audit: want 'show FILE'; see 'tooljail audit --help'")
		}
		fmt.Fprint(stdout, auditUsage)
		printFlags(stdout, newAuditFlagSet(&auditFlags{}))
		return 0
	}
	if args[0] != "show" {
		return fail(stderr, "audit: unknown command %q; want show", args[0])
	}
	var f auditFlags
	fs := newAuditFlagSet(&f)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, auditUsage)
		printFlags(stdout, fs)
		return 0
	}
	if err != nil {
		return fail(stderr, "%v; see 'tooljail audit --help'", err)
	}
	if len(pos) != 1 {
		return fail(stderr, "audit show: want one FILE; see 'tooljail audit --help'")
	}
	filter := auditlog.Filter{Tool: f.tool.value, Status: f.status.value}
	if f.since.set {
		filter.Since, _ = sinceTime(f.since.value, time.Now()) // checked when parsed
	}
	file, err := os.Open(pos[0])
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer file.Close()
	s := &auditShow{path: pos[0], filter: filter, json: f.json, out: stdout, errw: stderr}
	if f.follow {
		return s.follow(file, 200*time.Millisecond, nil)
	}
	if err := s.drain(auditlog.NewReader(file)); err != nil {
		return jail.ExitSetup
	}
	return s.end()
}

// auditShow prints the selected lines of one log.
type auditShow struct {
	path    string
	filter  auditlog.Filter
	json    bool
	out     io.Writer
	errw    io.Writer
	header  bool // the table's header is out
	bad     bool // a line was not an audit line
	pending int  // bytes of an incomplete last line
}

// drain prints every whole line r has now; it returns at io.EOF (or an
// error reading, which it reports).
func (s *auditShow) drain(r *auditlog.Reader) error {
	for {
		e, err := r.Next()
		var le *auditlog.LineError
		switch {
		case errors.As(err, &le):
			fmt.Fprintf(s.errw, "tooljail: %s: %v\n", s.path, printable(le.Error()))
			s.bad = true
			continue
		case err == io.EOF:
			s.pending = r.Pending()
			return nil
		case err != nil:
			fmt.Fprintf(s.errw, "tooljail: %s: %v\n", s.path, err)
			return err
		}
		s.pending = 0
		if s.filter.Match(&e) {
			s.print(&e)
		}
	}
}

func (s *auditShow) print(e *auditlog.Entry) {
	if s.json {
		s.out.Write(append(e.Raw, '\n'))
		return
	}
	if !s.header {
		s.header = true
		fmt.Fprintln(s.out, auditHeader)
	}
	fmt.Fprintln(s.out, auditRow(e))
}

// end reports an incomplete last line and gives the exit code.
func (s *auditShow) end() int {
	if s.pending > 0 {
		fmt.Fprintf(s.errw, "tooljail: %s: the last line is incomplete (%d bytes, no newline): skipped; a writer died in the middle of it, or is writing it now (--follow waits for it)\n", s.path, s.pending)
	}
	if s.bad {
		return 1
	}
	return 0
}

// follow prints what the log holds, then what is appended to it, polling
// every interval, until stop is closed (nil: never). A log truncated
// under it is read again from its start.
func (s *auditShow) follow(f *os.File, interval time.Duration, stop <-chan struct{}) int {
	r := auditlog.NewReader(f)
	var size int64
	for {
		if err := s.drain(r); err != nil {
			return jail.ExitSetup
		}
		if st, err := f.Stat(); err == nil {
			if st.Size() < size {
				// Truncated (or replaced in place): start over.
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					return fail(s.errw, "%s: %v", s.path, err)
				}
				r = auditlog.NewReader(f)
			}
			size = st.Size()
		}
		select {
		case <-stop:
			return s.end()
		case <-time.After(interval):
		}
	}
}

const auditHeader = "TIME                  STATUS       EXIT  MS       CLIENT          WHAT / DETAIL"

// auditRow is one line of the table: fixed columns, so that rows printed
// as they come (--follow) line up; then what ran and why it ended so.
func auditRow(e *auditlog.Entry) string {
	ms := strconv.FormatInt(e.DurationMs, 10)
	if e.Status == jail.StatusRefused {
		ms = "-"
	}
	client := "uid " + strconv.Itoa(e.UID)
	if e.Peer != nil {
		client = fmt.Sprintf("uid %d pid %d", e.Peer.UID, e.Peer.PID)
	}
	var what string
	if e.IsCall() {
		words := []string{"tool", e.Tool}
		if len(e.Arguments) > 0 {
			words = append(words, callArgsText(e.Arguments))
		}
		if e.Stdin != nil {
			words = append(words, "<stdin>")
		}
		what = strings.Join(words, " ")
	} else {
		words := make([]string, len(e.Command))
		for i, w := range e.Command {
			words[i] = shellWord(w)
		}
		what = strings.Join(words, " ")
	}
	what = clipText(strings.TrimSpace(what), 100)
	// A refusal's reason names its rule.
	detail := e.Reason
	row := fmt.Sprintf("%-21s %-12s %-5d %-8s %-15s %s", e.Time.UTC().Format(time.RFC3339), printable(string(e.Status)), e.ExitCode, ms, client, printable(what))
	if detail != "" {
		row += " | " + printable(clipText(detail, 160))
	}
	return row
}

// callArgsText is a call's arguments as K=V words, sorted, each value
// cut short; a clipped value shows its length and hash.
func callArgsText(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		var v string
		switch x := args[k].(type) {
		case string:
			v = shellWord(clipText(x, 40))
		case map[string]any:
			v = fmt.Sprintf("<%v bytes, sha256 %.12v…>", x["bytes"], x["sha256"])
		default:
			v = fmt.Sprint(x)
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}

// clipText cuts s to n characters, marking the cut.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// printable escapes what a terminal would act on (escape sequences,
// carriage returns, tabs that break the columns): text in the log may
// come from a model.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == utf8.RuneError }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) && r != utf8.RuneError {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
