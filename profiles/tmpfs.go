package profiles

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
)

// SizeMemory is the size of a tmpfs (a "tmpfs" entry without ":SIZE", or
// "DEST:memory"; home_size = "memory") that follows the memory limit: the
// pages of a tmpfs count against the jail's memory cap whatever its size,
// so a smaller tmpfs would only fail a build that the cap allows. Each
// such tmpfs may grow up to the limit; together they and the processes
// still stay under it. With no memory limit the kernel's tmpfs default
// applies: half of the host's RAM.
const SizeMemory = "memory"

// DefaultTmpfsSize is the size of a "tmpfs" entry without ":SIZE".
const DefaultTmpfsSize = SizeMemory

// RaiseMemory is how a user raises the memory limit, for the reason of a
// memory-limit kill (jail.Spec.RaiseMemory): the flag, and the key of a
// profile's [limits] or of a served request's limits.
const RaiseMemory = "--memory SIZE or limits.memory"

// RaiseHome is how a user gives the private HOME more room, for the report
// when it fills up (jail.Mount.Raise).
const RaiseHome = "home_size in the profile's [filesystem]"

// raiseTmpfs is how a user gives the tmpfs at dest more room: a --tmpfs
// at the same destination replaces the profile's.
func raiseTmpfs(dest string) string {
	return "--tmpfs " + dest + ":SIZE, or tmpfs in the profile's [filesystem]"
}

// tmpfsSize is a tmpfs size as a profile or --tmpfs gives it: a size, or
// SizeMemory.
type tmpfsSize struct {
	bytes    int64
	byMemory bool
}

// parseTmpfsSize reads "64M", "1G", ... or "memory".
func parseTmpfsSize(text string) (tmpfsSize, error) {
	if text == SizeMemory {
		return tmpfsSize{byMemory: true}, nil
	}
	n, err := units.ParseSize(text)
	if err != nil {
		return tmpfsSize{}, fmt.Errorf("%w (or %q: as large as the memory limit)", err, SizeMemory)
	}
	return tmpfsSize{bytes: n}, nil
}

// splitTmpfs splits "DEST[:SIZE]" at the last ':'; SIZE defaults to
// DefaultTmpfsSize.
func splitTmpfs(s string) (dest string, size tmpfsSize, err error) {
	dest, sizeText := s, DefaultTmpfsSize
	if i := strings.LastIndex(s, ":"); i >= 0 {
		dest, sizeText = s[:i], s[i+1:]
	}
	if !filepath.IsAbs(dest) {
		return "", tmpfsSize{}, fmt.Errorf("%q: want DEST[:SIZE] with an absolute DEST, e.g. /tmp or /tmp:1G", s)
	}
	size, err = parseTmpfsSize(sizeText)
	if err != nil {
		return "", tmpfsSize{}, fmt.Errorf("%q: %w", s, err)
	}
	return dest, size, nil
}

// tmpfsMount is the writable tmpfs at dest. Sized by the memory limit
// (memory bytes, 0 for none), it is that large (0: the kernel's default),
// and raising the memory limit raises it too, which its Raise says before
// raise, the key or flag that sizes it alone.
func tmpfsMount(dest string, size tmpfsSize, memory int64, raise string) jail.Mount {
	m := jail.Mount{Kind: jail.MountTmpfs, Dest: dest, Writable: true, Size: size.bytes, Raise: raise}
	if size.byMemory {
		m.Size = memory
		if memory > 0 {
			m.Raise = fmt.Sprintf("%s (%s is as large as the memory limit), or %s", RaiseMemory, dest, raise)
		}
	}
	return m
}
