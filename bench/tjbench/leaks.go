package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// snapshot is what a run could leave behind on the host.
type snapshot struct {
	Cgroups     []string // directories named tooljail-* anywhere under /sys/fs/cgroup
	Mounts      []string // "ID MOUNTPOINT" of /proc/self/mountinfo (the driver is in the host's mount namespace)
	Procs       int      // /proc/[0-9]* (the whole host: other users' work moves it)
	Descendants int      // live descendants of the bench driver
	FDs         int      // open descriptors of the bench driver
	Tmp         []string // entries of /tmp and /var/tmp
	PrivTmp     []string // entries of the leak runs' own TMPDIR
}

func takeSnapshot(privTmp string) snapshot {
	return snapshot{
		Cgroups:     tooljailCgroups(),
		Mounts:      mounts(),
		Procs:       len(pids()),
		Descendants: descendants(os.Getpid()),
		FDs:         countDir("/proc/self/fd"),
		Tmp:         append(listDir("/tmp"), listDir("/var/tmp")...),
		PrivTmp:     listDir(privTmp),
	}
}

// mounts lists "ID MOUNTPOINT" for each line of /proc/self/mountinfo: a
// mount made later has a new ID, so a leaked one shows as a new entry.
func mounts() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) >= 5 {
			out = append(out, f[0]+" "+f[4])
		}
	}
	return out
}

// othersTmp are name prefixes of /tmp entries that other programs on this
// shared machine make: Go builds, and the temporary directories of this
// repository's own tests (seccomp, landlock, cgroup, integration). tooljail
// itself creates nothing in /tmp or /var/tmp (its jail root is a tmpfs
// mounted over /tmp inside the jail's own mount namespace).
var othersTmp = []string{"go-build", "tooljail-seccomp-", "tjit-", "landlock-test-", "tjcg"}

func isOthersTmp(path string) bool {
	for _, p := range othersTmp {
		if strings.HasPrefix(filepath.Base(path), p) {
			return true
		}
	}
	return false
}

// tooljailCgroups lists every tooljail-* directory in every hierarchy.
func tooljailCgroups() []string {
	var out []string
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a group removed while we walk
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "tooljail-") {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// ownerPid is the supervisor pid in a tooljail-<pid>-<start>-<ns> name.
func ownerPid(path string) int {
	f := strings.Split(strings.TrimPrefix(filepath.Base(path), "tooljail-"), "-")
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return pid
}

func countDir(path string) int {
	es, err := os.ReadDir(path)
	if err != nil {
		return -1
	}
	return len(es)
}

func listDir(dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

func pids() []int {
	es, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range es {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// descendants counts live processes whose parent chain reaches root.
func descendants(root int) int {
	parent := map[int]int{}
	for _, pid := range pids() {
		if pp, err := parentOf(pid); err == nil {
			parent[pid] = pp
		}
	}
	n := 0
	for pid := range parent {
		for p, hops := parent[pid], 0; p > 0 && hops < 1000; p, hops = parent[p], hops+1 {
			if p == root {
				n++
				break
			}
		}
	}
	return n
}

// parentOf reads the parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: the fields start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.Atoi(f[1])
}

// newEntries lists what is in after but not in before.
func newEntries(before, after []string) []string {
	seen := map[string]bool{}
	for _, b := range before {
		seen[b] = true
	}
	var out []string
	for _, a := range after {
		if !seen[a] {
			out = append(out, a)
		}
	}
	return out
}
