package call

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/tools"
)

// resolvePaths checks each path argument of argv where the command will
// open it: beneath its directory, symlinks followed as the kernel follows
// them (tools.ResolveBeneath). The jail binds the workdir and system
// directories at their host paths, so the host's view is the command's.
func (c *Caller) resolvePaths(t *tools.Tool, argv []string) error {
	var wd *os.File
	defer func() {
		if wd != nil {
			wd.Close()
		}
	}()
	for i, a := range t.Command {
		p := t.Param(a.Param)
		if p == nil || p.Type != tools.Path {
			continue
		}
		dir, rel, ok := p.Base(argv[i])
		if !ok {
			return fmt.Errorf("tool %s: parameter %s: %q is not beneath its directories", t.Name, p.Name, argv[i])
		}
		var d *os.File
		var err error
		if dir[0] == '/' {
			d, err = os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		} else {
			if wd == nil {
				if wd, err = os.OpenFile(c.Workdir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
					return fmt.Errorf("workdir %s: %w", c.Workdir, err)
				}
			}
			d, err = openBeneath(wd, dir)
		}
		if errors.Is(err, unix.ENOENT) {
			// Nothing there to follow: the command finds it missing.
			continue
		}
		if err == nil {
			err = tools.ResolveBeneath(d, rel)
			d.Close()
		}
		if err != nil {
			return fmt.Errorf("tool %s: parameter %s = %s: refused by rule beneath: %v", t.Name, p.Name, clipQuote(argv[i]), err)
		}
	}
	return nil
}

// openBeneath opens the directory rel (relative) beneath dir, refusing
// any step out of it, as ResolveBeneath does.
func openBeneath(dir *os.File, rel string) (*os.File, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), rel), nil
		case errors.Is(err, unix.EAGAIN) && i < 100:
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("%s: %w (%v)", rel, tools.ErrEscape, err)
		}
		return nil, err
	}
}
