package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/mountinfo"
)

// Layout, below the supervisor's own cgroup ("base") in each hierarchy
// (v2: the unified one; v1: memory, cpu, cpuacct, pids, freezer):
//
//	v2: <base>/tooljail-<pid>-<starttime>-<ns>/            one per supervisor process
//	    <base>/tooljail-<pid>-<starttime>-<ns>/run-<id>    one per run (the caps live here)
//	    <base>/tooljail-<pid>-<starttime>-<ns>/supervisor  when the supervisor had to
//	                                                       leave <base> (no internal processes)
//	v1: <base>/tooljail-<pid>-<starttime>-<ns>-run-<id>    one per run
//
// v2 needs the owner directory: controllers are enabled per level and the
// supervisor may have to move into it. v1 has neither rule, so its runs
// sit directly in the base: an owner directory there would cost one mkdir
// and one rmdir per hierarchy (ten system calls) for every CLI run, which
// makes one group.
//
// pid and starttime (field 22 of /proc/<pid>/stat) name the owner, so
// CleanupStale can tell a dead supervisor's groups from a live one's even
// when the pid has been reused.
const (
	ownerPrefix   = "tooljail-"
	runPrefix     = "run-"
	supervisorDir = "supervisor"
)

var (
	selfNameOnce sync.Once
	selfNameVal  string
)

// selfName is this process's owner name (ownerName of its pid).
func selfName() string {
	selfNameOnce.Do(func() {
		start, _ := procStartTime(os.Getpid())
		selfNameVal = ownerName(os.Getpid(), start, pidNS())
	})
	return selfNameVal
}

// ownerName is the per-supervisor directory name for pid started at start
// in the pid namespace with inode ns. The namespace is part of the name
// because a pid only means something in its own namespace: CleanupStale
// leaves groups of other namespaces alone.
func ownerName(pid int, start, ns uint64) string {
	return fmt.Sprintf("%s%d-%d-%d", ownerPrefix, pid, start, ns)
}

// flatRunName is run id's v1 directory name: the owner name and the run.
func flatRunName(owner, id string) string { return owner + "-" + runDirName(id) }

// cutFlatRun splits a v1 run directory name into its owner name and run
// id; ok is false for anything else, owner directories included.
func cutFlatRun(name string) (owner, id string, ok bool) {
	rest, found := strings.CutPrefix(name, ownerPrefix)
	if !found {
		return "", "", false
	}
	f := strings.SplitN(rest, "-", 4)
	if len(f) != 4 {
		return "", "", false
	}
	id, found = strings.CutPrefix(f[3], runPrefix)
	owner = ownerPrefix + strings.Join(f[:3], "-")
	if _, _, _, valid := parseOwnerName(owner); !found || !valid || validRunID(id) != nil {
		return "", "", false
	}
	return owner, id, true
}

// parseOwnerName is the inverse of ownerName.
func parseOwnerName(name string) (pid int, start, ns uint64, ok bool) {
	rest, found := strings.CutPrefix(name, ownerPrefix)
	if !found {
		return 0, 0, 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, 0, 0, false
	}
	if start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return 0, 0, 0, false
	}
	if ns, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return 0, 0, 0, false
	}
	return pid, start, ns, true
}

// pidNS is the inode of this process's pid namespace (0 if unknown).
func pidNS() uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0
	}
	return st.Ino
}

// procStartTime reads the start time (clock ticks after boot) of pid.
func procStartTime(pid int) (uint64, error) {
	b, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return parseStatStartTime(b)
}

// procDir is a descriptor of /proc, opened once.
var procDir = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
})

// readProcStat reads /proc/<pid>/stat through a descriptor of /proc, not by
// its path: qemu-user answers an open of "/proc/<own pid>/stat" with a
// made-up line whose start time moves by a few ticks from read to read and
// is not the kernel's, so an emulated supervisor's owner name would not
// match what another supervisor reads of it, and each would judge the other
// dead and remove its groups. The kernel's line comes through openat.
func readProcStat(pid int) ([]byte, error) {
	d, err := procDir()
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc", Err: err}
	}
	name := strconv.Itoa(pid) + "/stat"
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/" + name, Err: err}
	}
	defer unix.Close(fd)
	return readAt0(fd, "/proc/"+name)
}

// parseStatStartTime takes field 22 of a /proc/<pid>/stat line. The comm
// field (2) may hold spaces and parentheses, so fields are counted after
// the last ')'.
func parseStatStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc stat line")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// ownerAlive says whether the supervisor named by pid and start still runs.
// A zombie does not: a SIGKILLed server stays one until its parent (often
// PID 1, which may take its time) reaps it, and its groups must go at the
// next server's start all the same.
func ownerAlive(pid int, start uint64) bool {
	b, err := readProcStat(pid)
	if err != nil {
		return false
	}
	st, err := parseStatStartTime(b)
	return err == nil && st == start && !statZombie(b)
}

// statZombie says whether a /proc/<pid>/stat line is a process that has
// exited (state Z, or X).
func statZombie(b []byte) bool {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// validRunID accepts ids that are one safe path element.
func validRunID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("cgroup: run id %q must be 1 to 128 characters", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("cgroup: run id %q may only hold letters, digits, '-', '_' and '.'", id)
		}
	}
	if id == "." || id == ".." {
		return fmt.Errorf("cgroup: run id %q is not a name", id)
	}
	return nil
}

// procCgroups is /proc/self/cgroup parsed: v1 controller -> path, and the
// unified (v2) path, "" when the process has no v2 entry.
type procCgroups struct {
	v1      map[string]string
	unified string
	hasV2   bool
}

func parseProcCgroup(b []byte) (procCgroups, error) {
	pc := procCgroups{v1: map[string]string{}}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		line := s.Text()
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return pc, fmt.Errorf("malformed /proc/self/cgroup line %q", line)
		}
		if parts[0] == "0" && parts[1] == "" {
			pc.unified, pc.hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			pc.v1[c] = parts[2]
		}
	}
	return pc, s.Err()
}

func readProcCgroups() (procCgroups, error) {
	b, err := readFile("/proc/self/cgroup")
	if err != nil {
		return procCgroups{}, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	pc, err := parseProcCgroup(b)
	if err != nil {
		return pc, err
	}
	for c, p := range pc.v1 {
		pc.v1[c] = outsideOwnRuns(p, selfName())
	}
	return pc, nil
}

// outsideOwnRuns is the v1 path p of a cgroup file with the run groups of
// the supervisor named self cut off its end. On v1 a thread of this
// process joins a run's group to fork the init there (joinThread), and
// /proc/self/cgroup shows the thread group leader's groups: when that
// thread is the leader, another run reading its base meanwhile would see
// the first run's group, make its own group inside it, and be frozen and
// killed with it (and the first thread would be moved "home" into it).
// This process's home is never one of its own runs.
func outsideOwnRuns(p, self string) string {
	for p != "/" && p != "" {
		owner, _, ok := cutFlatRun(path.Base(p))
		if !ok || owner != self {
			break
		}
		p = path.Dir(p)
	}
	return p
}

// mount is one cgroup filesystem mount.
type mount struct {
	point string // where it is mounted
	root  string // which cgroup of the hierarchy is at point
}

// cgroupMounts is /proc/self/mountinfo reduced to cgroup mounts: v1
// controller -> mount, and the cgroup2 mount.
type cgroupMounts struct {
	v1      map[string]mount
	unified *mount
}

func parseMountInfo(b []byte) cgroupMounts {
	cm := cgroupMounts{v1: map[string]mount{}}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mount{point: mountinfo.Unescape(f[4]), root: mountinfo.Unescape(f[3])}
		switch g[0] {
		case "cgroup2":
			if cm.unified == nil {
				cm.unified = &m
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if !v1Controllers[o] && !strings.HasPrefix(o, "name=") {
					continue // a mount option (rw, xattr, nsdelegate...)
				}
				if _, dup := cm.v1[o]; !dup {
					cm.v1[o] = m
				}
			}
		}
	}
	return cm
}

// v1Controllers are the controller names a v1 mount's options can carry.
var v1Controllers = map[string]bool{
	"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "devices": true,
	"freezer": true, "net_cls": true, "net_prio": true, "blkio": true, "perf_event": true,
	"hugetlb": true, "pids": true, "rdma": true, "misc": true,
}

// mountsTTL is how long readCgroupMounts reuses what it read: one run
// detects the layout three times (probe, New, CleanupStale), and the
// kernel's mountinfo rendering is most of detect's cost; a process that
// lives longer still sees a remounted hierarchy within seconds.
const mountsTTL = 2 * time.Second

var mountsCache struct {
	sync.Mutex
	at time.Time
	m  cgroupMounts
}

func readCgroupMounts() (cgroupMounts, error) {
	mountsCache.Lock()
	defer mountsCache.Unlock()
	if !mountsCache.at.IsZero() && time.Since(mountsCache.at) < mountsTTL {
		return mountsCache.m, nil
	}
	b, err := readFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupMounts{}, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	mountsCache.m, mountsCache.at = parseMountInfo(b), time.Now()
	return mountsCache.m, nil
}

// hostDir maps cgroup path p of a hierarchy to a directory through m.
func hostDir(m mount, p string) string {
	p = path.Clean("/" + p)
	if m.root != "/" {
		if rel, ok := strings.CutPrefix(p, m.root); ok && (rel == "" || rel[0] == '/') {
			p = rel
		}
	}
	return filepath.Join(m.point, p)
}

// v2Base returns the directory runs are made under on v2: the supervisor's
// own cgroup, or the parent of its tooljail owner directory when an earlier
// New already moved it into <base>/tooljail-<pid>-<start>/supervisor.
func v2Base(own string, self string) string {
	if filepath.Base(own) == supervisorDir && filepath.Base(filepath.Dir(own)) == self {
		return filepath.Dir(filepath.Dir(own))
	}
	return own
}
