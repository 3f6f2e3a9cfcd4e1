package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/bench"
)

// pyFixture is serve_bench.py's output for every variant: latency samples
// 1..n ms scaled by the variant's factor, and two blocks each.
func pyFixture(scale map[string]float64) pyOut {
	py := pyOut{Python: "3.11.7", Runs: 100, Conc: 4, Latency: map[string][]float64{}}
	for _, v := range serveVariants {
		var ms []float64
		for i := 1; i <= 100; i++ {
			ms = append(ms, float64(i)*scale[v.key])
		}
		py.Latency[v.key] = ms
		for b := 0; b < 2; b++ {
			py.Blocks = append(py.Blocks, pyBlock{Variant: v.key, Runs: 50, Wall: 0.5 * scale[v.key],
				Python: 0.05, PythonChildren: 0.1, Server: 0.02, ServerChildren: 0.2})
		}
	}
	return py
}

func TestSummarizeServe(t *testing.T) {
	py := pyFixture(map[string]float64{"served": 1, "cli": 2, "bwrap": 1, "bare": 0.5})
	lat, tp, err := summarizeServe(py)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range lat {
		order = append(order, l.Variant)
	}
	if want := []string{"served", "cli", "bwrap", "bare"}; !slices.Equal(order, want) {
		t.Fatalf("variants %v, want %v", order, want)
	}
	cli := lat[1]
	if cli.N != 100 || cli.Median != 101 || math.Abs(cli.P99-2*99.01) > 1e-9 {
		t.Errorf("cli latency: n %d, median %v, p99 %v; want 100, 101, 198.02", cli.N, cli.Median, cli.P99)
	}
	// served: 100 runs in 2 × 0.5 s; per run 1000 ms × (2 × 0.05 s) / 100.
	s := tp[0]
	if s.Runs != 100 || s.PerSec != 100 || len(s.Blocks) != 2 || s.Blocks[0] != 100 {
		t.Errorf("served throughput %+v: want 100 runs at 100/s in 2 blocks of 100/s", s)
	}
	for name, got := range map[string]float64{"python": s.Python, "children": s.PythonChildren, "server": s.Server, "jails": s.ServerChildren} {
		want := map[string]float64{"python": 1, "children": 2, "server": 0.4, "jails": 4}[name]
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("served CPU per run, %s: %v ms, want %v", name, got, want)
		}
	}
	// The server's CPU counts for the served call only: it idles through
	// the others' blocks.
	if got := s.total(); math.Abs(got-7.4) > 1e-9 {
		t.Errorf("served total %v ms, want 7.4", got)
	}
	if got := tp[2].total(); math.Abs(got-3) > 1e-9 {
		t.Errorf("bwrap total %v ms, want 3 (Python and its children only)", got)
	}
	py.Warm = 5
	if got := servedCalls(py); got != 205 {
		t.Errorf("servedCalls = %d, want 5 warm + 100 timed + 100 in blocks", got)
	}
}

// TestSummarizeServeKernel: the kernel's work outside the processes is the
// blocks' figure less the idle rate over their wall time, per run, and it is
// absent (not 0) when the script or a block did not measure it.
func TestSummarizeServeKernel(t *testing.T) {
	py := pyFixture(map[string]float64{"served": 1, "cli": 2, "bwrap": 1, "bare": 0.5})
	_, tp, err := summarizeServe(py)
	if err != nil {
		t.Fatal(err)
	}
	if tp[0].Kernel != nil || !math.IsNaN(tp[0].totalKernel()) {
		t.Errorf("no idle rate: kernel %v, want none", tp[0].Kernel)
	}
	idle := 0.1 // s of kernel CPU per s at rest
	py.KernelIdle = &idle
	for i := range py.Blocks {
		k := 0.08 // in a block of 0.5 s (served, bwrap): 0.05 s of it idle
		py.Blocks[i].Kernel = &k
	}
	if _, tp, err = summarizeServe(py); err != nil {
		t.Fatal(err)
	}
	// served: 2 × (0.08 − 0.1 × 0.5) s over 100 runs = 0.6 ms per run.
	if s := tp[0]; s.Kernel == nil || math.Abs(*s.Kernel-0.6) > 1e-9 || math.Abs(s.totalKernel()-8.0) > 1e-9 {
		t.Errorf("served kernel %v, all %v; want 0.6 and 8.0 ms", s.Kernel, s.totalKernel())
	}
	// cli: blocks of 1 s, so more idle time than the blocks saw: below 0.
	if c := tp[1]; c.Kernel == nil || math.Abs(*c.Kernel-(-0.4)) > 1e-9 {
		t.Errorf("cli kernel %v, want -0.4 ms (as measured, not clamped)", c.Kernel)
	}
	py.Blocks[0].Kernel = nil
	if _, tp, err = summarizeServe(py); err != nil {
		t.Fatal(err)
	}
	if tp[0].Kernel != nil {
		t.Errorf("a served block without the figure: kernel %v, want none", *tp[0].Kernel)
	}
	if tp[2].Kernel == nil {
		t.Errorf("bwrap's blocks all measured it: want a figure")
	}
}

func TestSummarizeServeMissing(t *testing.T) {
	py := pyFixture(map[string]float64{"served": 1, "cli": 1, "bwrap": 1, "bare": 1})
	delete(py.Latency, "bwrap")
	if _, _, err := summarizeServe(py); err == nil || !strings.Contains(err.Error(), "bwrap") {
		t.Errorf("no bwrap samples: err %v, want one naming bwrap", err)
	}
	py = pyFixture(map[string]float64{"served": 1, "cli": 1, "bwrap": 1, "bare": 1})
	py.Blocks = slices.DeleteFunc(py.Blocks, func(b pyBlock) bool { return b.Variant == "bare" })
	if _, _, err := summarizeServe(py); err == nil || !strings.Contains(err.Error(), "bare") {
		t.Errorf("no bare blocks: err %v, want one naming bare", err)
	}
}

func TestEditEnv(t *testing.T) {
	env := []string{"PATH=/bin", "TOOLJAIL_SERVER=/x/sock", "TMPDIR=/tmp", "A=1=2", "TOOLJAIL_SERVERX=keep"}
	got := editEnv(env, []string{"TOOLJAIL_SERVER"}, "TMPDIR=/w/tmp", "TOOLJAIL_BIN=/b/tooljail")
	want := []string{"PATH=/bin", "A=1=2", "TOOLJAIL_SERVERX=keep", "TMPDIR=/w/tmp", "TOOLJAIL_BIN=/b/tooljail"}
	if !slices.Equal(got, want) {
		t.Errorf("editEnv = %q, want %q", got, want)
	}
}

func TestStatusField(t *testing.T) {
	status := "Name:\ttooljail\nVmPeak:\t 1262080 kB\nVmHWM:\t   18432 kB\nVmRSS:\t   17000 kB\nThreads:\t7\n"
	for _, c := range []struct {
		name string
		want int64
		ok   bool
	}{
		{"VmHWM", 18432 << 10, true},
		{"VmRSS", 17000 << 10, true},
		{"Threads", 0, false}, // no unit: not a size
		{"VmSwap", 0, false},
		{"Vm", 0, false}, // a prefix of other names is not a name
	} {
		if got, ok := statusField(status, c.name); got != c.want || ok != c.ok {
			t.Errorf("statusField(%s) = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestSpliceSection(t *testing.T) {
	notes := "## What each change bought\n\n" + bench.NotesBegin + "\nlog\n" + bench.NotesEnd + "\n"
	without := "# r\n\n## Leaks\n\nrows\n\n" + notes
	sec1 := serveHeading + "\n\nfirst\n\n### sub\n\nx\n"
	sec2 := serveHeading + "\n\nsecond\n"

	got, err := spliceSection(without, sec1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# r\n\n## Leaks\n\nrows\n\n" + sec1 + "\n" + notes; got != want {
		t.Errorf("inserted before the notes:\n%s\nwant\n%s", got, want)
	}
	// Replaced in place, subsections and all; the rest kept.
	got2, err := spliceSection(got, sec2)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# r\n\n## Leaks\n\nrows\n\n" + sec2 + "\n" + notes; got2 != want {
		t.Errorf("replaced:\n%s\nwant\n%s", got2, want)
	}
	if again, _ := spliceSection(got2, sec2); again != got2 {
		t.Errorf("not stable:\n%s\n---\n%s", got2, again)
	}
	// A section in the middle: only it is replaced.
	mid := "# r\n\n" + sec1 + "\n## Later\n\nkept\n\n" + notes
	if got, _ := spliceSection(mid, sec2); got != "# r\n\n"+sec2+"\n## Later\n\nkept\n\n"+notes {
		t.Errorf("middle section:\n%s", got)
	}
	// A heading that only starts like ours is another section.
	other := "# r\n\n" + serveHeading + " (old)\n\nold\n\n" + notes
	if got, _ := spliceSection(other, sec2); !strings.Contains(got, "(old)") || strings.Count(got, serveHeading+"\n") != 1 {
		t.Errorf("a longer heading was taken for ours:\n%s", got)
	}
	for _, c := range []struct{ doc, section, want string }{
		{"# r\n\nno notes\n", sec1, "no notes section"},
		{without, "### sub\n\nx\n", "heading"},
	} {
		if _, err := spliceSection(c.doc, c.section); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spliceSection(%q, %q): err %v, want one saying %q", c.doc, c.section, err, c.want)
		}
	}
}

// serveFixture is a section's results where every target is met, for
// tests to spoil one at a time.
func serveFixture(t *testing.T) *serveResult {
	py := pyFixture(map[string]float64{"served": 0.3, "cli": 3, "bwrap": 1, "bare": 0.2})
	s := &serveResult{Runs: 100, Conc: serveConc, Memory: []serverMem{{When: "a", HWM: 20 << 20, RSS: 18 << 20}},
		Warm: warmMem{Jails: 2, USS: []int64{200 << 10, 210 << 10}}}
	var err error
	if s.Latency, s.Throughput, err = summarizeServe(py); err != nil {
		t.Fatal(err)
	}
	// The served CPU per run at 0.8× bwrap's: Python, server and jail.
	sv, bt := &s.Throughput[0], s.Throughput[2].total()
	sv.Python, sv.PythonChildren, sv.Server, sv.ServerChildren = 0.2*bt, 0, 0.2*bt, 0.4*bt
	s.Leaks = &leakResult{Runs: 300, Conc: serveConc}
	s.ServerFDs = [2]int{12, 12}
	s.Kill = killResult{Calls: serveKillCalls, Running: serveKillCalls, Restarted: true}
	return s
}

func TestServeTargets(t *testing.T) {
	verdicts := func(s *serveResult) []string {
		var out []string
		for _, r := range serveTargets(s) {
			out = append(out, r[3])
		}
		return out
	}
	met := []string{"met", "met", "met", "met", "met", "met"}
	if got := verdicts(serveFixture(t)); !slices.Equal(got, met) {
		t.Fatalf("all good: %v, want %v", got, met)
	}
	notMet := "**not met**"
	for _, c := range []struct {
		name  string
		spoil func(*serveResult)
		row   int
		want  string
	}{
		{"latency above 0.35× bwrap", func(s *serveResult) { s.Latency[0].Median = 0.4 * s.Latency[2].Median }, 0, notMet},
		{"no bwrap latency", func(s *serveResult) { s.Latency = s.Latency[:2] }, 0, "not measured"},
		{"under 2× bwrap at concurrency 4", func(s *serveResult) { s.Throughput[0].PerSec = 1.9 * s.Throughput[2].PerSec }, 1, notMet},
		{"more CPU per run than bwrap", func(s *serveResult) { s.Throughput[0].Server += s.Throughput[2].total() }, 2, notMet},
		{"server at 31 MiB", func(s *serveResult) { s.Memory = append(s.Memory, serverMem{HWM: 31 << 20}) }, 3, notMet},
		{"server memory unread", func(s *serveResult) { s.Memory = []serverMem{{HWM: -1, RSS: -1}} }, 3, "not measured"},
		{"warm jails over their budget", func(s *serveResult) { s.Memory[0].HWM = 30 << 20; s.Warm.USS[1] = 900 << 10 }, 3, notMet},
		{"no warm jail measured", func(s *serveResult) { s.Warm = warmMem{} }, 3, "not measured"},
		{"a failed served run", func(s *serveResult) { s.Leaks.Failures = 1 }, 4, notMet},
		{"a cgroup left", func(s *serveResult) { s.Leaks.OurCgroups = []string{"/sys/fs/cgroup/pids/tooljail-1-2-3"} }, 4, notMet},
		{"a server fd left", func(s *serveResult) { s.ServerFDs[1]++ }, 4, notMet},
		{"a process left after the kill", func(s *serveResult) { s.Kill.Leaks.After.Descendants = 1 }, 5, notMet},
		{"a killed call's command alive", func(s *serveResult) { s.Kill.CommandsLeft = 1 }, 5, notMet},
		{"the next server did not serve", func(s *serveResult) { s.Kill.Restarted = false }, 5, notMet},
		{"fewer calls running than killed", func(s *serveResult) { s.Kill.Running = 3 }, 5, notMet},
	} {
		s := serveFixture(t)
		c.spoil(s)
		got := verdicts(s)
		want := slices.Clone(met)
		want[c.row] = c.want
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
	// Without the leak pass (BENCH_SERVE_LEAK_RUNS=0) its row is gone.
	s := serveFixture(t)
	s.Leaks = nil
	if got := verdicts(s); !slices.Equal(got, []string{"met", "met", "met", "met", "met"}) {
		t.Errorf("no leak pass: %v", got)
	}
}

// The section renders every target and table, and the same text twice.
func TestRenderServe(t *testing.T) {
	r := &results{Machine: machine{CPU: "cpu", Cores: 2, Kernel: "6.18", Tooljail: "tooljail v1 (go)"}, Serve: serveFixture(t)}
	r.Serve.Calls = map[string]string{"served": "tooljail.run(served)", "cli": "tooljail.run(cli)", "bwrap": "subprocess.run(bwrap)", "bare": "subprocess.run(bare)"}
	render := func() string {
		var b strings.Builder
		renderServe(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, r)
		return b.String()
	}
	out := render()
	if !strings.HasPrefix(out, serveHeading+"\n") {
		t.Errorf("does not start with its heading:\n%s", out)
	}
	for _, want := range []string{"### Latency at concurrency 1", "### Throughput at concurrency 4", "### Server memory",
		"### Leaks after 300 served runs", "### After SIGKILL", "subprocess.run(bwrap)", "0.30×", "2 warm jails (", "--warm 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the section:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NaN") || strings.Contains(out, "%!") {
		t.Errorf("a bad figure or verb in the section:\n%s", out)
	}
	if strings.Contains(out[len(serveHeading):], "\n## ") {
		t.Errorf("a second-level heading inside the section would end it for -only:\n%s", out)
	}
	if render() != out {
		t.Error("two renderings differ")
	}
}

func TestBigTargets(t *testing.T) {
	py := pyOut{BigBytes: 16 << 20, Big: map[string][]float64{}}
	scale := map[string]float64{"served": 1.2, "cli": 1.6, "patched": 1.5, "bwrap": 1, "bare": 0.5}
	for _, v := range bigVariants {
		py.Big[v.key] = []float64{100 * scale[v.key], 110 * scale[v.key], 120 * scale[v.key]}
	}
	big, err := summarizeBig(py)
	if err != nil {
		t.Fatal(err)
	}
	s := &serveResult{Big: big, BigBytes: py.BigBytes}
	rows := bigTargets(s)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want one per way of the caller's (served, CLI, patched)", len(rows))
	}
	// Medians 132, 176, 165 against bwrap's 110: met at 1.2× and 1.5×, not at 1.6×.
	for i, want := range []string{"met", "**not met**", "met"} {
		if got := rows[i][3]; got != want {
			t.Errorf("row %q: met %q, want %q", rows[i][0], got, want)
		}
	}
	delete(py.Big, "patched")
	if _, err := summarizeBig(py); err == nil || !strings.Contains(err.Error(), "patched") {
		t.Errorf("no patched samples: err %v, want one naming patched", err)
	}
	if got, err := summarizeBig(pyOut{}); got != nil || err != nil {
		t.Errorf("pass not run: %v, %v; want nothing", got, err)
	}
}

// The live server's own memory group is not a leak; a run group of its,
// or another server's own group, is.
func TestOwnGroupOf(t *testing.T) {
	for _, c := range []struct {
		path string
		pid  int
		want bool
	}{
		{"/sys/fs/cgroup/memory/tooljail-42-100-4026531836-run-supervisor", 42, true},
		{"/sys/fs/cgroup/memory/x/tooljail-42-100-4026531836-run-supervisor", 42, true},
		{"/sys/fs/cgroup/memory/tooljail-43-100-4026531836-run-supervisor", 42, false},
		{"/sys/fs/cgroup/memory/tooljail-42-100-4026531836-run-495573b61f4df0b4", 42, false},
		{"/sys/fs/cgroup/tooljail-42-100-4026531836", 42, false},
	} {
		if got := ownGroupOf(c.path, c.pid); got != c.want {
			t.Errorf("ownGroupOf(%s, %d) = %v, want %v", c.path, c.pid, got, c.want)
		}
	}
}
