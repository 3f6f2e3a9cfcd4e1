// Command tjhelper performs actions from inside a jail for the integration
// tests, so that the tests do not depend on what the host (or a busybox-only
// VM guest) has installed. It is static and pure Go.
//
// Usage: tjhelper ACTION [ARG...] [";" ACTION [ARG...]]...
//
// Each action prints exactly one line on stdout:
//
//	ok                  it worked
//	errno NAME          a system call failed with errno NAME (e.g. ENOENT)
//	error TEXT          something else failed
//	value JSON          the action's result, one JSON value
//
// except output/stderr (they write the requested bytes and nothing else)
// and exit/kill-self (they end the process).
//
// Actions: sleep DUR, alloc BYTES, fork N, forkbomb, exit N, kill-self SIG,
// output N, stderr N, open PATH [r|w|rw|create], write PATH BYTES, mkdir
// PATH, read PATH, ls DIR, stat PATH, connect HOST:PORT, loopback, netifs,
// ps, self, ids, caps, fds (put it first: Go's poller adds descriptors once
// a file is opened), env, hostname, umount PATH, umount-detach PATH,
// remount-ro PATH, remount-rw PATH, mount-tmpfs PATH, hold MARKER, spawn
// MARKER, daemon MARKER, stopped MARKER, zombies N, tty, rlimits, openmany
// N, busy DUR, stdin, symlink TARGET LINK, rename OLD NEW, remove PATH,
// exchange A B DUR, mkfifo PATH, chmod PATH OCTAL, connect-unix PATH,
// prlimit PID RES SOFT HARD, orphans DUR, mountro PATH, mountsuid PATH,
// outputbyte N BYTE, maxrss FILE CMD ARG..., manifest DIR.
// Actions that change files or mounts refuse to run outside a
// user namespace, so the helper cannot damage a host by mistake.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var out = bufio.NewWriter(os.Stdout)

// No transparent huge pages for the helper (its children inherit this):
// where the kernel default is "always" (Debian's kernels), the runtime's
// heap and a touched mapping round up to 2 MiB pages, and "alloc N" would
// use several MiB more than N, blurring what the memory tests measure.
func init() { unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0) }

func main() {
	args := os.Args[1:]
	// Hidden actions used by the helper's own children.
	if len(args) > 0 {
		switch args[0] {
		case "_hold": // _hold MARKER: sleep until killed
			hold()
		case "_stop": // _stop MARKER: stop self, then sleep until killed
			unix.Kill(os.Getpid(), unix.SIGSTOP)
			hold()
		case "_daemon": // _daemon MARKER: start a setsid'ed grandchild, report its pid on fd 3, exit
			pid, err := spawn([]string{"_hold", arg(args, 1)}, true)
			if err != nil {
				os.Exit(1)
			}
			fmt.Fprintf(os.NewFile(3, "ready"), "%d\n", pid)
			os.Exit(0)
		case "_orphan": // _orphan DELAY: start a child that exits after DELAY, exit at once
			spawn([]string{"_sleep", arg(args, 1)}, false)
			os.Exit(0)
		case "_sleep": // _sleep DUR: sleep quietly, exit 0
			time.Sleep(duration(arg(args, 1)))
			os.Exit(0)
		case "_timerslack": // _timerslack NS CMD ARG...: exec CMD with that timer slack
			// The slack is the thread's: set and exec on one thread.
			runtime.LockOSThread()
			ns, _ := strconv.ParseUint(arg(args, 1), 10, 64)
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0); err != nil {
				fmt.Fprintln(os.Stderr, "_timerslack:", err)
				os.Exit(1)
			}
			err := syscall.Exec(arg(args, 2), args[2:], os.Environ())
			fmt.Fprintln(os.Stderr, "_timerslack:", err)
			os.Exit(1)
		case "_ignore", "_default": // _ignore|_default SIG,SIG... CMD ARG...: exec CMD with those signals ignored, or at their default action
			var sigs []os.Signal
			for _, f := range strings.Split(arg(args, 1), ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					fmt.Fprintln(os.Stderr, args[0]+":", err)
					os.Exit(1)
				}
				sigs = append(sigs, syscall.Signal(n))
			}
			if args[0] == "_ignore" {
				signal.Ignore(sigs...) // SIG_IGN, which an exec keeps
			} else {
				// A handler, even over an inherited SIG_IGN, which the
				// exec turns into the default action.
				signal.Notify(make(chan os.Signal, 1), sigs...)
			}
			err := syscall.Exec(arg(args, 2), args[2:], os.Environ())
			fmt.Fprintln(os.Stderr, args[0]+":", err)
			os.Exit(1)
		case "_nofile": // _nofile SOFT CMD ARG...: exec CMD with that soft RLIMIT_NOFILE
			var l unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_NOFILE, &l)
			soft, _ := strconv.ParseUint(arg(args, 1), 10, 64)
			l.Cur = soft
			// syscall.Setrlimit, so that Go keeps it across the exec.
			if err := syscall.Setrlimit(unix.RLIMIT_NOFILE, &syscall.Rlimit{Cur: l.Cur, Max: l.Max}); err != nil {
				fmt.Fprintln(os.Stderr, "_nofile:", err)
				os.Exit(1)
			}
			err := syscall.Exec(arg(args, 2), args[2:], os.Environ())
			fmt.Fprintln(os.Stderr, "_nofile:", err)
			os.Exit(1)
		}
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: tjhelper ACTION [ARG...] [; ACTION [ARG...]]...")
		os.Exit(2)
	}
	for _, action := range split(args) {
		do(action)
		out.Flush()
	}
	out.Flush()
}

func split(args []string) [][]string {
	var actions [][]string
	cur := []string{}
	for _, a := range args {
		if a == ";" {
			if len(cur) > 0 {
				actions = append(actions, cur)
			}
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		actions = append(actions, cur)
	}
	return actions
}

func arg(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	fmt.Fprintf(os.Stderr, "tjhelper: %s needs %d argument(s)\n", a[0], i)
	os.Exit(2)
	return ""
}

func ok()         { fmt.Fprintln(out, "ok") }
func value(v any) { b, _ := json.Marshal(v); fmt.Fprintf(out, "value %s\n", b) }
func result(err error) {
	if err == nil {
		ok()
		return
	}
	fmt.Fprintln(out, errText(err))
}

// errText is "errno NAME" when err wraps an errno, else "error TEXT".
func errText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return "errno " + unix.ErrnoName(en)
	}
	return "error " + strings.ReplaceAll(err.Error(), "\n", " ")
}

func errName(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(errText(err), "errno "), "error ")
}

func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tjhelper: bad number %q\n", s)
		os.Exit(2)
	}
	return n
}

func duration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tjhelper: bad duration %q\n", s)
		os.Exit(2)
	}
	return d
}

// mutating actions refuse to run outside a user namespace: run on the host
// by mistake (or through a jail that jails nothing), "write /etc/passwd" or
// "umount-detach /proc" would damage it.
var mutating = map[string]bool{
	"write": true, "mkdir": true, "umount": true, "umount-detach": true,
	"remount-ro": true, "remount-rw": true, "mount-tmpfs": true,
	"symlink": true, "rename": true, "exchange": true, "mkfifo": true, "chmod": true,
	"remove": true,
}

// inUserNamespace is false in the initial user namespace, whose uid_map is
// the identity over the whole range.
func inUserNamespace() bool {
	// Raw calls: os.ReadFile would start Go's poller and add descriptors
	// that a later "fds" would list.
	fd, err := unix.Open("/proc/self/uid_map", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, _ := unix.Read(fd, b)
	if n < 0 {
		n = 0
	}
	f := strings.Fields(string(b[:n]))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// do runs one action: the refusals of a mutating action outside a user
// namespace first, then the action's entry in actions, then the network
// actions (net.go).
func do(a []string) {
	if mutating[a[0]] && !inUserNamespace() {
		fmt.Fprintln(out, "error refusing to "+a[0]+" outside a user namespace: run tjhelper inside the jail")
		return
	}
	if a[0] == "open" && len(a) > 2 && a[2] != "r" && !inUserNamespace() {
		fmt.Fprintln(out, "error refusing to open for writing outside a user namespace")
		return
	}
	if f, found := actions[a[0]]; found {
		f(a)
		return
	}
	if netAction(a) {
		return
	}
	fmt.Fprintf(os.Stderr, "tjhelper: unknown action %q\n", a[0])
	os.Exit(2)
}

func rlim(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

func limitValue(s string) uint64 {
	if s == "inf" {
		return unix.RLIM_INFINITY
	}
	return uint64(atoi(s))
}

// orphans makes orphans for d, from one goroutine per CPU, and returns how
// many. Raw clones with fork semantics, not ForkExec: the children only
// make raw calls, and a stream of them costs PID 1 more reaping per second
// than whole processes would.
func orphans(d time.Duration) int64 {
	end := time.Now().Add(d)
	var total atomic.Int64
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for time.Now().Before(end) {
				r, _, e := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
				if e != 0 {
					return
				}
				if r == 0 {
					// The child: a grandchild that exits, then exit.
					unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
					unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
				}
				var ws unix.WaitStatus
				unix.Wait4(int(r), &ws, 0, nil)
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	return total.Load()
}

// writePattern writes n bytes of "abc...z" repeated.
func writePattern(w io.Writer, n int64) error {
	const pat = "abcdefghijklmnopqrstuvwxyz"
	buf := []byte(strings.Repeat(pat, 1+65536/len(pat)))
	buf = buf[:len(buf)-len(buf)%len(pat)]
	for n > 0 {
		k := int64(len(buf))
		if k > n {
			k = n
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// defaultSignal sets sig to SIG_DFL with a raw rt_sigaction: the Go runtime
// otherwise ignores SIGXFSZ, SIGXCPU, SIGUSR1 and others, where a C program
// would die of them.
func defaultSignal(sig syscall.Signal) {
	var sa struct {
		handler  uintptr
		flags    uint64
		restorer uintptr
		mask     uint64
	}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
}

// spawn starts this program again with args; setsid puts it in a new session.
func spawn(args []string, setsid bool) (int, error) {
	return spawnFiles(args, setsid, []uintptr{0, 1, 2})
}

func spawnFiles(args []string, setsid bool, files []uintptr) (int, error) {
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{"tjhelper"}, args...), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: setsid},
	})
	if err != nil {
		return pid, err
	}
	// ForkExec returns once execve has passed the point of no return, but
	// the new argv shows in /proc/PID/cmdline a little later: wait for it
	// (not just any argv: the parent's), so a following "ps" finds the
	// child by its marker (slow VM guests).
	// A child that already exited (a zombie has no argv) is done too.
	want := []byte("tjhelper\x00" + strings.Join(args, "\x00"))
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || bytes.HasPrefix(b, want) || procState(strconv.Itoa(pid)) == "Z" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid, nil
}

func hold() {
	for {
		time.Sleep(time.Hour)
	}
}

// daemon double-forks: a setsid'ed child starts the grandchild and exits at
// once; the grandchild's pid comes back through a pipe.
func daemon(marker string) any {
	r, w, err := os.Pipe()
	if err != nil {
		return errText(err)
	}
	pid, err := spawnFiles([]string{"_daemon", marker}, true, []uintptr{0, 1, 2, w.Fd()})
	w.Close()
	if err != nil {
		r.Close()
		return errText(err)
	}
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, 0, nil)
	line, _ := bufio.NewReader(r).ReadString('\n')
	r.Close()
	gpid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Sprintf("error daemon child failed (%v)", ws)
	}
	return gpid
}

func loopback() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte{'!'})
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	return err
}

type proc struct {
	Pid     int    `json:"pid"`
	State   string `json:"state"`
	Cmdline string `json:"cmdline"`
}

func ps() []proc {
	ents, _ := os.ReadDir("/proc")
	list := []proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p := proc{Pid: pid, State: procState(e.Name())}
		if cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))
		} else {
			p.Cmdline = "?" + errName(err)
		}
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Pid < list[j].Pid })
	return list
}

// procState is the one-letter state of /proc/PID ("" when unreadable).
func procState(pid string) string {
	st, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	// pid (comm) S ...: the state follows the last ')'.
	if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) {
		return string(st[i+2])
	}
	return ""
}

func statusLines(prefixes ...string) map[string]string {
	v := map[string]string{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		v["error"] = errName(err)
		return v
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, val, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				v[k] = strings.TrimSpace(val)
			}
		}
	}
	return v
}

// fds maps each open descriptor to what it points at, leaving out the one
// used to list them. Raw system calls: os.Open would start Go's poller and
// add descriptors of its own.
func fds() any {
	d, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errText(err)
	}
	defer unix.Close(d)
	list := map[string]string{}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(d, buf)
		if err != nil {
			return errText(err)
		}
		if n <= 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if name == strconv.Itoa(d) {
				continue
			}
			link, _ := os.Readlink("/proc/self/fd/" + name)
			list[name] = link
		}
	}
	return list
}

// warmThreads makes the runtime start about n OS threads now, which it
// keeps idle and reuses: under a pids cap that the children fill, a
// runtime that needs a thread later (for a blocking fork) cannot start one
// and dies ("fatal error: newosproc"), as a guest saw once.
func warmThreads(n int) {
	var fds [2]int
	if unix.Pipe2(fds[:], unix.O_CLOEXEC) != nil {
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b [1]byte
			unix.Read(fds[0], b[:]) // blocks its thread until the write below
		}()
	}
	time.Sleep(100 * time.Millisecond)
	unix.Write(fds[1], make([]byte, n))
	wg.Wait()
	unix.Close(fds[0])
	unix.Close(fds[1])
}
