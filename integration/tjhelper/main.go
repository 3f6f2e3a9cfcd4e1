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

func do(a []string) {
	if mutating[a[0]] && !inUserNamespace() {
		fmt.Fprintln(out, "error refusing to "+a[0]+" outside a user namespace: run tjhelper inside the jail")
		return
	}
	if a[0] == "open" && len(a) > 2 && a[2] != "r" && !inUserNamespace() {
		fmt.Fprintln(out, "error refusing to open for writing outside a user namespace")
		return
	}
	switch a[0] {
	case "sleep":
		time.Sleep(duration(arg(a, 1)))
		ok()
	case "alloc":
		n := atoi(arg(a, 1))
		mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			result(err)
			return
		}
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		ok()
	case "fork": // fork N: start N children that exit at once, wait for them
		n := atoi(arg(a, 1))
		for i := int64(0); i < n; i++ {
			pid, err := spawn([]string{"exit", "0"}, false)
			if err != nil {
				fmt.Fprintf(out, "%s (after %d)\n", errText(err), i)
				return
			}
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
		}
		ok()
	case "forkbomb": // start children that hold until a fork fails (at most 10000)
		warmThreads(8)
		i := 0
		var err error
		for ; i < 10000; i++ {
			if _, err = spawn([]string{"_hold", "forkbomb"}, false); err != nil {
				break
			}
		}
		value(map[string]any{"started": i, "error": errName(err)})
	case "exit":
		out.Flush()
		os.Exit(int(atoi(arg(a, 1))))
	case "kill-self":
		sig := unix.SignalNum("SIG" + strings.TrimPrefix(arg(a, 1), "SIG"))
		if sig == 0 {
			fmt.Fprintf(os.Stderr, "tjhelper: unknown signal %q\n", a[1])
			os.Exit(2)
		}
		out.Flush()
		defaultSignal(sig)
		unix.Kill(os.Getpid(), sig)
		time.Sleep(10 * time.Second)
		fmt.Fprintln(out, "error still alive")
	case "output", "stderr": // N bytes of a..z, repeated; nothing else
		w := os.Stdout
		if a[0] == "stderr" {
			w = os.Stderr
		}
		out.Flush()
		writePattern(w, atoi(arg(a, 1)))
	case "open":
		mode := "r"
		if len(a) > 2 {
			mode = a[2]
		}
		flags := map[string]int{"r": unix.O_RDONLY, "w": unix.O_WRONLY, "rw": unix.O_RDWR, "create": unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL}[mode]
		fd, err := unix.Open(arg(a, 1), flags|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		result(err)
	case "write": // write PATH BYTES: create/truncate PATH and write BYTES bytes
		defaultSignal(unix.SIGXFSZ) // as a C program would: SIGXFSZ kills
		f, err := os.OpenFile(arg(a, 1), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			result(err)
			return
		}
		out.Flush()
		err = writePattern(f, atoi(arg(a, 2)))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		result(err)
	case "mkdir":
		result(os.Mkdir(arg(a, 1), 0o755))
	case "read":
		b, err := os.ReadFile(arg(a, 1))
		if err != nil {
			result(err)
			return
		}
		value(string(b))
	case "ls":
		ents, err := os.ReadDir(arg(a, 1))
		if err != nil {
			result(err)
			return
		}
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		value(names)
	case "stat":
		var st unix.Stat_t
		if err := unix.Lstat(arg(a, 1), &st); err != nil {
			result(err)
			return
		}
		value(map[string]any{"mode": fmt.Sprintf("%o", st.Mode), "uid": st.Uid, "gid": st.Gid, "size": st.Size})
	case "mountro": // mountro PATH: "ro" or "rw", the flag of the mount PATH is on
		var sf unix.Statfs_t
		if err := unix.Statfs(arg(a, 1), &sf); err != nil {
			result(err)
			return
		}
		if sf.Flags&unix.ST_RDONLY != 0 {
			value("ro")
		} else {
			value("rw")
		}
	case "mountsuid": // mountsuid PATH: "nosuid" or "suid", the flag of the mount PATH is on
		var sf unix.Statfs_t
		if err := unix.Statfs(arg(a, 1), &sf); err != nil {
			result(err)
			return
		}
		if sf.Flags&unix.ST_NOSUID != 0 {
			value("nosuid")
		} else {
			value("suid")
		}
	case "connect":
		c, err := net.DialTimeout("tcp", arg(a, 1), 3*time.Second)
		if err == nil {
			c.Close()
		}
		result(err)
	case "serve-tcp": // serve-tcp ADDR: answer each connection with a line, until killed
		l, err := net.Listen("tcp", arg(a, 1))
		if err != nil {
			result(err)
			return
		}
		for {
			c, err := l.Accept()
			if err != nil {
				continue
			}
			fmt.Fprintf(c, "hello from %d\n", os.Getpid())
			c.Close()
		}
	case "fetch": // fetch ADDR: connect and read the line served
		c, err := net.DialTimeout("tcp", arg(a, 1), 3*time.Second)
		if err != nil {
			result(err)
			return
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil {
			result(err)
			return
		}
		value(strings.TrimSpace(line))
	case "loopback": // listen on 127.0.0.1, connect to it, exchange a byte
		result(loopback())
	case "netifs":
		ifs, err := net.Interfaces()
		if err != nil {
			result(err)
			return
		}
		list := []map[string]any{}
		for _, i := range ifs {
			list = append(list, map[string]any{"name": i.Name, "up": i.Flags&net.FlagUp != 0})
		}
		value(list)
	case "ps":
		value(ps())
	case "self":
		sid, _ := unix.Getsid(0)
		value(map[string]int{"pid": os.Getpid(), "ppid": os.Getppid(), "pgid": unix.Getpgrp(), "sid": sid})
	case "ids":
		groups, _ := unix.Getgroups()
		if groups == nil {
			groups = []int{}
		}
		value(map[string]any{"uid": os.Getuid(), "euid": os.Geteuid(), "gid": os.Getgid(), "egid": os.Getegid(), "groups": groups})
	case "caps":
		value(statusLines("Cap", "NoNewPrivs", "Seccomp"))
	case "fds":
		value(fds())
	case "env":
		value(os.Environ())
	case "hostname":
		h, err := os.Hostname()
		if err != nil {
			result(err)
			return
		}
		value(h)
	case "umount":
		result(unix.Unmount(arg(a, 1), 0))
	case "umount-detach":
		result(unix.Unmount(arg(a, 1), unix.MNT_DETACH))
	case "remount-ro":
		result(unix.Mount("", arg(a, 1), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
	case "remount-rw":
		result(unix.Mount("", arg(a, 1), "", unix.MS_REMOUNT|unix.MS_BIND, ""))
	case "mount-tmpfs":
		result(unix.Mount("tmpfs", arg(a, 1), "tmpfs", 0, ""))
	case "hold": // hold MARKER: sleep forever in the foreground (host-side decoy)
		hold()
	case "spawn": // spawn MARKER: a child that holds; not waited for
		pid, err := spawn([]string{"_hold", arg(a, 1)}, false)
		if err != nil {
			result(err)
			return
		}
		value(pid)
	case "daemon": // daemon MARKER: double fork + setsid; the grandchild holds
		value(daemon(arg(a, 1)))
	case "stopped": // stopped MARKER: a child in its own session that SIGSTOPs itself
		// Its own session: a stopped member of an orphaned process group
		// gets SIGHUP and SIGCONT from the kernel when another member exits.
		pid, err := spawn([]string{"_stop", arg(a, 1)}, true)
		if err != nil {
			result(err)
			return
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil); err != nil || !ws.Stopped() {
			fmt.Fprintf(out, "error child %d did not stop (%v)\n", pid, err)
			return
		}
		value(pid)
	case "zombies": // zombies N: N children whose own children outlive them and exit; count unreaped zombies after
		n := atoi(arg(a, 1))
		for i := int64(0); i < n; i++ {
			pid, err := spawn([]string{"_orphan", "100ms"}, false)
			if err != nil {
				result(err)
				return
			}
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
		}
		// The orphans sleep 100 ms, then PID 1 must reap them: count what
		// is left once it had the time (up to 5 s on a slow guest).
		z := 0
		for deadline := time.Now().Add(5 * time.Second); ; {
			time.Sleep(100 * time.Millisecond)
			z = 0
			running := false
			for _, p := range ps() {
				switch {
				case p.State == "Z":
					z++
				case strings.HasPrefix(p.Cmdline, "tjhelper _sleep"):
					running = true
				}
			}
			if (z == 0 && !running) || time.Now().After(deadline) {
				break
			}
		}
		value(map[string]int{"orphans": int(n), "zombies": z})
	case "tty":
		r := map[string]string{"open": "ok", "tiocsti": "ok"}
		if fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			r["open"] = errName(err)
		} else {
			unix.Close(fd)
		}
		c := byte('x')
		if _, _, en := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); en != 0 {
			r["tiocsti"] = unix.ErrnoName(en)
		}
		value(r)
	case "rlimits":
		res := map[string]int{"CORE": unix.RLIMIT_CORE, "NOFILE": unix.RLIMIT_NOFILE, "FSIZE": unix.RLIMIT_FSIZE, "CPU": unix.RLIMIT_CPU, "NPROC": unix.RLIMIT_NPROC}
		v := map[string][2]string{}
		for name, r := range res {
			var l unix.Rlimit
			unix.Getrlimit(r, &l)
			v[name] = [2]string{rlim(l.Cur), rlim(l.Max)}
		}
		value(v)
	case "openmany": // openmany N: open /dev/null up to N times, keep them open
		n := atoi(arg(a, 1))
		i := int64(0)
		var err error
		for ; i < n; i++ {
			if _, err = unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
				break
			}
		}
		value(map[string]any{"opened": i, "error": errName(err)})
	case "busy": // busy DUR: burn CPU for DUR of wall time
		defaultSignal(unix.SIGXCPU)
		end := time.Now().Add(duration(arg(a, 1)))
		x := 0
		for time.Now().Before(end) {
			for i := 0; i < 100000; i++ {
				x += i
			}
		}
		_ = x
		ok()
	case "symlink": // symlink TARGET LINK
		result(os.Symlink(arg(a, 1), arg(a, 2)))
	case "rename": // rename OLD NEW
		result(unix.Rename(arg(a, 1), arg(a, 2)))
	case "remove": // remove PATH (a file or an empty directory)
		result(os.Remove(arg(a, 1)))
	case "exchange": // exchange A B DUR: swap A and B with RENAME_EXCHANGE in a loop for DUR
		end := time.Now().Add(duration(arg(a, 3)))
		n := 0
		var err error
		for time.Now().Before(end) {
			if err = unix.Renameat2(unix.AT_FDCWD, arg(a, 1), unix.AT_FDCWD, arg(a, 2), unix.RENAME_EXCHANGE); err != nil {
				break
			}
			n++
		}
		if err != nil {
			result(err)
			return
		}
		value(n)
	case "mkfifo":
		result(unix.Mkfifo(arg(a, 1), 0o644))
	case "chmod": // chmod PATH OCTAL
		m, err := strconv.ParseUint(arg(a, 2), 8, 32)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tjhelper: bad mode %q\n", a[2])
			os.Exit(2)
		}
		result(unix.Chmod(arg(a, 1), uint32(m)))
	case "connect-unix": // connect-unix PATH: connect to a pathname unix stream socket
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Connect(fd, &unix.SockaddrUnix{Name: arg(a, 1)})
			unix.Close(fd)
		}
		result(err)
	case "prlimit": // prlimit PID RES SOFT HARD: set another process's limit (PID may be "self"; "inf")
		pid := 0
		if p := arg(a, 1); p == "self" {
			pid = os.Getpid()
		} else {
			pid = int(atoi(p))
		}
		res := map[string]int{"CPU": unix.RLIMIT_CPU, "NOFILE": unix.RLIMIT_NOFILE, "NICE": unix.RLIMIT_NICE}[arg(a, 2)]
		if res == 0 && arg(a, 2) != "CPU" {
			fmt.Fprintf(os.Stderr, "tjhelper: unknown limit %q\n", a[2])
			os.Exit(2)
		}
		l := unix.Rlimit{Cur: limitValue(arg(a, 3)), Max: limitValue(arg(a, 4))}
		result(unix.Prlimit(pid, res, &l, nil))
	case "orphans": // orphans DUR: for DUR, fork children that fork a grandchild and exit, so PID 1 reaps a stream of orphans
		value(map[string]int64{"orphans": orphans(duration(arg(a, 1)))})
	case "stdin":
		link, _ := os.Readlink("/proc/self/fd/0")
		n, err := io.Copy(io.Discard, os.Stdin)
		value(map[string]any{"fd0": link, "bytes": n, "error": errName(err)})
	case "outputbyte": // outputbyte N BYTE: N bytes of the byte BYTE (0..255) on stdout; nothing else
		b := atoi(arg(a, 2))
		if b < 0 || b > 255 {
			fmt.Fprintf(os.Stderr, "tjhelper: bad byte %d\n", b)
			os.Exit(2)
		}
		out.Flush()
		buf := bytes.Repeat([]byte{byte(b)}, 64<<10)
		for n := atoi(arg(a, 1)); n > 0; n -= int64(len(buf)) {
			if _, err := os.Stdout.Write(buf[:min(n, int64(len(buf)))]); err != nil {
				break
			}
		}
	case "manifest": // manifest DIR: every path below DIR (manifestEntry), sorted; read-only, so the host may run it too
		m, err := manifest(arg(a, 1))
		if err != nil {
			result(err)
			return
		}
		value(m)
	case "maxrss": // maxrss FILE CMD ARG...: run CMD, write its peak RSS in bytes (wait4) to FILE, exit as it did
		// From this small process: a child started by vfork, as Go
		// starts them, takes its parent's peak RSS at exec, so the test
		// process's own figure would hide CMD's.
		out.Flush()
		pid, err := syscall.ForkExec(arg(a, 2), a[2:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "tjhelper: maxrss: %v\n", err)
			os.Exit(2)
		}
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		for {
			if _, err = syscall.Wait4(pid, &ws, 0, &ru); err != syscall.EINTR {
				break
			}
		}
		if err == nil {
			err = os.WriteFile(a[1], []byte(strconv.FormatInt(ru.Maxrss<<10, 10)), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tjhelper: maxrss: %v\n", err)
			os.Exit(2)
		}
		if ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	default:
		if netAction(a) {
			return
		}
		fmt.Fprintf(os.Stderr, "tjhelper: unknown action %q\n", a[0])
		os.Exit(2)
	}
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
