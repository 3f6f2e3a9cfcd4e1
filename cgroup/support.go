package cgroup

import (
	"fmt"

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

// host is the host's cgroup version as detect found it: v1Host (v1.go)
// or v2Host (v2.go). Which one is decided there, once; the steps that
// differ by version are its methods.
type host interface {
	// probe fills in what this user can cap here; it writes nothing.
	probe(s *Support)
	// newGroup makes run id's group with the caps of r.
	newGroup(id string, r Resources) (backend, error)
	// cleanupStale removes what dead supervisors left in the base.
	cleanupStale(live map[string]bool) error
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

// detect reads the host's layout (containerd's cgroups.Mode, one statfs
// per process), then /proc/self/cgroup and /proc/self/mountinfo: two small
// files, cheap enough for every start-up. The layout comes back even with
// an error, for Support.Host.
func detect() (cgroups.CGMode, host, error) {
	layout := cgroups.Mode()
	if layout == cgroups.Unavailable {
		return layout, nil, fmt.Errorf("no cgroup filesystem at /sys/fs/cgroup")
	}
	pc, err := readProcCgroups()
	if err != nil {
		return layout, nil, err
	}
	mounts, err := readCgroupMounts()
	if err != nil {
		return layout, nil, err
	}
	if layout == cgroups.Unified {
		h, err := detectV2(pc, mounts)
		if err != nil {
			return layout, nil, err
		}
		return layout, h, nil
	}
	return layout, detectV1(pc, mounts), nil
}

// Probe reports what can be enforced. It writes nothing.
func Probe() Support {
	layout, h, err := detect()
	s := Support{Mode: ModeNone, Host: layoutName(layout), Controllers: map[string]bool{Memory: false, CPU: false, Pids: false}}
	if err != nil {
		s.Reason = "cgroups: " + err.Error()
		s.Fix = "mount cgroup2 at /sys/fs/cgroup"
		return s
	}
	h.probe(&s)
	return s
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
