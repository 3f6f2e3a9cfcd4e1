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
		{"none full", []mountFill{{Mount: 1, Size: 64 << 20, PeakUse: 1 << 20}, {Mount: -1, Size: 64 << 20}}, nil},
		{"tmp", []mountFill{{Mount: 1, Size: 64 << 20}, {Mount: 2, Full: fullSpace, Size: 8 << 20, PeakUse: 8 << 20}},
			[]FullMount{{Path: "/tmp", SizeBytes: 8 << 20, PeakUsedBytes: 8 << 20, Full: "space", RaiseWith: "--tmpfs /tmp:SIZE"}}},
		{"home inodes, shm both", []mountFill{{Mount: 1, Full: fullInodes, Size: 64 << 20, PeakUse: 4096}, {Mount: -1, Full: fullSpace | fullInodes, Size: 64 << 20, PeakUse: 64 << 20}},
			[]FullMount{
				{Path: "/home/sandbox", SizeBytes: 64 << 20, PeakUsedBytes: 4096, Full: "inodes", RaiseWith: "home_size"},
				{Path: DevShmPath, SizeBytes: 64 << 20, PeakUsedBytes: 64 << 20, Full: "space"},
			}},
		{"unknown index", []mountFill{{Mount: 7, Full: fullSpace, Size: 1}}, nil},
	} {
		if got := fullMounts(c.fills, mounts); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
