package hostmount

/*
#include "userns.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// IDs is a user and a group id.
type IDs struct{ UID, GID uint32 }

// Mapping idmaps a mount: files owned by From on disk are shown as owned
// by To, and files created by To are stored as owned by From. No other id
// is mapped: files of other owners show as the overflow id and cannot be
// changed through the mount.
type Mapping struct{ From, To IDs }

// Attr are the mount attributes of a clone.
type Attr struct{ ReadOnly, NoSuid, NoDev, NoExec bool }

func (a Attr) flags() uint64 {
	var f uint64
	for _, x := range []struct {
		on   bool
		flag uint64
	}{{a.ReadOnly, unix.MOUNT_ATTR_RDONLY}, {a.NoSuid, unix.MOUNT_ATTR_NOSUID}, {a.NoDev, unix.MOUNT_ATTR_NODEV}, {a.NoExec, unix.MOUNT_ATTR_NOEXEC}} {
		if x.on {
			f |= x.flag
		}
	}
	return f
}

// ErrIdmapUnsupported reports that the kernel or the file system cannot
// idmap a mount (Linux before 5.12, or a file system without support:
// tmpfs before 6.3, most network file systems).
var ErrIdmapUnsupported = errors.New("idmapped mounts are not supported here")

// Clone returns a detached copy of the mount tree at src (an O_PATH
// descriptor is enough) with attr applied, recursively when recursive, and
// its top mount idmapped by m when m is not nil. Submounts are never
// idmapped: a mount below src (a bind of /etc under a project directory)
// keeps its real owners, so the mapping cannot lend the jail the owner's
// rights there. The caller needs CAP_SYS_ADMIN in the user namespace that
// owns src's mount namespace.
func Clone(src *os.File, recursive bool, attr Attr, m *Mapping) (*os.File, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(int(src.Fd()), "", flags)
	if err != nil {
		return nil, fmt.Errorf("open_tree %s: %w", src.Name(), err)
	}
	tree := os.NewFile(uintptr(fd), src.Name())
	ma := unix.MountAttr{Attr_set: attr.flags()}
	if m != nil {
		ns, err := UserNS(*m)
		if err != nil {
			tree.Close()
			return nil, err
		}
		// The idmapping goes first and alone: a failure then says that
		// idmapping (not an attribute) is what the file system refuses.
		// Not AT_RECURSIVE: the top mount only.
		ida := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &ida); err != nil {
			tree.Close()
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
				return nil, fmt.Errorf("%s: %w (mount_setattr: %v)", src.Name(), ErrIdmapUnsupported, err)
			}
			return nil, fmt.Errorf("idmap %s: %w", src.Name(), err)
		}
	}
	if ma.Attr_set != 0 {
		if err := unix.MountSetattr(fd, "", setFlags, &ma); err != nil {
			tree.Close()
			return nil, fmt.Errorf("mount_setattr %s: %w", src.Name(), err)
		}
	}
	return tree, nil
}

var userns struct {
	sync.Mutex
	byMapping map[Mapping]*os.File
}

// UserNS returns a user namespace file whose id maps are m (uid_map and
// gid_map "From To 1"), for MOUNT_ATTR_IDMAP. Namespaces are made once per
// mapping and kept open for the life of the process: the returned file is
// shared and must not be closed.
func UserNS(m Mapping) (*os.File, error) {
	userns.Lock()
	defer userns.Unlock()
	if f := userns.byMapping[m]; f != nil {
		return f, nil
	}
	f, err := newUserNS(m)
	if err != nil {
		return nil, err
	}
	if userns.byMapping == nil {
		userns.byMapping = map[Mapping]*os.File{}
	}
	userns.byMapping[m] = f
	return f, nil
}

func newUserNS(m Mapping) (*os.File, error) {
	var step C.int
	fd := int(C.hm_userns(C.uint(m.From.UID), C.uint(m.To.UID), C.uint(m.From.GID), C.uint(m.To.GID), &step))
	if fd < 0 {
		what := [...]string{"", "make a user namespace", "write its uid_map", "write its gid_map", "open it"}[step]
		return nil, fmt.Errorf("idmapped mount: %s: %w", what, unix.Errno(-fd))
	}
	return os.NewFile(uintptr(fd), "userns"), nil
}
