package tools

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Base splits a path value that Check returned into the Beneath
// directory it lies in (the deepest that holds it) and the rest, relative
// to that directory ("." for the directory itself). The caller opens dir
// in the file system the command will see (a relative dir against the
// working directory, itself with ResolveBeneath) and resolves rel in it
// with ResolveBeneath. ok is false for a value Check would not return.
func (p *Param) Base(value string) (dir, rel string, ok bool) {
	c := path.Clean(value)
	for _, d := range p.Beneath {
		if within(c, d) && len(d) >= len(dir) {
			dir, ok = d, true
		}
	}
	if !ok {
		return "", "", false
	}
	switch {
	case c == dir:
		rel = "."
	case dir == "." || dir == "/":
		rel = strings.TrimPrefix(c, "/")
	default:
		rel = strings.TrimPrefix(c, dir+"/")
	}
	return dir, rel, true
}

// ErrEscape is a path that resolves out of its directory.
var ErrEscape = errors.New("leads out of its directory")

// ResolveBeneath resolves rel (relative) in dir the way the kernel will
// when the command opens it, symlinks followed, and refuses it with
// ErrEscape if any step leaves dir: a ".." above it, an absolute symlink,
// a symlink that leads out, a /proc magic link. It uses openat2 with
// RESOLVE_BENEATH, so the answer is the kernel's, not a re-implementation.
// A path that does not exist (or whose missing part starts somewhere) has
// nothing left to follow and is not refused: the command will find it
// missing, or create it where the kernel resolves it, beneath dir.
//
// dir must be the directory as the command will see it (the jail binds
// the same host directories); a symlink planted between this check and
// the command's own open is the only gap, which only a writable binding
// the caller grants can open.
func ResolveBeneath(dir *os.File, rel string) error {
	if path.IsAbs(rel) {
		return fmt.Errorf("%s: an absolute path; give it relative to its directory", rel)
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &how)
		switch {
		case err == nil:
			unix.Close(fd)
			return nil
		case errors.Is(err, unix.EAGAIN) && i < 100:
			// A rename or mount raced the walk; the kernel asks to retry.
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
			return fmt.Errorf("%s: %w (%v)", rel, ErrEscape, err)
		case errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOSYS):
			return fmt.Errorf("%s: openat2 is not available (Linux 5.6 or later needed): %w", rel, err)
		}
		return fmt.Errorf("%s: %w", rel, err)
	}
}
