package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/bench"
)

// The denied-call flood (issue 14). In a jail with seccomp user
// notification every denied call is a round trip to the supervisor, which
// names it, counts it and answers EPERM; a command that loops on a denied
// call makes the supervisor work outside the jail's CPU cap. Each run is
// `tooljail run -- tjloop -gate denied N` with the default profile: the
// driver reads tjloop's "ready" (the jail is up), samples the supervisor's
// CPU time, lets the loop go, reads the result and samples again, so start
// and teardown do not count. N stays under the default --max-violations
// (10000), past which the run would be killed.
//
// For scale beside it: the same driver and tjloop -gate echo N on two
// pipes, a blocking round trip between two processes, measured as the
// CPU time of the driver's thread. A supervisor that sleeps until each
// call arrives pays about that per call however little it does (on a VM
// where a context switch is dear, most of it).

// deniedResult is the flood, one value per run, in ns per call.
type deniedResult struct {
	Calls      int       `json:"calls"` // denied calls per run
	Runs       int       `json:"runs"`
	Command    string    `json:"command"`
	Supervisor []float64 `json:"supervisor_cpu_ns_per_call"` // every thread of the supervisor process
	Payload    []float64 `json:"command_cpu_ns_per_call"`    // tjloop's looping thread
	Wall       []float64 `json:"wall_ns_per_call"`
	Pipe       []float64 `json:"pipe_cpu_ns_per_round_trip"` // the driver's thread, for scale
}

// deniedTarget is issue 14's goal for a denied call, in ns of supervisor CPU.
const deniedTarget = 5000

func deniedCost(tooljail, loopBin, wd string, calls, runs int) (deniedResult, error) {
	n := strconv.Itoa(calls)
	argv := []string{tooljail, "run", "-q", "--", loopBin, "-gate", "denied", n}
	res := deniedResult{Calls: calls, Runs: runs, Command: shellJoin(argv)}
	for r := 0; r < runs; r++ {
		// Alternate which goes first, as the other loops do.
		for k := 0; k < 2; k++ {
			if (r+k)%2 == 0 {
				sup, payload, wall, err := deniedRun(argv, wd, calls)
				if err != nil {
					return res, err
				}
				res.Supervisor = append(res.Supervisor, sup)
				res.Payload = append(res.Payload, payload)
				res.Wall = append(res.Wall, wall)
			} else {
				f, err := pipeRoundTrip(loopBin, wd, calls)
				if err != nil {
					return res, err
				}
				res.Pipe = append(res.Pipe, f)
			}
		}
	}
	return res, nil
}

// deniedRun runs the flood once: supervisor CPU, the command's CPU and
// wall time, ns per denied call.
func deniedRun(argv []string, wd string, calls int) (sup, payload, wall float64, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = wd
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	fail := func(e error) (float64, float64, float64, error) {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return 0, 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), e, strings.TrimSpace(errb.String()))
	}
	procDir, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(procDir)
	lines := bufio.NewReader(out)
	if l, err := lines.ReadString('\n'); l != "ready\n" {
		return fail(fmt.Errorf("first line %q (%v), want ready", l, err))
	}
	cpu0, err := processCPU(procDir)
	if err != nil {
		return fail(err)
	}
	if _, err := in.Write([]byte{'g'}); err != nil {
		return fail(err)
	}
	l, err := lines.ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("no result line: %v", err))
	}
	cpu1, err := processCPU(procDir)
	if err != nil {
		return fail(err)
	}
	var ns, cpu int64
	if _, err := fmt.Sscanf(l, "ns %d cpu_ns %d", &ns, &cpu); err != nil {
		return fail(fmt.Errorf("unexpected output %q", l))
	}
	in.Close()
	io.Copy(io.Discard, lines)
	if err := cmd.Wait(); err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(errb.String()))
	}
	c := float64(calls)
	return float64(cpu1-cpu0) / c, float64(cpu) / c, float64(ns) / c, nil
}

// processCPU is the CPU time (ns) of every live thread of the process
// below procDir, from each thread's schedstat. A thread that ended
// between two samples would be missed; a Go supervisor keeps its threads.
func processCPU(procDir int) (int64, error) {
	fd, err := unix.Openat(procDir, "task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open task directory: %w", err)
	}
	dir := os.NewFile(uintptr(fd), "task")
	defer dir.Close()
	tids, err := dir.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, tid := range tids {
		b, err := readAt(fd, tid+"/schedstat")
		if err != nil {
			continue // ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("task %s: empty schedstat", tid)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("task %s: schedstat %q: %w", tid, b, err)
		}
		sum += ns
	}
	return sum, nil
}

func readAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(f)
}

// pipeRoundTrip measures a blocking round trip between two processes: one
// byte to tjloop -gate echo and back, calls times, on a locked thread;
// the CPU time of that thread per round trip (RUSAGE_THREAD), in ns.
func pipeRoundTrip(loopBin, wd string, calls int) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var toChild, fromChild [2]int
	if err := unix.Pipe2(toChild[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	if err := unix.Pipe2(fromChild[:], unix.O_CLOEXEC); err != nil {
		unix.Close(toChild[0])
		unix.Close(toChild[1])
		return 0, err
	}
	w, r := toChild[1], fromChild[0]
	defer func() {
		if w >= 0 {
			unix.Close(w)
		}
		unix.Close(r)
	}()
	cmd := exec.Command(loopBin, "-gate", "echo", strconv.Itoa(calls))
	cmd.Dir = wd
	cin, cout := os.NewFile(uintptr(toChild[0]), "stdin"), os.NewFile(uintptr(fromChild[1]), "stdout")
	cmd.Stdin, cmd.Stdout = cin, cout
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Start()
	cin.Close()
	cout.Close()
	if err != nil {
		return 0, err
	}
	fail := func(e error) (float64, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, fmt.Errorf("tjloop -gate echo: %v: %s", e, strings.TrimSpace(errb.String()))
	}
	if l, err := readLine(r); l != "ready" {
		return fail(fmt.Errorf("first line %q (%v), want ready", l, err))
	}
	b := []byte{'g'}
	if _, err := unix.Write(w, b); err != nil {
		return fail(err)
	}
	cpu, err := echoRounds(w, r, calls)
	if err != nil {
		return fail(err)
	}
	if _, err := readLine(r); err != nil {
		return fail(fmt.Errorf("no result line: %v", err))
	}
	unix.Close(w) // tjloop exits at EOF
	w = -1
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("tjloop -gate echo: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return float64(cpu) / float64(calls), nil
}

// echoRounds sends a byte down w and reads it back from r, calls times,
// and returns the CPU time this thread spent on it, in ns.
func echoRounds(w, r, calls int) (int64, error) {
	b := []byte{'e'}
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &r0)
	for i := 0; i < calls; i++ {
		if n, err := unix.Write(w, b); n != 1 {
			return 0, fmt.Errorf("write: %v", err)
		}
		if n, err := unix.Read(r, b); n != 1 {
			return 0, fmt.Errorf("read: %v", err)
		}
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &r1)
	return r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano(), nil
}

// readLine reads up to a newline, a byte at a time (the fd is shared with
// the byte-exact echo loop, so nothing may be read ahead).
func readLine(fd int) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := unix.Read(fd, b)
		if n != 1 {
			if err == nil {
				err = io.EOF
			}
			return string(line), err
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		line = append(line, b[0])
	}
}

func usText(ns float64) string {
	if math.IsNaN(ns) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f µs", ns/1000)
}

// deniedRow is the targets row.
func deniedRow(d *deniedResult) []string {
	sup := bench.Median(d.Supervisor)
	met := "not measured"
	switch {
	case math.IsNaN(sup):
	case sup < deniedTarget:
		met = "met"
	default:
		met = "**not met**"
	}
	return []string{fmt.Sprintf("supervisor CPU per denied call (issue 14): %d denied calls per run in a default jail, median of %d runs", d.Calls, len(d.Supervisor)),
		fmt.Sprintf("< %s", usText(deniedTarget)),
		fmt.Sprintf("%s; for scale, a blocking round trip between two processes over pipes: %s", usText(sup), usText(bench.Median(d.Pipe))), met}
}

// renderDenied writes the "Denied calls" section.
func renderDenied(p func(string, ...any), d *deniedResult) {
	p("## Denied calls\n\n")
	row := func(what string, xs []float64) []string {
		return []string{what, usText(bench.Median(xs)), usText(bench.Percentile(xs, 0)), usText(bench.Percentile(xs, 100)), fmt.Sprint(len(xs))}
	}
	p("%s\n", bench.Table([]string{"per denied call", "median", "min", "max", "runs"}, [][]string{
		row("**CPU time of the supervisor** (all its threads)", d.Supervisor),
		row("CPU time of the command's looping thread", d.Payload),
		row("wall time in the command", d.Wall),
		row("for scale: the driver's CPU per blocking round trip with another process over two pipes", d.Pipe),
	}))
	p("`%s`: %d denied calls (keyctl, EPERM) per run, under the default --max-violations. The supervisor's\n", d.Command, d.Calls)
	p("CPU time is the sum of its threads' (`/proc/<pid>/task/*/schedstat`) from the moment the jailed loop\n")
	p("is ready to the moment its result line arrives, so the jail's start and teardown do not count. Each call\n")
	p("is a round trip: the calling thread blocks until the supervisor answers, so the supervisor wakes up at\n")
	p("least once per call of a single-threaded loop. For scale, `tjloop -gate echo` runs outside a jail with the\n")
	p("same count, alternated with the jail runs: what one side of a one-byte round trip over two pipes costs in\n")
	p("CPU time, its wake-up included; a supervisor that sleeps between calls pays about that per call.\n")
	p("`go test ./seccomp -run '^$' -bench DeniedCall` measures the monitor alone.\n\n")
}
