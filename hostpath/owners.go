package hostpath

import (
	"os"
	"strconv"
	"strings"
)

// owners are the users whose symlinks, and whose directories holding
// them, a walk trusts: the caller, root and, in a user namespace that
// does not map it, the kernel's overflow uid. A file shows that uid when
// its owner is outside the namespace: whoever made the container's files
// (the host's root, as a rootless container or a nested tooljail sees
// /usr and /etc). No process inside the namespace can create a file under
// an unmapped uid, and the outer owner of the system directories controls
// the container's own software anyway.
type owners struct {
	euid     uint32
	outer    uint32 // the overflow uid, when hasOuter
	hasOuter bool
}

func (o owners) trusted(uid uint32) bool {
	return uid == 0 || uid == o.euid || (o.hasOuter && uid == o.outer)
}

// loadOwners reads this process's uid map and the overflow uid.
func loadOwners(euid uint32) owners {
	o := owners{euid: euid}
	m, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return o
	}
	b, err := os.ReadFile("/proc/sys/kernel/overflowuid")
	if err != nil {
		return o
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return o
	}
	o.outer = uint32(n)
	o.hasOuter = unmapped(string(m), o.outer)
	return o
}

// unmapped says whether uid lies outside every range of a uid_map
// ("inside outside count" lines). An empty map or a line that does not
// parse counts as mapping everything: only a map that was understood can
// widen the trust.
func unmapped(uidMap string, uid uint32) bool {
	lines := 0
	for _, line := range strings.Split(uidMap, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return false
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		_, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.ParseUint(f[2], 10, 33)
		if err1 != nil || err2 != nil || err3 != nil {
			return false
		}
		lines++
		if uint64(uid) >= in && uint64(uid) < in+count {
			return false
		}
	}
	return lines > 0
}
