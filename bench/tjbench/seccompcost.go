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

// syscallLoop runs every variant reps times, alternated run by run, each
// round starting one variant further along.
func syscallLoop(argvs [][]string, wd, call string, calls, reps int) (loopResult, error) {
	res := loopResult{Call: call, Calls: calls, Reps: reps}
	wall := make([][]time.Duration, len(argvs))
	cpus := make([][]time.Duration, len(argvs))
	for r := 0; r < reps; r++ {
		for k := range argvs {
			i := (r + k) % len(argvs)
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

// perCall is the median CPU time per call of each variant, in ns (NaN
// when a variant has no samples).
type perCall map[string]float64

func (l *loopResult) perCallCPU() perCall {
	pc := perCall{}
	for _, k := range loopKeys {
		pc[k] = nsPerCall(med(l.variant(k).CPU), l.Calls)
	}
	return pc
}

func nsPerCall(ms float64, calls int) float64 {
	if calls <= 0 {
		return math.NaN()
	}
	return ms * 1e6 / float64(calls)
}

// costs is the breakdown the report states, in ns per call and in % of
// the no-filter loop outside (so that floor and above-floor add up to the
// filter's total outside).
type costs struct {
	Floor, FloorPct     float64 // allow-all − no filter: the kernel's fixed cost
	Above, AbovePct     float64 // tooljail − allow-all: what our program adds
	Outside, OutsidePct float64 // tooljail − no filter
	Uncached            float64 // cache defeated − tooljail: the BPF run the cache saves
	Jail, JailPct       float64 // in the jail − no filter outside: the DESIGN target
	InJail, InJailPct   float64 // jail − jail with seccomp off (% of the latter): the filter in the jail
}

func (pc perCall) costs() costs {
	none := pc[vNone]
	pct := func(d, base float64) float64 { return 100 * bench.Ratio(d, base) }
	c := costs{
		Floor:    pc[vAllowAll] - none,
		Above:    pc[vTooljail] - pc[vAllowAll],
		Outside:  pc[vTooljail] - none,
		Uncached: pc[vNoCache] - pc[vTooljail],
		Jail:     pc[vJail] - none,
		InJail:   pc[vJail] - pc[vJailOff],
	}
	c.FloorPct, c.AbovePct, c.OutsidePct = pct(c.Floor, none), pct(c.Above, none), pct(c.Outside, none)
	c.JailPct, c.InJailPct = pct(c.Jail, none), pct(c.InJail, pc[vJailOff])
	return c
}

// cacheVerdict says whether the kernel's action cache evidently covers the
// call under tooljail's filter: the filter then costs what an allow-all
// filter costs, while the same program with the cache defeated costs
// clearly more. minBPF is the least difference (ns per call) the
// cache-defeated run must show for either verdict, so noise alone gives
// "cannot tell".
func cacheVerdict(c costs, minBPF float64) string {
	if math.IsNaN(c.Above) || math.IsNaN(c.Uncached) {
		return "cannot tell (a variant is missing)"
	}
	saved := c.Uncached
	switch {
	case saved < minBPF:
		return fmt.Sprintf("cannot tell: running the whole program costs only %+.0f ns per call here, within the noise", saved)
	case c.Above <= saved/3:
		return fmt.Sprintf("yes: tooljail's filter costs what the allow-all filter costs (%+.0f ns per call), while the same program with the cache defeated costs %.0f ns per call more, so the kernel does not run the program for this call", c.Above, saved)
	case c.Above >= 2*saved/3:
		return fmt.Sprintf("no: tooljail's filter costs %+.0f ns per call above the allow-all filter, close to the %.0f ns the program costs with the cache defeated, so the program runs on every call", c.Above, saved)
	}
	return fmt.Sprintf("unclear: tooljail's filter costs %+.0f ns per call above the allow-all filter, the cache-defeated program %.0f ns more than tooljail's", c.Above, saved)
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
	fi := r.Filter
	insns := func(n int) string {
		if n <= 0 {
			return "? instructions"
		}
		return fmt.Sprintf("%d instructions", n)
	}
	what := map[string][2]string{
		vNone:     {"no filter", "outside"},
		vAllowAll: {"allow-all filter (1 instruction, `return ALLOW`): the kernel's floor", "outside"},
		vTooljail: {fmt.Sprintf("tooljail's filter, default profile (EPERM variant, %s)", insns(fi.Insns)), "outside"},
		vNoCache:  {"tooljail's filter with the action cache defeated (+1 leading load of args[0])", "outside"},
		vJailOff:  {"jail with `[seccomp] enabled = false`", "in the jail"},
		vJail:     {fmt.Sprintf("jail, default profile (notify variant, %s)", insns(fi.NotifyInsns)), "in the jail"},
	}
	for _, l := range r.Loops {
		pc := l.perCallCPU()
		none := pc[vNone]
		rows := [][]string{}
		for _, k := range loopKeys {
			v := l.variant(k)
			vs := ""
			if k != vNone {
				vs = deltaText(pc[k]-none, 100*bench.Ratio(pc[k]-none, none))
			}
			rows = append(rows, []string{what[k][0], what[k][1],
				fmt.Sprintf("%s (min %s)", fms(med(v.CPU)), fms(minOf(v.CPU))), nsText(pc[k]), vs,
				nsText(nsPerCall(med(v.Wall), l.Calls))})
		}
		p("### %d × %s, %d loops per variant\n\n", l.Calls, l.Call, l.Reps)
		p("%s\n", bench.Table([]string{"variant", "where", "CPU time of the loop, median (min)", "CPU ns/call", "vs no filter, CPU", "wall ns/call"}, rows))
		c := pc.costs()
		p("- the kernel's floor, the cost of having any filter (allow-all − no filter): %s per call\n", deltaText(c.Floor, c.FloorPct))
		p("- **tooljail's filter above the floor** (tooljail's filter − allow-all): %s per call\n", deltaText(c.Above, c.AbovePct))
		p("- tooljail's filter outside in all (floor + above): %s per call\n", deltaText(c.Outside, c.OutsidePct))
		p("- what the action cache saves (cache defeated − tooljail's filter): %s per call\n", nsText(c.Uncached))
		p("- in the jail vs outside, the DESIGN target: %s per call; the filter alone in the jail (jail − jail with seccomp off): %s of the seccomp-off loop\n",
			deltaText(c.Jail, c.JailPct), deltaText(c.InJail, c.InJailPct))
		p("- does the kernel's action cache cover %s under tooljail's filter? %s\n", l.Call, cacheVerdict(c, 5))
		if l.Call == "getppid" {
			if s := floorSentence(c, 2); s != "" {
				p("\n%s\n", s)
			}
		}
		p("\n")
	}
	p("All in one alternating run: each round runs every variant once, starting one variant further\n")
	p("along. The loop is timed inside the payload (`bench/tjloop`, static Go, one locked thread), so\n")
	p("start-up does not count. CPU time is that of the looping thread (user + system; a filter runs in\n")
	p("the thread's system time); medians over the loops, in parentheses the fastest. Percentages are of\n")
	p("the no-filter loop outside (the jail's filter alone: of the seccomp-off jail), so floor and \"above\n")
	p("the floor\" add up. Wall time also holds the time the thread waited for a CPU on this shared\n")
	p("machine. The outside variants load the filter in tjloop before the loop, after\n")
	p("`PR_SET_NO_NEW_PRIVS`, on all threads (TSYNC), as the jail does before execve. tooljail's filter\n")
	p("outside is the default profile's allowlist compiled by the seccomp package without user\n")
	p("notification (`%s`): a notify filter needs a supervisor to answer, and for an allowed call it takes\n", relWork(fi.Path))
	p("the same path through the program; the loop makes no denied call. Since Linux 5.11 the kernel\n")
	p("precomputes, per syscall number, whether a filter allows a call whatever its arguments (by\n")
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
	c := l.perCallCPU().costs()
	wallNone, wallJail := med(l.variant(vNone).Wall), med(l.variant(vJail).Wall)
	measured := fmt.Sprintf("%s (wall time: %s); of it the kernel's floor for any filter (allow-all, outside): %s; tooljail's filter above that floor (outside): %s",
		pctText(c.JailPct), bench.FormatCost(wallJail, wallNone), pctText(c.FloorPct), pctText(c.AbovePct))
	ok := c.JailPct < 2
	valid := !math.IsNaN(c.JailPct)
	met := "not measured"
	switch {
	case valid && ok:
		met = "met"
	case valid:
		met = "**not met**"
	}
	return []string{fmt.Sprintf("seccomp cost: %d getppid in the jail vs outside without a filter (CPU time of the loop, median)", l.Calls), "< 2 %", measured, met}
}
