package jail

import "github.com/tooljail/tooljail/jail/internal/initc"

// What a watched mount ran out of (mountFill.full): init_reap.c's flags.
const (
	fullSpace  = initc.FullSpace
	fullInodes = initc.FullInodes
)

// DevShmPath is the jail's own /dev/shm, a tmpfs of a fixed size.
const DevShmPath = "/dev/shm"

// fullMounts is the report's list: the watched mounts the init found full,
// named from the plan's mounts (in the init's order).
func fullMounts(fills []mountFill, mounts []Mount) []FullMount {
	var out []FullMount
	for _, f := range fills {
		if f.Full == 0 {
			continue
		}
		fm := FullMount{Path: DevShmPath, SizeBytes: f.Size, PeakUsedBytes: f.PeakUse, Full: "inodes"}
		if f.Full&fullSpace != 0 {
			fm.Full = "space"
		}
		if f.Mount >= 0 {
			if f.Mount >= len(mounts) {
				continue // not a mount of this plan: nothing to name
			}
			fm.Path, fm.RaiseWith = mounts[f.Mount].Dest, mounts[f.Mount].Raise
		}
		out = append(out, fm)
	}
	return out
}
