package hostside

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Output is a host file the caller writes after the run: a report, an
// audit log. Start opens it before anything runs in the jail, by the rules
// of every host path (no symlink a run could have planted, not even as the
// last component; a regular file only; opened without blocking, so a FIFO
// cannot hang tooljail), and refuses it inside a writable bind of the run,
// where the command could replace it before it is written. A missing file
// is created only once it is known not to be refused, or when the run
// fails before that is known (nothing ran, so the setup error's report
// can be written).
type Output struct {
	Path   string
	Append bool        // for a log: opened O_APPEND, never truncated
	Perm   os.FileMode // of a new file
	// File is the opened file, set by Start (nil when it was refused);
	// the caller writes and closes it.
	File *os.File

	dir     *hostpath.Object // the parent directory, until File is set
	chain   []hostpath.Elem
	refused bool
}

// Open opens the parent directory and the file when it exists.
func (o *Output) Open() error {
	if o.dir != nil || o.File != nil || o.refused {
		return nil
	}
	p := o.Path
	dir, base := path.Dir(p), path.Base(p)
	if !path.IsAbs(p) || base == "." || base == ".." || base == "/" {
		return fmt.Errorf("%s: want an absolute path of a file", p)
	}
	d, err := hostpath.Open(dir, hostpath.Options{})
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	if !d.IsDir() {
		d.Close()
		return fmt.Errorf("open %s: %s is not a directory", p, dir)
	}
	o.dir = d
	o.chain = d.Chain
	err = o.openFile(false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// Create creates the file when it does not exist yet.
func (o *Output) Create() error {
	if o.File != nil || o.dir == nil || o.refused {
		return nil
	}
	return o.openFile(true)
}

// openFile opens the file (creating it when create) without ever opening
// anything but a regular file for writing: an existing object is first
// opened O_PATH and checked, then reopened through its descriptor, so a
// device node or a FIFO with a reader is never opened at all.
func (o *Output) openFile(create bool) error {
	p, base := o.Path, path.Base(o.Path)
	dirfd := int(o.dir.File.Fd())
	wflags := unix.O_WRONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if o.Append {
		wflags |= unix.O_APPEND
	}
	for try := 0; ; try++ {
		pfd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && create && try < 10 {
			// O_EXCL: what this creates is a new regular file; if
			// something appeared meanwhile, look at it again.
			fd, err := unix.Openat(dirfd, base, wflags|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint32(o.Perm.Perm()))
			if err == unix.EEXIST {
				continue
			}
			if err != nil {
				return fmt.Errorf("create %s: %w", p, err)
			}
			return o.opened(os.NewFile(uintptr(fd), p))
		}
		if err != nil {
			if err == unix.ENOENT && !create {
				return err
			}
			return fmt.Errorf("open %s: %w", p, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(pfd, &st)
		if err == nil {
			err = outputType(p, st.Mode)
		}
		if err != nil {
			unix.Close(pfd)
			return err
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), wflags, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		f := os.NewFile(uintptr(fd), p)
		var st2 unix.Stat_t
		if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
			f.Close()
			return fmt.Errorf("open %s: it changed while it was opened", p)
		}
		return o.opened(f)
	}
}

// outputType refuses anything but a regular file, saying what it is.
func outputType(p string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return fmt.Errorf("%s is a symlink: refusing to write through it; give the path of a regular file", p)
	case unix.S_IFIFO, unix.S_IFSOCK:
		return fmt.Errorf("%s is a FIFO or socket: refusing it; give the path of a regular file", p)
	case unix.S_IFDIR:
		return fmt.Errorf("%s is a directory; give the path of a regular file", p)
	}
	return fmt.Errorf("%s is not a regular file (mode %#o): refusing it; give the path of a regular file", p, mode&unix.S_IFMT)
}

// Chain is the output's place on the host, component by component (its
// parent directory's, and the file's once opened): what InsideWritable
// checks against the run's read-write binds.
func (o *Output) Chain() []hostpath.Elem { return o.chain }

// opened records f as the output's file.
func (o *Output) opened(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", o.Path, err)
	}
	if err := outputType(o.Path, st.Mode); err != nil {
		f.Close()
		return err
	}
	o.File = f
	o.chain = append(append([]hostpath.Elem(nil), o.dir.Chain...), hostpath.Elem{Name: path.Base(o.Path), ID: hostpath.ID{Dev: st.Dev, Ino: st.Ino}})
	o.dir.Close()
	o.dir = nil
	return nil
}

// Refuse gives the output up: it is neither created nor written.
func (o *Output) Refuse() {
	o.refused = true
	if o.File != nil {
		o.File.Close()
		o.File = nil
	}
	if o.dir != nil {
		o.dir.Close()
		o.dir = nil
	}
}

// SettleOutputs is for a Start that failed: every output not refused is
// opened and created, so the caller can write the setup error's report
// there (nothing ran in the jail, so nothing can have replaced it).
func SettleOutputs(outs []*Output) {
	for _, o := range outs {
		if o.Open() != nil || o.Create() != nil {
			o.Refuse()
		}
	}
}
