package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/tooljail/tooljail/changes"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
	"github.com/tooljail/tooljail/tools/call"
)

const toolsUsage = `Usage: tooljail tools check FILE...
       tooljail tools call [flags] FILE NAME [--arg K=V]...
       tooljail tools call [flags] FILE run_command [--arg timeout=D] -- PROG [ARG]...

Tool files declare the commands an agent may call (docs/tools.md): each tool's
argv template, its parameters and their allowlists, its profile, limits and
rate limits. 'check' validates a file and prints each tool as a call would run
it: the resolved command, profile, limits and rate; several files are checked
as 'tooljail mcp --tools A --tools B' serves them (a name declared twice is an
error). 'call' makes one call
through the same checks as 'tooljail mcp', without a server, and records it in
the audit log. The generic run_command tool (a file's [run_command] table)
takes the words after its name as its argv, passed as they are.

Exit codes of 'call': the command's own, as 'tooljail run'; 125 when the call
was refused (an argument outside its rule, stdin for a tool without it), when
its jail could not be built, when a tool with output = "json" printed
something that is not JSON, or when the audit line could not be written.

Flags of 'call':
`

func toolsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return fail(stderr, "tools: want 'check FILE' or 'call FILE NAME'; see 'tooljail tools --help'")
	}
	switch args[0] {
	case "check":
		return toolsCheck(args[1:], stdout, stderr)
	case "call":
		return toolsCall(args[1:], os.Stdin, stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, toolsUsage)
		printFlags(stdout, newToolsCallFlagSet(&toolsCallFlags{}))
		return 0
	}
	return fail(stderr, "tools: unknown command %q; want check or call", args[0])
}

// loadTools loads tool files and joins them (tools.Merge), printing each
// problem on a line: every file's, then names declared twice.
func loadTools(paths []string, stderr io.Writer) (*tools.File, bool) {
	printErr := func(err error) {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "tooljail: %s\n", line)
		}
	}
	var files []*tools.File
	ok := true
	for _, path := range paths {
		f, err := tools.Load(path)
		if err != nil {
			printErr(err)
			ok = false
			continue
		}
		files = append(files, f)
	}
	if !ok {
		return nil, false
	}
	f, err := tools.Merge(files...)
	if err != nil {
		printErr(err)
		return nil, false
	}
	return f, true
}

func toolsCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprint(stdout, toolsUsage)
		printFlags(stdout, newToolsCallFlagSet(&toolsCallFlags{}))
		return 0
	}
	if len(args) == 0 {
		return fail(stderr, "tools check: want a FILE (or several, served together); see 'tooljail tools --help'")
	}
	f, ok := loadTools(args, stderr)
	if !ok {
		return jail.ExitSetup
	}
	code := 0
	for i, t := range f.Tools {
		r, err := call.Resolve(f, tools.ServerDefaults, t)
		if err != nil {
			fmt.Fprintf(stderr, "tooljail: %s: %v\n", t.File, oneLine(err.Error()))
			code = jail.ExitSetup
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, describeTool(t, r))
	}
	return code
}

func isHelp(a string) bool {
	switch a {
	case "-h", "--help", "-help", "help":
		return true
	}
	return false
}

// describeTool is a tool as `tools check` prints it.
func describeTool(t *tools.Tool, r call.Resolved) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  description: %s\n", t.Name, oneLine(t.Description))
	words := make([]string, len(t.Command))
	for i, a := range t.Command {
		if a.Param != "" {
			words[i] = "{" + a.Param + "}"
		} else {
			words[i] = shellWord(a.Text)
		}
	}
	if t.Generic {
		fmt.Fprintf(&b, "  command: the call's argv, as given (at most %d elements; no shell); the call may shorten the timeout\n", t.MaxArgs)
	} else {
		fmt.Fprintf(&b, "  command: %s\n", strings.Join(words, " "))
	}
	for _, p := range t.Params {
		fmt.Fprintf(&b, "  param %s: %s\n", p.Name, describeParam(p))
	}
	prof := r.Profile
	if t.Profile == "" {
		prof += " (the default: the tool names no profile)"
	}
	fmt.Fprintf(&b, "  profile: %s\n", prof)
	wd := "read-write"
	switch {
	case r.NoWorkdir:
		wd = "none"
	case r.ReadOnlyWorkdir:
		wd = "read-only"
	}
	fmt.Fprintf(&b, "  workdir: %s; network: %s; stdin: %s; output: %s", wd, r.Network, yesNo(t.Stdin), t.Output)
	if changes.Mode(r.Changes).Overlay() {
		fmt.Fprintf(&b, "; changes: %s", r.Changes)
	}
	b.WriteString("\n")
	keys := make([]string, 0, len(r.Limits))
	for k := range r.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lims := make([]string, len(keys))
	for i, k := range keys {
		lims[i] = k + " " + r.Limits[k]
	}
	fmt.Fprintf(&b, "  limits: %s\n", strings.Join(lims, ", "))
	fmt.Fprintf(&b, "  rate: per_minute %s, per_hour %s, concurrency %s", rateText(r.Rate.PerMinute), rateText(r.Rate.PerHour), rateText(r.Rate.Concurrency))
	if r.Rate.Concurrency > 0 {
		// The queue matters only where concurrency is limited.
		fmt.Fprintf(&b, ", queue %s", r.Rate.Queue)
	}
	b.WriteString("\n")
	return b.String()
}

// describeParam is a parameter's type and rules, as the file gives them.
func describeParam(p *tools.Param) string {
	parts := []string{string(p.Type)}
	if p.Required {
		parts = append(parts, "required")
	} else {
		d, _ := json.Marshal(p.Default)
		parts = append(parts, "default "+string(d))
	}
	if len(p.Values) > 0 {
		parts = append(parts, "values "+quoteAll(p.Values))
	}
	if p.Pattern != "" {
		parts = append(parts, "pattern "+strconv.Quote(p.Pattern))
	}
	if p.Min != nil {
		parts = append(parts, "min "+strconv.FormatFloat(*p.Min, 'g', -1, 64))
	}
	if p.Max != nil {
		parts = append(parts, "max "+strconv.FormatFloat(*p.Max, 'g', -1, 64))
	}
	if p.MaxLength > 0 {
		parts = append(parts, "max_length "+strconv.Itoa(p.MaxLength))
	}
	if p.Type == tools.Path {
		parts = append(parts, "beneath "+quoteAll(p.Beneath))
	}
	return strings.Join(parts, ", ")
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// shellWord quotes a fixed word of a command when a reader could take it
// for several.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+%@") == "" {
		return s
	}
	return strconv.Quote(s)
}

func rateText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// callerFlags are the flags of `tools call` and `mcp` that set up the
// calls: where they run, where they are recorded, what the host may lack.
type callerFlags struct {
	workdir       scalar
	auditLog      scalar
	allowDegraded []string
}

func (f *callerFlags) table() []flagDef {
	return []flagDef{
		{name: "workdir", value: "DIR", set: once(&f.workdir, nonEmpty("a directory")),
			help: "run in DIR (default: the current directory); path arguments are relative to it, and it is read-only for a tool that names no profile; a directory a run refuses (/, system, top-level and home directories) is refused at start"},
		{name: "audit-log", value: "FILE", set: once(&f.auditLog, nonEmpty("a file path")),
			help: "append one line per call, admitted or refused, to FILE (also TOOLJAIL_AUDIT_LOG); once a line cannot be written no call is admitted"},
		{name: "allow-degraded", value: "LAYERS", repeat: true, complete: layerCompletion,
			help: "run even if these LAYERS cannot be enforced here (as run's --allow-degraded); the operator's choice, never the caller's",
			set: funcFlag(func(v string) error {
				for _, l := range strings.Split(v, ",") {
					if err := jail.CheckLayer(strings.TrimSpace(l)); err != nil {
						return err
					}
					f.allowDegraded = append(f.allowDegraded, strings.TrimSpace(l))
				}
				return nil
			})},
	}
}

// caller loads the tool files and opens what their calls need; close
// releases it. Problems of the files are printed, one a line.
func (f *callerFlags) caller(paths []string, stderr io.Writer) (c *call.Caller, close func(), ok bool) {
	cwd, err := unix.Getwd()
	if err != nil {
		fail(stderr, "current directory: %v", err)
		return nil, nil, false
	}
	file, ok := loadTools(paths, stderr)
	if !ok {
		return nil, nil, false
	}
	c = &call.Caller{File: file, Defaults: tools.ServerDefaults, Workdir: cwd,
		AllowDegraded: f.allowDegraded, Environ: os.Environ(),
		// stderr: the MCP protocol is on stdout.
		Warn: func(err error) { warn(stderr, err) }}
	if f.workdir.set {
		c.Workdir = absFrom(cwd, f.workdir.value)
	}
	if err := c.CheckWorkdir(); err != nil {
		// Every call would fail on it: say so now, as for a bad file.
		how := "start from a project directory or pass --workdir DIR"
		if f.workdir.set {
			how = "pass a project directory as --workdir DIR"
		}
		fail(stderr, "%v; %s", err, how)
		return nil, nil, false
	}
	// The tool files, shown read-only to a jail whose workdir holds
	// them: no call may rewrite the tools of the next.
	closeTrusted := func() {
		for _, o := range c.Trusted {
			o.Close()
		}
	}
	for _, path := range paths {
		obj, err := hostpath.Open(absFrom(cwd, path), hostpath.Options{})
		if err != nil {
			closeTrusted()
			fail(stderr, "tool file %s: %v", path, err)
			return nil, nil, false
		}
		c.Trusted = append(c.Trusted, obj)
	}
	logPath := f.auditLog.value
	if logPath == "" {
		logPath = os.Getenv("TOOLJAIL_AUDIT_LOG")
	}
	if logPath != "" {
		l, err := call.OpenLog(absFrom(cwd, logPath))
		if err != nil {
			closeTrusted()
			fail(stderr, "%v", err)
			return nil, nil, false
		}
		c.Log = l
	}
	return c, func() {
		closeTrusted()
		c.Log.Close()
	}, true
}

// toolsCallFlags are the parsed `tools call` flags.
type toolsCallFlags struct {
	callerFlags
	args  [][2]string // --arg K=V, in order
	json  bool
	quiet bool
}

func newToolsCallFlagSet(f *toolsCallFlags) *flag.FlagSet {
	return flagSetOf("tools call", toolsCallFlagTable(f))
}

func toolsCallFlagTable(f *toolsCallFlags) []flagDef {
	return slices.Concat([]flagDef{
		{name: "arg", value: "K=V", repeat: true, set: funcFlag(f.addArg),
			help: "the argument K=V of the call (repeatable, once per parameter); V is read as the parameter's type: a number for integer and number, true or false for boolean, else the text as it is"},
	}, f.callerFlags.table(), []flagDef{
		{name: "json", set: boolFlag{&f.json},
			help: "print the call's outcome as JSON on stdout: call_id, tool, decision, message (why it was refused or failed), exit_code, the report with stdout and stderr text, and structured (a JSON tool's parsed stdout)"},
		{name: "quiet", short: "q", set: boolFlag{&f.quiet}, help: "no summary line on stderr"},
	})
}

// addArg adds one --arg K=V, each K once.
func (f *toolsCallFlags) addArg(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("want K=V, the parameter's name, =, and its value")
	}
	for _, a := range f.args {
		if a[0] == k {
			return fmt.Errorf("%s given twice; give it once", k)
		}
	}
	f.args = append(f.args, [2]string{k, val})
	return nil
}

// parseInterspersed parses fs from args with flags before, between and
// after the positional arguments ("--" ends the flags), and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (and drops it) or at a positional argument.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func toolsCall(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	// Before any signal.Notify, as `run` does: the tool's command inherits
	// them ignored from the jail's init.
	ignoreAsStarted(jail.StartIgnored())
	var f toolsCallFlags
	fs := newToolsCallFlagSet(&f)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, toolsUsage)
		printFlags(stdout, fs)
		return 0
	}
	if err != nil {
		return fail(stderr, "%v; see 'tooljail tools --help'", err)
	}
	pos, argv := splitArgv(pos)
	if len(pos) != 2 {
		return fail(stderr, "tools call: want FILE NAME (got %d arguments), and after run_command its argv; see 'tooljail tools --help'", len(pos))
	}
	c, closeCaller, ok := f.caller(pos[:1], stderr)
	if !ok {
		return jail.ExitSetup
	}
	defer closeCaller()
	t := c.File.Lookup(pos[1])
	req := call.Request{Tool: pos[1], Args: callArgs(t, f.args), Client: report.Peer{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getppid()}}
	if argv != nil {
		req.Args[tools.ArgvArg] = words(argv)
	}
	if t != nil && t.Stdin {
		if req.Stdin, err = readStdin(stdin); err != nil {
			return fail(stderr, "read stdin: %v", err)
		}
	}
	// A signal ends the run (the jail kills its whole tree) and the call
	// is still recorded.
	ctx, stop := notifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	o, err := c.Call(ctx, req)
	if o == nil {
		return fail(stderr, "%v", err)
	}
	return f.printOutcome(o, err, stdout, stderr)
}

// splitArgv splits the arguments of `tools call` into FILE NAME and, for
// run_command, its argv: the words after NAME (nil for another tool).
func splitArgv(pos []string) (fileName, argv []string) {
	if len(pos) > 2 && pos[1] == tools.RunCommand {
		return pos[:2], pos[2:]
	}
	return pos, nil
}

// words is argv as a call's argument: a list of strings.
func words(argv []string) []any {
	out := make([]any, len(argv))
	for i, w := range argv {
		out[i] = w
	}
	return out
}

// printOutcome prints a call's outcome, its output, the reason it failed
// or its summary line, and returns its exit code; err is the call's
// error beside the outcome (its audit line could not be written).
func (f *toolsCallFlags) printOutcome(o *call.Outcome, err error, stdout, stderr io.Writer) int {
	code := o.ExitCode
	if f.json {
		b, jerr := json.MarshalIndent(o, "", "  ")
		if jerr != nil {
			return fail(stderr, "encode the outcome: %v", jerr)
		}
		stdout.Write(append(b, '\n'))
	} else if r := o.Report; r != nil {
		if r.Stdout.Text != nil {
			io.WriteString(stdout, *r.Stdout.Text)
		}
		if r.Stderr.Text != nil {
			io.WriteString(stderr, *r.Stderr.Text)
		}
	}
	switch {
	case o.Error != "":
		fmt.Fprintf(stderr, "tooljail: %s\n", oneLine(o.Error))
	case !f.quiet && o.Report != nil:
		if line := summary(o.Report); line != "" {
			fmt.Fprintf(stderr, "tooljail: %s\n", line)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "tooljail: %s\n", oneLine(err.Error()))
		code = jail.ExitSetup
	}
	return code
}

// callArgs turns --arg values into the JSON-like values a call takes,
// each read as its parameter's type; a value that does not read as one,
// or one of no declared parameter, stays text for the checks to refuse.
func callArgs(t *tools.Tool, kvs [][2]string) map[string]any {
	args := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		args[kv[0]] = argValue(t, kv[0], kv[1])
	}
	return args
}

func argValue(t *tools.Tool, name, v string) any {
	var p *tools.Param
	if t != nil {
		p = t.Param(name)
	}
	if p == nil {
		return v
	}
	switch p.Type {
	case tools.Integer, tools.Number:
		if _, err := strconv.ParseFloat(v, 64); err == nil && strings.TrimSpace(v) == v {
			return json.Number(v)
		}
	case tools.Boolean:
		if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			return b
		}
	}
	return v
}
