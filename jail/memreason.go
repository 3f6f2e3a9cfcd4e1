package jail

import (
	"fmt"
	"strings"

	"github.com/tooljail/tooljail/internal/units"
)

// tmpfsHeld is what one of the jail's writable tmpfs mounts held at most
// during the run: its pages count against the memory limit like a
// process's. bytes is -1 when the init sent no samples (the OOM killer
// stops the whole jail, the init with it, at once on cgroup v2).
type tmpfsHeld struct {
	path  string
	bytes int64
}

// minHeldNote is the least a tmpfs must have held for the memory-limit
// reason to name it: below it, files are not what filled the memory.
const minHeldNote = 1 << 20

// memoryReason is the reason of a memory-limit kill: the limit, the peak,
// the tmpfs mounts whose files held a share of it (the init's samples),
// the OOM kills, and how to raise the limit (Spec.RaiseMemory; "" says
// nothing).
func memoryReason(limit int64, peak *int64, kills int64, held []tmpfsHeld, raise string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory limit %s reached", units.FormatSize(limit))
	var files []string
	unknown := false
	for _, h := range held {
		switch {
		case h.bytes < 0:
			unknown = true
			files = append(files, h.path)
		case h.bytes >= minHeldNote:
			files = append(files, fmt.Sprintf("%s %s", h.path, units.FormatSize(h.bytes)))
		}
	}
	var notes []string
	if peak != nil {
		notes = append(notes, "peak "+units.FormatSize(*peak))
	}
	if len(files) > 0 && unknown {
		notes = append(notes, "files in "+strings.Join(files, ", ")+" count against it")
	} else if len(files) > 0 {
		notes = append(notes, "files in tmpfs count: "+strings.Join(files, ", "))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	plural := "es"
	if kills == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "; %d process%s killed by the OOM killer; the whole jail was stopped", kills, plural)
	if raise != "" {
		b.WriteString("; raise it with " + raise)
	}
	return b.String()
}

// heldInTmpfs is the most each of the plan's writable tmpfs mounts held,
// from the init's samples (fills, in the init's order, /dev/shm too), or
// each writable tmpfs with -1 when there were no samples.
func heldInTmpfs(fills []mountFill, mounts []Mount) []tmpfsHeld {
	var out []tmpfsHeld
	if fills == nil {
		for _, m := range mounts {
			if m.Kind == MountTmpfs && m.Writable {
				out = append(out, tmpfsHeld{path: m.Dest, bytes: -1})
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
		out = append(out, tmpfsHeld{path: path, bytes: f.PeakUse})
	}
	return out
}
