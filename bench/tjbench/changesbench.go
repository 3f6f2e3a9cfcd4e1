package main

// The "Change sets" section (issue 30): what --changes costs. Start-up of
// `tooljail run -- /bin/true` with --changes review and record against the
// same run without (alternated run by run; nothing is written, so each
// set is empty and removed: this is the overlay's and the store's fixed
// cost), and `tooljail changes apply` of a set of 100 changed files in
// workdirs of 10,000 and 100,000 files: an apply reads the set, never the
// tree, so the two must be alike.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tooljail/tooljail/bench"
)

const (
	changesHeading      = "## Change sets"
	changesStartTarget  = 1.10 // --changes review (record) start-up ÷ off
	changesApplyTarget  = 50.0 // ms for `changes apply` of 100 files
	changesApplyChanged = 100  // files a set changes
)

// changesTrees are the workdir sizes the apply is timed in.
var changesTrees = []int{10_000, 100_000}

// changesModes are the start-up variants, in the section's order.
var changesModes = []string{"off", "review", "record"}

// changesResult is everything the section reports.
type changesResult struct {
	Date    string    `json:"date"`
	Seconds float64   `json:"seconds"`
	Load    [2]string `json:"load_before_after"`
	Runs    int       `json:"startup_runs_each"`
	Applies int       `json:"applies_each"`
	// Startup is the wall time of a run, by mode.
	Startup map[string]timing `json:"startup"`
	// Apply is the wall time of `tooljail changes apply ID` of a set of
	// changesApplyChanged files, by the workdir's file count.
	Apply    map[int]timing    `json:"apply"`
	Commands map[string]string `json:"commands"`
}

// changesTree makes a workdir of n regular files in 100 directories
// (d00/f0 ... d99/fN) owned by uid:gid, the set's files being each
// directory's first ones.
func changesTree(dir string, n, uid, gid int) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	per := n / 100
	for d := 0; d < 100; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			return err
		}
		for f := 0; f < per; f++ {
			p := filepath.Join(sub, fmt.Sprintf("f%d", f))
			if err := os.WriteFile(p, []byte(p+"\n"), 0o644); err != nil {
				return err
			}
			if err := os.Lchown(p, uid, gid); err != nil {
				return err
			}
		}
		if err := os.Lchown(sub, uid, gid); err != nil {
			return err
		}
	}
	return os.Lchown(dir, uid, gid)
}

// changesScript changes one file in each of the 100 directories.
const changesScript = `for d in d*; do printf 'changed\n' >> "$d/f0"; done`

// reviewSet runs changesScript in wd with --changes review and returns
// the kept set's id.
func reviewSet(tooljail, wd, store string) (string, error) {
	rep := filepath.Join(filepath.Dir(store), "review-report.json")
	cmd := exec.Command(tooljail, "run", "-q", "--report", rep, "--changes", "review", "--changes-dir", store, "--", "/bin/sh", "-c", changesScript)
	cmd.Dir = wd
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("review run in %s: %v: %s", wd, err, out)
	}
	var r struct {
		Changes struct {
			ID      string `json:"id"`
			State   string `json:"state"`
			Entries []any  `json:"entries"`
		} `json:"changes"`
	}
	b, err := os.ReadFile(rep)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return "", fmt.Errorf("review run's report: %v", err)
	}
	if r.Changes.ID == "" || len(r.Changes.Entries) != changesApplyChanged {
		return "", fmt.Errorf("review run: want a kept set of %d entries, got id %q state %q with %d", changesApplyChanged, r.Changes.ID, r.Changes.State, len(r.Changes.Entries))
	}
	return r.Changes.ID, nil
}

// changesBench measures the section in work (its own workdirs and store),
// as root, the workdirs owned by uid:gid (the jail's host user).
func changesBench(tooljail, work string, runs, applies, uid, gid int) (*changesResult, error) {
	began := time.Now()
	res := &changesResult{Date: began.UTC().Format(time.RFC3339), Runs: runs, Applies: applies, Load: [2]string{loadAvg()},
		Startup: map[string]timing{}, Apply: map[int]timing{}, Commands: map[string]string{}}
	dir := filepath.Join(work, "changes")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	store := filepath.Join(dir, "store")
	if err := changesStartup(res, tooljail, dir, store, runs, uid, gid); err != nil {
		return nil, err
	}
	for _, n := range changesTrees {
		step("change sets: apply of %d files in a workdir of %d files, %d times", changesApplyChanged, n, applies)
		t, err := changesApply(res, tooljail, filepath.Join(dir, fmt.Sprintf("wd%d", n)), store, n, applies, uid, gid)
		if err != nil {
			return nil, err
		}
		res.Apply[n] = t
	}
	res.Load[1] = loadAvg()
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// changesStartup times `tooljail run` with each --changes mode,
// alternated, in a workdir of 100 files below dir.
func changesStartup(res *changesResult, tooljail, dir, store string, runs, uid, gid int) error {
	wd := filepath.Join(dir, "wd")
	if err := changesTree(wd, 100, uid, gid); err != nil {
		return err
	}
	var rs []runner
	for _, m := range changesModes {
		argv := []string{tooljail, "run", "-q"}
		if m != "off" {
			argv = append(argv, "--changes", m, "--changes-dir", store)
		}
		argv = append(argv, "--", "/bin/true")
		res.Commands[m] = strings.ReplaceAll(shellJoin(argv), store, "STORE")
		rs = append(rs, execRunner("tooljail run --changes "+m, argv, wd, nil, nil))
	}
	if err := warm(rs, 5); err != nil {
		return err
	}
	step("change sets: start-up, %d x --changes off, review, record, alternating", runs)
	ts, err := measureAlternating(rs, runs)
	if err != nil {
		return err
	}
	for i, m := range changesModes {
		res.Startup[m] = ts[i]
	}
	return nil
}

// changesApply times applies of a reviewed set of changesApplyChanged
// files in wd, a workdir of n files, after one untimed apply; wd is
// removed after.
func changesApply(res *changesResult, tooljail, wd, store string, n, applies, uid, gid int) (timing, error) {
	if err := changesTree(wd, n, uid, gid); err != nil {
		return timing{}, err
	}
	var ds []time.Duration
	for i := 0; i < applies+1; i++ {
		id, err := reviewSet(tooljail, wd, store)
		if err != nil {
			return timing{}, err
		}
		argv := []string{tooljail, "changes", "apply", id, "--changes-dir", store}
		res.Commands["apply"] = strings.ReplaceAll(strings.ReplaceAll(shellJoin(argv), store, "STORE"), id, "ID")
		start := time.Now()
		if err := execRunner("tooljail changes apply", argv, wd, nil, nil).run(); err != nil {
			return timing{}, err
		}
		if i > 0 { // the first is a warm-up
			ds = append(ds, time.Since(start))
		}
		// The applied set's record stays until gc: keep the store small.
		// (Untimed; the store goes at the end anyway.)
		exec.Command(tooljail, "changes", "discard", id, "--changes-dir", store).Run()
	}
	return toTiming(ds), os.RemoveAll(wd)
}

// changesRows are the targets rows: start-up with review and record ÷
// off (≤ 1.1×), and the apply in the largest workdir (< 50 ms) with the
// smaller one beside it.
func changesRows(c *changesResult) [][]string {
	met := func(ok bool, valid bool) string {
		switch {
		case !valid:
			return "not measured"
		case ok:
			return "met"
		}
		return "**not met**"
	}
	off := med(c.Startup["off"])
	var rows [][]string
	for _, m := range []string{"review", "record"} {
		t := med(c.Startup[m])
		r := bench.Ratio(t, off)
		rows = append(rows, []string{fmt.Sprintf("start-up with `--changes %s` ÷ without, medians of %d", m, c.Runs),
			fmt.Sprintf("≤ %.2f×", changesStartTarget),
			fmt.Sprintf("%s (%s vs %s)", bench.FormatRatio(t, off), fms(t), fms(off)), met(r <= changesStartTarget, !math.IsNaN(r))})
	}
	small, large := med(c.Apply[changesTrees[0]]), med(c.Apply[changesTrees[len(changesTrees)-1]])
	rows = append(rows, []string{fmt.Sprintf("`changes apply` of %d changed files in a workdir of %d files, median of %d", changesApplyChanged, changesTrees[len(changesTrees)-1], c.Applies),
		fmt.Sprintf("< %.0f ms, alike at %d files", changesApplyTarget, changesTrees[0]),
		fmt.Sprintf("%s (%d files: %s, %s)", fms(large), changesTrees[0], fms(small), bench.FormatRatio(large, small)),
		met(large < changesApplyTarget, !math.IsNaN(large))})
	return rows
}

// renderChanges writes the "Change sets" section.
func renderChanges(p func(string, ...any), c *changesResult) {
	p("%s\n\n", changesHeading)
	off := med(c.Startup["off"])
	var st [][]string
	for _, m := range changesModes {
		t := c.Startup[m]
		st = append(st, []string{"`--changes " + m + "`", fms(med(t)), fms(p10(t)), fms(p90(t)), bench.FormatRatio(med(t), off)})
	}
	p("Start-up of `tooljail run -q -- /bin/true` in a workdir of 100 files, %d runs per mode, alternated\n", c.Runs)
	p("(target ≤ %.2f× without):\n\n", changesStartTarget)
	p("%s\n", bench.Table([]string{"mode", "median", "p10", "p90", "÷ off"}, st))
	p("The command writes nothing, so each set is empty and removed at the end: this is what the overlay\n")
	p("(an upper and a work directory made in the store, the lower bind made read-only, overlayfs mounted\n")
	p("over it in the jail's user namespace) and the store (opened, the set made, scanned, removed) cost\n")
	p("a run, whatever the workdir holds.\n\n")
	var ap [][]string
	for _, n := range changesTrees {
		t := c.Apply[n]
		ap = append(ap, []string{fmt.Sprintf("%d", n), fms(med(t)), fms(p10(t)), fms(p90(t)), fms(minOf(t))})
	}
	p("`tooljail changes apply ID` of a set of %d changed files (one in each of 100 directories, each file\n", changesApplyChanged)
	p("appended to in a `--changes review` run, untimed), %d applies per workdir size, wall time of the\n", c.Applies)
	p("whole process (its start included) (target < %.0f ms, and alike for both sizes: an apply reads the\n", changesApplyTarget)
	p("set and the paths it names, never the tree):\n\n")
	p("%s\n", bench.Table([]string{"files in the workdir", "median", "p10", "p90", "min"}, ap))
	p("Commands (STORE: the bench's store, ID: the set's id):\n\n")
	for _, m := range changesModes {
		p("    %s\n", c.Commands[m])
	}
	p("    %s\n\n", c.Commands["apply"])
	p("Measured %s in %.0f s (`tjbench -only changes` measures this section alone); load average\n", c.Date, c.Seconds)
	p("before / after: %s / %s.\n\n", c.Load[0], c.Load[1])
}

// spliceTargetRows puts rows into the design targets table of doc (for
// -only changes, which rewrites its own section and its rows, nothing
// else): an existing row whose target cell is one of rows' is replaced in
// place, the others go before the table's last row (supervisor memory).
func spliceTargetRows(doc string, rows [][]string) (string, error) {
	const heading = "## Design targets (DESIGN.md section 8)"
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		return "", fmt.Errorf("no %q section", heading)
	}
	lines := strings.Split(doc, "\n")
	first, last := -1, -1
	at := strings.Count(doc[:start+1], "\n")
	for i := at + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			break
		}
		if strings.HasPrefix(lines[i], "| ") {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last < first+2 {
		return "", fmt.Errorf("the %q section has no table rows", heading)
	}
	rowLine := func(cells []string) string {
		return strings.TrimSuffix(strings.SplitN(bench.Table([]string{"", "", "", ""}, [][]string{cells}), "\n", 3)[2], "\n")
	}
	// A row is known by what it measures, not by how many runs it took
	// ("..., medians of 200").
	key := func(cell string) string { k, _, _ := strings.Cut(cell, ", median"); return k }
	var add []string
	for _, r := range rows {
		line, done := rowLine(r), false
		for i := first + 2; i <= last; i++ {
			if cell, _, ok := strings.Cut(strings.TrimPrefix(lines[i], "| "), " |"); ok && key(cell) == key(r[0]) {
				if done {
					lines[i] = "" // an older duplicate: dropped below
					continue
				}
				lines[i], done = line, true
			}
		}
		if !done {
			add = append(add, line)
		}
	}
	out := append(append(append([]string{}, lines[:last]...), add...), lines[last:]...)
	kept := out[:0]
	for i, l := range out {
		if l == "" && i > first && i < last+len(add) {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n"), nil
}
