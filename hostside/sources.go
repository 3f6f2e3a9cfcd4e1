package hostside

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Resolve opens the source of every bind of mounts with root standing
// for "/", or for a bind InRoot, in tree (the run's root directory,
// jail's Spec.Root, opened), and checks what it opened. The binds from
// root share the directories on their way (hostpath.Opener).
func Resolve(root *os.File, tree *hostpath.Object, mounts []Mount, dir string) ([]Source, error) {
	srcs := make([]Source, len(mounts))
	host, err := hostpath.NewOpener(root)
	if err != nil {
		return nil, fmt.Errorf("the root to open binds from: %w", err)
	}
	defer host.Close()
	for i, m := range mounts {
		if m.Kind != Bind {
			continue
		}
		obj, err := openSource(host, tree, m)
		if err != nil {
			if m.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			CloseSources(srcs)
			switch {
			case m.InRoot && errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%s: %s does not exist in the root directory %s", BindName(m, dir), m.Source, tree.Path)
			case m.InRoot:
				return nil, fmt.Errorf("%s of the root directory %s: %w (its symlinks are resolved in it: an absolute one starts at %s again)", BindName(m, dir), tree.Path, err, tree.Path)
			case errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%s: %s does not exist on the host", BindName(m, dir), m.Source)
			}
			return nil, fmt.Errorf("%s: %w", BindName(m, dir), err)
		}
		srcs[i].Obj = obj
		if err := check(m, obj, dir); err != nil {
			CloseSources(srcs)
			return nil, err
		}
	}
	return srcs, nil
}

// openSource opens m's source: on the host through host, or in the tree.
func openSource(host *hostpath.Opener, tree *hostpath.Object, m Mount) (*hostpath.Object, error) {
	opt := hostpath.Options{KeepSymlink: m.KeepSymlink}
	if !m.InRoot {
		return host.Open(m.Source, opt)
	}
	if tree == nil {
		return nil, fmt.Errorf("no root directory to take it from")
	}
	obj, err := tree.OpenInTree(m.Source, opt)
	if err != nil {
		return nil, err
	}
	if err := hostpath.CheckTreeEntry(obj); err != nil {
		obj.Close()
		return nil, err
	}
	return obj, nil
}

func CloseSources(srcs []Source) {
	for _, s := range srcs {
		s.Close()
	}
}

// BindName names a bind in errors: the workdir is the bind at the working
// directory (read-write, or read-only with filesystem.workdir_readonly).
func BindName(m Mount, dir string) string {
	switch {
	case m.Dest == dir:
		return "workdir " + m.Source
	case m.Writable:
		return "read-write bind " + m.Source
	}
	return "bind " + m.Source
}

// check decides whether what was opened may be bound as m asks.
func check(m Mount, o *hostpath.Object, dir string) error {
	typ := o.Stat.Mode & unix.S_IFMT
	switch {
	case typ == unix.S_IFLNK && m.KeepSymlink, typ == unix.S_IFDIR, typ == unix.S_IFREG, typ == unix.S_IFSOCK:
	default:
		return fmt.Errorf("%s: not a directory, regular file or socket (mode %#o)", BindName(m, dir), typ)
	}
	if onProcfs(o) {
		return fmt.Errorf("%s: on a proc filesystem (the host's /proc); the jail has a /proc of its own, and the host's would show every host process and reach their files through /proc/PID/root; bind what you need from elsewhere", BindName(m, dir))
	}
	if m.Dest == dir && typ != unix.S_IFDIR {
		return fmt.Errorf("%s: not a directory (mode %#o); the working directory must be one", BindName(m, dir), typ)
	}
	if !m.Writable && m.Dest != dir {
		return nil
	}
	if typ == unix.S_IFLNK {
		return fmt.Errorf("%s: a symlink cannot be bound read-write", BindName(m, dir))
	}
	if !m.Writable {
		// A read-only workdir is refused where a writable one is: $HOME
		// or / as a project would show the caller's keys and every
		// other secret to the command.
		if err := hostpath.Refuse(o); err != nil {
			return fmt.Errorf("%s: refusing it as the workdir, even read-only: %w; the command could read the host's configuration, your credentials or other users' files there; choose a project directory as the workdir (tooljail run --workdir DIR), or run without one (--no-workdir)", BindName(m, dir), err)
		}
		return nil
	}
	if err := hostpath.Refuse(o); err != nil {
		fix := "bind a project directory instead"
		if m.Dest == dir {
			fix = "choose a project directory as the workdir (tooljail run --workdir DIR), or run without one (--no-workdir)"
		}
		return fmt.Errorf("%s: refusing to bind it read-write: %w; the command could change the host's software, configuration or other users' files there; %s", BindName(m, dir), err, fix)
	}
	return nil
}

// OpenTree opens the root directory p (jail's Spec.Root) from root, by the rules
// of every host path, and checks it may be used (hostpath.CheckTree).
func OpenTree(root *os.File, p string) (*hostpath.Object, error) {
	tree, err := hostpath.OpenTreeIn(root, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("root directory %s does not exist; give the directory of an unpacked root file system", p)
	case err != nil:
		return nil, fmt.Errorf("root directory: %w", err)
	}
	return tree, nil
}

// onProcfs says whether o lies on a proc filesystem. Any error reads as
// no: the bind then goes on to the other checks.
func onProcfs(o *hostpath.Object) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(int(o.File.Fd()), &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC
}
