package jail

import (
	"reflect"
	"testing"
)

// A memory-limit kill's reason says the limit, the peak, which tmpfs
// mounts held files that counted against it (1 MiB or more), the kills,
// and how to raise the limit when the policy said how.
func TestMemoryReason(t *testing.T) {
	peak := int64(512 << 20)
	raise := "--memory SIZE or limits.memory"
	for _, c := range []struct {
		name  string
		peak  *int64
		kills int64
		held  []tmpfsHeld
		raise string
		want  string
	}{
		{"plain", &peak, 1, nil, "",
			"memory limit 512 MiB reached (peak 512 MiB); 1 process killed by the OOM killer; the whole jail was stopped"},
		{"raise named", &peak, 2, nil, raise,
			"memory limit 512 MiB reached (peak 512 MiB); 2 processes killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"files in tmpfs", &peak, 1, []tmpfsHeld{{"/home/sandbox", 4096}, {"/tmp", 300 << 20}, {"/dev/shm", 2 << 20}}, raise,
			"memory limit 512 MiB reached (peak 512 MiB; files in tmpfs count: /tmp 300 MiB, /dev/shm 2 MiB); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"no samples", &peak, 1, []tmpfsHeld{{"/home/sandbox", -1}, {"/tmp", -1}}, raise,
			"memory limit 512 MiB reached (peak 512 MiB; files in /home/sandbox, /tmp count against it); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"no peak measured", nil, 0, []tmpfsHeld{{"/tmp", 1 << 20}}, "",
			"memory limit 512 MiB reached (files in tmpfs count: /tmp 1 MiB); 0 processes killed by the OOM killer; the whole jail was stopped"},
	} {
		if got := memoryReason(512<<20, c.peak, c.kills, c.held, c.raise); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// What each watched tmpfs held is named from the plan's mounts; an index
// the plan does not have is dropped.
func TestHeldInTmpfs(t *testing.T) {
	mounts := []Mount{{Kind: MountBind, Dest: "/usr"}, {Kind: MountTmpfs, Dest: "/tmp", Writable: true}}
	got := heldInTmpfs([]mountFill{{Mount: 1, PeakUse: 5}, {Mount: -1, PeakUse: 7}, {Mount: 9, PeakUse: 1}}, mounts)
	want := []tmpfsHeld{{"/tmp", 5}, {DevShmPath, 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	// no samples: every writable tmpfs, size unknown
	mounts = append(mounts, Mount{Kind: MountTmpfs, Dest: "/ro", Size: 4096}, Mount{Kind: MountTmpfs, Dest: "/home/sandbox", Writable: true})
	got = heldInTmpfs(nil, mounts)
	want = []tmpfsHeld{{"/tmp", -1}, {"/home/sandbox", -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("no samples: %+v, want %+v", got, want)
	}
}
