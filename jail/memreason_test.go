package jail

import (
	"reflect"
	"testing"

	"github.com/tooljail/tooljail/jail/internal/verdict"
)

// What each watched tmpfs held is named from the plan's mounts; an index
// the plan does not have is dropped.
func TestHeldInTmpfs(t *testing.T) {
	mounts := []Mount{{Kind: MountBind, Dest: "/usr"}, {Kind: MountTmpfs, Dest: "/tmp", Writable: true}}
	got := heldInTmpfs([]mountFill{{Mount: 1, PeakUse: 5}, {Mount: -1, PeakUse: 7}, {Mount: 9, PeakUse: 1}}, mounts)
	want := []verdict.TmpfsHeld{{Path: "/tmp", Bytes: 5}, {Path: DevShmPath, Bytes: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	// no samples: every writable tmpfs, size unknown
	mounts = append(mounts, Mount{Kind: MountTmpfs, Dest: "/ro", Size: 4096}, Mount{Kind: MountTmpfs, Dest: "/home/sandbox", Writable: true})
	got = heldInTmpfs(nil, mounts)
	want = []verdict.TmpfsHeld{{Path: "/tmp", Bytes: -1}, {Path: "/home/sandbox", Bytes: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("no samples: %+v, want %+v", got, want)
	}
}
