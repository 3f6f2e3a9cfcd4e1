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
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/bench"
	"github.com/tooljail/tooljail/seccomp"
)

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/bin/sh", "-c", "echo 'hi' $X", "a=b", ""})
	want := `/bin/sh -c 'echo '\''hi'\'' $X' a=b ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestOwnerPid(t *testing.T) {
	for path, want := range map[string]int{
		"/sys/fs/cgroup/memory/tooljail-4242-99-4026531836": 4242,
		"/sys/fs/cgroup/pids/x/tooljail-7-1-2":              7,
		"/sys/fs/cgroup/pids/tooljail-bad":                  0,
	} {
		if got := ownerPid(path); got != want {
			t.Errorf("ownerPid(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestNewEntries(t *testing.T) {
	got := newEntries([]string{"/tmp/a", "/tmp/b"}, []string{"/tmp/b", "/tmp/c"})
	if len(got) != 1 || got[0] != "/tmp/c" {
		t.Errorf("newEntries = %v, want [/tmp/c]", got)
	}
}

// descendants sees a child and its grandchild, and nothing once they are
// gone: the leak check's process count.
func TestDescendants(t *testing.T) {
	base := descendants(os.Getpid())
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill the pair as one group
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for descendants(os.Getpid()) < base+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := descendants(os.Getpid()); n < base+2 {
		t.Errorf("descendants = %d with a shell and its sleep running, want at least %d", n, base+2)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for descendants(os.Getpid()) > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := descendants(os.Getpid()); n != base {
		t.Errorf("descendants = %d after the children were killed, want %d", n, base)
	}
}

// bwrapArgv mirrors the default profile's Spec: same system directories
// (symlinks kept), /etc entries, tmpfs mounts, the workdir read-write.
func TestBwrapArgvMirrorsSpec(t *testing.T) {
	wd := t.TempDir()
	wd, _ = filepath.EvalSymlinks(wd)
	argv, err := bwrapArgv("bwrap", wd, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	for _, want := range []string{
		"bwrap --unshare-all --die-with-parent ",
		"--ro-bind /usr /usr",
		"--tmpfs /tmp",
		"--tmpfs /home/sandbox",
		"--bind " + wd + " " + wd,
		"--proc /proc --dev /dev --chdir " + wd + " -- /bin/true",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("bwrap argv lacks %q:\n%s", want, line)
		}
	}
	if target, err := os.Readlink("/bin"); err == nil && !strings.Contains(line, "--symlink "+target+" /bin") {
		t.Errorf("/bin is a symlink to %s on this host, the argv does not recreate it:\n%s", target, line)
	}
	if _, err := os.Stat("/etc/ld.so.cache"); err == nil && !strings.Contains(line, "--ro-bind /etc/ld.so.cache /etc/ld.so.cache") {
		t.Errorf("the default profile's /etc/ld.so.cache is not bound:\n%s", line)
	}
	if strings.Contains(line, "/root") || strings.Contains(line, "--bind /etc") {
		t.Errorf("unexpected host path in the argv:\n%s", line)
	}
}

// render copes with every figure missing (n/a, never NaN or a panic) and
// writes each section and the targets table.
func TestRenderWithMissingFigures(t *testing.T) {
	empty := timing{}
	r := &results{
		Machine:    machine{CPU: "test CPU", Cores: 2},
		Commands:   map[string]string{"workdir": "/w"},
		Startup:    []timing{empty, empty, empty, empty, empty},
		Layers:     []layerResult{{Label: "bare fork+exec"}, {Label: "bwrap (reference)"}},
		Throughput: []tput{{Conc: 4}},
		Loops:      []loopResult{{Call: "getppid", Calls: 10}},
		Unpriv:     &unprivResult{Skipped: "no uid 65534 here"},
		Leaks:      &leakResult{Runs: 10, Conc: 4},
	}
	doc := render(&config{}, r, "bench/startup-layers.svg")
	for _, want := range []string{"## Machine", "## Design targets", "## Start-up\n", "## Start-up by layer", "## Throughput",
		"## Seccomp cost", "## Supervisor memory", "## Leaks after 10 runs", "## Unprivileged", "Skipped: no uid 65534 here",
		"![start-up by layer](bench/startup-layers.svg)", "not measured", "static Go hello world"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(doc, "NaN") || strings.Contains(doc, "Inf") {
		t.Errorf("a missing figure leaked as NaN/Inf:\n%s", doc)
	}
	if _, ok := bench.Notes(bench.Assemble(doc, "")); !ok {
		t.Errorf("assembled report has no notes section")
	}
}

// The leak verdict counts only what this pass can have left: cgroups named
// after its supervisors, new mounts, live descendants, fds, temp entries
// that its own processes created.
func TestLeakVerdict(t *testing.T) {
	before := snapshot{
		Cgroups: []string{"/sys/fs/cgroup/pids/tooljail-1-1-1"},
		Mounts:  []string{"20 /", "21 /proc"},
		FDs:     11,
		Tmp:     []string{"/tmp/a"},
	}
	after := before
	after.Cgroups = append(append([]string(nil), before.Cgroups...), "/sys/fs/cgroup/pids/tooljail-99-5-6") // another supervisor's
	after.Mounts = []string{"20 /"}                                                                         // someone unmounted: not ours
	after.Tmp = []string{"/tmp/go-build123", "/tmp/vm2.log"}                                                // others'; /tmp/a gone
	creates := []tmpCreate{{Dir: "/tmp", Name: "go-build123", Pid: 7}, {Dir: "/tmp", Name: "vm2.log", Pid: 8, Gone: true}}
	l := leakResult{Before: before, After: after, Creates: creates}
	l.derive(map[int]bool{42: true})
	if got := l.leaked(); len(got) != 0 {
		t.Errorf("others' work counted as a leak: %v", got)
	}
	if len(l.NewTmp) != 2 || l.GoneTmp != 1 {
		t.Errorf("new temp entries %v, gone %d; want 2 and 1", l.NewTmp, l.GoneTmp)
	}
	// Without fanotify the names decide: vm2.log is not a known other
	// program's, so it counts.
	l = leakResult{Before: before, After: after, WatchErr: "no fanotify"}
	l.derive(map[int]bool{42: true})
	if len(l.OurTmp) != 1 || l.OurTmp[0] != "/tmp/vm2.log" {
		t.Errorf("by name, ours = %v, want [/tmp/vm2.log]", l.OurTmp)
	}

	after.Cgroups = append(after.Cgroups, "/sys/fs/cgroup/memory/tooljail-42-7-8")
	after.Mounts = append(after.Mounts, "377 /tmp")
	after.Tmp = append(after.Tmp, "/tmp/tooljail-root-1", "/var/tmp/x")
	after.Descendants = 1
	after.FDs = 12
	after.PrivTmp = []string{"/w/tmpdir/x"}
	creates = append(creates,
		tmpCreate{Dir: "/tmp", Name: "tooljail-root-1", Pid: 50, Ours: true}, // a jail process
		tmpCreate{Dir: "/var/tmp", Name: "x", Pid: 42, Gone: true},           // a supervisor of this pass
		tmpCreate{Dir: "/tmp", Name: "removed-again", Pid: 42, Gone: true})   // not there any more: no leak
	l = leakResult{Before: before, After: after, Creates: creates}
	l.derive(map[int]bool{42: true})
	want := []string{"1 cgroups", "1 mounts", "1 processes", "+1 fds", "3 temp entries"}
	if got := l.leaked(); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("leaked() = %q, want %q (our temp entries %v)", got, want, l.OurTmp)
	}
}

// The fanotify watch names the entry, its directory and whether a
// descendant of this process made it. Root only (fanotify needs
// CAP_SYS_ADMIN); the bench runs as root.
func TestTmpWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fanotify needs root")
	}
	w, err := watchTmp()
	if err != nil {
		t.Fatal(err)
	}
	name := "tjbench-watch-test-" + strconv.Itoa(os.Getpid())
	path := filepath.Join("/tmp", name)
	defer os.Remove(path)
	// A child that creates the file itself and then lives on for a while:
	// the watch must find it alive to tell that it is ours.
	cmd := exec.Command("/bin/sh", "-c", ": >\"$0\"; sleep 0.3", path)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	creates := w.Stop()
	for _, c := range creates {
		if c.Name == name {
			if c.Dir != "/tmp" || !c.Ours || c.Pid <= 0 {
				t.Errorf("create of %s recorded as %+v, want dir /tmp, ours, a pid", path, c)
			}
			return
		}
	}
	t.Errorf("create of %s not seen; saw %+v", path, creates)
}

// writeFilter writes exactly what the seccomp package compiles for the
// default profile, EPERM variant, and counts the notify variant too.
func TestWriteFilter(t *testing.T) {
	work := t.TempDir()
	wd := t.TempDir()
	fi, err := writeFilter(work, wd)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := defaultSpec(wd, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&seccomp.Compiler{}).Compile(*spec.Seccomp, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(fi.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Filter) || fi.Insns != want.Instructions() || fi.Insns < 2 {
		t.Errorf("%s: %d bytes, %d instructions recorded; want the %d bytes of the EPERM program", fi.Path, len(got), fi.Insns, len(want.Filter))
	}
	if fi.NotifyInsns == 0 && fi.NotifyErr == "" {
		t.Errorf("neither the notify variant's length nor why it is missing: %+v", fi)
	}
}

// loopFixture makes a getppid loop of three rounds whose variants have
// the given ns per call in the median round (calls 1000000, so 1 ms per
// loop is 1 ns per call); the rounds drift by +60 and -20 ns for all
// variants alike.
func loopFixture(ns map[string]float64) loopResult {
	l := loopResult{Call: "getppid", Calls: 1000000, Reps: 3}
	for _, k := range loopKeys {
		ms := ns[k]
		cpu := []float64{ms, ms + 60, ms - 20}
		l.Variants = append(l.Variants, loopVariant{Key: k,
			CPU:  timing{Summary: bench.Summarize(cpu), Samples: cpu},
			Wall: timing{Summary: bench.Summarize([]float64{2 * ms})}})
	}
	return l
}

func TestSeccompCosts(t *testing.T) {
	l := loopFixture(map[string]float64{vNone: 200, vAllowAll: 220, vTooljail: 222, vNoCache: 300, vJailOff: 201, vJail: 224})
	c := l.costs()
	const eps = 1e-9
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"floor", c.Floor.Median, 20}, {"floor %", c.FloorPct, 10}, {"above", c.Above.Median, 2},
		{"above %", c.AbovePct, 1}, {"outside", c.Outside.Median, 22}, {"outside %", c.OutsidePct, 11},
		{"uncached", c.Uncached.Median, 78}, {"jail", c.Jail.Median, 24}, {"jail %", c.JailPct, 12},
		{"in jail", c.InJail.Median, 23}, {"in jail %", c.InJailPct, 100 * 23.0 / 201}} {
		if math.Abs(x.got-x.want) > eps {
			t.Errorf("%s = %v, want %v", x.name, x.got, x.want)
		}
	}
	if c.Floor.Rounds != 3 || c.Floor.Slower != 3 {
		t.Errorf("floor rounds %+v, want slower in 3 of 3", c.Floor)
	}
	if s := floorSentence(c, 2); !strings.Contains(s, "+10.0 %, at or above the 2 % target") {
		t.Errorf("floor sentence: %s", s)
	}
	if s := floorSentence(costs{FloorPct: 1.5}, 2); !strings.Contains(s, "under the 2 % target") {
		t.Errorf("floor sentence: %s", s)
	}

	r := &results{Loops: []loopResult{l}, Filter: filterInfo{Path: "/x/bench/.work/filter.bpf", Insns: 300, NotifyInsns: 301}}
	row := seccompTarget(&r.Loops[0])
	if row[2] != "+12.0 % (ratio of the medians: +12.0 %; wall time: +12.0 %); of it the kernel's floor for any filter (allow-all, outside): +10.0 %; tooljail's filter above that floor (outside): +1.0 %" || row[3] != "**not met**" {
		t.Errorf("target row = %q", row)
	}
	var b strings.Builder
	renderSeccomp(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, r)
	for _, want := range []string{
		"| no filter | outside | 200 ms (min 180 ms) | 200 ns |  | 400 ns |",
		"| tooljail's filter, default profile (EPERM variant, 300 instructions) | outside | 222 ms (min 202 ms) | 222 ns | +22 ns (+11.0 %), slower in 3 of 3 rounds | 444 ns |",
		"jail, default profile (notify variant, 301 instructions)",
		"**tooljail's filter above the floor** (tooljail's filter − allow-all): +2 ns (+1.0 %) per call, slower in 3 of 3 rounds",
		"(allow-all − no filter): +20 ns (+10.0 %) per call, slower in 3 of 3 rounds",
		"cover getppid under tooljail's filter? cannot tell from 3 loops per variant",
		"`bench/.work/filter.bpf`",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("seccomp section lacks %q:\n%s", want, b.String())
		}
	}
}

// The cache verdict pairs the variants round by round and says "cannot
// tell" unless the cache-defeated program is slower in 4 of 5 rounds.
func TestCacheVerdict(t *testing.T) {
	// ns per call of allow-all, tooljail's filter, cache defeated, per round.
	mk := func(rounds [][3]float64) loopResult {
		l := loopResult{Call: "getppid", Calls: 1000000}
		for j, k := range []string{vAllowAll, vTooljail, vNoCache} {
			var ms []float64
			for _, r := range rounds {
				ms = append(ms, r[j]) // 1 ms per loop = 1 ns per call
			}
			l.Variants = append(l.Variants, loopVariant{Key: k, CPU: timing{Summary: bench.Summarize(ms), Samples: ms}})
		}
		return l
	}
	// Drift between rounds much larger than the effect: pairing sees through it.
	drifting := [][3]float64{{220, 221, 280}, {300, 300, 362}, {250, 249, 300}, {210, 212, 270}, {400, 399, 455}, {230, 230, 290}}
	l := mk(drifting)
	e := l.costs().cacheEvidence()
	if e.Rounds != 6 || e.Slower != 6 || math.Abs(e.Above-0) > 1 || e.Saved < 55 || e.Saved > 62 {
		t.Errorf("evidence %+v, want 6 rounds, 6 slower, above ~0, saved ~59", e)
	}
	if v := e.verdict(5); !strings.HasPrefix(v, "yes:") {
		t.Errorf("verdict: %s", v)
	}
	for _, x := range []struct {
		e    cacheEvidence
		want string
	}{
		{cacheEvidence{Rounds: 6, Slower: 6, Above: 55, Saved: 60}, "no:"},
		{cacheEvidence{Rounds: 6, Slower: 6, Above: 30, Saved: 60}, "unclear:"},
		{cacheEvidence{Rounds: 6, Slower: 4, Above: 0, Saved: 60}, "cannot tell: "},
		{cacheEvidence{Rounds: 6, Slower: 6, Above: 0, Saved: 3}, "cannot tell: "},
		{cacheEvidence{Rounds: 3, Slower: 3, Above: 0, Saved: 60}, "cannot tell from 3"},
		{cacheEvidence{}, "cannot tell from 0"},
	} {
		if v := x.e.verdict(5); !strings.HasPrefix(v, x.want) {
			t.Errorf("verdict(%+v) = %s, want %s...", x.e, v, x.want)
		}
	}
}

// Over two rounds every variant runs both right before and right after
// each of its neighbours, and every round runs each variant once.
func TestRoundOrder(t *testing.T) {
	const n = 6
	follows := map[[2]int]bool{}
	for r := 0; r < 2*n; r++ {
		o := roundOrder(r, n)
		seen := map[int]bool{}
		for k, i := range o {
			seen[i] = true
			if k > 0 {
				follows[[2]int{o[k-1], i}] = true
			}
		}
		if len(seen) != n {
			t.Fatalf("round %d: order %v does not run each variant once", r, o)
		}
	}
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		if !follows[[2]int{i, j}] || !follows[[2]int{j, i}] {
			t.Errorf("variants %d and %d do not run in both orders", i, j)
		}
	}
	if o := roundOrder(0, 3); fmt.Sprint(o) != "[0 1 2]" {
		t.Errorf("round 0 = %v, want [0 1 2]", o)
	}
	if o := roundOrder(1, 3); fmt.Sprint(o) != "[0 2 1]" {
		t.Errorf("round 1 = %v, want [0 2 1]", o)
	}
}

// The version row compares medians: met at or under 1.5× the hello world,
// not met above, not measured when either side has no samples.
func TestVersionTarget(t *testing.T) {
	ms := func(xs ...float64) timing { return timing{Summary: bench.Summarize(xs), Samples: xs} }
	for _, c := range []struct {
		version, hello timing
		want, shown    string
	}{
		{ms(9, 10, 30), ms(6, 7, 8), "met", "1.43×"},
		{ms(10.5, 10.5), ms(7), "met", "1.50×"},
		{ms(20, 21, 22), ms(6, 7, 8), "**not met**", "3.00×"},
		{ms(20), timing{}, "not measured", "n/a"},
		{timing{}, ms(7), "not measured", "n/a"},
	} {
		row := versionTarget(c.version, c.hello)
		if row[3] != c.want || !strings.HasPrefix(row[2], c.shown) {
			t.Errorf("version %v, hello %v: %q, want %q starting %q", c.version.Samples, c.hello.Samples, row, c.want, c.shown)
		}
	}
}
