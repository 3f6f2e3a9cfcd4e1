package main

// The actions, by name. Each gets its whole argument list (a[0] is its
// name) and prints its one line (see the package comment); the tests in
// integration/*_test.go drive them by these names.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var actions = map[string]func(a []string){
	// Processes, signals and limits.
	"sleep":      actSleep,
	"alloc":      actAlloc,
	"fork":       actFork,
	"forkbomb":   actForkbomb,
	"exit":       actExit,
	"kill-self":  actKillSelf,
	"busy":       actBusy,
	"hold":       func([]string) { hold() },
	"spawn":      actSpawn,
	"daemon":     func(a []string) { value(daemon(arg(a, 1))) },
	"stopped":    actStopped,
	"zombies":    actZombies,
	"orphans":    func(a []string) { value(map[string]int64{"orphans": orphans(duration(arg(a, 1)))}) },
	"rlimits":    actRlimits,
	"prlimit":    actPrlimit,
	"openmany":   actOpenmany,
	"maxrss":     actMaxrss,
	"output":     actOutput,
	"stderr":     actOutput,
	"outputbyte": actOutputByte,
	"stdin":      actStdin,
	// Files.
	"open":     actOpen,
	"write":    actWrite,
	"mkdir":    func(a []string) { result(os.Mkdir(arg(a, 1), 0o755)) },
	"read":     actRead,
	"ls":       actLs,
	"stat":     actStat,
	"symlink":  func(a []string) { result(os.Symlink(arg(a, 1), arg(a, 2))) },
	"rename":   func(a []string) { result(unix.Rename(arg(a, 1), arg(a, 2))) },
	"remove":   func(a []string) { result(os.Remove(arg(a, 1))) }, // a file or an empty directory
	"exchange": actExchange,
	"mkfifo":   func(a []string) { result(unix.Mkfifo(arg(a, 1), 0o644)) },
	"chmod":    actChmod,
	"manifest": actManifest,
	// Mounts.
	"mountro":       func(a []string) { mountFlag(arg(a, 1), unix.ST_RDONLY, "ro", "rw") },
	"mountsuid":     func(a []string) { mountFlag(arg(a, 1), unix.ST_NOSUID, "nosuid", "suid") },
	"umount":        func(a []string) { result(unix.Unmount(arg(a, 1), 0)) },
	"umount-detach": func(a []string) { result(unix.Unmount(arg(a, 1), unix.MNT_DETACH)) },
	"remount-ro": func(a []string) {
		result(unix.Mount("", arg(a, 1), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
	},
	"remount-rw":  func(a []string) { result(unix.Mount("", arg(a, 1), "", unix.MS_REMOUNT|unix.MS_BIND, "")) },
	"mount-tmpfs": func(a []string) { result(unix.Mount("tmpfs", arg(a, 1), "tmpfs", 0, "")) },
	// Sockets.
	"connect":      actConnect,
	"serve-tcp":    actServeTCP,
	"fetch":        actFetch,
	"loopback":     func([]string) { result(loopback()) },
	"netifs":       actNetifs,
	"connect-unix": actConnectUnix,
	// What the process sees of itself.
	"ps":       func([]string) { value(ps()) },
	"self":     actSelf,
	"ids":      actIDs,
	"caps":     func([]string) { value(statusLines("Cap", "NoNewPrivs", "Seccomp")) },
	"fds":      func([]string) { value(fds()) },
	"env":      func([]string) { value(os.Environ()) },
	"hostname": actHostname,
	"tty":      actTTY,
}

func actSleep(a []string) {
	time.Sleep(duration(arg(a, 1)))
	ok()
}

// actAlloc maps BYTES and touches every page of it.
func actAlloc(a []string) {
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
}

// actFork is fork N: start N children that exit at once, wait for them.
func actFork(a []string) {
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
}

// actForkbomb starts children that hold until a fork fails (at most 10000).
func actForkbomb([]string) {
	warmThreads(8)
	i := 0
	var err error
	for ; i < 10000; i++ {
		if _, err = spawn([]string{"_hold", "forkbomb"}, false); err != nil {
			break
		}
	}
	value(map[string]any{"started": i, "error": errName(err)})
}

func actExit(a []string) {
	out.Flush()
	os.Exit(int(atoi(arg(a, 1))))
}

func actKillSelf(a []string) {
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
}

// actBusy is busy DUR: burn CPU for DUR of wall time.
func actBusy(a []string) {
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
}

// actSpawn is spawn MARKER: a child that holds; not waited for.
func actSpawn(a []string) {
	pid, err := spawn([]string{"_hold", arg(a, 1)}, false)
	if err != nil {
		result(err)
		return
	}
	value(pid)
}

// actStopped is stopped MARKER: a child in its own session that SIGSTOPs
// itself. Its own session: a stopped member of an orphaned process group
// gets SIGHUP and SIGCONT from the kernel when another member exits.
func actStopped(a []string) {
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
}

// actZombies is zombies N: N children whose own children outlive them and
// exit; count unreaped zombies after.
func actZombies(a []string) {
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
	value(map[string]int{"orphans": int(n), "zombies": zombiesLeft(5 * time.Second)})
}

// zombiesLeft counts the zombies once the orphans (which sleep 100 ms)
// are gone and PID 1 had the time to reap them, up to wait (a slow guest).
func zombiesLeft(wait time.Duration) int {
	z := 0
	for deadline := time.Now().Add(wait); ; {
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
			return z
		}
	}
}

func actRlimits([]string) {
	res := map[string]int{"CORE": unix.RLIMIT_CORE, "NOFILE": unix.RLIMIT_NOFILE, "FSIZE": unix.RLIMIT_FSIZE, "CPU": unix.RLIMIT_CPU, "NPROC": unix.RLIMIT_NPROC}
	v := map[string][2]string{}
	for name, r := range res {
		var l unix.Rlimit
		unix.Getrlimit(r, &l)
		v[name] = [2]string{rlim(l.Cur), rlim(l.Max)}
	}
	value(v)
}

// actPrlimit is prlimit PID RES SOFT HARD: set another process's limit
// (PID may be "self"; SOFT and HARD may be "inf").
func actPrlimit(a []string) {
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
}

// actOpenmany is openmany N: open /dev/null up to N times, keep them open.
func actOpenmany(a []string) {
	n := atoi(arg(a, 1))
	i := int64(0)
	var err error
	for ; i < n; i++ {
		if _, err = unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
			break
		}
	}
	value(map[string]any{"opened": i, "error": errName(err)})
}

// actMaxrss is maxrss FILE CMD ARG...: run CMD, write its peak RSS in
// bytes (wait4) to FILE, exit as it did. From this small process: a child
// started by vfork, as Go starts them, takes its parent's peak RSS at
// exec, so the test process's own figure would hide CMD's.
func actMaxrss(a []string) {
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
}

// actOutput is output N and stderr N: N bytes of a..z, repeated, on stdout
// or stderr; nothing else.
func actOutput(a []string) {
	w := os.Stdout
	if a[0] == "stderr" {
		w = os.Stderr
	}
	out.Flush()
	writePattern(w, atoi(arg(a, 1)))
}

// actOutputByte is outputbyte N BYTE: N bytes of the byte BYTE (0..255) on
// stdout; nothing else.
func actOutputByte(a []string) {
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
}

func actStdin([]string) {
	link, _ := os.Readlink("/proc/self/fd/0")
	n, err := io.Copy(io.Discard, os.Stdin)
	value(map[string]any{"fd0": link, "bytes": n, "error": errName(err)})
}

// actOpen is open PATH [r|w|rw|create].
func actOpen(a []string) {
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
}

// actWrite is write PATH BYTES: create/truncate PATH and write BYTES bytes.
func actWrite(a []string) {
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
}

func actRead(a []string) {
	b, err := os.ReadFile(arg(a, 1))
	if err != nil {
		result(err)
		return
	}
	value(string(b))
}

func actLs(a []string) {
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
}

func actStat(a []string) {
	var st unix.Stat_t
	if err := unix.Lstat(arg(a, 1), &st); err != nil {
		result(err)
		return
	}
	value(map[string]any{"mode": fmt.Sprintf("%o", st.Mode), "uid": st.Uid, "gid": st.Gid, "size": st.Size})
}

// actExchange is exchange A B DUR: swap A and B with RENAME_EXCHANGE in a
// loop for DUR.
func actExchange(a []string) {
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
}

// actChmod is chmod PATH OCTAL.
func actChmod(a []string) {
	m, err := strconv.ParseUint(arg(a, 2), 8, 32)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tjhelper: bad mode %q\n", a[2])
		os.Exit(2)
	}
	result(unix.Chmod(arg(a, 1), uint32(m)))
}

// actManifest is manifest DIR: every path below DIR (manifestEntry),
// sorted; read-only, so the host may run it too.
func actManifest(a []string) {
	m, err := manifest(arg(a, 1))
	if err != nil {
		result(err)
		return
	}
	value(m)
}

// mountFlag prints set or unset: whether the mount that path is on has
// the statfs flag.
func mountFlag(path string, flag int64, set, unset string) {
	var sf unix.Statfs_t
	if err := unix.Statfs(path, &sf); err != nil {
		result(err)
		return
	}
	if int64(sf.Flags)&flag != 0 {
		value(set)
	} else {
		value(unset)
	}
}

func actConnect(a []string) {
	c, err := net.DialTimeout("tcp", arg(a, 1), 3*time.Second)
	if err == nil {
		c.Close()
	}
	result(err)
}

// actServeTCP is serve-tcp ADDR: answer each connection with a line, until
// killed.
func actServeTCP(a []string) {
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
}

// actFetch is fetch ADDR: connect and read the line served.
func actFetch(a []string) {
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
}

func actNetifs([]string) {
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
}

// actConnectUnix is connect-unix PATH: connect to a pathname unix stream
// socket.
func actConnectUnix(a []string) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: arg(a, 1)})
		unix.Close(fd)
	}
	result(err)
}

func actSelf([]string) {
	sid, _ := unix.Getsid(0)
	value(map[string]int{"pid": os.Getpid(), "ppid": os.Getppid(), "pgid": unix.Getpgrp(), "sid": sid})
}

func actIDs([]string) {
	groups, _ := unix.Getgroups()
	if groups == nil {
		groups = []int{}
	}
	value(map[string]any{"uid": os.Getuid(), "euid": os.Geteuid(), "gid": os.Getgid(), "egid": os.Getegid(), "groups": groups})
}

func actHostname([]string) {
	h, err := os.Hostname()
	if err != nil {
		result(err)
		return
	}
	value(h)
}

// actTTY says whether /dev/tty opens and whether TIOCSTI on fd 0 works.
func actTTY([]string) {
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
}
