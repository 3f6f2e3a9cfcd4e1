package verdict

import (
	"fmt"
	"strings"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/network/proxy"
	"github.com/tooljail/tooljail/network/runnet"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/seccomp"
)

// TmpfsHeld is what one of the jail's writable tmpfs mounts held at most
// during the run: its pages count against the memory limit like a
// process's. Bytes is -1 when the init sent no samples (the OOM killer
// stops the whole jail, the init with it, at once on cgroup v2).
type TmpfsHeld struct {
	Path  string
	Bytes int64
}

// minHeldNote is the least a tmpfs must have held for the memory-limit
// reason to name it: below it, files are not what filled the memory.
const minHeldNote = 1 << 20

// MemoryReason is the reason of a memory-limit kill: the limit, the peak,
// the tmpfs mounts whose files held a share of it (the init's samples),
// the OOM kills, and how to raise the limit (Spec.RaiseMemory; "" says
// nothing).
func MemoryReason(limit int64, peak *int64, kills int64, held []TmpfsHeld, raise string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory limit %s reached", units.FormatSize(limit))
	var files []string
	unknown := false
	for _, h := range held {
		switch {
		case h.Bytes < 0:
			unknown = true
			files = append(files, h.Path)
		case h.Bytes >= minHeldNote:
			files = append(files, fmt.Sprintf("%s %s", h.Path, units.FormatSize(h.Bytes)))
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

// Violations is the report's list: the seccomp monitor's, then the
// Landlock denials.
func Violations(violations []seccomp.Violation, denials []landlock.Denial) []report.Violation {
	var out []report.Violation
	for _, v := range violations {
		out = append(out, report.Violation{
			Kind: v.Kind, Syscall: v.Syscall, Args: v.Args, Pid: v.Pid, JailPid: v.JailPid, Count: v.Count, Action: v.Action,
		})
	}
	for _, d := range denials {
		out = append(out, report.Violation{
			Kind: "landlock", Path: d.Path, Access: d.Access, Pid: d.Pid, Count: d.Count, Action: "denied",
		})
	}
	return out
}

// NetworkViolations are the refusals among entries, as violations of kind
// "network", one per host, port and reason, in the order first seen.
func NetworkViolations(entries []runnet.Entry) []report.Violation {
	type key struct {
		host, reason string
		port         int
	}
	index := map[key]int{}
	var out []report.Violation
	for _, e := range entries {
		if !e.Refused() {
			continue
		}
		k := key{e.Host, e.Decision, e.Port}
		if i, ok := index[k]; ok {
			out[i].Count += e.Count
			continue
		}
		index[k] = len(out)
		out = append(out, report.Violation{Kind: "network", Host: e.Host, Port: e.Port, Reason: e.Decision, Count: e.Count, Action: "denied"})
	}
	return out
}

// NetLimitHits counts, per limit ("connection limit", "byte limit"),
// the connections it refused or cut.
func NetLimitHits(entries []runnet.Entry) map[string]int {
	hits := map[string]int{}
	for _, e := range entries {
		for _, r := range []string{e.Decision, e.Cut} {
			if r == proxy.ReasonConnLimit || r == proxy.ReasonByteLimit {
				hits[r] += e.Count
			}
		}
	}
	if len(hits) == 0 {
		return nil
	}
	return hits
}
