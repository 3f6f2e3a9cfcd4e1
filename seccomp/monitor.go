package seccomp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Action is what a denied call does to the run.
type Action string

const (
	ActionDeny Action = "deny" // EPERM, the run goes on
	ActionKill Action = "kill" // the whole run is killed
)

// Violation is one denied syscall (aggregated by kind and syscall name).
//
// Kind "syscall": a call outside the allowlist. It failed with EPERM
// (ENOSYS for numbers the kernel has no name for), Action "denied"; with
// ActionKill the run was killed, Action "killed".
// Kind "arch": a call through a non-native entry point (Syscall is
// "x32:NAME" or "i386:NAME"). The calling process is always killed before
// the call runs, Action "killed".
//
// Args, Pid and JailPid describe the first occurrence; Count all of them.
type Violation struct {
	Kind    string   `json:"kind"` // "syscall" or "arch"
	Syscall string   `json:"syscall,omitempty"`
	Args    []string `json:"args,omitempty"` // the six argument registers, hex; pointers are not followed
	Pid     int      `json:"pid,omitempty"`  // host pid (thread id) of the first offender
	JailPid int      `json:"jail_pid,omitempty"`
	Count   int      `json:"count"`
	Action  string   `json:"action"` // "denied" or "killed"
}

// maxViolationKinds bounds the monitor's memory under a flood of distinct
// (kind, syscall) pairs; further pairs are counted under Syscall "other".
const maxViolationKinds = 256

// maxCallKeys bounds the per-(arch, number) answers the monitor keeps;
// numbers come from the jail. Past it, a new pair is classified again on
// each call (correct, only slower).
const maxCallKeys = 4096

// MonitorOptions configure a Monitor (NewMonitor).
type MonitorOptions struct {
	// Action is what a denied call does to the run (ActionDeny if empty).
	Action Action
	// OnKill is called once, synchronously, before the first violation
	// is answered with ActionKill, and in any mode when an arch
	// violation's process cannot be killed on its own. It must not call
	// Stop. May be nil.
	OnKill func()
	// MaxViolations bounds the denied calls of the run (all kinds, the
	// sum of the counts): when the total exceeds it, OnLimit is called,
	// once, synchronously, before that call is answered; the call still
	// fails (EPERM), and so do later ones until the run is gone. OnLimit
	// must not call Stop; it may be nil. 0 means no bound.
	MaxViolations uint64
	OnLimit       func()
	// OnFail is called once, from the monitor's goroutine, when it stops
	// serving before Stop (the error Err returns). A caller blocked in a
	// denied call would wait for an answer until the listener is closed,
	// so the run should be ended. It must not call Stop; it may be nil.
	// When NewMonitor cannot start serving at all, it is not called: Err
	// says so as soon as NewMonitor returns.
	OnFail func(error)
}

// Monitor answers notifications from one jail.
type Monitor struct {
	listener *os.File
	wake     int // eventfd that Stop writes to
	opts     MonitorOptions
	killOnce sync.Once
	native   nativeArch
	names    syscallNames
	done     chan struct{}
	stopOnce sync.Once
	total    atomic.Uint64 // notifications received

	// Owned by the loop goroutine; Stop reads them once it has ended.
	order []string // keys in order of first occurrence
	// vmu guards byKey and order: Snapshot reads them while the loop runs.
	vmu   sync.Mutex
	byKey map[string]*Violation
	calls map[uint64]*callAnswer // by callKey
	req   notifReq               // the receive buffer

	mu  sync.Mutex
	err error // why the loop ended early, if it did

	// waitMu guards the poller's wait for the first notification
	// (awaitFirst) against Stop.
	waitMu   sync.Mutex
	waiter   *os.File
	stopping bool
}

// callAnswer is what the monitor does with one (arch, number) pair,
// decided on its first notification and reused for the rest.
type callAnswer struct {
	v     *Violation
	errno unix.Errno // the answer: EPERM, or ENOSYS for an unnamed number
	arch  bool       // a non-native entry point: the caller is killed
	name  string
}

func callKey(req *notifReq) uint64 { return uint64(req.arch)<<32 | uint64(uint32(req.nr)) }

// seccomp_notif and seccomp_notif_resp from <linux/seccomp.h>.
type notifReq struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

const (
	ioctlNotifRecv     = unix.SECCOMP_IOCTL_NOTIF_RECV
	ioctlNotifSend     = unix.SECCOMP_IOCTL_NOTIF_SEND
	ioctlNotifIDValid  = unix.SECCOMP_IOCTL_NOTIF_ID_VALID
	ioctlNotifSetFlags = unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS
)

// NewMonitor serves the listener in the background until Stop. Each
// notification is recorded and answered at once: EPERM (ENOSYS for an
// unnamed number), or, for a non-native architecture, the process is
// killed. With ActionKill, opts.OnKill is called first and the call still
// fails with EPERM. The options are in force from the first notification.
//
// The Monitor owns listener and closes it in Stop.
//
// A denied call blocks its caller until the monitor answers, so a flood
// from one thread wakes the monitor once per call: a few ioctls and a
// context switch each (no allocation, lock or /proc read after the first
// call of a kind). MaxViolations bounds the total. On Linux 6.6 and later
// the monitor asks for synchronous wake-ups
// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): caller and monitor hand one CPU to
// each other instead of waking each other across CPUs. Older kernels
// refuse the flag and wake it as before; the answers are the same.
func NewMonitor(listener *os.File, opts MonitorOptions) *Monitor {
	if opts.Action == "" {
		opts.Action = ActionDeny
	}
	m := &Monitor{
		listener: listener,
		wake:     -1,
		opts:     opts,
		done:     make(chan struct{}),
		byKey:    make(map[string]*Violation),
		calls:    make(map[uint64]*callAnswer),
	}
	na, err := native()
	if err != nil {
		return m.failed(err)
	}
	m.native = na
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return m.failed(fmt.Errorf("seccomp monitor: eventfd: %w", err))
	}
	m.wake = fd
	go m.loop()
	return m
}

// Total is the number of denied calls received so far (all kinds: the sum
// of the counts Stop returns). It may be called at any time.
func (m *Monitor) Total() uint64 { return m.total.Load() }

// Stop ends the monitor, closes the listener and returns what it recorded.
// It returns promptly even if the jail is still running; from then on the
// jail's denied calls fail with ENOSYS (the kernel's answer when no
// listener is left). Stop may be called more than once.
func (m *Monitor) Stop() []Violation {
	m.stopOnce.Do(func() {
		// A loop still waiting for its first notification is in the
		// poller: a deadline in the past ends its wait.
		m.waitMu.Lock()
		m.stopping = true
		if m.waiter != nil {
			m.waiter.SetReadDeadline(time.Unix(1, 0))
		}
		m.waitMu.Unlock()
		if m.wake >= 0 {
			var one = [8]byte{1}
			_, _ = unix.Write(m.wake, one[:])
		}
		<-m.done
		if m.wake >= 0 {
			unix.Close(m.wake)
		}
		m.listener.Close()
	})
	<-m.done // the loop's records are final
	return m.Snapshot()
}

// Snapshot returns what the monitor recorded so far, while it goes on
// (a session's call whose processes stay and may make more).
func (m *Monitor) Snapshot() []Violation {
	m.vmu.Lock()
	defer m.vmu.Unlock()
	out := make([]Violation, 0, len(m.order))
	for _, k := range m.order {
		v := *m.byKey[k]
		v.Args = append([]string(nil), v.Args...)
		out = append(out, v)
	}
	return out
}

// Err reports why the monitor stopped serving before Stop, if it did
// (nil when the jail simply ended).
func (m *Monitor) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *Monitor) loop() {
	defer close(m.done)
	if !m.awaitFirst() {
		return
	}
	// One thread for the monitor's life, the one the kernel wakes.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lfd := int(m.listener.Fd())
	// Linux 6.6+. Before, EINVAL (an unknown request): woken as usual.
	unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), ioctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	fds := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}, {Fd: int32(m.wake), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			m.fail(fmt.Errorf("seccomp monitor: poll: %w", err))
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		re := fds[0].Revents
		if re&unix.POLLIN != 0 {
			if err := m.serveOne(lfd); err != nil {
				m.fail(err)
				return
			}
			continue
		}
		if re&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return // every process using the filter is gone
		}
	}
}

// awaitFirst waits for the listener's first notification in the Go
// runtime's poller, and says whether the loop goes on (false: Stop came,
// or every process using the filter is gone first). Most runs make no
// denied call, and a thread blocked in poll holds a P in a system call:
// while any P is not idle, the runtime's sysmon thread polls instead of
// sleeping, through the command's whole run and on its CPU
// (BENCHMARKS.md, issue 31).
// Once a call has been denied, more may follow fast: the locked thread
// serves them, as the kernel's synchronous wake-ups want. Where the
// listener cannot be polled this way, it goes straight on.
func (m *Monitor) awaitFirst() bool {
	var lfd int
	if rc, err := m.listener.SyscallConn(); err != nil || rc.Control(func(fd uintptr) { lfd = int(fd) }) != nil {
		return true
	}
	fd, err := unix.FcntlInt(uintptr(lfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return true
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return true
	}
	// Non-blocking before NewFile: only then is the file the poller's.
	f := os.NewFile(uintptr(fd), "seccomp-listener")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	m.waitMu.Lock()
	stopping := m.stopping
	m.waiter = f
	m.waitMu.Unlock()
	defer func() {
		m.waitMu.Lock()
		m.waiter = nil
		m.waitMu.Unlock()
	}()
	if stopping {
		return false
	}
	var revents int16
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		for err == unix.EINTR {
			n, err = unix.Poll(p, 0)
		}
		if err != nil {
			revents = unix.POLLIN // the locked loop's own poll fails and says why
			return true
		}
		if n == 0 {
			return false // nothing yet: wait for the poller
		}
		revents = p[0].Revents
		return true
	})
	if err != nil {
		return false // Stop's deadline
	}
	return revents&unix.POLLIN != 0 || revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0
}

// failed is NewMonitor giving up before it serves anything; its caller
// learns it from Err (OnFail might take a lock that caller holds).
func (m *Monitor) failed(err error) *Monitor {
	m.err = err
	close(m.done)
	return m
}

func (m *Monitor) fail(err error) {
	m.mu.Lock()
	m.err = err
	m.mu.Unlock()
	if m.opts.OnFail != nil {
		m.opts.OnFail(err)
	}
}

// ioctlPtr is an ioctl that may block (the runtime is told).
func ioctlPtr(fd int, req uintptr, p unsafe.Pointer) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	return errno
}

// ioctlPtrRaw is an ioctl that returns at once (at most a short wait for
// a mutex): the Go scheduler is not told.
func ioctlPtrRaw(fd int, req uintptr, p unsafe.Pointer) unix.Errno {
	_, _, errno := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	return errno
}

// serveOne receives and answers one notification. Errors about one
// notification (the target died: ENOENT) are not loop errors. A call seen
// before costs two ioctls, a map lookup and an atomic add: no allocation,
// no lock, no /proc.
func (m *Monitor) serveOne(lfd int) error {
	req := &m.req
	for {
		*req = notifReq{} // the kernel wants it zeroed
		errno := ioctlPtr(lfd, ioctlNotifRecv, unsafe.Pointer(req))
		if errno == 0 {
			break
		}
		switch errno {
		case unix.EINTR:
			continue
		case unix.ENOENT:
			return nil // the caller was killed between poll and receive
		}
		return fmt.Errorf("seccomp monitor: receive: %w", errno)
	}

	a := m.calls[callKey(req)]
	if a == nil {
		a = m.firstCall(lfd, req)
	} else {
		a.v.Count++
	}
	if n := m.total.Add(1); n == m.opts.MaxViolations+1 && m.opts.MaxViolations > 0 && m.opts.OnLimit != nil {
		m.opts.OnLimit()
	}

	switch {
	case a.arch:
		if err := killNotified(lfd, req); err != nil {
			m.kill()
		}
	case m.opts.Action == ActionKill:
		// The caller must not run on after the answer while the rest of
		// the jail is being torn down: kill it first, then the run.
		killNotified(lfd, req)
		m.kill()
	}
	resp := notifResp{id: req.id, error: -int32(a.errno)}
	for {
		errno := ioctlPtrRaw(lfd, ioctlNotifSend, unsafe.Pointer(&resp))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 && errno != unix.ENOENT {
			return fmt.Errorf("seccomp monitor: answer %s: %w", a.name, errno)
		}
		return nil
	}
}

func (m *Monitor) kill() {
	m.killOnce.Do(func() {
		if m.opts.OnKill != nil {
			m.opts.OnKill()
		}
	})
}

// firstCall classifies and records a call whose (arch, number) the monitor
// has not answered before (or no longer keeps), and returns its answer.
func (m *Monitor) firstCall(lfd int, req *notifReq) *callAnswer {
	info := m.names.lookup(m.native, req.arch, req.nr)
	a := &callAnswer{errno: unix.EPERM, arch: info.kind == "arch", name: info.name}
	if !info.known && info.kind == "syscall" {
		a.errno = unix.ENOSYS
	}
	how := "denied"
	if a.arch || m.opts.Action == ActionKill {
		how = "killed"
	}
	a.v = m.record(lfd, req, info, how)
	if len(m.calls) < maxCallKeys {
		m.calls[callKey(req)] = a
	}
	return a
}

// record aggregates one notification by kind and name and returns its
// record. Only the first of a kind pays for formatting arguments and
// reading /proc.
func (m *Monitor) record(lfd int, req *notifReq, info nameInfo, how string) *Violation {
	// Snapshot may read the records while the loop writes them.
	m.vmu.Lock()
	defer m.vmu.Unlock()
	key := info.kind + "\x00" + info.name
	v, ok := m.byKey[key]
	if !ok && len(m.order) >= maxViolationKinds {
		key = "other"
		v, ok = m.byKey[key]
		info = nameInfo{kind: "syscall", name: "other"}
	}
	if ok {
		v.Count++
		if how == "killed" {
			v.Action = how
		}
		return v
	}
	args := make([]string, len(req.args))
	for i, a := range req.args {
		args[i] = "0x" + strconv.FormatUint(a, 16)
	}
	v = &Violation{Kind: info.kind, Syscall: info.name, Args: args, Pid: int(req.pid),
		JailPid: jailPid(lfd, req), Count: 1, Action: how}
	m.byKey[key] = v
	m.order = append(m.order, key)
	return v
}

func idValid(lfd int, id uint64) bool {
	return ioctlPtr(lfd, ioctlNotifIDValid, unsafe.Pointer(&id)) == 0
}

// jailPid reads the caller's pid in its own (innermost) pid namespace from
// the last NSpid field of /proc/<pid>/status. The notification id is
// checked after the read: while it is valid the caller is blocked in the
// call, so the pid was not reused. 0 when unknown.
func jailPid(lfd int, req *notifReq) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(req.pid)) + "/status")
	if err != nil || !idValid(lfd, req.id) {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(string(f[len(f)-1]))
			return n
		}
	}
	return 0
}

// killNotified SIGKILLs the process that made the notified call. A pidfd
// taken on its pid and then checked against the notification id refers to
// that very process even if pids are reused.
func killNotified(lfd int, req *notifReq) error {
	pid := int(req.pid)
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err == unix.EINVAL || err == unix.ENOENT {
		// A thread other than the leader (Linux < 6.9 gives no pidfd for
		// those): SIGKILL to its thread group is the same thing.
		if tgid := threadGroup(pid); tgid > 0 {
			pidfd, err = unix.PidfdOpen(tgid, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	if !idValid(lfd, req.id) {
		return nil // already gone
	}
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal %d: %w", pid, err)
	}
	return nil
}

func threadGroup(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Tgid:")); ok {
			n, _ := strconv.Atoi(string(bytes.TrimSpace(rest)))
			return n
		}
	}
	return 0
}
