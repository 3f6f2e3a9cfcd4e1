package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tooljail/tooljail/jail"
)

// A jail must never see the server's socket or its audit log. The jail's
// uid is the server's on the host, so a command that could reach the
// socket (a bind that holds it, read-only or not: connect(2) needs no
// write access) could ask the server for a run with a looser profile and
// another workdir, and one that could reach the audit log could read the
// other calls' lines or replace the file. hiddenSet holds the identities
// (device and inode) of each such object and of every directory above
// it: a bind whose source is one of them would show the object.
type hiddenSet map[fileID]string // identity -> what it shows

type fileID struct{ dev, ino uint64 }

// add records path (the socket or the audit log, what names it in
// errors) and the directories above it.
func (h hiddenSet) add(path, what string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return fmt.Errorf("%s %s: %w", what, p, err)
		}
		h[fileID{uint64(st.Dev), st.Ino}] = what + " " + abs
		if p == "/" {
			return nil
		}
	}
}

// check refuses a Spec with a bind whose source holds a hidden object.
// The source is looked up as the jail will open it a moment later; a
// symlink the jail would refuse to follow fails the run there anyway.
func (h hiddenSet) check(s *jail.Spec) error {
	if s.Root != "" {
		// Every bind from the root is opened beneath it: a root that
		// does not hold a hidden object shows none.
		var st syscall.Stat_t
		if err := syscall.Stat(s.Root, &st); err == nil {
			if what, ok := h[fileID{uint64(st.Dev), st.Ino}]; ok {
				return refuse("the root directory %s holds the server's %s, which the jail could then use or change; choose a root directory that does not hold it, or start the server with its socket and audit log elsewhere", s.Root, what)
			}
		}
	}
	for _, m := range s.Mounts {
		if m.Kind != jail.MountBind || m.InRoot {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(m.Source, &st); err != nil {
			if os.IsNotExist(err) {
				continue // an optional source that is not there; the jail decides
			}
			return refuse("bind source %s: %v", m.Source, err)
		}
		if what, ok := h[fileID{uint64(st.Dev), st.Ino}]; ok {
			return refuse("%s would show the server's %s to the jail, which could then use or change it; choose a directory that does not hold it, or start the server with its socket and audit log elsewhere", bindName(m), what)
		}
	}
	return nil
}

func bindName(m jail.Mount) string {
	if m.Writable {
		return "the read-write bind of " + m.Source
	}
	return "the bind of " + m.Source
}
