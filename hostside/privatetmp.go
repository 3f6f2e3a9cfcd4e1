package hostside

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// The private temporary directory of a run without namespaces: made by
// the supervisor in its temporary directory, mode 0700, owned by the
// command's identity, locked (flock) by the supervisor for as long as the
// run lasts, and removed after it through the descriptor of its parent.
// A supervisor that was killed leaves its directory unlocked: the next
// run of the same identity in the same place removes it.

// PrivateTmp is one run's private directory.
type PrivateTmp struct {
	parent *hostpath.Object
	name   string
	path   string
	id     hostpath.ID
	lock   int              // an O_RDONLY descriptor holding the flock; -1 when none
	obj    *hostpath.Object // O_PATH, until the plan's sources take it
}

// tmpName is the name of a run's private directory.
var tmpName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^tooljail-[0-9a-f]{16}(-[0-9])?$`)
})

// MakePrivateTmp makes the private directory of run id for owner (chown
// when the supervisor is root), after removing those of dead runs of
// owner.
func MakePrivateTmp(run string, owner ID, chown bool) (*PrivateTmp, error) {
	parent, err := hostpath.Open(os.TempDir(), hostpath.Options{})
	if err != nil {
		return nil, fmt.Errorf("the run's private temporary directory: open %s: %w", os.TempDir(), err)
	}
	removeStaleTmps(parent, owner)
	var lastErr error
	// Another supervisor's clean-up may take a directory between its
	// mkdir and its lock: then it is gone, and the next name is tried.
	for try := 0; try < 3; try++ {
		name := "tooljail-" + run
		if try > 0 {
			name += fmt.Sprintf("-%d", try)
		}
		t, err := lockedTmp(parent, name, owner, chown)
		if err == nil {
			return t, nil
		}
		lastErr = err
	}
	parent.Close()
	return nil, fmt.Errorf("the run's private temporary directory: %w", lastErr)
}

// lockedTmp makes and locks the directory name in parent; on failure
// nothing is left of it.
func lockedTmp(parent *hostpath.Object, name string, owner ID, chown bool) (*PrivateTmp, error) {
	pfd := int(parent.File.Fd())
	t := &PrivateTmp{parent: parent, name: name, path: path.Join(parent.Path, name), lock: -1}
	if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", t.path, err)
	}
	fail := func(err error) (*PrivateTmp, error) {
		t.Close()
		// Only what this call made, checked by inode: never another's.
		if t.id != (hostpath.ID{}) {
			t.removeIfSame()
		}
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	lock, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	t.lock = lock
	var st unix.Stat_t
	if err := unix.Fstat(lock, &st); err != nil {
		return fail(err)
	}
	t.id = hostpath.ID{Dev: st.Dev, Ino: st.Ino}
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(fmt.Errorf("lock: %w", err))
	}
	// Locked: still there under its name, or a clean-up took it first.
	var now unix.Stat_t
	if err := unix.Fstatat(pfd, name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil || (hostpath.ID{Dev: now.Dev, Ino: now.Ino}) != t.id {
		t.id = hostpath.ID{}
		return fail(errors.New("removed while it was made"))
	}
	if chown {
		if err := unix.Fchown(lock, owner.UID, owner.GID); err != nil {
			return fail(err)
		}
	}
	fd, err := unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), t.path)
	if err := unix.Fstat(fd, &now); err != nil || (hostpath.ID{Dev: now.Dev, Ino: now.Ino}) != t.id {
		f.Close()
		return fail(errors.New("replaced while it was made"))
	}
	t.obj = &hostpath.Object{File: f, Path: t.path, Stat: now,
		Chain: append(append([]hostpath.Elem(nil), parent.Chain...), hostpath.Elem{Name: name, ID: t.id})}
	return t, nil
}

// removeStaleTmps removes the private directories of owner's runs whose
// supervisor is gone (nobody holds their lock). Best effort.
func removeStaleTmps(parent *hostpath.Object, owner ID) {
	dfd, err := unix.Openat(int(parent.File.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(dfd), parent.Path)
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if !tmpName().MatchString(name) {
			continue
		}
		fd, err := unix.Openat(int(parent.File.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || int(st.Uid) != owner.UID || unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(fd)
			continue
		}
		t := &PrivateTmp{parent: parent, name: name, path: path.Join(parent.Path, name), id: hostpath.ID{Dev: st.Dev, Ino: st.Ino}, lock: fd}
		t.removeIfSame()
		t.Close()
	}
}

// Remove removes the directory and everything the run left in it, by
// descriptor (nothing below it is followed), then lets it go.
func (t *PrivateTmp) Remove() error {
	if t.parent == nil {
		return nil
	}
	err := t.removeIfSame()
	t.Close()
	t.parent.Close()
	t.parent = nil
	return err
}

// removeIfSame removes the directory if its name still names it.
func (t *PrivateTmp) removeIfSame() error {
	pfd := int(t.parent.File.Fd())
	fd, err := unix.Openat(pfd, t.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove %s: %w", t.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || (hostpath.ID{Dev: st.Dev, Ino: st.Ino}) != t.id {
		unix.Close(fd)
		return fmt.Errorf("remove %s: it is not the directory tooljail made", t.path)
	}
	err = clearDir(fd)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("remove %s: %w", t.path, err)
	}
	if err := unix.Unlinkat(pfd, t.name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove %s: %w", t.path, err)
	}
	return nil
}

// Path is the directory's path on the host.
func (t *PrivateTmp) Path() string { return t.path }

// TakeObject hands over the directory, opened O_PATH, to the caller, who
// closes it (as the run's bind source).
func (t *PrivateTmp) TakeObject() *hostpath.Object {
	o := t.obj
	t.obj = nil
	return o
}

// Close releases the lock and the O_PATH descriptor, leaving the
// directory: what a supervisor that died leaves (the next run removes it).
func (t *PrivateTmp) Close() {
	if t.obj != nil {
		t.obj.Close()
		t.obj = nil
	}
	if t.lock >= 0 {
		unix.Close(t.lock)
		t.lock = -1
	}
}

// clearDir removes everything in the directory fd, depth first, without
// following a symlink; it makes each directory writable by its owner
// first (the command may have left one read-only).
func clearDir(fd int) error {
	unix.Fchmod(fd, 0o700)
	d, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(d), "")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var first error
	for _, n := range names {
		err := unix.Unlinkat(fd, n, 0)
		if err == unix.EISDIR || err == unix.EPERM {
			var sub int
			sub, err = unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.EACCES && unix.Fchmodat(fd, n, 0o700, 0) == nil {
				// A directory (unlink said so) its owner made unreadable;
				// nothing of the run is left to swap it for a symlink.
				sub, err = unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
			if err == nil {
				err = clearDir(sub)
				unix.Close(sub)
				if err == nil {
					err = unix.Unlinkat(fd, n, unix.AT_REMOVEDIR)
				}
			}
		}
		if err != nil && !errors.Is(err, unix.ENOENT) && first == nil {
			first = fmt.Errorf("%s: %w", n, err)
		}
	}
	return first
}
