package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/internal/units"
)

const changesUsage = `Usage:
  tooljail changes list [flags]
  tooljail changes show ID [flags]
  tooljail changes diff ID [PATH] [flags]
  tooljail changes apply ID [--force] [flags]
  tooljail changes discard ID [flags]
  tooljail changes gc [flags]

The change sets that runs with --changes review (or a record or
apply-on-success run whose apply found conflicts) kept in your change store
(docs/changes.md). show lists a set's entries; diff prints a unified diff of
its text files (one line for a binary one), all of them or PATH (relative to
its bind, or DEST/PATH); apply writes it to the host as one transaction that
applies nothing when a path changed on the host since the run (exit 1, each
conflict named; --force applies anyway); discard removes it; gc removes the
expired sets, then the oldest until the store is under its size cap.

Flags:
`

// changesFlags are the flags of every `changes` subcommand.
type changesFlags struct {
	dir     scalar
	json    bool
	force   bool
	maxSize scalar
	expiry  scalar
}

func newChangesFlagSet(f *changesFlags) *flag.FlagSet {
	return flagSetOf("changes", changesFlagTable(f))
}

func changesFlagTable(f *changesFlags) []flagDef {
	return []flagDef{
		{name: "changes-dir", value: "DIR", set: once(&f.dir, absolutePath),
			help: "the change store DIR (also TOOLJAIL_CHANGES_DIR; default /var/lib/tooljail/changes for root, else $XDG_STATE_HOME/tooljail/changes or ~/.local/state/tooljail/changes)"},
		{name: "json", set: boolFlag{&f.json}, help: "print JSON instead of text"},
		{name: "force", set: boolFlag{&f.force}, help: "apply: write the set even where the host changed since the run (what changed there is lost)"},
		{name: "max-size", value: "SIZE", set: once(&f.maxSize, func(v string) error { _, err := units.ParseSize(v); return err }),
			help: fmt.Sprintf("the store's size cap SIZE that gc keeps it under (default %s)", units.FormatSize(changes.DefaultMaxSize))},
		{name: "expiry", value: "DUR", set: once(&f.expiry, func(v string) error { _, err := units.ParseDuration(v); return err }),
			help: fmt.Sprintf("gc removes sets older than DUR (default %s)", changesDuration(changes.DefaultExpiry))},
	}
}

// changesDuration is d as the docs write it: "168h" as "7d".
func changesDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// changesArgs is how many positional arguments each subcommand takes.
var changesArgs = map[string][2]int{
	"list": {0, 0}, "show": {1, 1}, "diff": {1, 2}, "apply": {1, 1}, "discard": {1, 1}, "gc": {0, 0},
}

// changesStoreDir is the store a `changes` command or a run uses: the
// flag, else TOOLJAIL_CHANGES_DIR, else "" (the user's default).
func changesStoreDir(flagDir string, environ []string) string {
	if flagDir != "" {
		return flagDir
	}
	return envValue(environ, "TOOLJAIL_CHANGES_DIR")
}

// changesDirOf is the store of the environment's user: TOOLJAIL_CHANGES_DIR
// or the default.
func changesDirOf(environ []string) (string, error) {
	if d := changesStoreDir("", environ); d != "" {
		return d, nil
	}
	return changes.DefaultDir(os.Geteuid(), envValue(environ, "HOME"), envValue(environ, "XDG_STATE_HOME"))
}

func changesCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		if len(args) == 0 {
			return fail(stderr, "changes: want list, show, diff, apply, discard or gc; see 'tooljail changes --help'")
		}
		fmt.Fprint(stdout, changesUsage)
		printFlags(stdout, newChangesFlagSet(&changesFlags{}))
		return 0
	}
	sub := args[0]
	if _, ok := changesArgs[sub]; !ok {
		return fail(stderr, "changes: unknown command %q; want list, show, diff, apply, discard or gc", sub)
	}
	var f changesFlags
	fs := newChangesFlagSet(&f)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, changesUsage)
		printFlags(stdout, fs)
		return 0
	}
	if err != nil {
		return fail(stderr, "changes %s: %v; see 'tooljail changes --help'", sub, err)
	}
	if err := changesUseError(sub, len(pos), &f); err != nil {
		return fail(stderr, "changes %s: %v", sub, err)
	}
	dir := f.dir.value
	if dir == "" {
		if dir, err = changesDirOf(os.Environ()); err != nil {
			return fail(stderr, "changes: %v", err)
		}
	}
	st, err := changes.Open(dir, f.options())
	if err != nil {
		return fail(stderr, "changes: %v", err)
	}
	defer st.Close()
	c := changesCmd{st: st, json: f.json, out: stdout, errw: stderr}
	return c.run(sub, pos, f.force)
}

// changesUseError refuses the arguments and flags that the changes
// subcommand sub does not take; n is the number of its arguments.
func changesUseError(sub string, n int, f *changesFlags) error {
	if want := changesArgs[sub]; n < want[0] || n > want[1] {
		return fmt.Errorf("want %s; see 'tooljail changes --help'", map[string]string{
			"list": "no argument", "show": "one ID", "diff": "an ID and at most one PATH", "apply": "one ID", "discard": "one ID", "gc": "no argument",
		}[sub])
	}
	if f.force && sub != "apply" {
		return errors.New("--force is for apply")
	}
	if (f.maxSize.set || f.expiry.set) && sub != "gc" {
		return errors.New("--max-size and --expiry are for gc")
	}
	return nil
}

// options is the store's options the flags give; checked when parsed.
func (f *changesFlags) options() changes.Options {
	var opt changes.Options
	if f.maxSize.set {
		opt.MaxSize, _ = units.ParseSize(f.maxSize.value)
	}
	if f.expiry.set {
		opt.Expiry, _ = units.ParseDuration(f.expiry.value)
	}
	return opt
}

// run runs the subcommand sub with its arguments pos.
func (c changesCmd) run(sub string, pos []string, force bool) int {
	switch sub {
	case "list":
		return c.list()
	case "show":
		return c.show(pos[0])
	case "diff":
		path := ""
		if len(pos) == 2 {
			path = pos[1]
		}
		if err := c.st.Diff(c.out, pos[0], path); err != nil {
			return fail(c.errw, "changes diff: %v", err)
		}
		return 0
	case "apply":
		return c.apply(pos[0], force)
	case "discard":
		if err := c.st.Discard(pos[0]); err != nil {
			return fail(c.errw, "changes discard: %v", err)
		}
		return c.print(map[string]string{"id": pos[0], "state": "discarded"}, "discarded %s\n", pos[0])
	}
	removed, err := c.st.GC(time.Now()) // gc
	if err != nil {
		return fail(c.errw, "changes gc: %v", err)
	}
	if removed == nil {
		removed = []string{}
	}
	return c.print(map[string][]string{"removed": removed}, "removed %d change sets%s\n", len(removed), idList(removed))
}

func idList(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ": " + strings.Join(ids, " ")
}

// changesCmd prints what a `changes` subcommand did.
type changesCmd struct {
	st        *changes.Store
	json      bool
	out, errw io.Writer
}

// print writes v as JSON with --json, else the text.
func (c changesCmd) print(v any, format string, args ...any) int {
	if c.json {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.out, format, args...)
	return 0
}

func (c changesCmd) printJSON(v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fail(c.errw, "encode: %v", err)
	}
	c.out.Write(append(b, '\n'))
	return 0
}

func (c changesCmd) list() int {
	sets, err := c.st.List()
	if err != nil {
		return fail(c.errw, "changes list: %v", err)
	}
	if c.json {
		if sets == nil {
			sets = []changes.Summary{}
		}
		return c.printJSON(sets)
	}
	tw := tabwriter.NewWriter(c.out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSTATE\tENTRIES\tSIZE\tCOMMAND")
	for _, s := range sets {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Created.Local().Format("2006-01-02 15:04"), s.State,
			s.Totals.Entries, units.FormatSize(s.Size), quoteArgv(s.Argv))
	}
	tw.Flush()
	return 0
}

// quoteArgv is argv for a table: each argument quoted when it holds
// anything but plain characters, so that a name cannot fake a column.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = quotePath(a)
	}
	return strings.Join(out, " ")
}

// quotePath shows p as is when it is plain, else Go-quoted.
func quotePath(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r == 0x7f || r == '\uFFFD' }) < 0 {
		return p
	}
	return strconv.Quote(p)
}

func (c changesCmd) show(id string) int {
	set, err := c.st.Get(id)
	if err != nil {
		return fail(c.errw, "changes show: %v", err)
	}
	if c.json {
		return c.printJSON(set)
	}
	fmt.Fprintf(c.out, "change set %s (%s), %s, exit %d: %s\n", set.ID, set.State, set.Created.Local().Format("2006-01-02 15:04:05"), set.Exit, quoteArgv(set.Argv))
	for _, b := range set.Binds {
		fmt.Fprintf(c.out, "  bind %s = %s\n", b.Dest, quotePath(b.Host))
	}
	tw := tabwriter.NewWriter(c.out, 2, 8, 2, ' ', 0)
	for _, ch := range set.Changes {
		note := ""
		switch {
		case ch.Protected:
			note = "  (protected: never applied)"
		case ch.Skipped != "":
			note = "  (not applied: " + ch.Skipped + ")"
		case ch.Link != "":
			note = "  (hard link to " + quotePath(ch.Link) + ")"
		case ch.Target != "":
			note = "  -> " + quotePath(ch.Target)
		}
		size := ""
		if ch.Type == changes.TypeFile && ch.Kind != changes.Deleted {
			size = strconv.FormatInt(ch.Size, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", ch.Kind, ch.Type, ch.Mode, size, quotePath(entryPath(set.Binds, ch.Entry)), note)
	}
	tw.Flush()
	t := set.Totals
	fmt.Fprintf(c.out, "%d entries: %d created, %d modified, %d deleted, %d type changed, %d mode changed, %d symlinks; %s written\n",
		t.Entries, t.Created, t.Modified, t.Deleted, t.TypeChanged, t.ModeChanged, t.Symlink, units.FormatSize(t.Bytes))
	return 0
}

// entryPath is an entry's path as show and diff name it: relative to its
// bind, with the bind's destination in front when the set has several.
func entryPath(binds []changes.BindInfo, e changes.Entry) string {
	if len(binds) > 1 {
		return strings.TrimSuffix(e.Bind, "/") + "/" + e.Path
	}
	return e.Path
}

func (c changesCmd) apply(id string, force bool) int {
	res, err := c.st.Apply(id, changes.ApplyOptions{Force: force})
	var ce *changes.ConflictError
	if errors.As(err, &ce) {
		if c.json {
			c.printJSON(map[string]any{"id": id, "state": changes.StateConflict, "conflicts": ce.Conflicts})
		} else {
			for _, cf := range ce.Conflicts {
				fmt.Fprintf(c.errw, "tooljail: conflict: %s: %s\n", quotePath(strings.TrimSuffix(cf.Bind, "/")+"/"+cf.Path), cf.Why)
			}
			fmt.Fprintf(c.errw, "tooljail: changes apply: %d paths changed on the host since the run; nothing was applied (see them with 'tooljail changes diff %s'; --force applies anyway)\n", len(ce.Conflicts), id)
		}
		return 1
	}
	if err != nil {
		return fail(c.errw, "changes apply: %v", err)
	}
	if c.json {
		return c.printJSON(map[string]any{"id": id, "state": changes.StateApplied, "applied": res.Applied, "skipped": nonNilEntries(res.Skipped), "conflicts": res.Conflicts})
	}
	fmt.Fprintf(c.out, "applied %d changes of %s\n", res.Applied, id)
	for _, e := range res.Skipped {
		why := e.Skipped
		if e.Protected {
			why = "protected"
		}
		fmt.Fprintf(c.out, "not applied: %s (%s)\n", quotePath(e.Path), why)
	}
	for _, cf := range res.Conflicts {
		fmt.Fprintf(c.out, "overwritten (--force): %s: %s\n", quotePath(cf.Path), cf.Why)
	}
	return 0
}

func nonNilEntries(e []changes.Entry) []changes.Entry {
	if e == nil {
		return []changes.Entry{}
	}
	return e
}
