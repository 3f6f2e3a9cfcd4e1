package jail

import "github.com/tooljail/tooljail/jail/internal/verdict"

// heldInTmpfs is the most each of the plan's writable tmpfs mounts held,
// from the init's samples (fills, in the init's order, /dev/shm too), or
// each writable tmpfs with -1 when there were no samples.
func heldInTmpfs(fills []mountFill, mounts []Mount) []verdict.TmpfsHeld {
	var out []verdict.TmpfsHeld
	if fills == nil {
		for _, m := range mounts {
			if m.Kind == MountTmpfs && m.Writable {
				out = append(out, verdict.TmpfsHeld{Path: m.Dest, Bytes: -1})
			}
		}
		return out
	}
	for _, f := range fills {
		path := DevShmPath
		if f.Mount >= 0 {
			if f.Mount >= len(mounts) {
				continue
			}
			path = mounts[f.Mount].Dest
		}
		out = append(out, verdict.TmpfsHeld{Path: path, Bytes: f.PeakUse})
	}
	return out
}
