package nons

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/hostside"
)

// RootIdentity checks, for a root supervisor, that the command can be
// id: mapped in this user namespace (a container's may map root alone),
// and able to write the writable binds, which cannot be idmapped without
// a mount namespace.
func RootIdentity(id hostside.ID, explicit bool, mounts []hostside.Mount, srcs []hostside.Source, dir string) error {
	if err := idMapped("/proc/self/uid_map", id.UID, "uid"); err != nil {
		return err
	}
	if err := idMapped("/proc/self/gid_map", id.GID, "gid"); err != nil {
		return err
	}
	if explicit {
		return nil // the caller chose the identity, and the binds as they are
	}
	for i, m := range mounts {
		if m.Kind != hostside.Bind || !m.Writable || srcs[i].Obj == nil {
			continue
		}
		if owner := hostside.OwnerOf(srcs[i].Obj); owner != id {
			fix := fmt.Sprintf("pass --host-user %d:%d (the command then runs as that user)", owner.UID, owner.GID)
			if owner.UID == 0 || owner.GID == 0 {
				fix = "use a directory owned by an unprivileged user (the command then runs as that user), or pass --host-user with a user that may write it"
			}
			return fmt.Errorf("%s belongs to %d:%d; without namespaces it cannot be idmapped, and the command never runs as root but as %d:%d, which could not write it; fix: %s",
				hostside.BindName(m, dir), owner.UID, owner.GID, id.UID, id.GID, fix)
		}
	}
	return nil
}

// idMapped says why id is not mapped in the id map file at path.
func idMapped(path string, id int, what string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if mapsID(string(b), uint64(id)) {
		return nil
	}
	return fmt.Errorf("the command would run as %s %d, which this user namespace does not map (%s: %s); without namespaces the command never runs as root, but as an unprivileged identity the namespace maps: pass --host-user with one, or run tooljail as an unprivileged user",
		what, id, path, strings.Join(strings.Fields(string(b)), " "))
}

// mapsID says whether an id map ("inside outside count" lines) maps id.
func mapsID(idMap string, id uint64) bool {
	for _, line := range strings.Split(idMap, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		lo, err1 := strconv.ParseUint(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 == nil && err2 == nil && id >= lo && id-lo < n {
			return true
		}
	}
	return false
}
