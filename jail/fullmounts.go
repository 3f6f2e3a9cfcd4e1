package jail

import "github.com/tooljail/tooljail/jail/internal/initc"

// FullMount is one of the jail's own tmpfs mounts that filled up during
// the run: a write to it failed with ENOSPC (or would have). The init
// samples each writable tmpfs with a size, and the jail's /dev/shm, while
// the command runs and after it ends (init_reap.c); one that filled up and
// was emptied again within the sampling interval (10 ms) goes unseen.
type FullMount struct {
	// Path is the mount's path inside the jail.
	Path string `json:"path"`
	// SizeBytes is the mount's size as the kernel rounded it.
	SizeBytes int64 `json:"size_bytes"`
	// PeakUsedBytes is the most the samples saw in use.
	PeakUsedBytes int64 `json:"peak_used_bytes"`
	// Full is what ran out: "space" (no free block) or "inodes" (no
	// free inode; space wins when both did).
	Full string `json:"full"`
	// RaiseWith is how the caller gives the mount more room (Mount.Raise:
	// a flag or a profile key); absent for /dev/shm, whose size is fixed.
	RaiseWith string `json:"raise_with,omitempty"`
}

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
