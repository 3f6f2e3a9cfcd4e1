package serve

import (
	"os/user"
	"strconv"

	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/toolchain"
)

// toolchainFinder is the view a client's toolchains are found in: its
// PATH (the request's path), its home in the password database as HOME,
// and, for a client other than root, a check that it could read each
// prefix itself by the mode bits (every directory on the way searchable,
// the prefix readable), so that a toolchain shows it nothing more than
// it could read on the host. A client of unknown identity gets none.
func toolchainFinder(path string, peer *report.Peer) (*profiles.Finder, *Error) {
	if peer == nil || peer.UID < 0 {
		return nil, refuse("toolchains: the client's identity is unknown (no SO_PEERCRED), so what it may read is too; send the run without toolchains")
	}
	f := &profiles.Finder{Environ: []string{"PATH=" + path}}
	gids := []uint32{uint32(peer.GID)}
	if u, err := user.LookupId(strconv.Itoa(peer.UID)); err == nil {
		if u.HomeDir != "" {
			f.Environ = append(f.Environ, "HOME="+u.HomeDir)
		}
		if ids, err := u.GroupIds(); err == nil {
			for _, g := range ids {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					gids = append(gids, uint32(n))
				}
			}
		}
	}
	if peer.UID != 0 {
		p := toolchain.Peer{UID: uint32(peer.UID), GIDs: gids}
		f.Check = func(prefix string) error { return toolchain.PeerMayRead(toolchain.Host(), p, prefix) }
	}
	return f, nil
}
