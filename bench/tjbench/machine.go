package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// machine describes where the numbers were taken.
type machine struct {
	Date       string `json:"date"`
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryMiB  int64  `json:"memory_mib"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	Tooljail   string `json:"tooljail"`
	Bwrap      string `json:"bwrap"`
	CgroupMode string `json:"cgroup_mode"`
	Root       bool   `json:"root"`
	User       string `json:"user"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

func describeMachine(tooljail, bwrap string) machine {
	m := machine{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 MST"),
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		MemoryMiB:  memTotalKiB() / 1024,
		Go:         runtime.Version(),
		Tooljail:   firstLine(tooljail, "version"),
		Bwrap:      firstLine(bwrap, "--version"),
		CgroupMode: cgroupMode(),
		Root:       os.Geteuid() == 0,
		User:       "uid " + strconv.Itoa(os.Geteuid()),
		LoadBefore: loadAvg(),
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return m
}

func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotalKiB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cgroupMode tells v2 (unified), hybrid (v1 controllers plus a v2 tree at
// /sys/fs/cgroup/unified) and v1 apart, and lists the v1 controllers.
func cgroupMode() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil {
		return "none"
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v2 (unified)"
	}
	var ctrls []string
	for _, c := range []string{"memory", "cpu", "pids"} {
		var cs unix.Statfs_t
		if unix.Statfs("/sys/fs/cgroup/"+c, &cs) == nil && cs.Type == unix.CGROUP_SUPER_MAGIC {
			ctrls = append(ctrls, c)
		}
	}
	var us unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup/unified", &us) == nil && us.Type == unix.CGROUP2_SUPER_MAGIC {
		return "hybrid (v1: " + strings.Join(ctrls, ", ") + "; v2 at /sys/fs/cgroup/unified)"
	}
	return "v1 (" + strings.Join(ctrls, ", ") + ")"
}
