package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
)

// Support says what this host (and this user) can do.
type Support struct {
	// Mode is the version groups are made with; ModeNone when no group can
	// be made here at all.
	Mode Mode `json:"mode"`
	// Host is the host's layout: "unified", "hybrid", "legacy" or
	// "unavailable".
	Host string `json:"host"`
	// Controllers maps "memory", "cpu", "pids" to whether a cap on it can be
	// set by this user here.
	Controllers map[string]bool `json:"controllers"`
	// Base is the cgroup directory the groups are made under (v1: of the
	// memory hierarchy, or the first usable one).
	Base   string `json:"base,omitempty"`
	Reason string `json:"reason,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Mask returns r without the caps this host cannot enforce, and the names
// of the controllers whose caps were dropped. A caller that allows a
// degraded cgroup layer passes the result to New and reports the dropped
// caps as not enforced; New itself never drops a cap.
func (s Support) Mask(r Resources) (Resources, []string) {
	var dropped []string
	if r.Memory != 0 && !s.Controllers[Memory] {
		r.Memory, dropped = 0, append(dropped, Memory)
	}
	if r.CPUs != 0 && !s.Controllers[CPU] {
		r.CPUs, dropped = 0, append(dropped, CPU)
	}
	if r.Pids != 0 && !s.Controllers[Pids] {
		r.Pids, dropped = 0, append(dropped, Pids)
	}
	return r, dropped
}

const (
	fixDelegate = "run tooljail in a delegated cgroup: systemd-run --user --scope -p Delegate=yes tooljail run ..."
	fixV1       = "cgroup v1 has no delegation to unprivileged users: run tooljail as root, or on a cgroup v2 host (boot with systemd.unified_cgroup_hierarchy=1)"
)

// v1Hierarchies are the v1 controllers a group joins: the three caps, plus
// cpuacct for CPU times and freezer for an atomic kill.
var v1Hierarchies = []string{Memory, CPU, "cpuacct", Pids, "freezer"}

// host is what detect finds: where groups go in each mode.
type host struct {
	layout cgroups.CGMode
	// v2
	v2Base string // directory of the base cgroup
	v2Root bool   // base is the real root cgroup (exempt from no-internal-processes)
	// v1: hierarchy -> base directory
	v1Base map[string]string
}

func layoutName(m cgroups.CGMode) string {
	switch m {
	case cgroups.Unified:
		return "unified"
	case cgroups.Hybrid:
		return "hybrid"
	case cgroups.Legacy:
		return "legacy"
	}
	return "unavailable"
}

// detect reads /proc/self/cgroup and /proc/self/mountinfo: two small files,
// cheap enough for every start-up.
func detect() (host, error) {
	h := host{layout: cgroups.Mode(), v1Base: map[string]string{}}
	if h.layout == cgroups.Unavailable {
		return h, fmt.Errorf("no cgroup filesystem at /sys/fs/cgroup")
	}
	pc, err := readProcCgroups()
	if err != nil {
		return h, err
	}
	mounts, err := readCgroupMounts()
	if err != nil {
		return h, err
	}
	if h.layout == cgroups.Unified {
		if !pc.hasV2 || mounts.unified == nil {
			return h, fmt.Errorf("cgroup v2 host but no cgroup2 entry in /proc/self/cgroup or mountinfo")
		}
		h.v2Base = hostDir(*mounts.unified, v2Base(pc.unified, selfName()))
		// The root cgroup has no cgroup.events; every other one has.
		h.v2Root = !exists(filepath.Join(h.v2Base, "cgroup.events"))
		return h, nil
	}
	for _, c := range v1Hierarchies {
		m, ok := mounts.v1[c]
		p, ok2 := pc.v1[c]
		if ok && ok2 {
			h.v1Base[c] = hostDir(m, p)
		}
	}
	return h, nil
}

// Probe reports what can be enforced. It writes nothing.
func Probe() Support {
	h, err := detect()
	s := Support{Mode: ModeNone, Host: layoutName(h.layout), Controllers: map[string]bool{Memory: false, CPU: false, Pids: false}}
	if err != nil {
		s.Reason = "cgroups: " + err.Error()
		s.Fix = "mount cgroup2 at /sys/fs/cgroup"
		return s
	}
	if h.layout == cgroups.Unified {
		probeV2(h, &s)
	} else {
		probeV1(h, &s)
	}
	return s
}

func probeV2(h host, s *Support) {
	s.Base = h.v2Base
	uid := os.Getuid()
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if !writable(filepath.Join(h.v2Base, f)) {
			s.Reason = fmt.Sprintf("cgroup v2: %s is not writable by uid %d (not a delegated subtree)", filepath.Join(h.v2Base, f), uid)
			s.Fix = fixDelegate
			return
		}
	}
	s.Mode = ModeV2
	avail, _ := readString(h.v2Base, "cgroup.controllers")
	have := strings.Fields(avail)
	var missing []string
	for _, c := range []string{Memory, CPU, Pids} {
		s.Controllers[c] = contains(have, c)
		if !s.Controllers[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		s.Reason = fmt.Sprintf("cgroup v2: controllers %s are not available in %s (not delegated)", strings.Join(missing, ", "), h.v2Base)
		s.Fix = "delegate them: systemd-run --user --scope -p Delegate=yes tooljail run ... (and Delegate=memory cpu pids for user@.service on older systemd)"
	}
	if h.v2Root {
		return
	}
	// Other processes in the base keep its subtree_control from being
	// written; the supervisor can only move itself out. Only matters while
	// the controllers are not enabled there yet.
	enabled, _ := readString(h.v2Base, "cgroup.subtree_control")
	if allIn(strings.Fields(enabled), have, []string{Memory, CPU, Pids}) {
		return
	}
	pids, _ := readPids(h.v2Base)
	var others []string
	for _, p := range pids {
		if p != os.Getpid() {
			others = append(others, strconv.Itoa(p))
		}
	}
	if len(others) > 0 {
		for c := range s.Controllers {
			s.Controllers[c] = false
		}
		s.Reason = fmt.Sprintf("cgroup v2: %s also holds processes %s, so its controllers cannot be enabled for sub-groups", h.v2Base, strings.Join(others, " "))
		s.Fix = "start tooljail in a cgroup of its own: " + fixDelegate
	}
}

func probeV1(h host, s *Support) {
	uid := os.Getuid()
	var why []string
	for _, c := range []string{Memory, CPU, Pids} {
		dir, ok := h.v1Base[c]
		switch {
		case !ok:
			why = append(why, c+" hierarchy not mounted")
		case !writable(dir):
			why = append(why, fmt.Sprintf("%s not writable by uid %d", dir, uid))
		default:
			s.Controllers[c] = true
			if s.Base == "" {
				s.Base = dir
			}
			s.Mode = ModeV1
		}
	}
	if len(why) > 0 {
		s.Reason = "cgroup v1 (" + s.Host + " host): " + strings.Join(why, "; ")
		s.Fix = fixV1
		if uid == 0 {
			s.Fix = "mount the missing v1 controllers, or use a cgroup v2 host"
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// allIn says whether every wanted controller that is available is enabled.
func allIn(enabled, avail, want []string) bool {
	for _, c := range want {
		if contains(avail, c) && !contains(enabled, c) {
			return false
		}
	}
	return true
}
