package jail

import (
	"reflect"
	"testing"
)

// The init's samples become the report's list: only the mounts found
// full, named by the plan's mount at their index (or /dev/shm), space
// before inodes; an index the plan does not have is dropped.
func TestFullMounts(t *testing.T) {
	mounts := []Mount{
		{Kind: MountBind, Source: "/usr", Dest: "/usr"},
		{Kind: MountTmpfs, Dest: "/home/sandbox", Writable: true, Size: 64 << 20, Raise: "home_size"},
		{Kind: MountTmpfs, Dest: "/tmp", Writable: true, Size: 8 << 20, Raise: "--tmpfs /tmp:SIZE"},
	}
	for _, c := range []struct {
		name  string
		fills []mountFill
		want  []FullMount
	}{
		{"none", nil, nil},
		{"none full", []mountFill{{mount: 1, size: 64 << 20, peakUse: 1 << 20}, {mount: -1, size: 64 << 20}}, nil},
		{"tmp", []mountFill{{mount: 1, size: 64 << 20}, {mount: 2, full: fullSpace, size: 8 << 20, peakUse: 8 << 20}},
			[]FullMount{{Path: "/tmp", SizeBytes: 8 << 20, PeakUsedBytes: 8 << 20, Full: "space", RaiseWith: "--tmpfs /tmp:SIZE"}}},
		{"home inodes, shm both", []mountFill{{mount: 1, full: fullInodes, size: 64 << 20, peakUse: 4096}, {mount: -1, full: fullSpace | fullInodes, size: 64 << 20, peakUse: 64 << 20}},
			[]FullMount{
				{Path: "/home/sandbox", SizeBytes: 64 << 20, PeakUsedBytes: 4096, Full: "inodes", RaiseWith: "home_size"},
				{Path: DevShmPath, SizeBytes: 64 << 20, PeakUsedBytes: 64 << 20, Full: "space"},
			}},
		{"unknown index", []mountFill{{mount: 7, full: fullSpace, size: 1}}, nil},
	} {
		if got := fullMounts(c.fills, mounts); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
