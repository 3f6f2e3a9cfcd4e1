package hostside

import (
	"errors"
	"fmt"

	"github.com/tooljail/tooljail/hostmount"
	"github.com/tooljail/tooljail/hostpath"
)

// HostUser decides the host identity of the jail (jail's Spec.HostUser):
// root says the supervisor is real root (privileged), euid and egid are
// its ids, asked the identity the caller chose (nil: none), owner the
// owner of the workdir's bind (nil when there is none), def the identity
// of a root supervisor's jail that nothing else decides.
// Any other caller, root in a container without CAP_SYS_ADMIN too, runs
// the jail as itself.
func HostUser(root bool, euid, egid int, asked, owner *ID, def ID) (id ID, explicit bool, err error) {
	if !root {
		self := ID{UID: euid, GID: egid}
		if asked != nil && *asked != self {
			return self, false, fmt.Errorf("host user %d:%d: only real root (uid 0 with CAP_SYS_ADMIN) can start a jail as another user (tooljail runs as %d:%d)", asked.UID, asked.GID, euid, egid)
		}
		return self, asked != nil, nil
	}
	switch {
	case asked != nil:
		return *asked, true, nil
	case owner != nil && owner.UID != 0:
		id = *owner
		if id.GID == 0 {
			// Never the host's root group either.
			id.GID = def.GID
		}
		return id, false, nil
	}
	return def, false, nil
}

// idmapFor is the idmapping a writable bind owned by owner needs for a
// jail running as id: nil when the owner is the jail's identity.
func idmapFor(owner, id ID) *hostmount.Mapping {
	if owner == id {
		return nil
	}
	return &hostmount.Mapping{
		From: hostmount.IDs{UID: uint32(owner.UID), GID: uint32(owner.GID)},
		To:   hostmount.IDs{UID: uint32(id.UID), GID: uint32(id.GID)},
	}
}

func OwnerOf(o *hostpath.Object) ID { return ID{UID: int(o.Stat.Uid), GID: int(o.Stat.Gid)} }

// WorkdirOwner is the owner of the bind at dir (the workdir, read-write
// or read-only), or nil.
func WorkdirOwner(mounts []Mount, srcs []Source, dir string) *ID {
	for i, m := range mounts {
		if m.Kind == Bind && m.Dest == dir && srcs[i].Obj != nil {
			o := OwnerOf(srcs[i].Obj)
			return &o
		}
	}
	return nil
}

// Detach makes a root supervisor's detached mount trees of the
// sources, so that the init (which has no privilege over the host's mount
// namespace) can move them into the jail. Writable binds not owned by the
// jail's identity are idmapped to it, and so is a read-only workdir: the
// command sees the project as it would in a writable one (a root-owned
// project of mode 0700 would be unreadable to the unprivileged jail
// otherwise), and nothing can be written through it.
func Detach(mounts []Mount, srcs []Source, dir string, id ID, explicit, filtered bool) (idmapped []string, err error) {
	for i, m := range mounts {
		s := &srcs[i]
		if m.Kind != Bind || s.Obj == nil || s.Obj.IsSymlink() {
			continue
		}
		attr := hostmount.Attr{ReadOnly: !m.Writable, NoSuid: true, NoDev: true}
		var mp *hostmount.Mapping
		if m.Writable || m.Dest == dir {
			mp = idmapFor(OwnerOf(s.Obj), id)
		}
		if mp != nil && m.Writable && !filtered {
			// Through an idmapped mount the command is the owner of the
			// owner's files: only the filter's setuid/setgid denial stops
			// it from leaving a setuid binary of that owner on the host.
			if !explicit {
				return idmapped, fmt.Errorf("%s belongs to %d:%d and would be idmapped to the jail's user %d:%d, which needs the seccomp filter (it denies setuid and setgid files), and this run has none; enable seccomp, use a directory owned by an unprivileged user (the jail then runs as that user), or pass --host-user (the bind is then shown as it is, not idmapped)",
					BindName(m, dir), s.Obj.Stat.Uid, s.Obj.Stat.Gid, id.UID, id.GID)
			}
			mp = nil // the user chose the identity: shown as it is
		}
		tree, err := hostmount.Clone(s.Obj.File, true, attr, mp)
		if err != nil && mp != nil && explicit && errors.Is(err, hostmount.ErrIdmapUnsupported) {
			// The user chose the identity: the bind is shown as it is,
			// and files the command writes belong to that user.
			mp = nil
			tree, err = hostmount.Clone(s.Obj.File, true, attr, nil)
		}
		if err != nil {
			if errors.Is(err, hostmount.ErrIdmapUnsupported) && !m.Writable {
				return idmapped, fmt.Errorf("%s: its file system cannot be idmapped (%w), so its files, owned by %d:%d, could not be shown as the unprivileged jail's %d:%d; fix: pass --host-user %d:%d (the jail then runs as that user), or use a directory on a file system that supports idmapped mounts (ext4, xfs, btrfs; tmpfs from Linux 6.3)",
					BindName(m, dir), err, s.Obj.Stat.Uid, s.Obj.Stat.Gid, id.UID, id.GID, s.Obj.Stat.Uid, s.Obj.Stat.Gid)
			}
			if errors.Is(err, hostmount.ErrIdmapUnsupported) {
				return idmapped, fmt.Errorf("%s: its file system cannot be idmapped (%w), so files the jail writes there could not keep their owner %d:%d while the jail runs as the unprivileged %d:%d; fix: pass --host-user %d:%d (the jail then runs as that user), or use a directory on a file system that supports idmapped mounts (ext4, xfs, btrfs; tmpfs from Linux 6.3)",
					BindName(m, dir), err, s.Obj.Stat.Uid, s.Obj.Stat.Gid, id.UID, id.GID, s.Obj.Stat.Uid, s.Obj.Stat.Gid)
			}
			return idmapped, fmt.Errorf("%s: %w", BindName(m, dir), err)
		}
		s.Tree = tree
		if mp != nil {
			idmapped = append(idmapped, m.Dest)
		}
	}
	return idmapped, nil
}
