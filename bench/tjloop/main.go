// Command tjloop is the payload of the seccomp-cost benchmark: it makes N
// cheap system calls in a tight loop and prints how long the loop took,
// timed inside the process so that start-up (the jail's or the loader's)
// does not count. It is static and pure Go, so it runs unchanged inside a
// jail and on the host.
//
// Usage: tjloop [-filter allow-all|FILE [-nocache]] getppid|fstat N
//
// -filter loads a seccomp filter on the process before the loop (after
// PR_SET_NO_NEW_PRIVS, on all threads, as the jail does before execve):
// "allow-all" is a one-instruction "return ALLOW" program, the kernel's
// fixed cost of any filter; FILE is a raw program (struct sock_filter
// array, native byte order: seccomp.Program.Filter), such as the one
// tjbench writes from the default profile. -nocache prefixes the program
// with a load of args[0], so that the kernel's per-syscall action cache
// cannot cover any call and the BPF runs on every call.
//
// Output: one line "ns WALL cpu_ns CPU": the loop's wall time and the CPU
// time of the thread that ran it (user + system, CLOCK_THREAD_CPUTIME_ID),
// both in nanoseconds. The CPU time leaves out the time the thread waited
// for a CPU, which on a busy shared machine is most of the noise; the cost
// of the seccomp filter is spent in the thread's system time, so it counts.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	filter := flag.String("filter", "", "load this seccomp filter before the loop: allow-all, or a raw BPF program file")
	nocache := flag.Bool("nocache", false, "with -filter: prefix a load of args[0], which keeps the kernel's action cache from covering any call")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: tjloop [-filter allow-all|FILE [-nocache]] getppid|fstat N")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 || (*nocache && *filter == "") {
		flag.Usage()
		os.Exit(2)
	}
	call := flag.Arg(0)
	n, err := strconv.Atoi(flag.Arg(1))
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "tjloop: bad count %q\n", flag.Arg(1))
		os.Exit(2)
	}
	// One thread from start to end: no migration of the loop mid-way.
	runtime.LockOSThread()
	if *filter != "" {
		prog, err := loadFilter(*filter, *nocache)
		if err == nil {
			err = install(prog)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tjloop: %v\n", err)
			os.Exit(1)
		}
	}
	var st unix.Stat_t
	var loop func()
	switch call {
	case "getppid":
		loop = func() {
			for i := 0; i < n; i++ {
				unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
			}
		}
	case "fstat":
		// fd 0 is /dev/null both in the jail and under the bench driver.
		if err := unix.Fstat(0, &st); err != nil {
			fmt.Fprintf(os.Stderr, "tjloop: fstat 0: %v\n", err)
			os.Exit(1)
		}
		loop = func() {
			for i := 0; i < n; i++ {
				unix.RawSyscall(unix.SYS_FSTAT, 0, uintptr(unsafe.Pointer(&st)), 0)
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "tjloop: unknown call %q (want getppid or fstat)\n", call)
		os.Exit(2)
	}
	cpu0 := threadCPU()
	start := time.Now()
	loop()
	elapsed := time.Since(start)
	cpu := threadCPU() - cpu0
	runtime.KeepAlive(&st)
	fmt.Printf("ns %d cpu_ns %d\n", elapsed.Nanoseconds(), cpu)
}

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		fmt.Fprintf(os.Stderr, "tjloop: clock_gettime: %v\n", err)
		os.Exit(1)
	}
	return ts.Nano()
}
