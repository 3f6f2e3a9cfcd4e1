// Command tjloop is the payload of the seccomp-cost benchmark: it makes N
// cheap system calls in a tight loop and prints how long the loop took,
// timed inside the process so that start-up (the jail's or the loader's)
// does not count. It is static and pure Go, so it runs unchanged inside a
// jail and on the host.
//
// Usage: tjloop [-filter allow-all|FILE [-nocache]] [-gate] getppid|fstat|denied|echo N
//
// denied is a call the default profile denies (keyctl): in a jail with
// user notification each one is a round trip to the supervisor, whose CPU
// time per denied call the driver measures; tjloop fails unless every call
// fails with EPERM. echo reads a byte from stdin and writes it to stdout,
// N times: with a driver at the other end of both pipes, a blocking round
// trip between two processes, about what a supervisor that sleeps between
// calls pays per call.
//
// -gate prints "ready" and waits for a byte on stdin before the loop, and
// after the result line waits for stdin to close: the driver samples what
// it measures around the loop alone.
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
	"io"
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
	gate := flag.Bool("gate", false, "print \"ready\", wait for a byte on stdin before the loop and for stdin to close after it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: tjloop [-filter allow-all|FILE [-nocache]] [-gate] getppid|fstat|denied|echo N")
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
	var failed error
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
	case "denied":
		loop = func() {
			for i := 0; i < n; i++ {
				// KEYCTL_GET_KEYRING_ID of no key: ENOKEY if it ran.
				if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, 0, 12345, 0); e != unix.EPERM {
					failed = fmt.Errorf("keyctl after %d denied calls: %v, want EPERM (a jail whose filter denies it)", i, e)
					return
				}
			}
		}
	case "echo":
		loop = func() {
			var b [1]byte
			for i := 0; i < n; i++ {
				if r, _, e := unix.Syscall(unix.SYS_READ, 0, uintptr(unsafe.Pointer(&b[0])), 1); r != 1 {
					failed = fmt.Errorf("echo: read %d of %d: %d, %v", i, n, int(r), e)
					return
				}
				if r, _, e := unix.Syscall(unix.SYS_WRITE, 1, uintptr(unsafe.Pointer(&b[0])), 1); r != 1 {
					failed = fmt.Errorf("echo: write %d of %d: %d, %v", i, n, int(r), e)
					return
				}
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "tjloop: unknown call %q (want getppid, fstat, denied or echo)\n", call)
		os.Exit(2)
	}
	if *gate {
		fmt.Println("ready")
		var b [1]byte
		if n, err := os.Stdin.Read(b[:]); n != 1 {
			fmt.Fprintf(os.Stderr, "tjloop: -gate: no start byte on stdin: %v\n", err)
			os.Exit(1)
		}
	}
	cpu0 := threadCPU()
	start := time.Now()
	loop()
	elapsed := time.Since(start)
	cpu := threadCPU() - cpu0
	runtime.KeepAlive(&st)
	if failed != nil {
		fmt.Fprintf(os.Stderr, "tjloop: %v\n", failed)
		os.Exit(1)
	}
	fmt.Printf("ns %d cpu_ns %d\n", elapsed.Nanoseconds(), cpu)
	if *gate {
		io.Copy(io.Discard, os.Stdin)
	}
}

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		fmt.Fprintf(os.Stderr, "tjloop: clock_gettime: %v\n", err)
		os.Exit(1)
	}
	return ts.Nano()
}
