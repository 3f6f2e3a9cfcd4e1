package seccomp

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	childModes["deny"] = childDeny
}

// childDeny makes $DENY_N denied calls (keyctl, EPERM under Policy{}) on
// each of $DENY_THREADS locked threads (1 by default), all at once, and
// prints "ns WALL cpu_ns CPU": the wall time of the whole flood and the
// CPU time the child spent in it (all its threads). It first sleeps
// 20 ms, so that the test has taken its baseline before the first call.
func childDeny() int {
	n, _ := strconv.Atoi(os.Getenv("DENY_N"))
	threads, _ := strconv.Atoi(os.Getenv("DENY_THREADS"))
	threads = max(threads, 1)
	time.Sleep(20 * time.Millisecond)
	var wg sync.WaitGroup
	bad := make(chan unix.Errno, threads)
	start := make(chan struct{})
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-start
			for i := 0; i < n; i++ {
				if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, 0, 12345, 0); e != unix.EPERM {
					bad <- e
					return
				}
			}
		}()
	}
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	unix.Getrusage(unix.RUSAGE_SELF, &r1)
	select {
	case e := <-bad:
		fmt.Println("errno", e)
		return 1
	default:
	}
	fmt.Println("ns", wall.Nanoseconds(), "cpu_ns", rusageCPU(&r1)-rusageCPU(&r0))
	return 0
}

func rusageCPU(r *unix.Rusage) int64 {
	return r.Utime.Nano() + r.Stime.Nano()
}

// BenchmarkDeniedCall measures what a denied call costs the supervisor: a
// child under the notify filter makes b.N denied calls (keyctl) on one or
// more threads and this process, which runs only the Monitor meanwhile,
// reports the CPU time it spent (getrusage(RUSAGE_SELF) before and after,
// every thread, the Go runtime's included) per call: supervisor-ns/call.
// Also reported, per call: this process's heap allocations and context
// switches (voluntary and not), and the child's CPU and wall time. Issue 14's target
// is under 5000 supervisor-ns/call. Run it with a fixed count, e.g.
//
//	go test ./seccomp/ -run '^$' -bench DeniedCall -benchtime 200000x
func BenchmarkDeniedCall(b *testing.B) {
	if s := Probe(); !s.Notify {
		b.Skipf("no seccomp user notification here: %s", s.Reason)
	}
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, threads := range []int{1, 2, 4} {
		b.Run("threads="+strconv.Itoa(threads), func(b *testing.B) {
			per := max(b.N/threads, 1)
			calls := per * threads
			j := startJailed(b, prog, "deny", childOpts{action: ActionDeny,
				env: []string{"DENY_N=" + strconv.Itoa(per), "DENY_THREADS=" + strconv.Itoa(threads)}})
			var r0, r1 unix.Rusage
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			unix.Getrusage(unix.RUSAGE_SELF, &r0)
			b.ResetTimer()
			err := j.cmd.Wait()
			unix.Getrusage(unix.RUSAGE_SELF, &r1)
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			vs := j.monitor.Stop()
			if err != nil {
				b.Fatalf("child: %v %s %s", err, j.stdout.String(), j.stderr.String())
			}
			if err := j.monitor.Err(); err != nil {
				b.Fatalf("monitor: %v", err)
			}
			if len(vs) != 1 || vs[0].Syscall != "keyctl" || vs[0].Count != calls {
				b.Fatalf("violations %s, want keyctl x%d", describe(vs), calls)
			}
			var wall, cpu int64
			if _, err := fmt.Sscanf(strings.TrimSpace(j.stdout.String()), "ns %d cpu_ns %d", &wall, &cpu); err != nil {
				b.Fatalf("child output %q: %v", j.stdout.String(), err)
			}
			b.ReportMetric(float64(rusageCPU(&r1)-rusageCPU(&r0))/float64(calls), "supervisor-ns/call")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(calls), "supervisor-allocs/call")
			b.ReportMetric(float64(r1.Nvcsw+r1.Nivcsw-r0.Nvcsw-r0.Nivcsw)/float64(calls), "supervisor-switches/call")
			b.ReportMetric(float64(cpu)/float64(calls), "child-cpu-ns/call")
			b.ReportMetric(float64(wall)/float64(calls), "child-wall-ns/call")
		})
	}
}
