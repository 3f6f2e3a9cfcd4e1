// Command tjbench is the measuring instrument behind `make bench`: it
// times tooljail against bubblewrap with the same mounts and against a bare
// fork+exec, in one process on one machine, alternating the commands run by
// run so that drift hits all of them, and writes BENCHMARKS.md and the
// start-up chart. It reports; it never judges a number pass/fail except
// against the targets of DESIGN.md section 8 and issue 32, in the report,
// and in the summary of issue 32's targets it prints at its end (or, with
// -summary, from the saved raw files without measuring).
//
// It imports the jail package for the per-layer start-up ladder, so, like
// tooljail, it calls jail.Init first: the host probe re-executes this binary.
// Run it as root (bench/run.sh does).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// config is what one bench run measures and how much.
type config struct {
	tooljail, bwrap, loop string
	hello                 string // a static Go hello world (bench/hello), the floor for `tooljail version`
	work                  string // scratch directory (workdirs, profiles, raw.json)
	out, svg, svgRef      string
	startupRuns           int
	layerRuns             int
	tputRuns              int
	loopCalls, loopReps   int
	fstatReps             int
	rssReps               int
	unprivRuns            int
	leakRuns              int
	deniedCalls           int
	deniedRuns            int
	only                  string // "" (everything), "serve", "net" or "changes"
	changesRuns           int
	changesApplies        int
	netRuns, netRequests  int
	python, servePy       string
	serveRuns             int
	serveLeakRuns         int
	serveBigRuns          int
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
		fmt.Fprintf(os.Stderr, "tjbench: ignoring %s=%q (want a count)\n", name, v)
	}
	return def
}

func main() {
	jail.Init()
	var c config
	flag.StringVar(&c.tooljail, "tooljail", "bin/tooljail", "the tooljail binary to measure")
	flag.StringVar(&c.bwrap, "bwrap", "bwrap", "the bubblewrap binary")
	flag.StringVar(&c.loop, "loop", "bench/.work/tjloop", "the syscall-loop payload (bench/tjloop)")
	flag.StringVar(&c.hello, "hello", "bench/.work/hello", "a static Go hello world (bench/hello), timed beside `tooljail version`")
	flag.StringVar(&c.work, "work", "bench/.work", "scratch directory")
	flag.StringVar(&c.out, "out", "BENCHMARKS.md", "the report to (re)write; its notes section is kept")
	flag.StringVar(&c.svg, "svg", "bench/startup-layers.svg", "the start-up chart to write")
	flag.StringVar(&c.svgRef, "svg-ref", "", "the chart's path as the report links it (default: relative to -out)")
	flag.IntVar(&c.startupRuns, "startup-runs", envInt("BENCH_STARTUP_RUNS", 200), "start-up samples per command (BENCH_STARTUP_RUNS)")
	flag.IntVar(&c.layerRuns, "layer-runs", envInt("BENCH_LAYER_RUNS", 100), "samples per start-up layer (BENCH_LAYER_RUNS)")
	flag.IntVar(&c.tputRuns, "tput-runs", envInt("BENCH_TPUT_RUNS", 300), "runs per throughput point and command (BENCH_TPUT_RUNS)")
	flag.IntVar(&c.loopCalls, "loop-calls", envInt("BENCH_LOOP_CALLS", 1000000), "system calls per loop (BENCH_LOOP_CALLS)")
	flag.IntVar(&c.loopReps, "loop-reps", envInt("BENCH_LOOP_REPS", 21), "getppid loops per variant (BENCH_LOOP_REPS)")
	flag.IntVar(&c.fstatReps, "fstat-reps", envInt("BENCH_FSTAT_REPS", 9), "fstat loops per variant, 0 to skip (BENCH_FSTAT_REPS)")
	flag.IntVar(&c.rssReps, "rss-reps", envInt("BENCH_RSS_REPS", 5), "supervisor memory samples (BENCH_RSS_REPS)")
	flag.IntVar(&c.unprivRuns, "unpriv-runs", envInt("BENCH_UNPRIV_RUNS", 100), "start-up samples as uid 65534, 0 to skip (BENCH_UNPRIV_RUNS)")
	flag.IntVar(&c.leakRuns, "leak-runs", envInt("BENCH_LEAK_RUNS", 10000), "runs of the leak check (BENCH_LEAK_RUNS)")
	flag.IntVar(&c.deniedCalls, "denied-calls", envInt("BENCH_DENIED_CALLS", 5000), "denied calls per run of the flood, under the default --max-violations (BENCH_DENIED_CALLS)")
	flag.IntVar(&c.deniedRuns, "denied-runs", envInt("BENCH_DENIED_RUNS", 11), "runs of the denied-call flood, 0 to skip (BENCH_DENIED_RUNS)")
	flag.IntVar(&c.serveRuns, "serve-runs", envInt("BENCH_SERVE_RUNS", 2000), "calls per variant from Python, for latency and again for throughput, 0 to skip the served section (BENCH_SERVE_RUNS)")
	flag.IntVar(&c.serveBigRuns, "serve-big-runs", envInt("BENCH_SERVE_BIG_RUNS", 10), "calls per way of the served section's large-output pass (16 MiB of output), 0 to skip (BENCH_SERVE_BIG_RUNS)")
	flag.IntVar(&c.serveLeakRuns, "serve-leak-runs", envInt("BENCH_SERVE_LEAK_RUNS", 10000), "served runs of the server's leak check, 0 to skip (BENCH_SERVE_LEAK_RUNS)")
	flag.IntVar(&c.netRuns, "net-runs", envInt("BENCH_NET_RUNS", 15), "downloads, and runs of small requests, per variant of the network section, 0 to skip it (BENCH_NET_RUNS)")
	flag.IntVar(&c.netRequests, "net-requests", envInt("BENCH_NET_REQUESTS", 50), "small requests per run of the network section (BENCH_NET_REQUESTS)")
	flag.IntVar(&c.changesRuns, "changes-runs", envInt("BENCH_CHANGES_RUNS", 200), "start-up samples per --changes mode, 0 to skip the change-set section (BENCH_CHANGES_RUNS)")
	flag.IntVar(&c.changesApplies, "changes-applies", envInt("BENCH_CHANGES_APPLIES", 20), "applies of 100 changed files per workdir size in the change-set section (BENCH_CHANGES_APPLIES)")
	flag.StringVar(&c.python, "python", "python3", "the Python interpreter of the served section")
	flag.StringVar(&c.servePy, "serve-py", "bench/serve_bench.py", "the Python side of the served section")
	flag.StringVar(&c.only, "only", "", "measure only this part and rewrite only its section of -out, keeping the rest of the file: serve, net or changes")
	summary := flag.Bool("summary", false, "measure nothing: print the summary of issue 32's targets from the saved figures in -work (raw.json, and the newer raw-<part>.json of -only runs)")
	flag.Parse()
	if *summary {
		r, from, err := savedResults(c.work)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tjbench: -summary: %v\n", err)
			os.Exit(1)
		}
		printSummary(os.Stdout, goals(r), from)
		return
	}
	if c.only != "" && c.only != "serve" && c.only != "net" && c.only != "changes" {
		fmt.Fprintf(os.Stderr, "tjbench: -only %q: the parts that can run alone are serve, net and changes\n", c.only)
		os.Exit(2)
	}
	if err := run(&c); err != nil {
		fmt.Fprintf(os.Stderr, "tjbench: %v\n", err)
		os.Exit(1)
	}
}

// results is everything one bench run measured; it also goes to
// <work>/raw.json with every sample.
type results struct {
	Machine    machine           `json:"machine"`
	Config     map[string]int    `json:"config"`
	Commands   map[string]string `json:"commands"`
	Startup    []timing          `json:"startup"` // tooljail, bwrap, bare, tooljail version, Go hello world
	Layers     []layerResult     `json:"layers"`
	Throughput []tput            `json:"throughput"`
	Filter     filterInfo        `json:"seccomp_filter"`
	Loops      []loopResult      `json:"loops"`
	Denied     *deniedResult     `json:"denied,omitempty"`
	RSS        rssResult         `json:"rss"`
	Unpriv     *unprivResult     `json:"unprivileged,omitempty"`
	Leaks      *leakResult       `json:"leaks,omitempty"`
	Serve      *serveResult      `json:"serve,omitempty"`
	Net        *netResult        `json:"network,omitempty"`
	Changes    *changesResult    `json:"changes,omitempty"`
	Seconds    float64           `json:"seconds"`
	FDsStart   int               `json:"fds_start"` // the driver's open descriptors before the first run
	FDsEnd     int               `json:"fds_end"`   // ... and after the last
}

type layerResult struct {
	Label string `json:"label"`
	What  string `json:"what"`
	T     timing `json:"timing"`
}

type unprivResult struct {
	Runs     int    `json:"runs"`
	Tooljail timing `json:"tooljail"`
	Bwrap    timing `json:"bwrap"`
	Skipped  string `json:"skipped,omitempty"`
}

func step(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

// site is where the commands of one bench run run: the scratch workdir,
// the files the steps share, and the start-up commands.
type site struct {
	wd        string   // the workdir of every run
	loopBin   string   // bench/tjloop, copied into wd
	noSeccomp string   // the default profile without the seccomp filter
	bw        []string // bwrap's argv for /bin/true with the default profile's mounts
	// The start-up commands: tooljail run, bwrap, bare /bin/true,
	// `tooljail version` and the Go hello world.
	tj, bwrap, bare, goproc, hello runner
}

func run(c *config) error {
	began := time.Now()
	if err := checkSetup(c); err != nil {
		return err
	}
	var err error
	if devNull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		return err
	}
	defer devNull.Close()
	r := &results{Machine: describeMachine(c.tooljail, c.bwrap), Commands: map[string]string{}, Config: configCounts(c)}
	step("%s, %d cores, kernel %s, cgroups %s", r.Machine.CPU, r.Machine.Cores, r.Machine.Kernel, r.Machine.CgroupMode)
	s, err := prepareSite(c, r.Commands)
	if err != nil {
		return err
	}
	if c.only != "" {
		if err := measureOnly(c, r, s); err != nil {
			return err
		}
		r.Machine.LoadAfter = loadAvg()
		r.Seconds = time.Since(began).Seconds()
		return writeOnly(c, r)
	}
	for _, m := range []func(*config, *results, *site) error{
		measureStartup, measureLayers, measureThroughput, measureSeccomp, measureDenied, measureRSS,
		measureUnprivileged, measureLeaks, measureNet, measureChanges, measureServed,
	} {
		if err := m(c, r, s); err != nil {
			return err
		}
	}
	r.FDsEnd = countDir("/proc/self/fd")
	r.Machine.LoadAfter = loadAvg()
	r.Seconds = time.Since(began).Seconds()
	return write(c, r)
}

// checkSetup makes c's paths absolute and checks that what the run needs
// is there: root, bwrap, the built binaries, and what -only and the
// served section need.
func checkSetup(c *config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("run as root (the uid 65534 pass and the cgroup caps of the default profile need it): sudo make bench")
	}
	var err error
	for _, p := range []*string{&c.tooljail, &c.loop, &c.hello, &c.work, &c.out, &c.svg, &c.servePy} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if c.bwrap, err = exec.LookPath(c.bwrap); err != nil {
		return fmt.Errorf("bubblewrap: %w (install it: apt-get install bubblewrap)", err)
	}
	for _, f := range []string{c.tooljail, c.loop, c.hello} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w (build it first: make bench)", err)
		}
	}
	if err := checkOnly(c); err != nil {
		return err
	}
	if c.serveRuns > 0 && c.only != "net" {
		if c.python, err = exec.LookPath(c.python); err != nil {
			return fmt.Errorf("python for the served section: %w (install python3, or skip the section: BENCH_SERVE_RUNS=0)", err)
		}
		if _, err := os.Stat(c.servePy); err != nil {
			return fmt.Errorf("the served section's script: %w", err)
		}
	}
	return nil
}

// checkOnly refuses a -only part whose counts measure nothing.
func checkOnly(c *config) error {
	switch {
	case c.only == "serve" && c.serveRuns == 0:
		return fmt.Errorf("-only serve with BENCH_SERVE_RUNS=0 (-serve-runs 0) measures nothing")
	case c.only == "net" && (c.netRuns == 0 || c.netRequests == 0):
		return fmt.Errorf("-only net with BENCH_NET_RUNS=0 or BENCH_NET_REQUESTS=0 measures nothing")
	case c.only == "changes" && (c.changesRuns == 0 || c.changesApplies == 0):
		return fmt.Errorf("-only changes with BENCH_CHANGES_RUNS=0 or BENCH_CHANGES_APPLIES=0 measures nothing")
	}
	return nil
}

// configCounts are the counts of c as raw.json records them.
func configCounts(c *config) map[string]int {
	return map[string]int{"startup_runs": c.startupRuns, "layer_runs": c.layerRuns, "tput_runs": c.tputRuns,
		"loop_calls": c.loopCalls, "loop_reps": c.loopReps, "fstat_reps": c.fstatReps, "rss_reps": c.rssReps, "unpriv_runs": c.unprivRuns, "leak_runs": c.leakRuns,
		"denied_calls": c.deniedCalls, "denied_runs": c.deniedRuns, "serve_runs": c.serveRuns, "serve_leak_runs": c.serveLeakRuns, "serve_big_runs": c.serveBigRuns,
		"net_runs": c.netRuns, "net_requests": c.netRequests, "changes_runs": c.changesRuns, "changes_applies": c.changesApplies}
}

// prepareSite makes a fresh workdir with the loop payload and the
// seccomp-off profile, and the start-up commands, recorded in cmds.
func prepareSite(c *config, cmds map[string]string) (*site, error) {
	wd, err := freshWorkdir(c.work)
	if err != nil {
		return nil, err
	}
	s := &site{wd: wd, loopBin: filepath.Join(wd, "tjloop"), noSeccomp: filepath.Join(c.work, "no-seccomp.toml")}
	if err := copyExecutable(c.loop, s.loopBin); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.noSeccomp, []byte("# The default profile without the seccomp filter: tells the filter's cost from the other layers'.\nextends = \"default\"\n[seccomp]\nenabled = false\n"), 0o644); err != nil {
		return nil, err
	}
	if s.bw, err = bwrapArgv(c.bwrap, wd, "/bin/true"); err != nil {
		return nil, err
	}
	tjArgv := []string{c.tooljail, "run", "-q", "--", "/bin/true"}
	goArgv := []string{c.tooljail, "version"}
	cmds["tooljail"] = shellJoin(tjArgv)
	cmds["bwrap"] = shellJoin(s.bw)
	cmds["bare"] = "/bin/true"
	cmds["goproc"] = shellJoin(goArgv)
	cmds["workdir"] = wd
	cmds["hello"] = c.hello
	s.tj = execRunner("tooljail run", tjArgv, wd, nil, nil)
	s.bwrap = execRunner("bwrap", s.bw, wd, nil, nil)
	s.bare = execRunner("bare", []string{"/bin/true"}, wd, nil, nil)
	// The Go process alone (start, print a line, exit): what the CLI pays
	// before and after any jail work, as bwrap pays a C process's.
	s.goproc = execRunner("tooljail version", goArgv, wd, nil, nil)
	// The floor for that: a Go process with nothing but fmt.
	s.hello = execRunner("Go hello world", []string{c.hello}, wd, nil, nil)
	return s, nil
}

// freshWorkdir empties and makes work/wd: not $HOME and not /tmp, since
// the default profile binds it read-write.
func freshWorkdir(work string) (string, error) {
	wd := filepath.Join(work, "wd")
	if err := os.RemoveAll(wd); err != nil {
		return "", err
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		// Owned by the jail's default host user, a root-started jail runs
		// as that owner: no step pays for an idmapped mount, and the
		// steps without the seccomp filter may bind it (a root-owned
		// workdir would need an idmapped bind, which needs the filter).
		if err := os.Chown(wd, jail.DefaultHostUser.UID, jail.DefaultHostUser.GID); err != nil {
			return "", err
		}
	}
	return wd, nil
}

// measureOnly measures the one part that -only names.
func measureOnly(c *config, r *results, s *site) error {
	switch c.only {
	case "serve":
		return measureServed(c, r, s)
	case "net":
		return measureNet(c, r, s)
	}
	return measureChanges(c, r, s)
}

// The steps of a whole run, in order. Each fills its part of r; a step
// whose counts are 0 is skipped.

func measureStartup(c *config, r *results, s *site) error {
	rs := []runner{s.tj, s.bwrap, s.bare, s.goproc, s.hello}
	step("warm-up")
	if err := warm(rs, 5); err != nil {
		return err
	}
	// One run through the jail package in this process, so that the
	// descriptors it keeps for the life of a process (this executable,
	// /proc, a user namespace per id mapping) are open before the count:
	// the whole bench's row is about what runs leave, not those.
	spec, err := defaultSpec(s.wd, "/bin/true")
	if err != nil {
		return err
	}
	if err := jailRunner("warm-up", spec).run(); err != nil {
		return err
	}
	// After the warm-up: Go's poller has made its descriptors by now.
	r.FDsStart = countDir("/proc/self/fd")
	step("start-up: %d x tooljail, bwrap, bare, tooljail version, Go hello world, alternating", c.startupRuns)
	r.Startup, err = measureAlternating(rs, c.startupRuns)
	return err
}

func measureLayers(c *config, r *results, s *site) error {
	ls, err := layers(c.tooljail, s.wd, s.bw)
	if err != nil {
		return err
	}
	step("start-up by layer: %d x %d steps, alternating", c.layerRuns, len(ls))
	lrs := make([]runner, len(ls))
	for i, l := range ls {
		lrs[i] = l.r
	}
	if err := warm(lrs, 3); err != nil {
		return err
	}
	lt, err := measureAlternating(lrs, c.layerRuns)
	if err != nil {
		return err
	}
	for i, l := range ls {
		r.Layers = append(r.Layers, layerResult{Label: l.label, What: l.what, T: lt[i]})
	}
	return nil
}

func measureThroughput(c *config, r *results, s *site) error {
	for _, conc := range []int{1, 4} {
		step("throughput at concurrency %d: %d runs each, alternating blocks", conc, c.tputRuns)
		t, err := throughput(s.tj, s.bwrap, conc, c.tputRuns, 6)
		if err != nil {
			return err
		}
		r.Throughput = append(r.Throughput, t)
	}
	return nil
}

func measureSeccomp(c *config, r *results, s *site) error {
	var err error
	if r.Filter, err = writeFilter(c.work, s.wd); err != nil {
		return err
	}
	for _, x := range []struct {
		call string
		reps int
	}{{"getppid", c.loopReps}, {"fstat", c.fstatReps}} {
		if x.reps == 0 {
			continue
		}
		step("seccomp cost: %d %s calls x %d per variant, %d variants", c.loopCalls, x.call, x.reps, len(loopKeys))
		argvs := loopArgvs(c.tooljail, s.loopBin, r.Filter.Path, s.noSeccomp, x.call, c.loopCalls)
		l, err := syscallLoop(argvs, s.wd, x.call, c.loopCalls, x.reps)
		if err != nil {
			return err
		}
		r.Loops = append(r.Loops, l)
	}
	return nil
}

func measureDenied(c *config, r *results, s *site) error {
	if c.deniedRuns == 0 || c.deniedCalls == 0 {
		return nil
	}
	step("denied calls: %d runs of %d, alternated with a pipe round trip for scale", c.deniedRuns, c.deniedCalls)
	d, err := deniedCost(c.tooljail, s.loopBin, s.wd, c.deniedCalls, c.deniedRuns)
	if err != nil {
		return err
	}
	r.Denied = &d
	return nil
}

func measureRSS(c *config, r *results, s *site) error {
	step("supervisor memory: %d runs of /bin/sleep 0.5", c.rssReps)
	rssArgv := []string{c.tooljail, "run", "-q", "--", "/bin/sleep", "0.5"}
	var err error
	r.RSS, err = supervisorRSS(rssArgv, s.wd, c.rssReps)
	return err
}

func measureUnprivileged(c *config, r *results, _ *site) error {
	if c.unprivRuns > 0 {
		step("start-up as uid 65534: %d x tooljail, bwrap", c.unprivRuns)
		r.Unpriv = unprivileged(c, r.Commands)
	}
	return nil
}

func measureLeaks(c *config, r *results, s *site) error {
	if c.leakRuns == 0 {
		return nil
	}
	step("leaks: %d runs at concurrency 4", c.leakRuns)
	tmpDir := filepath.Join(c.work, "tmpdir")
	if err := os.RemoveAll(tmpDir); err != nil {
		return err
	}
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return err
	}
	l := leaks(c.tooljail, s.wd, tmpDir, c.leakRuns, 4)
	r.Leaks = &l
	return nil
}

func measureNet(c *config, r *results, s *site) error {
	if c.netRuns == 0 || c.netRequests == 0 {
		return nil
	}
	var err error
	r.Net, err = netBench(c.tooljail, s.wd, c.netRuns, c.netRequests)
	return err
}

func measureChanges(c *config, r *results, _ *site) error {
	if c.changesRuns == 0 || c.changesApplies == 0 {
		return nil
	}
	var err error
	r.Changes, err = changesBench(c.tooljail, c.work, c.changesRuns, c.changesApplies, jail.DefaultHostUser.UID, jail.DefaultHostUser.GID)
	return err
}

func measureServed(c *config, r *results, s *site) error {
	if c.serveRuns == 0 {
		return nil
	}
	var err error
	r.Serve, err = served(c, s.wd, s.bw)
	return err
}

// unprivileged times the start-up pair as uid 65534. tooljail needs
// --allow-degraded cgroup there: on this hybrid host the caps come from v1
// controllers, which only root may write.
func unprivileged(c *config, cmds map[string]string) *unprivResult {
	u := &unprivResult{Runs: c.unprivRuns}
	wd, env, err := unprivilegedSetup(c.work)
	if err != nil {
		u.Skipped = err.Error()
		return u
	}
	bw, err := bwrapArgv(c.bwrap, wd, "/bin/true")
	if err != nil {
		u.Skipped = err.Error()
		return u
	}
	tjArgv := []string{c.tooljail, "run", "-q", "--allow-degraded", "cgroup", "--", "/bin/true"}
	cmds["unpriv_tooljail"] = "setpriv --reuid=65534 --regid=65534 --clear-groups " + shellJoin(tjArgv)
	cmds["unpriv_bwrap"] = "setpriv --reuid=65534 --regid=65534 --clear-groups " + shellJoin(bw)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	rs := []runner{
		execRunner("tooljail run (uid 65534)", tjArgv, wd, env, nobody),
		execRunner("bwrap (uid 65534)", bw, wd, env, nobody),
	}
	if err := warm(rs, 3); err != nil {
		u.Skipped = err.Error()
		return u
	}
	t, err := measureAlternating(rs, c.unprivRuns)
	if err != nil {
		u.Skipped = err.Error()
		return u
	}
	u.Tooljail, u.Bwrap = t[0], t[1]
	return u
}

func copyExecutable(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
