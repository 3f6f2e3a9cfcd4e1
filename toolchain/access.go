package toolchain

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Peer is a served client: what it may read of the host is what its ids
// may read by the mode bits.
type Peer struct {
	UID  uint32
	GIDs []uint32 // primary and supplementary groups
}

// What a peer needs of a path.
const (
	wantExec = 1 // search a directory
	wantRead = 4
)

// permits says whether a peer may do want (a sum of wantRead, wantExec) on
// an object of mode perm owned by uid:gid, as the kernel's mode check does:
// the owner class, else the group class, else the others. Root may do all.
func permits(p Peer, perm fs.FileMode, uid, gid uint32, want uint32) bool {
	if p.UID == 0 {
		return true
	}
	bits := uint32(perm.Perm())
	switch {
	case p.UID == uid:
		bits >>= 6
	case slices.Contains(p.GIDs, gid):
		bits >>= 3
	}
	return bits&want == want
}

// PeerMayRead says why peer could not read prefix itself, or nil: every
// directory from / down to it must let the peer search it, and the prefix
// let it read and search, so that a toolchain never shows a client what
// it could not read on the host. The error names the first one refused.
func PeerMayRead(fsys FS, p Peer, prefix string) error {
	if p.UID == 0 {
		return nil
	}
	dirs := []string{"/"}
	cur := "/"
	for _, name := range strings.Split(strings.TrimPrefix(path.Clean(prefix), "/"), "/") {
		if name == "" {
			continue
		}
		cur = path.Join(cur, name)
		dirs = append(dirs, cur)
	}
	for i, d := range dirs {
		fi, err := fsys.Lstat(d)
		if err != nil {
			return fmt.Errorf("toolchain prefix %s: %w", prefix, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("toolchain prefix %s: no owner known for %s", prefix, d)
		}
		want, what := uint32(wantExec), "search"
		if i == len(dirs)-1 {
			want, what = wantRead|wantExec, "read"
		}
		if !permits(p, fi.Mode(), st.Uid, st.Gid, want) {
			return fmt.Errorf("toolchain prefix %s: the client (uid %d) may not %s %s (mode %#o, owner %d:%d); a served run shows only what the client could read itself: name a prefix it can read", prefix, p.UID, what, d, fi.Mode().Perm(), st.Uid, st.Gid)
		}
	}
	return nil
}
