package main

// Issue 32's targets, judged on one run's figures. goals is the one source
// of both the report's "Issue 32 targets" section and the one-screen
// summary that `make bench` prints at its end, so the two cannot disagree.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/tooljail/tooljail/bench"
)

const summaryHeading = "## Issue 32 targets"

// What judge says of a goal.
const (
	goalMet         = "met"
	goalNotMet      = "NOT MET"
	goalNotMeasured = "not measured"
)

// goal is one of issue 32's targets and this run's figure for it.
type goal struct {
	what   string
	bound  float64 // the limit on figure
	atMost bool    // met when figure ≤ bound; else when figure ≥ bound
	unit   string  // "×" for a ratio, " ms" for a time
	figure float64 // NaN when the bench did not measure it
	detail string  // what the figure is made of, e.g. "21.0 vs 7.00 ms"
}

// judge is the met / not met / not measured decision: a figure that is
// not a number was not measured, never met or missed.
func judge(figure, bound float64, atMost bool) string {
	switch {
	case math.IsNaN(figure) || math.IsInf(figure, 0):
		return goalNotMeasured
	case atMost && figure <= bound, !atMost && figure >= bound:
		return goalMet
	}
	return goalNotMet
}

func (g goal) verdict() string { return judge(g.figure, g.bound, g.atMost) }

// boundText is "≤ 1.30×" or "≥ 0.95×" or "≤ 2.00 ms".
func (g goal) boundText() string {
	op := "≥"
	if g.atMost {
		op = "≤"
	}
	return fmt.Sprintf("%s %.2f%s", op, g.bound, g.unit)
}

// figureText is the figure and its detail, or "–" when not measured.
func (g goal) figureText() string {
	if g.verdict() == goalNotMeasured {
		return "–"
	}
	s := fmt.Sprintf("%.2f%s", g.figure, g.unit)
	if g.detail != "" {
		s += " (" + g.detail + ")"
	}
	return s
}

// ratioGoal is a goal on num ÷ den, with both in the detail.
func ratioGoal(what string, bound float64, atMost bool, num, den float64, format func(float64) string) goal {
	g := goal{what: what, bound: bound, atMost: atMost, unit: "×", figure: bench.Ratio(num, den)}
	if !math.IsNaN(g.figure) {
		g.detail = format(num) + " vs " + format(den)
	}
	return g
}

// Layer labels the embedded figure is read from (specs.go's ladder).
const (
	layerEmbedded      = "+cgroup"
	layerEmbeddedFresh = "+cgroup, root built"
	layerBwrap         = "bwrap (reference)"
)

// layerMedian is the median of the ladder step labelled label (NaN if
// the run has none).
func layerMedian(r *results, label string) float64 {
	for _, l := range r.Layers {
		if l.Label == label {
			return med(l.T)
		}
	}
	return math.NaN()
}

// goals are issue 32's targets in its order: the CLI, the embedded
// package, the served path, then the restated network and denied-call
// targets.
func goals(r *results) []goal {
	tj, bw, _, goproc, hello := startupTimings(r)
	embedded := layerMedian(r, layerEmbedded)
	gs := []goal{
		ratioGoal("CLI: `tooljail version` ÷ static Go hello world", versionTargetRatio, true, med(goproc), med(hello), fms),
		ratioGoal("CLI: `tooljail run` ÷ bwrap", 1.3, true, med(tj), med(bw), fms),
		cliAddsGoal(med(tj)-med(goproc), layerMedian(r, layerEmbeddedFresh)),
		ratioGoal("embedded: jail package ÷ bwrap", 0.75, true, embedded, layerMedian(r, layerBwrap), fms),
	}
	gs = append(gs, servedGoals(r.Serve)...)
	gs = append(gs, proxyGoal(r.Net), deniedGoal(r.Denied))
	return gs
}

// cliAddsGoal is "what `tooljail run` adds beyond `tooljail version` at
// most the embedded jail's time plus 2 ms": the figure is the excess over
// the embedded jail's time, bounded by 2 ms. The embedded jail is the one
// that builds its root each run, as the CLI's does (one run per process:
// no root template).
func cliAddsGoal(adds, embedded float64) goal {
	g := goal{what: "CLI: run − version, beyond the embedded jail", bound: 2, atMost: true, unit: " ms", figure: adds - embedded}
	if !math.IsNaN(g.figure) {
		g.detail = fms(adds) + " − " + fms(embedded)
	}
	return g
}

// servedGoals are the served path's four targets, from Python; all not
// measured in a run without the served section.
func servedGoals(s *serveResult) []goal {
	if s == nil {
		s = &serveResult{}
	}
	sv, bw := s.latency("served"), s.latency("bwrap")
	st, bt := s.tput("served"), s.tput("bwrap")
	session := math.NaN()
	if s.Session != nil {
		session = s.Session.Median
	}
	return []goal{
		ratioGoal("served: latency ÷ bwrap, median", 0.35, true, sv.Median, bw.Median, fms),
		ratioGoal(fmt.Sprintf("served: throughput at c=%d ÷ bwrap", serveConc), 2, false, st.PerSec, bt.PerSec, bench.FormatRate),
		ratioGoal("served: CPU per run ÷ bwrap's", 1, true, st.total(), bt.total(), fms),
		ratioGoal("served: session call ÷ bwrap, median", 0.25, true, session, bw.Median, fms),
	}
}

// proxyGoal is the allow mode's proxy (CONNECT) ÷ a bare user-space relay,
// 100 MiB downloads, medians.
func proxyGoal(n *netResult) goal {
	proxy, relay := math.NaN(), math.NaN()
	if n != nil {
		proxy, relay = bench.Median(n.Download["connect"]), bench.Median(n.Download["relay"])
	}
	return ratioGoal("network: proxy ÷ bare relay, download", 0.95, false, proxy, relay, mbText)
}

// deniedGoal is the supervisor's CPU per denied call ÷ a blocking pipe
// round trip between two processes.
func deniedGoal(d *deniedResult) goal {
	sup, pipe := math.NaN(), math.NaN()
	if d != nil {
		sup, pipe = bench.Median(d.Supervisor), bench.Median(d.Pipe)
	}
	return ratioGoal("denied call: supervisor CPU ÷ pipe round trip", 1.2, true, sup, pipe, usText)
}

// goalRows are the rows of both the report's table and the summary.
func goalRows(gs []goal) [][]string {
	rows := make([][]string, len(gs))
	for i, g := range gs {
		rows[i] = []string{g.what, g.boundText(), g.figureText(), g.verdict()}
	}
	return rows
}

// goalCounts is "3 met, 5 not met, 2 not measured".
func goalCounts(gs []goal) string {
	n := map[string]int{}
	for _, g := range gs {
		n[g.verdict()]++
	}
	return fmt.Sprintf("%d met, %d not met, %d not measured", n[goalMet], n[goalNotMet], n[goalNotMeasured])
}

// renderSummary is the report's section of issue 32's targets; from says
// which run's figures they are (several after -only runs).
func renderSummary(p func(string, ...any), gs []goal, from string) {
	rows := goalRows(gs)
	for _, row := range rows {
		if row[3] == goalNotMet {
			row[3] = "**not met**" // as in the report's other tables
		}
	}
	p("%s\n\n", summaryHeading)
	p("%s\n", bench.Table([]string{"target", "goal", "measured", "met"}, rows))
	p("%s; figures from %s. Each is a ratio of medians measured side by side\n", goalCounts(gs), from)
	p("in one run; the served ones called from Python, CPU per run being Python + server + jails against\n")
	p("Python + bwrap. \"embedded\" is the start-up ladder's +cgroup step: the whole default Spec through\n")
	p("the `jail` package; \"run − version\" is set against its \"+cgroup, root built\" step, a jail that\n")
	p("builds its root as the CLI's does. `make bench` prints this table at its end; `bench/.work/tjbench -summary`\n")
	p("prints it again from `bench/.work/raw*.json`.\n\n")
}

// printSummary writes the one-screen summary: the same rows as the
// report's section, aligned for a terminal.
func printSummary(w io.Writer, gs []goal, from string) {
	fmt.Fprintf(w, "\nIssue 32 targets (%s):\n", from)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  target\tgoal\tmeasured\tmet")
	for _, row := range goalRows(gs) {
		row[0] = strings.ReplaceAll(row[0], "`", "")
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", row[0], row[1], row[2], row[3])
	}
	tw.Flush()
	fmt.Fprintf(w, "  %s.\n", goalCounts(gs))
}

// savedResults is the last whole run's raw.json in work, with the part of
// each later -only run (raw-<part>.json, newer) put over it; from says
// which file each came from. Without raw.json, the -only parts alone.
func savedResults(work string) (r *results, from string, err error) {
	r = &results{}
	base := filepath.Join(work, "raw.json")
	baseInfo, err := os.Stat(base)
	var sources []string
	if err == nil {
		if err := readJSON(base, r); err != nil {
			return nil, "", err
		}
		sources = append(sources, "raw.json of "+r.Machine.Date)
	}
	for _, part := range []string{"serve", "net", "changes"} {
		path := filepath.Join(work, "raw-"+part+".json")
		fi, err := os.Stat(path)
		if err != nil || (baseInfo != nil && !fi.ModTime().After(baseInfo.ModTime())) {
			continue
		}
		var pr results
		if err := readJSON(path, &pr); err != nil {
			return nil, "", err
		}
		overlay(r, &pr, part)
		sources = append(sources, "-only "+part+" of "+pr.Machine.Date)
	}
	if len(sources) == 0 {
		return nil, "", fmt.Errorf("no raw.json or raw-<part>.json in %s: run the bench first", work)
	}
	return r, strings.Join(sources, ", "), nil
}

// overlay puts part's figures of from into r.
func overlay(r, from *results, part string) {
	switch part {
	case "serve":
		r.Serve = from.Serve
	case "net":
		r.Net = from.Net
	case "changes":
		r.Changes = from.Changes
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
