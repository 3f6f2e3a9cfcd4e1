package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tooljail/tooljail/bench"
	"github.com/tooljail/tooljail/seccomp"
)

// The seccomp-cost loop runs bench/tjloop in six variants, alternated run
// by run: outside with no filter, with a one-instruction allow-all filter
// (the kernel's fixed cost of any filter), with tooljail's own filter, and
// with that filter behind a prefix that keeps the kernel's action cache
// out; then in a jail with seccomp off and in a default jail. Keys, in the
// order of the report's table:
const (
	vNone     = "none"
	vAllowAll = "allow-all"
	vTooljail = "tooljail"
	vNoCache  = "tooljail-nocache"
	vJailOff  = "jail-no-seccomp"
	vJail     = "jail"
)

var loopKeys = []string{vNone, vAllowAll, vTooljail, vNoCache, vJailOff, vJail}

// filterInfo is tooljail's filter as the outside variants load it.
type filterInfo struct {
	Path        string `json:"path"`         // raw program, seccomp.Program.Filter
	Insns       int    `json:"instructions"` // of that program (EPERM variant)
	NotifyInsns int    `json:"notify_instructions,omitempty"`
	NotifyErr   string `json:"notify_error,omitempty"`
}

// writeFilter compiles the default profile's seccomp policy, as
// `tooljail run` would for wd, and writes the program to work/filter.bpf.
// Outside a jail there is no supervisor to answer user notifications (and
// installing a notify filter needs SECCOMP_FILTER_FLAG_NEW_LISTENER), so
// this is the EPERM variant: the same allowlist and the same path through
// the program for every allowed call, only the return value of a denied
// call differs. The loop makes no denied call. The jail itself loads the
// notify variant; its length is recorded for the report.
func writeFilter(work, wd string) (filterInfo, error) {
	spec, err := defaultSpec(wd, "/bin/true")
	if err != nil {
		return filterInfo{}, err
	}
	if spec.Seccomp == nil {
		return filterInfo{}, fmt.Errorf("the default profile has seccomp off: nothing to measure")
	}
	// Memory only: the bench leaves the user's disk cache alone.
	comp := &seccomp.Compiler{}
	prog, err := comp.Compile(*spec.Seccomp, false)
	if err != nil {
		return filterInfo{}, fmt.Errorf("compile the default seccomp policy: %w", err)
	}
	fi := filterInfo{Path: filepath.Join(work, "filter.bpf"), Insns: prog.Instructions()}
	if err := os.WriteFile(fi.Path, prog.Filter, 0o644); err != nil {
		return fi, err
	}
	if np, err := comp.Compile(*spec.Seccomp, true); err != nil {
		fi.NotifyErr = err.Error()
	} else {
		fi.NotifyInsns = np.Instructions()
	}
	return fi, nil
}

// loopVariant is one variant's loops: the loop's wall time and the CPU
// time of the looping thread, ms per loop.
type loopVariant struct {
	Key  string   `json:"key"`
	Argv []string `json:"argv"`
	Wall timing   `json:"wall"`
	CPU  timing   `json:"cpu"`
}

// loopResult is the seccomp-cost loop of one syscall.
type loopResult struct {
	Call     string        `json:"call"`
	Calls    int           `json:"calls"`
	Reps     int           `json:"reps"`
	Variants []loopVariant `json:"variants"`
}

// variant returns the variant with key, or an empty one (no samples).
func (l *loopResult) variant(key string) loopVariant {
	for _, v := range l.Variants {
		if v.Key == key {
			return v
		}
	}
	return loopVariant{Key: key}
}

// loopArgvs is the command line of each variant, in loopKeys order.
func loopArgvs(tooljail, loopBin, filter, noSeccompProfile, call string, calls int) [][]string {
	n := strconv.Itoa(calls)
	return [][]string{
		{loopBin, call, n},
		{loopBin, "-filter", "allow-all", call, n},
		{loopBin, "-filter", filter, call, n},
		{loopBin, "-filter", filter, "-nocache", call, n},
		{tooljail, "run", "-q", "--profile", noSeccompProfile, "--", loopBin, call, n},
		{tooljail, "run", "-q", "--", loopBin, call, n},
	}
}

// roundOrder is the order of the variants in round r: each round starts
// one variant further along, and every other round runs backwards, so that
// no variant always runs right after the same other one (what one run
// leaves behind, warm caches or a busy neighbour, would bias that pair).
func roundOrder(r, n int) []int {
	out := make([]int, n)
	for k := range out {
		if r%2 == 0 {
			out[k] = (r + k) % n
		} else {
			out[k] = (r + n - 1 - k) % n
		}
	}
	return out
}

// syscallLoop runs every variant reps times, alternated run by run in
// roundOrder.
func syscallLoop(argvs [][]string, wd, call string, calls, reps int) (loopResult, error) {
	res := loopResult{Call: call, Calls: calls, Reps: reps}
	wall := make([][]time.Duration, len(argvs))
	cpus := make([][]time.Duration, len(argvs))
	for r := 0; r < reps; r++ {
		for _, i := range roundOrder(r, len(argvs)) {
			cmd := exec.Command(argvs[i][0], argvs[i][1:]...)
			cmd.Dir = wd
			cmd.Stdin = devNull
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				return res, fmt.Errorf("%s: %v: %s", strings.Join(argvs[i], " "), err, strings.TrimSpace(errb.String()))
			}
			var ns, cpu int64
			if _, err := fmt.Sscanf(out.String(), "ns %d cpu_ns %d", &ns, &cpu); err != nil {
				return res, fmt.Errorf("%s: unexpected output %q", strings.Join(argvs[i], " "), out.String())
			}
			wall[i] = append(wall[i], time.Duration(ns))
			cpus[i] = append(cpus[i], time.Duration(cpu))
		}
	}
	for i, argv := range argvs {
		res.Variants = append(res.Variants, loopVariant{Key: loopKeys[i], Argv: argv, Wall: toTiming(wall[i]), CPU: toTiming(cpus[i])})
	}
	return res, nil
}

func nsPerCall(ms float64, calls int) float64 {
	if calls <= 0 {
		return math.NaN()
	}
	return ms * 1e6 / float64(calls)
}

// cpuNs is the median CPU time per call of a variant, in ns (NaN without
// samples).
func (l *loopResult) cpuNs(key string) float64 { return nsPerCall(med(l.variant(key).CPU), l.Calls) }

// costs is the breakdown the report states. Each difference is paired
// round by round (see paired); the percentages are of the median
// no-filter loop outside, the filter in the jail's of the median
// seccomp-off jail loop. On a shared machine a loop's time jumps between
// levels from round to round (see BENCHMARKS.md), so the medians of two
// variants can land on different levels; the median of the paired
// differences does not.
type costs struct {
	Floor    paired // allow-all − no filter: the kernel's fixed cost of any filter
	Above    paired // tooljail's filter − allow-all: what our program adds
	Outside  paired // tooljail's filter − no filter
	Uncached paired // cache defeated − tooljail's filter: the BPF run the cache saves
	Jail     paired // in the jail − no filter outside: the DESIGN target
	InJail   paired // jail − jail with seccomp off: the filter in the jail

	FloorPct, AbovePct, OutsidePct, JailPct, InJailPct float64
}

func (l *loopResult) costs() costs {
	c := costs{
		Floor:    l.paired(vNone, vAllowAll),
		Above:    l.paired(vAllowAll, vTooljail),
		Outside:  l.paired(vNone, vTooljail),
		Uncached: l.paired(vTooljail, vNoCache),
		Jail:     l.paired(vNone, vJail),
		InJail:   l.paired(vJailOff, vJail),
	}
	none := l.cpuNs(vNone)
	pct := func(p paired, base float64) float64 { return 100 * bench.Ratio(p.Median, base) }
	c.FloorPct, c.AbovePct, c.OutsidePct, c.JailPct = pct(c.Floor, none), pct(c.Above, none), pct(c.Outside, none), pct(c.Jail, none)
	c.InJailPct = pct(c.InJail, l.cpuNs(vJailOff))
	return c
}

// paired is b − a round by round (the variants of one round ran back to
// back, so pairing within a round cancels the drift of a shared machine
// between rounds): the median difference in ns per call of CPU time, and
// in how many rounds b was the slower.
type paired struct {
	Rounds int
	Slower int
	Median float64
}

func (l *loopResult) paired(a, b string) paired {
	as, bs := l.variant(a).CPU.Samples, l.variant(b).CPU.Samples
	n := min(len(as), len(bs))
	p := paired{Rounds: n}
	d := make([]float64, n)
	for i := range d {
		d[i] = nsPerCall(bs[i]-as[i], l.Calls)
		if d[i] > 0 {
			p.Slower++
		}
	}
	p.Median = bench.Median(d) // NaN without rounds
	return p
}

// rounds is "slower in 13 of 15 rounds".
func (p paired) rounds() string {
	if p.Rounds == 0 {
		return "no rounds"
	}
	return fmt.Sprintf("slower in %d of %d rounds", p.Slower, p.Rounds)
}

// cacheEvidence compares tooljail's filter, round by round, with the
// allow-all filter and with the same program with the action cache
// defeated.
type cacheEvidence struct {
	Rounds int     `json:"rounds"`
	Slower int     `json:"slower"` // rounds in which the cache-defeated program was slower
	Saved  float64 `json:"saved"`  // median of (cache defeated − tooljail's filter), ns per call
	Above  float64 `json:"above"`  // median of (tooljail's filter − allow-all), ns per call
}

func (c costs) cacheEvidence() cacheEvidence {
	saved, above := c.Uncached, c.Above
	return cacheEvidence{Rounds: min(saved.Rounds, above.Rounds), Slower: saved.Slower, Saved: saved.Median, Above: above.Median}
}

// verdict says whether the kernel's action cache evidently covers the
// call under tooljail's filter: then the filter costs what an allow-all
// filter costs, while the same program with the cache defeated is slower
// in most rounds (at least 4 in 5, by at least minBPF ns per call).
// Anything weaker is "cannot tell", not a guess.
func (e cacheEvidence) verdict(minBPF float64) string {
	const minRounds = 5
	switch {
	case e.Rounds < minRounds:
		return fmt.Sprintf("cannot tell from %d loops per variant (it takes at least %d)", e.Rounds, minRounds)
	case e.Slower*5 < e.Rounds*4 || e.Saved < minBPF:
		return fmt.Sprintf("cannot tell: the program with the cache defeated was slower than tooljail's filter in only %d of %d rounds (median %+.0f ns per call), within the noise", e.Slower, e.Rounds, e.Saved)
	case e.Above <= e.Saved/3:
		return fmt.Sprintf("yes: round by round, tooljail's filter costs what the allow-all filter costs (median %+.0f ns per call), while the same program with the cache defeated is slower in %d of %d rounds, by a median %.0f ns per call; so the kernel does not run the program for this call", e.Above, e.Slower, e.Rounds, e.Saved)
	case e.Above >= 2*e.Saved/3:
		return fmt.Sprintf("no: round by round, tooljail's filter costs a median %+.0f ns per call above the allow-all filter, close to the %.0f ns that running the program costs (cache defeated − tooljail's filter), so the program runs on every call", e.Above, e.Saved)
	}
	return fmt.Sprintf("unclear: round by round, tooljail's filter costs a median %+.0f ns per call above the allow-all filter, the program with the cache defeated %.0f ns more than tooljail's filter", e.Above, e.Saved)
}

// floorSentence says what the floor means for the DESIGN target.
func floorSentence(c costs, target float64) string {
	switch {
	case math.IsNaN(c.FloorPct):
		return ""
	case c.FloorPct >= target:
		return fmt.Sprintf("The floor alone is %s, at or above the %.0f %% target: on this kernel no seccomp filter at all, however short, meets it on this loop; only the part above the floor is tooljail's to cut.", pctText(c.FloorPct), target)
	}
	return fmt.Sprintf("The floor alone is %s, under the %.0f %% target; the rest of the cost is the part above the floor.", pctText(c.FloorPct), target)
}

func pctText(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "n/a"
	}
	if math.Abs(p) < 0.05 {
		p = 0
	}
	return fmt.Sprintf("%+.1f %%", p)
}

func nsText(ns float64) string {
	if math.IsNaN(ns) || math.IsInf(ns, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func deltaText(ns, pct float64) string {
	if math.IsNaN(ns) || math.IsInf(ns, 0) {
		return "n/a"
	}
	if math.Abs(ns) < 0.5 {
		ns = 0
	}
	return fmt.Sprintf("%+.0f ns (%s)", ns, pctText(pct))
}

// renderSeccomp writes the "Seccomp cost" section.
func renderSeccomp(p func(string, ...any), r *results) {
	p("## Seccomp cost\n\n")
	what := variantNames(r.Filter)
	for i := range r.Loops {
		renderLoop(p, &r.Loops[i], what)
	}
	renderSeccompMethod(p, r.Filter)
}

// variantNames are each loop variant's description and where it runs, for
// the filter fi.
func variantNames(fi filterInfo) map[string][2]string {
	insns := func(n int) string {
		if n <= 0 {
			return "? instructions"
		}
		return fmt.Sprintf("%d instructions", n)
	}
	return map[string][2]string{
		vNone:     {"no filter", "outside"},
		vAllowAll: {"allow-all filter (1 instruction, `return ALLOW`): the kernel's floor", "outside"},
		vTooljail: {fmt.Sprintf("tooljail's filter, default profile (EPERM variant, %s)", insns(fi.Insns)), "outside"},
		vNoCache:  {"tooljail's filter with the action cache defeated (+1 leading load of args[0])", "outside"},
		vJailOff:  {"jail with `[seccomp] enabled = false`", "in the jail"},
		vJail:     {fmt.Sprintf("jail, default profile (notify variant, %s)", insns(fi.NotifyInsns)), "in the jail"},
	}
}

// renderLoop is one call's table of variants and what the differences
// say; what names each variant and where it runs.
func renderLoop(p func(string, ...any), l *loopResult, what map[string][2]string) {
	none := l.cpuNs(vNone)
	rows := [][]string{}
	for _, k := range loopKeys {
		v := l.variant(k)
		vs := ""
		if k != vNone {
			d := l.paired(vNone, k)
			vs = fmt.Sprintf("%s, %s", deltaText(d.Median, 100*bench.Ratio(d.Median, none)), d.rounds())
		}
		rows = append(rows, []string{what[k][0], what[k][1],
			fmt.Sprintf("%s (min %s)", fms(med(v.CPU)), fms(minOf(v.CPU))), nsText(l.cpuNs(k)), vs,
			nsText(nsPerCall(med(v.Wall), l.Calls))})
	}
	p("### %d × %s, %d loops per variant\n\n", l.Calls, l.Call, l.Reps)
	p("%s\n", bench.Table([]string{"variant", "where", "CPU time of the loop, median (min)", "CPU ns/call, median", "vs no filter, round by round", "wall ns/call, median"}, rows))
	c := l.costs()
	p("- the kernel's floor, the cost of having any filter (allow-all − no filter): %s per call, %s\n", deltaText(c.Floor.Median, c.FloorPct), c.Floor.rounds())
	p("- **tooljail's filter above the floor** (tooljail's filter − allow-all): %s per call, %s\n", deltaText(c.Above.Median, c.AbovePct), c.Above.rounds())
	p("- tooljail's filter outside in all (about floor + above): %s per call, %s\n", deltaText(c.Outside.Median, c.OutsidePct), c.Outside.rounds())
	p("- what the action cache saves (cache defeated − tooljail's filter): %s per call, %s\n", nsText(c.Uncached.Median), c.Uncached.rounds())
	p("- in the jail vs outside, the DESIGN target: %s per call, %s; the filter alone in the jail (jail − jail with seccomp off): %s of the seccomp-off loop, %s\n",
		deltaText(c.Jail.Median, c.JailPct), c.Jail.rounds(), deltaText(c.InJail.Median, c.InJailPct), c.InJail.rounds())
	p("- does the kernel's action cache cover %s under tooljail's filter? %s\n", l.Call, c.cacheEvidence().verdict(5))
	if l.Call == "getppid" {
		if s := floorSentence(c, 2); s != "" {
			p("\n%s\n", s)
		}
	}
	p("\n")
}

// renderSeccompMethod says how the loops were run and what each variant
// is, for the filter fi.
func renderSeccompMethod(p func(string, ...any), fi filterInfo) {
	p("All in one alternating run: each round runs every variant once, starting one variant further\n")
	p("along, every other round in reverse order. The loop is timed inside the payload (`bench/tjloop`,\n")
	p("static Go, one locked thread), so start-up does not count. CPU time is that of the looping\n")
	p("thread (user + system; a filter runs in the thread's system time); medians over the loops, in parentheses the fastest. Differences are\n")
	p("paired round by round: the two loops of a round ran back to back, and a difference is the median\n")
	p("of the per-round differences, with the number of rounds in which the second variant was the\n")
	p("slower. On this shared machine a loop's time jumps between levels from one round to the next, so\n")
	p("the medians of two variants can sit on different levels; the paired differences cancel that.\n")
	p("Percentages are of the median no-filter loop outside (the jail's filter alone: of the median\n")
	p("seccomp-off jail loop). Wall time also holds the time the thread waited for a CPU.\n\n")
	p("The outside variants load the filter in tjloop before the loop, after\n")
	p("`PR_SET_NO_NEW_PRIVS`, on all threads (TSYNC), as the jail does before execve. tooljail's filter\n")
	p("outside is the default profile's allowlist compiled by the seccomp package without user\n")
	p("notification (`%s`): a notify filter needs a supervisor to answer,\n", relWork(fi.Path))
	p("and for an allowed call it takes the same path through the program; the loop makes no denied\n")
	p("call. Since Linux 5.11 the kernel precomputes, per syscall number, whether a filter allows a call whatever its arguments (by\n")
	p("emulating it with only the number and architecture known) and then skips the program; the\n")
	p("\"cache defeated\" variant prefixes a load of args[0], which stops that emulation for every call,\n")
	p("so it shows what running the program costs. \"seccomp off\" is the default profile with\n")
	p("`[seccomp] enabled = false` (`bench/.work/no-seccomp.toml`): the difference between it and outside\n")
	p("is the rest of the jail (cgroup CPU cap, Landlock, namespaces) and noise.\n\n")
}

// relWork shows a scratch path relative to the repository when it is under
// bench/.work.
func relWork(path string) string {
	if i := strings.Index(path, "bench/.work/"); i >= 0 {
		return path[i:]
	}
	return path
}

// seccompTarget is the DESIGN.md row: in the jail vs outside, with the
// floor stated so that a reader sees the kernel's part and ours.
func seccompTarget(l *loopResult) []string {
	c := l.costs()
	measured := fmt.Sprintf("%s (ratio of the medians: %s; wall time: %s); of it the kernel's floor for any filter (allow-all, outside): %s; tooljail's filter above that floor (outside): %s",
		pctText(c.JailPct), bench.FormatCost(med(l.variant(vJail).CPU), med(l.variant(vNone).CPU)),
		bench.FormatCost(med(l.variant(vJail).Wall), med(l.variant(vNone).Wall)), pctText(c.FloorPct), pctText(c.AbovePct))
	met := "not measured"
	switch {
	case math.IsNaN(c.JailPct):
	case c.JailPct < 2:
		met = "met"
	default:
		met = "**not met**"
	}
	return []string{fmt.Sprintf("seccomp cost: %d getppid in the jail vs outside without a filter (CPU time of the loop, median of the round-by-round differences)", l.Calls), "< 2 %", measured, met}
}
