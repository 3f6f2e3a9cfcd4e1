package main

// The "Served from Python" section (issue 16, DESIGN.md section 8's warm
// path): /bin/true in the default profile called from Python through a
// `tooljail serve` server, through the CLI, as bwrap with the same mounts
// and bare. bench/serve_bench.py does the calls and times them; this side
// starts and stops the server, reads its CPU and memory, checks what many
// served runs and a SIGKILLed server leave behind, and writes the section.

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/bench"
	"github.com/tooljail/tooljail/serve"
)

const (
	serveHeading   = "## Served from Python"
	serveConc      = 4   // the throughput pass's and the leak pass's concurrency
	serveBlocks    = 6   // alternating blocks per variant in the throughput pass
	serveKillCalls = 4   // calls running when the server is SIGKILLed
	serveMiBTarget = 30  // server memory target, MiB
	warmKiBTarget  = 512 // memory target per warm jail, KiB
)

// serveVariants are the four calls of bench/serve_bench.py, in its order.
var serveVariants = []struct{ key, label string }{
	{"served", "tooljail.run, served"},
	{"cli", "tooljail.run, CLI"},
	{"bwrap", "subprocess.run of bwrap"},
	{"bare", "subprocess.run, bare"},
}

// serveResult is everything the section reports.
type serveResult struct {
	Date      string            `json:"date"`
	Seconds   float64           `json:"seconds"`
	Load      [2]string         `json:"load_before_after"` // /proc/loadavg, this section only
	Python    string            `json:"python"`
	Runs      int               `json:"runs_each"`
	Conc      int               `json:"concurrency"`
	Socket    string            `json:"socket"`
	ServerPid int               `json:"server_pid"`
	Calls     map[string]string `json:"calls"` // variant -> the Python call
	Latency   []serveLatency    `json:"latency"`
	// Session is a call in a live session (tooljail.Session.run), timed
	// in the latency pass beside the others (not in the throughput pass:
	// a session runs one call at a time).
	Session    *serveLatency `json:"session,omitempty"`
	Throughput []serveTput   `json:"throughput"`
	// KernelIdle is the kernel's CPU per second outside every process
	// at rest (s/s), taken off the throughput blocks' kernel figures.
	KernelIdle *float64    `json:"kernel_idle_cpu_s_per_s,omitempty"`
	Memory     []serverMem `json:"server_memory"`
	// Big is the large-output pass: BigBytes of output per call, each way.
	BigBytes  int64          `json:"big_bytes,omitempty"`
	Big       []serveLatency `json:"big_output,omitempty"`
	Warm      warmMem        `json:"warm_jails"`
	Leaks     *leakResult    `json:"leaks,omitempty"`
	ServerFDs [2]int         `json:"server_fds_before_after_leaks"`
	Kill      killResult     `json:"sigkill"`
	Stop      stopResult     `json:"sigterm"`
}

// serveLatency is one variant's wall times at concurrency 1, in ms.
type serveLatency struct {
	Variant string `json:"variant"`
	bench.Summary
	P99     float64   `json:"p99"`
	Samples []float64 `json:"samples_ms"`
}

// serveTput is one variant at concurrency 4: runs per second over all its
// blocks, and the CPU it cost per run, in ms, by whom.
type serveTput struct {
	Variant string    `json:"variant"`
	Runs    int       `json:"runs"`
	PerSec  float64   `json:"per_s"`
	Blocks  []float64 `json:"blocks_per_s"`
	// Python: the calling process (RUSAGE_SELF); PythonChildren: what it
	// started and reaped (the CLI or bwrap, and all below them).
	Python         float64 `json:"python_cpu_ms_per_run"`
	PythonChildren float64 `json:"python_children_cpu_ms_per_run"`
	// Server: the server process's own CPU; ServerChildren: the jails it
	// reaped (their inits and everything below). Only for "served".
	Server         float64 `json:"server_cpu_ms_per_run"`
	ServerChildren float64 `json:"server_children_cpu_ms_per_run"`
	// Kernel: the kernel's work outside every process during the
	// variant's blocks (its threads and interrupts, machine-wide), less
	// what it does at rest; nil when the script did not measure it.
	Kernel *float64 `json:"kernel_cpu_ms_per_run,omitempty"`
}

// total is the CPU per run of the whole call: the server's only counts for
// the served variant (it idles through the others' blocks).
func (t serveTput) total() float64 {
	s := t.Python + t.PythonChildren
	if t.Variant == "served" {
		s += t.Server + t.ServerChildren
	}
	return s
}

// totalKernel is total with the kernel's work outside the processes; NaN
// when it was not measured.
func (t serveTput) totalKernel() float64 { return t.total() + orNaNPtr(t.Kernel) }

// orNaNPtr is *v, or NaN for a figure not measured (nil).
func orNaNPtr(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// warmMem is the server's parked warm jails after the Python pass: how
// many, and the memory each holds of its own (USS: Private_Clean +
// Private_Dirty of its init, whose memory stage 2 shares), in bytes.
type warmMem struct {
	Jails int     `json:"jails"`
	USS   []int64 `json:"uss_bytes"`
}

// readWarmMem measures the warm jails of the server pid: its children.
func readWarmMem(pid int) warmMem {
	var w warmMem
	for _, p := range pids() {
		if pp, err := parentOf(p); err != nil || pp != pid || runGroupOf(p) == "" {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			continue
		}
		c, _ := statusField(string(b), "Private_Clean")
		d, _ := statusField(string(b), "Private_Dirty")
		w.Jails++
		w.USS = append(w.USS, c+d)
	}
	return w
}

// total is the warm jails' USS together (-1: none measured).
func (w warmMem) total() int64 {
	if len(w.USS) == 0 {
		return -1
	}
	var t int64
	for _, u := range w.USS {
		t += u
	}
	return t
}

// serverMem is the server's memory at one moment, in bytes (-1: not read).
type serverMem struct {
	When string `json:"when"`
	HWM  int64  `json:"vmhwm_bytes"`
	RSS  int64  `json:"vmrss_bytes"`
}

// killResult is the SIGKILL pass: calls running, the server killed, a
// new one started on the same socket and called once.
type killResult struct {
	Calls        int  `json:"calls"`
	Running      int  `json:"commands_running_at_kill"`
	Answered     int  `json:"calls_answered"` // should be 0: the server died mid-call
	GroupsAtKill int  `json:"cgroups_of_killed_server"`
	StaleSocket  bool `json:"stale_socket_left"`
	// CommandsLeft: the killed calls' commands alive at the end (they die
	// with the server: the jail's init has PR_SET_PDEATHSIG).
	CommandsLeft int        `json:"commands_left"`
	Restarted    bool       `json:"next_server_served"`
	Leaks        leakResult `json:"leaks"`
}

// stopResult is the final SIGTERM.
type stopResult struct {
	ExitCode   int      `json:"exit_code"`
	SocketLeft bool     `json:"socket_left"`
	Left       []string `json:"left_in_private_dirs"` // entries in the runs' TMPDIR and XDG_RUNTIME_DIR
}

// pyOut is what bench/serve_bench.py writes.
type pyOut struct {
	Python  string               `json:"python"`
	Runs    int                  `json:"runs"`
	Warm    int                  `json:"warm"` // untimed rounds first
	Conc    int                  `json:"conc"`
	Latency map[string][]float64 `json:"latency_ms"`
	Blocks  []pyBlock            `json:"blocks"`
	// KernelIdle is the kernel's CPU per second outside every process
	// with nothing of the script running (nil from an older script).
	KernelIdle *float64 `json:"kernel_idle_cpu_s_per_s"`
	// The large-output pass, when run.
	BigBytes int64                `json:"big_bytes"`
	Big      map[string][]float64 `json:"big_ms"`
}

// bigVariants are the large-output pass's calls (serve_bench.py's
// BIG_VARIANTS): the served section's, and subprocess.run under
// patch_subprocess().
var bigVariants = []struct{ key, label string }{
	{"served", "tooljail.run, served"},
	{"cli", "tooljail.run, CLI"},
	{"patched", "subprocess.run under patch_subprocess() (CLI)"},
	{"bwrap", "subprocess.run of bwrap"},
	{"bare", "subprocess.run"},
}

// bigOutputBytes is the large-output pass's output per call: the default
// profile's output limit, all of which a caller gets.
const bigOutputBytes = 16 << 20

// writeRandom writes n random bytes to a new file at path.
func writeRandom(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, crand.Reader, n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bigTarget is the large-output goal: each way at most this many times
// subprocess.run of bwrap (issue 27).
const bigTarget = 1.5

// summarizeBig is the large-output pass's figures, in bigVariants' order;
// none when it did not run, an error when a variant is missing.
func summarizeBig(py pyOut) ([]serveLatency, error) {
	if len(py.Big) == 0 {
		return nil, nil
	}
	var out []serveLatency
	for _, v := range bigVariants {
		ms := py.Big[v.key]
		if len(ms) == 0 {
			return nil, fmt.Errorf("serve_bench.py timed no %s large-output calls", v.key)
		}
		out = append(out, serveLatency{Variant: v.key, Summary: bench.Summarize(ms), P99: bench.Percentile(ms, 99), Samples: ms})
	}
	return out, nil
}

func (s *serveResult) big(key string) serveLatency {
	for _, l := range s.Big {
		if l.Variant == key {
			return l
		}
	}
	return serveLatency{Summary: bench.Summary{Median: math.NaN(), P10: math.NaN(), P90: math.NaN()}, P99: math.NaN()}
}

type pyBlock struct {
	Variant        string   `json:"variant"`
	Runs           int      `json:"runs"`
	Wall           float64  `json:"wall_s"`
	Python         float64  `json:"python_cpu_s"`
	PythonChildren float64  `json:"python_children_cpu_s"`
	Server         float64  `json:"server_cpu_s"`
	ServerChildren float64  `json:"server_children_cpu_s"`
	Kernel         *float64 `json:"kernel_cpu_s"`
}

// summarizeServe turns the script's samples into the section's figures,
// variants in serveVariants' order; an error when one is missing.
func summarizeServe(py pyOut) ([]serveLatency, []serveTput, error) {
	var lat []serveLatency
	var tp []serveTput
	for _, v := range serveVariants {
		ms := py.Latency[v.key]
		if len(ms) == 0 {
			return nil, nil, fmt.Errorf("serve_bench.py timed no %s calls", v.key)
		}
		lat = append(lat, serveLatency{Variant: v.key, Summary: bench.Summarize(ms), P99: bench.Percentile(ms, 99), Samples: ms})
		t := serveTput{Variant: v.key}
		var wall, py0, pyc, srv, srvc, kern float64
		kernOK := py.KernelIdle != nil
		for _, b := range py.Blocks {
			if b.Variant != v.key {
				continue
			}
			t.Runs += b.Runs
			wall += b.Wall
			py0, pyc, srv, srvc = py0+b.Python, pyc+b.PythonChildren, srv+b.Server, srvc+b.ServerChildren
			if b.Kernel == nil {
				kernOK = false
			} else {
				kern += *b.Kernel
			}
			t.Blocks = append(t.Blocks, bench.Ratio(float64(b.Runs), b.Wall))
		}
		if t.Runs == 0 || wall <= 0 {
			return nil, nil, fmt.Errorf("serve_bench.py ran no %s throughput block", v.key)
		}
		n := float64(t.Runs)
		t.PerSec = n / wall
		t.Python, t.PythonChildren = py0*1000/n, pyc*1000/n
		t.Server, t.ServerChildren = srv*1000/n, srvc*1000/n
		if kernOK {
			k := kernelPerRun(kern, *py.KernelIdle, wall, n)
			t.Kernel = &k
		}
		tp = append(tp, t)
	}
	return lat, tp, nil
}

// kernelPerRun is the kernel's CPU in ms per run of blocks that took wall
// seconds for n runs and saw kernel seconds of it, less the idle rate (s/s)
// for that long. It may come out below 0 when the machine's own kernel work
// varied by more than the runs added.
func kernelPerRun(kernel, idle, wall, n float64) float64 {
	return (kernel - idle*wall) * 1000 / n
}

// servedCalls counts the calls the server got from the script: the warm-up
// round's, the timed ones, the throughput blocks'.
func servedCalls(py pyOut) int {
	n := py.Warm + len(py.Latency["served"])
	for _, b := range py.Blocks {
		if b.Variant == "served" {
			n += b.Runs
		}
	}
	return n
}

// editEnv returns env without the variables named in unset or set by set
// ("KEY=VALUE"), then with set appended.
func editEnv(env, unset []string, set ...string) []string {
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// statusField reads a "Name:   123 kB" line of /proc/PID/status text, in
// bytes.
func statusField(status, name string) (int64, bool) {
	for _, l := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(l, name+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024, true
				}
			}
		}
	}
	return 0, false
}

func readServerMem(pid int, when string) serverMem {
	m := serverMem{When: when, HWM: -1, RSS: -1}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return m
	}
	if v, ok := statusField(string(b), "VmHWM"); ok {
		m.HWM = v
	}
	if v, ok := statusField(string(b), "VmRSS"); ok {
		m.RSS = v
	}
	return m
}

// server is a `tooljail serve` the bench started.
type server struct {
	cmd    *exec.Cmd
	sock   string
	log    string
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startServer starts `tooljail serve --socket sock` with its output
// appended to logPath and returns once a connection to the socket succeeds.
func startServer(tooljail, sock, logPath string, env []string) (*server, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(tooljail, "serve", "--socket", sock)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, f, f
	err = cmd.Start()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("start tooljail serve: %w", err)
	}
	s := &server{cmd: cmd, sock: sock, log: logPath, exited: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		// A stale socket file refuses until the server has replaced it.
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("tooljail serve --socket %s exited before it answered (%v); its log: %s", sock, s.err, s.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("tooljail serve --socket %s did not answer within 15 s; its log: %s", sock, s.logTail())
		}
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.log)
	t := strings.TrimSpace(string(b))
	if len(t) > 2000 {
		t = "..." + t[len(t)-2000:]
	}
	if t == "" {
		return "(empty)"
	}
	return fmt.Sprintf("%q", t)
}

func (s *server) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop sends SIGTERM and waits for the drain (no call is running, so it is
// short); SIGKILL after 30 s. It returns the exit code.
func (s *server) stop() int {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
	}
	return s.cmd.ProcessState.ExitCode()
}

// withoutServer takes the live server out of the driver's descendants:
// what the leak checks count is what is left beside it.
// ownGroupOf says whether the cgroup directory c is the server pid's own
// (--server-memory: on cgroup v1 a memory group named after it, ending in
// -run-supervisor), which it holds while it lives: not a leak.
func ownGroupOf(c string, pid int) bool {
	return ownerPid(c) == pid && strings.HasSuffix(filepath.Base(c), "-run-supervisor")
}

func withoutServer(snap snapshot, s *server) snapshot {
	if s == nil || !s.alive() {
		return snap
	}
	snap.Descendants--
	// Its warm jails (serve/internal/warmpool) are parked, not left: each is an init
	// (a child of the server) with its stage 2, in a run group of its own.
	// They are left out, by their group; any other group of the server's
	// still counts.
	warm := map[string]bool{}
	for _, pid := range pids() {
		if pp, err := parentOf(pid); err != nil || pp != s.pid() {
			continue
		}
		if g := runGroupOf(pid); g != "" {
			warm[g] = true
			snap.Descendants -= 1 + descendants(pid)
		}
	}
	keep := snap.Cgroups[:0:0]
	for _, c := range snap.Cgroups {
		if !warm[filepath.Base(c)] && !ownGroupOf(c, s.pid()) {
			keep = append(keep, c)
		}
	}
	snap.Cgroups = keep
	return snap
}

// runGroupOf is the name of the tooljail run group pid is in (v1: its
// pids hierarchy's), or "".
func runGroupOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, path, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		_, path, _ = strings.Cut(path, ":")
		if name := filepath.Base(path); strings.HasPrefix(name, "tooljail-") && strings.Contains(name, "-run-") {
			return name
		}
	}
	return ""
}

// served measures the section: the server started in a private directory,
// the Python pass, the leak pass, the SIGKILL pass, the final SIGTERM.
func served(c *config, wd string, bw []string) (*serveResult, error) {
	began := time.Now()
	res := &serveResult{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Runs: c.serveRuns, Conc: serveConc}
	res.Load[0] = loadAvg()
	d, err := newServeDirs(c.work)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(d.dir)
	res.Socket = d.sock
	srvEnv := editEnv(os.Environ(), []string{"TOOLJAIL_SERVER", "TOOLJAIL_AUDIT_LOG"}, "TMPDIR="+d.tmp)
	srv, err := startServer(c.tooljail, d.sock, d.log, srvEnv)
	if err != nil {
		return nil, err
	}
	live := srv
	defer func() {
		// After an error: drained, not killed, so that it leaves nothing.
		if live.alive() {
			live.stop()
		}
	}()
	res.ServerPid = srv.pid()
	if err := pythonPass(c, res, d, srv, wd, bw); err != nil {
		return nil, err
	}
	client := &serve.Client{Path: d.sock}
	if c.serveLeakRuns > 0 {
		servedLeakPass(res, srv, client, wd, d.tmp, c.serveLeakRuns)
	}
	step("served: SIGKILL of the server during %d calls, then a new server on the same socket", serveKillCalls)
	if res.Kill, live, err = servedKill(c.tooljail, srv, client, wd, d.tmp, d.log, srvEnv); err != nil {
		return nil, err
	}
	res.Stop.ExitCode = live.stop()
	if _, err := os.Lstat(d.sock); !errors.Is(err, os.ErrNotExist) {
		res.Stop.SocketLeft = true
	}
	res.Stop.Left = append(listDir(d.tmp), listDir(d.xdg)...)
	res.Load[1] = loadAvg()
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// serveDirs is the section's private directory (mode 0700: the socket's
// directory must be private) and what is in it.
type serveDirs struct {
	dir  string
	sock string // the server's socket
	tmp  string // TMPDIR of the server and of Python
	xdg  string // XDG_RUNTIME_DIR of Python: no default socket there
	log  string // the server's log
}

func newServeDirs(work string) (serveDirs, error) {
	dir, err := os.MkdirTemp(work, "serve-")
	if err != nil {
		return serveDirs{}, err
	}
	d := serveDirs{dir: dir, sock: filepath.Join(dir, "sock"), tmp: filepath.Join(dir, "tmp"), xdg: filepath.Join(dir, "xdg"), log: filepath.Join(dir, "server.log")}
	for _, sub := range []string{d.tmp, d.xdg} {
		if err := os.Mkdir(sub, 0o700); err != nil {
			os.RemoveAll(dir)
			return serveDirs{}, err
		}
	}
	return d, nil
}

// serveCalls are the Python calls of each variant, as the report shows
// them.
func serveCalls(c *config, wd, sock string, bwJSON []byte) map[string]string {
	return map[string]string{
		"served":  fmt.Sprintf("tooljail.run([\"/bin/true\"], cwd=%q, capture_output=True, socket=%q)", wd, sock),
		"cli":     fmt.Sprintf("tooljail.run([\"/bin/true\"], cwd=%q, capture_output=True)  # TOOLJAIL_BIN=%s, no server", wd, c.tooljail),
		"bwrap":   fmt.Sprintf("subprocess.run(%s, cwd=%q, capture_output=True)", bwJSON, wd),
		"bare":    fmt.Sprintf("subprocess.run([\"/bin/true\"], cwd=%q, capture_output=True)", wd),
		"session": fmt.Sprintf("s.run([\"/bin/true\"], capture_output=True)  # s = tooljail.Session(socket=%q, cwd=%q), started once", sock, wd),
	}
}

// pythonPass runs bench/serve_bench.py against srv and fills res with its
// latency, throughput, session and large-output figures and the server's
// memory after them.
func pythonPass(c *config, res *serveResult, d serveDirs, srv *server, wd string, bw []string) error {
	bwJSON, err := json.Marshal(bw)
	if err != nil {
		return err
	}
	res.Calls = serveCalls(c, wd, d.sock, bwJSON)
	step("served from Python: %d calls each of served, CLI, bwrap, bare; server pid %d on %s", c.serveRuns, srv.pid(), d.sock)
	pyPath := filepath.Join(d.dir, "python.json")
	args := []string{"-B", c.servePy, "--socket", d.sock, "--server-pid", strconv.Itoa(srv.pid()),
		"--tooljail", c.tooljail, "--bwrap-argv", string(bwJSON), "--workdir", wd,
		"--runs", strconv.Itoa(c.serveRuns), "--conc", strconv.Itoa(serveConc), "--blocks", strconv.Itoa(serveBlocks), "--out", pyPath,
		"--big-runs", strconv.Itoa(c.serveBigRuns)}
	if c.serveBigRuns > 0 {
		// Random bytes: most of it is not UTF-8, as a binary's output is not.
		big := filepath.Join(wd, "big-output.bin")
		if err := writeRandom(big, bigOutputBytes); err != nil {
			return err
		}
		defer os.Remove(big)
		args = append(args, "--big-file", big)
		res.Calls["big"] = fmt.Sprintf("the same four calls and subprocess.run under tooljail.patch_subprocess(), each of [\"/bin/cat\", %q] (%d random bytes), capture_output=True, the output checked by sha256", big, bigOutputBytes)
	}
	cmd := exec.Command(c.python, args...)
	cmd.Env = editEnv(os.Environ(), []string{"TOOLJAIL_SERVER"}, "TOOLJAIL_BIN="+c.tooljail, "XDG_RUNTIME_DIR="+d.xdg, "TMPDIR="+d.tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (its output is above; the server's log: %s)", shellJoin(cmd.Args[:2]), err, srv.logTail())
	}
	py, err := readPyOut(pyPath)
	if err != nil {
		return err
	}
	if err := res.absorb(py); err != nil {
		return err
	}
	res.Memory = append(res.Memory, readServerMem(srv.pid(), fmt.Sprintf("after the Python pass (%d served calls)", servedCalls(py))))
	res.Warm = readWarmMem(srv.pid())
	return nil
}

func readPyOut(path string) (pyOut, error) {
	var py pyOut
	b, err := os.ReadFile(path)
	if err != nil {
		return py, err
	}
	if err := json.Unmarshal(b, &py); err != nil {
		return py, fmt.Errorf("%s: %w", path, err)
	}
	return py, nil
}

// absorb takes the Python side's figures into s.
func (s *serveResult) absorb(py pyOut) error {
	var err error
	s.Python = py.Python
	s.KernelIdle = py.KernelIdle
	if s.Latency, s.Throughput, err = summarizeServe(py); err != nil {
		return err
	}
	if ms := py.Latency["session"]; len(ms) > 0 {
		s.Session = &serveLatency{Variant: "session", Summary: bench.Summarize(ms), P99: bench.Percentile(ms, 99), Samples: ms}
	}
	if s.Big, err = summarizeBig(py); err != nil {
		return err
	}
	s.BigBytes = py.BigBytes
	return nil
}

// servedLeakPass is the server's leak check, with its open descriptors
// and its memory around it.
func servedLeakPass(res *serveResult, srv *server, client *serve.Client, wd, tmp string, runs int) {
	step("served leaks: %d runs at concurrency %d through the Go client", runs, serveConc)
	fdDir := "/proc/" + strconv.Itoa(srv.pid()) + "/fd"
	res.ServerFDs[0] = countDir(fdDir)
	l := servedLeaks(srv, client, wd, tmp, runs)
	res.Leaks = &l
	res.ServerFDs[1] = countDir(fdDir)
	res.Memory = append(res.Memory, readServerMem(srv.pid(), fmt.Sprintf("after the leak pass (%d more runs)", runs)))
}

// serveRun is one served /bin/true through the Go client; a run that does
// not exit 0 is an error.
func serveRun(client *serve.Client, wd string) error {
	r, err := client.Run(context.Background(), serve.Request{Argv: []string{"/bin/true"}, Workdir: wd})
	if err != nil {
		return err
	}
	if r.Status != "exited" || r.ExitCode != 0 {
		return fmt.Errorf("served /bin/true: status %s, exit %d: %s", r.Status, r.ExitCode, r.Reason)
	}
	return nil
}

// servedLeaks is the leak check of leaks.go on served runs: runs of
// /bin/true at concurrency 4 through the server, the host before and
// after. The server's cgroups are named after its pid; the live server
// itself is not counted among the driver's descendants.
func servedLeaks(srv *server, client *serve.Client, wd, tmp string, runs int) leakResult {
	res := leakResult{Runs: runs, Conc: serveConc, TmpDir: tmp, Supervisors: 1}
	res.Before = withoutServer(takeSnapshot(tmp), srv)
	watch, err := watchTmp()
	if err != nil {
		res.WatchErr = err.Error()
	}
	var mu sync.Mutex
	r := runner{name: "served", run: func() error {
		if err := serveRun(client, wd); err != nil {
			// Counted, not fatal: the comparison is still made.
			mu.Lock()
			res.record(err)
			mu.Unlock()
		}
		return nil
	}}
	start := time.Now()
	parallel(r, serveConc, runs)
	res.Seconds = time.Since(start).Seconds()
	if watch != nil {
		res.Creates = watch.Stop()
	}
	res.settle(map[int]bool{srv.pid(): true}, func() snapshot { return withoutServer(takeSnapshot(tmp), srv) })
	return res
}

// servedKill starts calls of a marked sleep, SIGKILLs the server while
// they run, starts a new server on the same socket, calls it once, and
// compares the host before the calls and after that call. It returns the
// new server.
func servedKill(tooljail string, srv *server, client *serve.Client, wd, tmp, logPath string, env []string) (killResult, *server, error) {
	k := killResult{Calls: serveKillCalls}
	l := &k.Leaks
	l.Runs, l.Conc, l.TmpDir, l.Supervisors = serveKillCalls, serveKillCalls, tmp, 2
	l.Before = withoutServer(takeSnapshot(tmp), srv)
	watch, err := watchTmp()
	if err != nil {
		l.WatchErr = err.Error()
	}
	// A sleep no other process on the host runs: its argument is unique.
	mark := fmt.Sprintf("3600.%09d", rand.IntN(1e9))
	old := srv.pid()
	killMidCall(&k, srv, client, wd, mark)
	next, err := startServer(tooljail, srv.sock, logPath, env)
	if err != nil {
		if watch != nil {
			watch.Stop()
		}
		return k, srv, fmt.Errorf("the server after SIGKILL: %w", err)
	}
	// The new server's first jail removes what the dead one left.
	if err := serveRun(client, wd); err != nil {
		l.Failures, l.FirstError = 1, err.Error()
	} else {
		k.Restarted = true
	}
	if watch != nil {
		l.Creates = watch.Stop()
	}
	ours := map[int]bool{old: true, next.pid(): true}
	take := func() {
		l.After = withoutServer(takeSnapshot(tmp), next)
		l.derive(ours)
		k.CommandsLeft = len(marked(mark))
	}
	take()
	if len(l.leaked()) > 0 || k.CommandsLeft > 0 {
		time.Sleep(2 * time.Second)
		l.Settled = true
		take()
	}
	return k, next, nil
}

// killMidCall starts k.Calls calls of a sleep marked with mark, SIGKILLs
// the server once they all run (or after 30 s), and records what the kill
// left: answers, the dead server's cgroups, its socket. It waits up to
// 5 s for the killed calls' commands to go.
func killMidCall(k *killResult, srv *server, client *serve.Client, wd, mark string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := make(chan error, serveKillCalls)
	for i := 0; i < serveKillCalls; i++ {
		go func() {
			_, err := client.Run(ctx, serve.Request{Argv: []string{"/bin/sleep", mark}, Workdir: wd})
			answers <- err
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if k.Running = len(marked(mark)); k.Running == serveKillCalls {
			break
		}
	}
	old := srv.pid()
	srv.kill()
	for i := 0; i < serveKillCalls; i++ {
		if err := <-answers; err == nil {
			k.Answered++
		}
	}
	k.GroupsAtKill = len(groupsOf(old))
	if fi, err := os.Lstat(srv.sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		k.StaleSocket = true
	}
	for deadline := time.Now().Add(5 * time.Second); len(marked(mark)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// marked lists the pids whose command line holds mark.
func marked(mark string) []int {
	var out []int
	for _, pid := range pids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(b), mark) {
			out = append(out, pid)
		}
	}
	return out
}

// groupsOf lists the tooljail-* cgroup directories named after pid.
func groupsOf(pid int) []string {
	var out []string
	for _, g := range tooljailCgroups() {
		if ownerPid(g) == pid {
			out = append(out, g)
		}
	}
	return out
}

// verdict is the "met" column.
func verdict(ok, valid bool) string {
	switch {
	case !valid:
		return "not measured"
	case ok:
		return "met"
	}
	return "**not met**"
}

func (s *serveResult) latency(key string) serveLatency {
	for _, l := range s.Latency {
		if l.Variant == key {
			return l
		}
	}
	return serveLatency{Summary: bench.Summary{Median: math.NaN(), P10: math.NaN(), P90: math.NaN()}, P99: math.NaN()}
}

func (s *serveResult) tput(key string) serveTput {
	for _, t := range s.Throughput {
		if t.Variant == key {
			return t
		}
	}
	nan := math.NaN()
	return serveTput{Variant: key, PerSec: nan, Python: nan, PythonChildren: nan, Server: nan, ServerChildren: nan}
}

// peakHWM is the server's largest VmHWM read (-1: none).
func (s *serveResult) peakHWM() int64 {
	var h int64 = -1
	for _, m := range s.Memory {
		h = max(h, m.HWM)
	}
	return h
}

// killLeft lists what the SIGKILL pass left: the leak check's findings and
// the killed calls' commands still alive.
func (k *killResult) left() []string {
	out := k.Leaks.leaked()
	if k.CommandsLeft > 0 {
		out = append(out, fmt.Sprintf("%d commands of the killed calls", k.CommandsLeft))
	}
	return out
}

func nothingOr(left []string) string {
	if len(left) == 0 {
		return "nothing"
	}
	return strings.Join(left, ", ")
}

// serveTargets is the section's targets table (DESIGN.md section 8, warm
// path, and the server's leak targets).
func serveTargets(s *serveResult) [][]string {
	rows := latencyTargets(s)
	rows = append(rows, tputTargets(s)...)
	rows = append(rows, bigTargets(s)...)
	rows = append(rows, memoryTarget(s))
	if l := s.Leaks; l != nil {
		rows = append(rows, servedLeakTarget(l, s.ServerFDs))
	}
	return append(rows, killTarget(&s.Kill))
}

// aimText is "; the 0.25× aim is met too" or "... is not" ("" when there
// is no figure).
func aimText(ratio float64, met bool, aim string) string {
	switch {
	case math.IsNaN(ratio):
		return ""
	case met:
		return "; the " + aim + " aim is met too"
	}
	return "; the " + aim + " aim is not"
}

// latencyTargets are the rows of a served call's and a session call's
// latency against bwrap's.
func latencyTargets(s *serveResult) [][]string {
	sv, bw := s.latency("served"), s.latency("bwrap")
	lr := bench.Ratio(sv.Median, bw.Median)
	rows := [][]string{{
		"latency from Python at concurrency 1: served ÷ bwrap, median", "≤ 0.35× (aim 0.25×)",
		fmt.Sprintf("%s (%s vs %s; p90 %s, p99 %s)%s", bench.FormatRatio(sv.Median, bw.Median), fms(sv.Median), fms(bw.Median),
			bench.FormatRatio(sv.P90, bw.P90), bench.FormatRatio(sv.P99, bw.P99), aimText(lr, lr <= 0.25, "0.25×")),
		verdict(lr <= 0.35, !math.IsNaN(lr)),
	}}
	if se := s.Session; se != nil {
		r := bench.Ratio(se.Median, bw.Median)
		rows = append(rows, []string{
			"a call in a live session from Python (Session.run) ÷ bwrap, median", "≤ 0.25×",
			fmt.Sprintf("%s (%s vs %s; p90 %s, p99 %s)", bench.FormatRatio(se.Median, bw.Median), fms(se.Median), fms(bw.Median),
				bench.FormatRatio(se.P90, bw.P90), bench.FormatRatio(se.P99, bw.P99)),
			verdict(r <= 0.25, !math.IsNaN(r)),
		})
	}
	return rows
}

// tputTargets are the throughput row and the CPU-per-run row.
func tputTargets(s *serveResult) [][]string {
	st, bt := s.tput("served"), s.tput("bwrap")
	tr := bench.Ratio(st.PerSec, bt.PerSec)
	cr := bench.Ratio(st.total(), bt.total())
	return [][]string{{
		fmt.Sprintf("throughput from Python at concurrency %d: served ÷ bwrap", s.Conc), "≥ 2× (aim 3×)",
		fmt.Sprintf("%s (%s vs %s)%s", bench.FormatRatio(st.PerSec, bt.PerSec), bench.FormatRate(st.PerSec), bench.FormatRate(bt.PerSec), aimText(tr, tr >= 3, "3×")),
		verdict(tr >= 2, !math.IsNaN(tr)),
	}, {
		fmt.Sprintf("CPU per run at concurrency %d: served (Python + server + jail) vs bwrap (Python + bwrap and below)", s.Conc), "≤ 1.0× (aim 0.5×)",
		fmt.Sprintf("%s vs %s (%s); server %s + jail %s%s%s", fms(st.total()), fms(bt.total()), bench.FormatRatio(st.total(), bt.total()), fms(st.Server), fms(st.ServerChildren), aimText(cr, cr <= 0.5, "0.5×"), withKernel(st, bt)),
		verdict(cr <= 1, !math.IsNaN(cr)),
	}}
}

// withKernel is the CPU comparison again with the kernel's work outside
// the processes added to both sides, or "" when it was not measured.
func withKernel(st, bt serveTput) string {
	a, b := st.totalKernel(), bt.totalKernel()
	if math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return fmt.Sprintf("; with the kernel's threads and interrupts: %s vs %s (%s)", fms(a), fms(b), bench.FormatRatio(a, b))
}

// memoryTarget is the server's memory row. The budget grows by
// warmKiBTarget per warm jail; held against the server's peak plus what
// the warm jails hold of their own.
func memoryTarget(s *serveResult) []string {
	h, u := s.peakHWM(), s.Warm.total()
	budget := int64(serveMiBTarget)<<20 + int64(s.Warm.Jails)*warmKiBTarget<<10
	each := make([]string, len(s.Warm.USS))
	for i, v := range s.Warm.USS {
		each[i] = bench.FormatBytes(v)
	}
	return []string{"memory: the server's (VmHWM, its peak over the section) plus its parked warm jails' own (USS of each init, whose memory its stage 2 shares)",
		fmt.Sprintf("< %d MiB + %d KiB per warm jail", serveMiBTarget, warmKiBTarget),
		fmt.Sprintf("%s + %d warm jails (%s) = %s, against %s", bench.FormatBytes(h), s.Warm.Jails, strings.Join(each, ", "), bench.FormatBytes(h+u), bench.FormatBytes(budget)),
		verdict(h+u < budget, h >= 0 && u >= 0)}
}

// servedLeakTarget is the server's leak check row; fds are the server's
// open descriptors before and after it.
func servedLeakTarget(l *leakResult, fds [2]int) []string {
	left := l.leaked()
	if d := fds[1] - fds[0]; d != 0 {
		left = append(left, fmt.Sprintf("%+d server fds", d))
	}
	return []string{
		fmt.Sprintf("nothing left after %d served runs at concurrency %d (cgroups, mounts, processes, fds of the driver and the server, temp entries)", l.Runs, l.Conc),
		"nothing left, no failed run",
		fmt.Sprintf("%s left; %d failed runs", nothingOr(left), l.Failures),
		verdict(len(left) == 0 && l.Failures == 0, true),
	}
}

// killTarget is the SIGKILL pass's row.
func killTarget(k *killResult) []string {
	left := k.left()
	return []string{
		fmt.Sprintf("nothing left after the server is SIGKILLed during %d running calls and restarted", k.Calls),
		"nothing left; the next server serves",
		fmt.Sprintf("%s left; %d of %d calls running at the kill; next server served: %s", nothingOr(left), k.Running, k.Calls, yesNo(k.Restarted)),
		// Fewer calls running than started would test less than it says.
		verdict(len(left) == 0 && k.Restarted && k.Running == k.Calls, true),
	}
}

func yesNo(b bool) string { return pick(b, "yes", "no") }

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// renderServe writes the section; the same text for a whole run and for
// -only serve, which splices it into the report in place.
// renderServe writes the section; the same text for a whole run and for
// -only serve, which splices it into the report in place. Its parts are
// independent, one function each.
func renderServe(p func(string, ...any), r *results) {
	s := r.Serve
	renderServeIntro(p, s, r.Machine)
	p("%s\n", bench.Table([]string{"target", "goal", "measured", "met"}, serveTargets(s)))
	renderServeLatency(p, s)
	renderServeThroughput(p, s)
	if len(s.Big) > 0 {
		renderBig(p, s)
	}
	renderServeMemory(p, s)
	if s.Leaks != nil {
		renderServeLeaks(p, s)
	}
	renderServeKill(p, s)
	renderServeCalls(p, s)
}

// renderServeIntro is the heading and how the section was measured.
func renderServeIntro(p func(string, ...any), s *serveResult, m machine) {
	p("%s\n\n", serveHeading)
	p("`/bin/true` in the default profile, called from one Python %s process (`bench/serve_bench.py`,\n", s.Python)
	p("with the client of `python/tooljail` from this tree) four ways: `tooljail.run` through a\n")
	p("`tooljail serve` server, `tooljail.run` through the CLI, `subprocess.run` of bwrap with the same\n")
	p("mounts as in [Start-up](#start-up), and a bare `subprocess.run`; output captured on every side.\n")
	p("The bench started the server as root on its own socket in a private directory and stopped it\n")
	p("with SIGTERM at the end. Measured %s in %.0f s on %s, %d cores, Linux %s, %s;\n",
		s.Date, s.Seconds, m.CPU, m.Cores, m.Kernel, shortVersion(m.Tooljail))
	p("load average before / after: %s / %s.\n\n", s.Load[0], s.Load[1])
	p("The server runs with its default `--warm 2`: a served call finds a jail of its shape built\n")
	p("and confined ahead of time, up to the command's execve, and only execs; the first call of the\n")
	p("section, and a call that finds the pool empty (throughput at concurrency 4), builds its jail\n")
	p("when it arrives. The report goes out before the run's cgroup is removed (docs/serve.md,\n")
	p("warm jails). The targets are those of the warm path (DESIGN.md section 8).\n\n")
}

func renderServeLatency(p func(string, ...any), s *serveResult) {
	p("### Latency at concurrency 1\n\n")
	bw, bare := s.latency("bwrap"), s.latency("bare")
	var rows [][]string
	for _, v := range serveVariants {
		l := s.latency(v.key)
		rows = append(rows, []string{v.label, fms(l.Median), fms(l.P90), fms(l.P99),
			bench.FormatRatio(l.Median, bw.Median), bench.FormatRatio(l.P90, bw.P90), bench.FormatRatio(l.P99, bw.P99),
			bench.FormatRatio(l.Median, bare.Median)})
	}
	p("%s\n", bench.Table([]string{"call", "median", "p90", "p99", "median ÷ bwrap", "p90 ÷ bwrap", "p99 ÷ bwrap", "median ÷ bare"}, rows))
	p("%d calls each, alternated call by call, each round starting one call further along; the wall\n", s.Runs)
	p("time in Python from the call to its return (`time.perf_counter_ns`), after 5 untimed rounds.\n\n")
}

func renderServeThroughput(p func(string, ...any), s *serveResult) {
	p("### Throughput at concurrency %d\n\n", s.Conc)
	bt := s.tput("bwrap")
	var rows [][]string
	for _, v := range serveVariants {
		t := s.tput(v.key)
		srvCPU, jailCPU := "–", "–"
		if v.key == "served" {
			srvCPU, jailCPU = fms(t.Server), fms(t.ServerChildren)
		}
		rows = append(rows, []string{v.label, bench.FormatRate(t.PerSec), bench.FormatRatio(t.PerSec, bt.PerSec),
			fmt.Sprintf("%s – %s", bench.FormatRate(bench.Percentile(t.Blocks, 0)), bench.FormatRate(bench.Percentile(t.Blocks, 100))),
			fms(t.Python), fms(t.PythonChildren), srvCPU, jailCPU, fms(t.total()), bench.FormatRatio(t.total(), bt.total()),
			fms(orNaNPtr(t.Kernel)), fms(t.totalKernel()), bench.FormatRatio(t.totalKernel(), bt.totalKernel())})
	}
	p("%s\n", bench.Table([]string{"call", "runs/s", "÷ bwrap", "blocks", "CPU/run: Python", "its children", "server", "server's children (jails)", "total", "total ÷ bwrap", "kernel threads, interrupts", "all", "all ÷ bwrap"}, rows))
	runs := 0
	if len(s.Throughput) > 0 {
		runs = s.Throughput[0].Runs
	}
	p("%d calls each from %d Python threads, in %d alternating blocks per call (the block column gives\n", runs, s.Conc, serveBlocks)
	p("the slowest and the fastest); runs/s is total runs ÷ total wall time. CPU per run, user + system,\n")
	p("over each call's blocks: Python's own (`getrusage(RUSAGE_SELF)`), its reaped children's\n")
	p("(`RUSAGE_CHILDREN`: the CLI or bwrap and all below them), and for the served call the server's\n")
	p("own and its reaped children's (its jails' inits and commands), from `/proc/PID/stat` (clock ticks).\n")
	p("The kernel's work outside every process (its threads: the teardown of namespaces and cgroups,\n")
	p("RCU callbacks, network work; and interrupts) is machine-wide: the CPU of every kernel thread\n")
	p("(`/proc/PID/stat`, PF_KTHREAD) and /proc/stat's irq and softirq, over the call's blocks, less\n")
	p("the rate measured for 2 s with nothing of the bench running before and after the blocks\n")
	p("(%s per second), per run; \"all\" adds it to the total. A kernel thread that ends during a\n", fms(orNaNPtr(s.KernelIdle)*1000))
	p("block takes its time with it.\n\n")
}

func renderServeMemory(p func(string, ...any), s *serveResult) {
	p("### Server memory\n\n")
	var rows [][]string
	for _, mm := range s.Memory {
		rows = append(rows, []string{mm.When, bench.FormatBytes(mm.HWM), bench.FormatBytes(mm.RSS)})
	}
	p("%s\n", bench.Table([]string{"when", "VmHWM", "VmRSS"}, rows))
	p("From `/proc/%d/status` of the server (pid of this run).\n\n", s.ServerPid)
}

// renderServeLeaks is the server's leak check.
func renderServeLeaks(p func(string, ...any), s *serveResult) {
	l := s.Leaks
	p("### Leaks after %d served runs at concurrency %d\n\n", l.Runs, l.Conc)
	p("%s\n", bench.Table([]string{"what", "before", "after", "left by these runs", "note"}, append(leakRows(l, "the server's pid"),
		[]string{"open fds of the server", fmt.Sprint(s.ServerFDs[0]), fmt.Sprint(s.ServerFDs[1]), fmt.Sprintf("%+d", s.ServerFDs[1]-s.ServerFDs[0]), ""})))
	p("%d runs of `/bin/true` through the Go client (`serve.Client`, one connection per call) from the\n", l.Runs)
	p("bench driver to the same server, %d failed, %.0f s (%s).\n", l.Failures, l.Seconds, bench.FormatRate(float64(l.Runs)/l.Seconds))
	for _, n := range leakNotes(l) {
		p("%s\n", n)
	}
	p("The server's cgroups are named after its pid; the live server itself is not counted among the\n")
	p("driver's descendants. `/tmp` entries are attributed by creator as in the CLI's leak check.\n\n")
}

// renderServeKill is the SIGKILL pass and the final SIGTERM.
func renderServeKill(p func(string, ...any), s *serveResult) {
	k := &s.Kill
	p("### After SIGKILL of the server and a restart\n\n")
	p("%s\n", bench.Table([]string{"what", "before", "after", "left", "note"}, append(leakRows(&k.Leaks, "the killed server's or the next one's pid"),
		[]string{"commands of the killed calls alive", "–", fmt.Sprint(k.CommandsLeft), fmt.Sprint(k.CommandsLeft),
			fmt.Sprintf("%d of %d seen running at the kill; %d calls answered anyway", k.Running, k.Calls, k.Answered)})))
	p("%d calls of a `/bin/sleep` with a unique argument, the server SIGKILLed once %d of them ran; it left\n", k.Calls, k.Running)
	p("%d cgroup directories (all hierarchies) and %s socket file. A new server on the same socket then\n", k.GroupsAtKill, pick(k.StaleSocket, "a stale", "no"))
	p("served one `/bin/true` (%s); \"after\" is taken then, with the new server running, and cgroups\n",
		pick(k.Restarted, "it did", "it did not: "+k.Leaks.FirstError))
	p("are judged on both servers' pids.")
	if k.Leaks.Settled {
		p(" Something differed at first, so \"after\" was taken again 2 s later.")
	}
	p("\n\n")
	p("At the end the new server got SIGTERM: exit %d, socket %s, %s left in the runs' `TMPDIR` and\n",
		s.Stop.ExitCode, pick(s.Stop.SocketLeft, "**still there**", "removed"), nothingOr(first(s.Stop.Left, 5)))
	p("Python's `XDG_RUNTIME_DIR`; the private directory was then removed.\n\n")
}

func renderServeCalls(p func(string, ...any), s *serveResult) {
	p("<details><summary>exact calls</summary>\n\n```\n")
	for _, v := range serveVariants {
		p("%s\n", s.Calls[v.key])
	}
	p("```\n</details>\n\n")
}

// leakRows are the host rows of a leak table: before, after, what of the
// difference is ours, and how that is told.
func leakRows(l *leakResult, owners string) [][]string {
	n := func(x int) string { return fmt.Sprint(x) }
	list := func(xs []string, k int) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(first(xs, k), ", ")
	}
	return [][]string{
		{"cgroup directories tooljail-* (all hierarchies)", n(len(l.Before.Cgroups)), n(len(l.After.Cgroups)), n(len(l.OurCgroups)), "named after " + owners + ": " + list(l.OurCgroups, 3)},
		{"host mounts", n(len(l.Before.Mounts)), n(len(l.After.Mounts)), n(len(l.NewMounts)), "new mount IDs: " + list(l.NewMounts, 5)},
		{"live descendants of the driver, the server aside", n(l.Before.Descendants), n(l.After.Descendants), n(l.After.Descendants), ""},
		{"open fds of the bench driver", n(l.Before.FDs), n(l.After.FDs), fmt.Sprintf("%+d", l.After.FDs-l.Before.FDs), ""},
		{"entries in /tmp and /var/tmp", n(len(l.Before.Tmp)), n(len(l.After.Tmp)), n(len(l.OurTmp)), tmpNote(l)},
		{"entries in the server's TMPDIR", n(len(l.Before.PrivTmp)), n(len(l.After.PrivTmp)), n(len(l.NewPrivTmp)), list(l.NewPrivTmp, 5)},
	}
}

// bigTargets are the large-output rows of the targets table: each way of
// the caller's at most bigTarget× subprocess.run of bwrap, median.
func bigTargets(s *serveResult) [][]string {
	if len(s.Big) == 0 {
		return nil
	}
	bw := s.big("bwrap")
	var rows [][]string
	for _, v := range bigVariants[:3] {
		l := s.big(v.key)
		r := bench.Ratio(l.Median, bw.Median)
		rows = append(rows, []string{
			fmt.Sprintf("%s of output: %s ÷ subprocess.run of bwrap, median", bench.FormatBytes(s.BigBytes), v.label),
			fmt.Sprintf("≤ %.2f×", bigTarget),
			fmt.Sprintf("%s (%s vs %s)", bench.FormatRatio(l.Median, bw.Median), fms(l.Median), fms(bw.Median)),
			verdict(r <= bigTarget, !math.IsNaN(r)),
		})
	}
	return rows
}

// renderBig writes the large-output table.
func renderBig(p func(string, ...any), s *serveResult) {
	p("### %s of output\n\n", bench.FormatBytes(s.BigBytes))
	bw, bare := s.big("bwrap"), s.big("bare")
	var rows [][]string
	for _, v := range bigVariants {
		l := s.big(v.key)
		rows = append(rows, []string{v.label, fms(l.Median), fms(l.P90), bench.FormatRatio(l.Median, bw.Median), bench.FormatRatio(l.Median, bare.Median)})
	}
	p("%s\n", bench.Table([]string{"call", "median", "p90", "median ÷ bwrap", "median ÷ bare"}, rows))
	runs := 0
	if len(s.Big) > 0 {
		runs = len(s.Big[0].Samples)
	}
	p("`/bin/cat` of a file of %d random bytes in the workdir, `capture_output=True`, the bytes checked\n", s.BigBytes)
	p("by sha256 on every call; %d calls each, alternated, after one untimed round. The CLI ways\n", runs)
	p("relay the output through tooljail's pipes; the served way gets it as the server's stream lines.\n\n")
}
