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

// options are the command line.
type options struct {
	filter  string
	nocache bool
	gate    bool
	call    string
	n       int
}

func main() {
	o := parseFlags()
	// One thread from start to end: no migration of the loop mid-way.
	runtime.LockOSThread()
	if o.filter != "" {
		prog, err := loadFilter(o.filter, o.nocache)
		if err == nil {
			err = install(prog)
		}
		if err != nil {
			fail(1, "%v", err)
		}
	}
	loop := loopFor(o.call, o.n)
	if o.gate {
		awaitStart()
	}
	cpu0 := threadCPU()
	start := time.Now()
	err := loop()
	elapsed := time.Since(start)
	cpu := threadCPU() - cpu0
	if err != nil {
		fail(1, "%v", err)
	}
	fmt.Printf("ns %d cpu_ns %d\n", elapsed.Nanoseconds(), cpu)
	if o.gate {
		io.Copy(io.Discard, os.Stdin)
	}
}

// parseFlags reads the command line, or exits 2 with the usage.
func parseFlags() options {
	var o options
	flag.StringVar(&o.filter, "filter", "", "load this seccomp filter before the loop: allow-all, or a raw BPF program file")
	flag.BoolVar(&o.nocache, "nocache", false, "with -filter: prefix a load of args[0], which keeps the kernel's action cache from covering any call")
	flag.BoolVar(&o.gate, "gate", false, "print \"ready\", wait for a byte on stdin before the loop and for stdin to close after it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: tjloop [-filter allow-all|FILE [-nocache]] [-gate] getppid|fstat|denied|echo N")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 || (o.nocache && o.filter == "") {
		flag.Usage()
		os.Exit(2)
	}
	o.call = flag.Arg(0)
	n, err := strconv.Atoi(flag.Arg(1))
	if err != nil || n < 0 {
		fail(2, "bad count %q", flag.Arg(1))
	}
	o.n = n
	return o
}

// loopFor is the loop of n calls of call, or exits 2 for an unknown call.
// Its set-up (fstat's first call) is done here, outside the timed loop.
func loopFor(call string, n int) func() error {
	switch call {
	case "getppid":
		return func() error {
			for i := 0; i < n; i++ {
				unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
			}
			return nil
		}
	case "fstat":
		return fstatLoop(n)
	case "denied":
		return func() error { return deniedLoop(n) }
	case "echo":
		return func() error { return echoLoop(n) }
	}
	fail(2, "unknown call %q (want getppid, fstat, denied or echo)", call)
	return nil
}

// fstatLoop checks that fd 0 can be fstat'ed (it is /dev/null both in the
// jail and under the bench driver) and returns the loop.
func fstatLoop(n int) func() error {
	st := new(unix.Stat_t)
	if err := unix.Fstat(0, st); err != nil {
		fail(1, "fstat 0: %v", err)
	}
	return func() error {
		for i := 0; i < n; i++ {
			unix.RawSyscall(unix.SYS_FSTAT, 0, uintptr(unsafe.Pointer(st)), 0)
		}
		runtime.KeepAlive(st)
		return nil
	}
}

// deniedLoop makes n calls that a jail's filter denies; each must fail
// with EPERM.
func deniedLoop(n int) error {
	for i := 0; i < n; i++ {
		// KEYCTL_GET_KEYRING_ID of no key: ENOKEY if it ran.
		if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, 0, 12345, 0); e != unix.EPERM {
			return fmt.Errorf("keyctl after %d denied calls: %v, want EPERM (a jail whose filter denies it)", i, e)
		}
	}
	return nil
}

// echoLoop reads a byte from stdin and writes it to stdout, n times.
func echoLoop(n int) error {
	var b [1]byte
	for i := 0; i < n; i++ {
		if r, _, e := unix.Syscall(unix.SYS_READ, 0, uintptr(unsafe.Pointer(&b[0])), 1); r != 1 {
			return fmt.Errorf("echo: read %d of %d: %d, %v", i, n, int(r), e)
		}
		if r, _, e := unix.Syscall(unix.SYS_WRITE, 1, uintptr(unsafe.Pointer(&b[0])), 1); r != 1 {
			return fmt.Errorf("echo: write %d of %d: %d, %v", i, n, int(r), e)
		}
	}
	return nil
}

// awaitStart is -gate's start: "ready" on stdout, then a byte on stdin.
func awaitStart() {
	fmt.Println("ready")
	var b [1]byte
	if n, err := os.Stdin.Read(b[:]); n != 1 {
		fail(1, "-gate: no start byte on stdin: %v", err)
	}
}

// fail prints "tjloop: " and the message on stderr and exits with code.
func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "tjloop: "+format+"\n", a...)
	os.Exit(code)
}

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		fail(1, "clock_gettime: %v", err)
	}
	return ts.Nano()
}
