package hostside

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// A command the jail cannot find is often there, as a symlink or a script,
// whose target or #! interpreter lies outside what the jail shows: a
// virtualenv's python links to a pyenv or uv interpreter under the
// caller's home, a project's tool links to /opt. execve says only ENOENT.
// DanglingHint finds that target by walking the command's candidates
// through the jail's mounts on the host, and says what would show it.

// Looker is what DanglingHint reads of the host.
type Looker interface {
	// Lstat returns the type of path, without following a last symlink.
	Lstat(path string) (fs.FileMode, error)
	Readlink(path string) (string, error)
	// Head returns the first bytes of the regular file at path.
	Head(path string) ([]byte, error)
}

// maxLinks bounds the symlinks followed in one walk, as the kernel does.
const maxLinks = 40

// frameDirs are what the jail makes of its own (procfs, devices, the
// generated /etc files): no bind says what they hold.
var frameDirs = []string{"/proc", "/dev", "/etc", "/sys"}

// shown is what the jail shows at a path.
type shown int

const (
	shownHost    shown = iota // a bind's: its host path says what is there
	shownNothing              // nothing: no mount covers it, a mask hides it, or a tmpfs (empty when the command starts)
	shownUnknown              // the jail's frame: not knowable here
	shownDir                  // a directory the jail made above a mount
)

// inJail maps the jail path p through mounts: the deepest mount at p or
// above it decides (masks hide; a later mount at the same destination
// replaces an earlier one). root says p is the bind's destination itself.
func inJail(p string, mounts []Mount) (what shown, host string, m Mount, root bool) {
	best := -1
	for i, mt := range mounts {
		if mt.Dest == p || strings.HasPrefix(p, strings.TrimSuffix(mt.Dest, "/")+"/") {
			if best < 0 || len(mt.Dest) >= len(mounts[best].Dest) {
				best = i
			}
		}
	}
	if best < 0 {
		for _, d := range frameDirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				return shownUnknown, "", Mount{}, false
			}
		}
		// A directory above a mount's destination exists (the jail made
		// it); what else is there is not.
		for _, mt := range mounts {
			if strings.HasPrefix(mt.Dest, strings.TrimSuffix(p, "/")+"/") {
				return shownDir, "", Mount{}, false
			}
		}
		return shownNothing, "", Mount{}, false
	}
	m = mounts[best]
	switch m.Kind {
	case Mask:
		return shownNothing, "", m, false
	case Tmpfs:
		// The way to a mount below (a workdir in /tmp) the jail made;
		// nothing else is there before the command runs.
		for _, mt := range mounts {
			if strings.HasPrefix(mt.Dest, strings.TrimSuffix(p, "/")+"/") {
				return shownDir, "", m, false
			}
		}
		return shownNothing, "", m, false
	}
	rel := strings.TrimPrefix(p, m.Dest)
	return shownHost, path.Join(m.Source, rel), m, rel == ""
}

// walk is where resolving a jail path ended.
type walk struct {
	path    string // the path as far as it was resolved
	missing bool   // path is not shown by the jail (its first component that is not)
	found   bool   // path is a regular file the jail shows
	link    string // the first symlink followed, "" for none
	target  string // what link pointed to, made absolute
}

// resolve follows p in the jail, component by component, through the
// symlinks it finds on the host, until a component the jail does not
// show, a file, or something it cannot know.
func resolve(p string, mounts []Mount, h Looker) walk {
	w := walk{}
	links := 0
	rest, cur := components(p), "/"
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		what, host, m, root := inJail(next, mounts)
		switch what {
		case shownNothing:
			w.path, w.missing = path.Join(append([]string{next}, rest...)...), true
			return w
		case shownUnknown:
			return walk{}
		case shownDir:
			cur = next
			continue
		}
		mode, err := h.Lstat(host)
		if err != nil {
			return walk{} // absent in the bind too, or unreadable: nothing to add
		}
		// A bind's own root was opened following symlinks (unless kept).
		if mode&fs.ModeSymlink != 0 && (!root || m.KeepSymlink) {
			if links++; links > maxLinks {
				return walk{}
			}
			full, err := linkTarget(h, host, cur, rest)
			if err != nil {
				return walk{}
			}
			if w.link == "" {
				w.link, w.target = path.Join(append([]string{next}, rest...)...), full
			}
			rest, cur = components(full), "/"
			continue
		}
		if len(rest) > 0 && !mode.IsDir() {
			return walk{}
		}
		cur = next
		if len(rest) == 0 {
			w.path, w.found = cur, mode.IsRegular()
		}
	}
	return w
}

// components are the names of the absolute path p, cleaned.
func components(p string) []string {
	return strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
}

// linkTarget is the path the walk goes on with after the symlink at host
// (a component of the directory cur, rest still to come): its target,
// taken against cur when relative, with rest.
func linkTarget(h Looker, host, cur string, rest []string) (string, error) {
	t, err := h.Readlink(host)
	if err != nil {
		return "", err
	}
	if !path.IsAbs(t) {
		t = path.Join(cur, t)
	}
	return path.Join(append([]string{t}, rest...)...), nil
}

// interpreter is the program a "#!" line names, or "".
func interpreter(head []byte) string {
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(string(line))
	if len(f) == 0 || !path.IsAbs(f[0]) {
		return ""
	}
	return f[0]
}

// DanglingHint says why a command execve could not find (candidates: the
// jail paths tried, in order) is missing, when the host shows the cause:
// a candidate that is a symlink to what the jail does not show but the
// host has, or a script whose #! interpreter is such; "" otherwise (a
// target that is nowhere is what the plain message says).
func DanglingHint(candidates []string, mounts []Mount, h Looker) string {
	onHost := func(w walk) bool {
		_, err := h.Lstat(w.path)
		return w.missing && err == nil
	}
	for _, c := range candidates {
		w := resolve(c, mounts, h)
		switch {
		case onHost(w) && w.link != "":
			return linkText(w) + ", which the jail does not show: " + showWith(w.path)
		case w.found:
			head, err := h.Head(hostOf(w.path, mounts))
			if err != nil {
				continue
			}
			interp := interpreter(head)
			if interp == "" {
				continue
			}
			iw := resolve(interp, mounts, h)
			if !onHost(iw) {
				continue
			}
			what := ""
			if iw.link != "" {
				what = " (" + linkText(iw) + ")"
			}
			return w.path + " starts with #!" + interp + what + ", which the jail does not show: " + showWith(iw.path)
		}
	}
	return ""
}

// linkText names the first symlink of a walk and where it led.
func linkText(w walk) string {
	s := w.link + " is a symlink to " + w.target
	if w.path != w.target {
		s += ", which leads to " + w.path
	}
	return s
}

// showWith says how to show path: the caller's toolchain found for them,
// or the prefix that holds it named by hand, both read-only with execute
// rights (a --ro bind is not executable where Landlock applies).
func showWith(p string) string {
	return "show it with --toolchain auto, or --toolchain " + prefixOf(p) + " (filesystem.toolchains)"
}

// prefixOf is the installation prefix of a program's path: the directory
// above its bin or sbin, else its directory.
func prefixOf(p string) string {
	d := path.Dir(p)
	if b := path.Base(d); (b == "bin" || b == "sbin") && path.Dir(d) != "/" {
		return path.Dir(d)
	}
	return d
}

// hostOf is the host path of jail path p, which inJail found shown by a
// bind.
func hostOf(p string, mounts []Mount) string {
	_, host, _, _ := inJail(p, mounts)
	return host
}

// OSHost reads the host for DanglingHint, as the supervisor: nothing it
// opens can block (a FIFO) or be more than a regular file.
type OSHost struct{}

func (OSHost) Lstat(p string) (fs.FileMode, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (OSHost) Readlink(p string) (string, error) { return os.Readlink(p) }

func (OSHost) Head(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	buf := make([]byte, 256)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
