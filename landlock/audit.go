package landlock

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotObservable is returned (wrapped, with the reason and the fix) by
// WatchDenials when this host cannot deliver Landlock audit records to the
// supervisor. The run report then says Landlock denials are not observable.
var ErrNotObservable = errors.New("landlock denials are not observable on this host")

// MaxDenials bounds the distinct denials one Watcher itemizes; more are
// counted in WatchStats.Unlisted, so a flood cannot grow the supervisor.
const MaxDenials = 256

const (
	statusTimeout = time.Second
	syncTimeout   = time.Second
	maxPending    = 256 // audit events waiting for their end-of-event record
)

var noDeadline time.Time

func deadline(d time.Duration) time.Time { return time.Now().Add(d) }

// Denial is one kind of access the kernel refused to the run, aggregated.
type Denial struct {
	// Kind is the blocker's category: "fs", "net", "scope" or "ptrace".
	Kind string `json:"kind"`
	// Path is what was denied: the path (fs), "ADDR:PORT" (net), the
	// abstract socket name as "@name" or "pid N (comm)" for a signal (scope).
	Path string `json:"path"`
	// Access lists the denied rights, named as in Enforced ("write_file",
	// "connect_tcp", "signal").
	Access []string `json:"access"`
	// Pid and Exe are the host pid and executable of the first process
	// denied (0 and "" when the kernel logged no syscall record).
	Pid   int    `json:"pid,omitempty"`
	Exe   string `json:"exe,omitempty"`
	Count int    `json:"count"`
}

// WatchStats qualifies what Stop returned.
type WatchStats struct {
	// Unlisted counts the run's denials beyond MaxDenials distinct entries.
	Unlisted int `json:"unlisted,omitempty"`
	// KernelTotal is the kernel's own count of the run's denials, logged or
	// not, from the domain's "deallocated" record; -1 when that record had
	// not arrived by Stop (the domain outlived the run's processes, or no
	// denial was logged, in which case the kernel writes no such record).
	KernelTotal int `json:"kernel_total"`
	// Lost counts records the socket dropped under a flood (ENOBUFS): some
	// may have been the run's.
	Lost int `json:"lost,omitempty"`
	// Synced is true when Stop saw its own marker come back through the
	// audit queue, so every record written before Stop was read.
	Synced bool `json:"synced"`
}

// Watcher collects the Landlock audit records of the processes it tracks.
// It listens to the kernel's read-only audit multicast group, which gets
// every audit record of the host, independently of auditd: with or without
// an audit daemon, the records are multicast before auditd is served.
type Watcher struct {
	conn *auditConn

	mu      sync.Mutex
	tracked []int

	// state below is owned by the reader goroutine until done is closed.
	done    chan struct{}
	nonce   string
	synced  chan struct{}
	pending map[uint64]*event
	domains map[string]*domainInfo
	agg     map[aggKey]*Denial
	order   []aggKey
	over    map[string]int // per domain: denials beyond MaxDenials
	lost    int
}

type event struct {
	access []record
	pid    int
	exe    string
}

type domainInfo struct {
	creator int   // pid from the "allocated" record: the process that called landlock_restrict_self
	pids    []int // pids seen denied in this domain (a few)
	total   int   // from "deallocated"; -1 until then
}

type aggKey struct{ domain, kind, path, access string }

// statusFresh is how long WatchDenials trusts the kernel's audit status it
// read last. Reading it (AUDIT_GET) makes the kernel start a thread for the
// reply, a fork in kthreadd that the run's start waits for (BENCHMARKS.md,
// figures from code comments). A change of the setting (auditctl -e) is
// seen within this time, at once when a Stop's marker did not come back.
const statusFresh = 10 * time.Second

// statuses is the status WatchDenials read last.
var statuses statusCache

// statusCache keeps the kernel's audit status for statusFresh.
type statusCache struct {
	mu  sync.Mutex
	at  time.Time // when st and err were read; zero: not kept
	st  auditStatus
	err error
}

// get returns the kept status while it is fresh, else what read returns,
// kept when keepStatus says so. Concurrent callers wait for one read.
func (s *statusCache) get(now time.Time, read func() (auditStatus, error)) (auditStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && now.Sub(s.at) >= 0 && now.Sub(s.at) < statusFresh {
		return s.st, s.err
	}
	st, err := read()
	s.at = time.Time{}
	if keepStatus(err) {
		s.at, s.st, s.err = now, st, err
	}
	return st, err
}

// drop forgets the kept status: the next get reads it.
func (s *statusCache) drop() {
	s.mu.Lock()
	s.at = time.Time{}
	s.mu.Unlock()
}

// keepStatus says whether a status read is worth keeping: an answer (audit
// on or off), or EPERM, which the process's capabilities decide; not a
// failure that the next read may not have (a timeout, a short reply).
func keepStatus(err error) bool {
	return err == nil || errors.Is(err, unix.EPERM)
}

// WatchDenials starts watching Landlock denials. It needs Landlock ABI 7
// (audit flags), the kernel's audit enabled, and CAP_AUDIT_READ in the
// initial user namespace; otherwise it returns ErrNotObservable saying
// which is missing and how to fix it. Call Track with the run's pid, then
// Stop after the run's processes are gone.
func WatchDenials() (*Watcher, error) {
	if s := Probe(); s.ABI < 7 {
		why := fmt.Sprintf("Landlock ABI %d has no audit logging of the command's denials (needs ABI 7, Linux 6.15+)", s.ABI)
		if s.Reason != "" {
			why += "; " + s.Reason
		}
		return nil, fmt.Errorf("%w: %s", ErrNotObservable, why)
	}
	c, err := dialAudit()
	if err != nil {
		return nil, err
	}
	st, err := statuses.get(time.Now(), c.status)
	switch {
	case errors.Is(err, unix.EPERM):
		// Reading the status needs CAP_AUDIT_CONTROL; the multicast works
		// without it. Go on: if audit is off, Stop simply finds nothing.
	case err != nil:
		c.close()
		return nil, fmt.Errorf("%w: reading the kernel audit status: %v", ErrNotObservable, err)
	case st.Enabled == 0:
		c.close()
		return nil, fmt.Errorf("%w: the kernel's audit is disabled (audit_enabled=0), so Landlock writes no denial records; enable it with `auditctl -e 1` or boot with audit=1 (without an audit daemon the records are also printed to the kernel log)", ErrNotObservable)
	}
	var n [8]byte
	_, _ = rand.Read(n[:])
	w := &Watcher{
		conn:    c,
		done:    make(chan struct{}),
		nonce:   "tooljail-landlock-sync-" + hex.EncodeToString(n[:]),
		synced:  make(chan struct{}),
		pending: map[uint64]*event{},
		domains: map[string]*domainInfo{},
		agg:     map[aggKey]*Denial{},
		over:    map[string]int{},
	}
	go w.readLoop()
	return w, nil
}

// Track attributes to this Watcher the Landlock domain created by hostPid
// (stage 2, which becomes the command through execve), and the denials of
// that process itself. Children of the command share its domain and are
// covered. Call it before the command can run (before stage 2 execs).
func (w *Watcher) Track(hostPid int) {
	w.mu.Lock()
	w.tracked = append(w.tracked, hostPid)
	w.mu.Unlock()
}

// Stop waits until every audit record written so far has been read, stops
// watching and returns the tracked runs' denials, most frequent first.
// Call it after the run's processes have exited.
func (w *Watcher) Stop() []Denial {
	d, _ := w.StopStats()
	return d
}

// StopStats is Stop with the statistics that qualify the list.
func (w *Watcher) StopStats() ([]Denial, WatchStats) {
	stats := WatchStats{KernelTotal: -1}
	// The marker goes through the kernel's audit queue behind every record
	// already written, so seeing it come back means nothing is in flight.
	if err := w.conn.send(auditUser, 0, []byte(w.nonce+"\x00")); err == nil {
		select {
		case <-w.synced:
			stats.Synced = true
		case <-time.After(syncTimeout):
			// Audit may have been turned off since its status was
			// read: the next WatchDenials reads it again.
			statuses.drop()
		}
	} else {
		time.Sleep(50 * time.Millisecond) // no CAP_AUDIT_WRITE: a grace period instead
	}
	w.conn.close()
	<-w.done
	for s := range w.pending {
		w.flush(s)
	}
	return w.result(&stats), stats
}

func (w *Watcher) readLoop() {
	defer close(w.done)
	buf := make([]byte, 1<<16)
	for {
		typ, data, err := w.conn.read(buf)
		if err != nil {
			if errors.Is(err, unix.ENOBUFS) {
				w.lost++
				continue
			}
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			return // closed by Stop
		}
		w.handle(typ, data)
	}
}

func (w *Watcher) handle(typ uint16, data []byte) {
	switch typ {
	case auditUser:
		if bytes.Contains(data, []byte(w.nonce)) {
			select {
			case <-w.synced:
			default:
				close(w.synced)
			}
		}
		return
	case auditAccess, auditDomain, auditSyscall, auditEOE:
	default:
		return
	}
	r, ok := parseRecord(typ, data)
	if !ok {
		return
	}
	switch typ {
	case auditDomain:
		d := w.domain(r.fields["domain"])
		switch r.fields["status"] {
		case "allocated":
			d.creator = r.int("pid")
		case "deallocated":
			d.total = r.int("denials")
		}
	case auditAccess:
		w.event(r.serial).access = append(w.event(r.serial).access, r)
	case auditSyscall:
		if ev, ok := w.pending[r.serial]; ok {
			ev.pid, ev.exe = r.int("pid"), r.fields["exe"]
		}
	case auditEOE:
		w.flush(r.serial)
	}
}

func (w *Watcher) event(serial uint64) *event {
	ev, ok := w.pending[serial]
	if !ok {
		if len(w.pending) >= maxPending {
			w.flush(slices.Min(mapKeys(w.pending)))
		}
		ev = &event{}
		w.pending[serial] = ev
	}
	return ev
}

func (w *Watcher) domain(id string) *domainInfo {
	d, ok := w.domains[id]
	if !ok {
		d = &domainInfo{total: -1}
		w.domains[id] = d
	}
	return d
}

// flush aggregates the access records of one event.
func (w *Watcher) flush(serial uint64) {
	ev, ok := w.pending[serial]
	if !ok {
		return
	}
	delete(w.pending, serial)
	for _, r := range ev.access {
		id := r.fields["domain"]
		d := w.domain(id)
		if ev.pid != 0 && len(d.pids) < 16 && !slices.Contains(d.pids, ev.pid) {
			d.pids = append(d.pids, ev.pid)
		}
		kind, access := blockers(r.fields["blockers"])
		k := aggKey{domain: id, kind: kind, path: object(kind, access, r.fields), access: strings.Join(access, ",")}
		if e, ok := w.agg[k]; ok {
			e.Count++
			continue
		}
		if len(w.agg) >= MaxDenials*4 { // across all domains on the host
			w.over[id]++
			continue
		}
		w.agg[k] = &Denial{Kind: kind, Path: k.path, Access: access, Pid: ev.pid, Exe: ev.exe, Count: 1}
		w.order = append(w.order, k)
	}
}

// result merges the entries of the tracked runs' domains.
func (w *Watcher) result(stats *WatchStats) []Denial {
	w.mu.Lock()
	tracked := slices.Clone(w.tracked)
	w.mu.Unlock()
	mine := map[string]bool{}
	for id, d := range w.domains {
		if slices.Contains(tracked, d.creator) || slices.ContainsFunc(d.pids, func(p int) bool { return slices.Contains(tracked, p) }) {
			mine[id] = true
			if d.total >= 0 {
				stats.KernelTotal = max(stats.KernelTotal, 0) + d.total
			}
			stats.Unlisted += w.over[id]
		}
	}
	var out []Denial
	index := map[aggKey]int{}
	for _, k := range w.order {
		if !mine[k.domain] {
			continue
		}
		e := w.agg[k]
		merged := aggKey{kind: k.kind, path: k.path, access: k.access}
		if i, ok := index[merged]; ok {
			out[i].Count += e.Count
			continue
		}
		if len(out) >= MaxDenials {
			stats.Unlisted += e.Count
			continue
		}
		index[merged] = len(out)
		out = append(out, *e)
	}
	slices.SortStableFunc(out, func(a, b Denial) int { return b.Count - a.Count })
	stats.Lost = w.lost
	return out
}

// blockers splits "fs.write_file,fs.truncate" into "fs" and the rights.
func blockers(s string) (string, []string) {
	kind := ""
	var access []string
	for _, b := range strings.Split(s, ",") {
		cat, right, ok := strings.Cut(b, ".")
		if !ok {
			cat, right = b, b // "ptrace"
		}
		if kind == "" {
			kind = cat
		}
		access = append(access, right)
	}
	return kind, access
}

// object names what a denial was about, from the record's fields.
func object(kind string, access []string, f map[string]string) string {
	switch {
	case kind == "net" && f["daddr"] != "":
		return f["daddr"] + ":" + f["dest"]
	case kind == "net":
		return f["saddr"] + ":" + f["src"]
	case f["opid"] != "":
		return fmt.Sprintf("pid %s (%s)", f["opid"], f["ocomm"])
	case f["path"] != "":
		p := f["path"]
		if strings.HasPrefix(p, "\x00") {
			p = "@" + strings.TrimRight(p[1:], "\x00")
		}
		return p
	case f["name"] != "":
		return f["name"]
	case f["ino"] != "":
		return fmt.Sprintf("dev %s ino %s", f["dev"], f["ino"])
	}
	return ""
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
