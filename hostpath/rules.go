package hostpath

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// SystemDirs are refused as read-write binds together with everything
// below them: the host's programs, configuration, kernel interfaces and
// package databases. A symlink in them is followed.
var SystemDirs = []string{
	"/usr", "/etc", "/boot", "/efi", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/sys", "/dev", "/run", "/var/run", "/var/lock", "/var/spool", "/var/log",
	"/var/mail", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/rpm", "/var/lib/systemd",
	"/var/cache/apt", "/var/cache/debconf", "/snap", "/lost+found",
}

// TopLevelDirs are refused as read-write binds themselves (they hold
// other programs' and users' files), but project directories below them
// are not. A symlink in them is followed.
var TopLevelDirs = []string{
	"/", "/var", "/var/lib", "/var/cache", "/var/opt", "/var/tmp", "/opt", "/srv",
	"/home", "/tmp", "/mnt", "/media", "/root",
}

// rules are the directories no run may bind read-write, by identity.
type rules struct {
	system map[ID]string
	top    map[ID]string
	// homes are the caller's $HOME, every home directory of the password
	// database, and each of their parents.
	homes  map[ID]string
	owners owners
}

var defaultRules = sync.OnceValue(func() *rules {
	return loadRules(os.Getenv("HOME"), "/etc/passwd")
})

func loadRules(home, passwd string) *rules {
	r := &rules{system: map[ID]string{}, top: map[ID]string{}, homes: map[ID]string{}, owners: loadOwners(uint32(os.Geteuid()))}
	dirs := plainDirs{}
	// The lists name real directories; a name that is a symlink here
	// (/bin -> usr/bin, /var/run -> /run) stands for a listed target.
	for _, p := range SystemDirs {
		if id, ok := dirs.lookup(p); ok {
			r.system[id] = p
		}
	}
	for _, p := range TopLevelDirs {
		if id, ok := dirs.lookup(p); ok {
			r.top[id] = p
		}
	}
	// $HOME is the caller's word: its symlinks are followed. The other
	// homes are not: one that does not exist yet could be planted as a
	// symlink to a directory a run controls.
	if home != "" && path.IsAbs(home) {
		addWithParents(r.homes, home, true)
	}
	for _, h := range HomeDirs(passwd) {
		addPlainWithParents(r.homes, dirs, h)
	}
	return r
}

// plainDirs finds directories by their absolute, clean paths, reached
// through directories only (no symlink in any component, as openat2's
// RESOLVE_NO_SYMLINKS), with one lstat per distinct path: the lists and
// the homes share most of their parents. An openat2, fstat and close per
// path and per parent were about 0.2 ms of every CLI run, which builds
// the rules once (BENCHMARKS.md, issue 32).
type plainDirs map[string]plainDir

type plainDir struct {
	id ID
	ok bool
}

// lookup says whether p (absolute and clean) is a directory reached
// through directories only, and which.
func (d plainDirs) lookup(p string) (ID, bool) {
	if r, seen := d[p]; seen {
		return r.id, r.ok
	}
	var r plainDir
	parentOK := p == "/"
	if !parentOK {
		_, parentOK = d.lookup(path.Dir(p))
	}
	var st unix.Stat_t
	if parentOK && unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		r = plainDir{idOf(&st), true}
	}
	d[p] = r
	return r.id, r.ok
}

// addPlainWithParents is addWithParents without following symlinks, by
// lexical parents (the same directories when no component is a symlink).
// A home written otherwise than clean ("/a/../b", "//a") goes the way of
// addWithParents.
func addPlainWithParents(m map[ID]string, dirs plainDirs, home string) {
	p := home
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		addWithParents(m, home, false)
		return
	}
	if _, ok := dirs.lookup(p); !ok {
		return
	}
	for {
		id := dirs[p].id
		if _, seen := m[id]; seen {
			return
		}
		m[id] = p
		if p == "/" {
			return
		}
		p = path.Dir(p)
	}
}

// addWithParents records dir (its symlinks followed only when follow)
// and every directory above it, up to the root.
func addWithParents(m map[ID]string, dir string, follow bool) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC}
	if !follow {
		how.Resolve = unix.RESOLVE_NO_SYMLINKS
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
	if err != nil {
		return
	}
	name := dir
	for depth := 0; depth < 256; depth++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		id := idOf(&st)
		if _, seen := m[id]; seen {
			break
		}
		m[id] = name
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		unix.Close(fd)
		fd, name = up, path.Dir(name)
	}
	unix.Close(fd)
}

// HomeDirs are home directories to protect besides $HOME: root's, and
// those of the password database at passwd (/etc/passwd), as written
// there ("/" left out).
func HomeDirs(passwd string) []string {
	out := []string{"/root"}
	f, err := os.Open(passwd)
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Split(s.Text(), ":")
		if len(fields) >= 7 && path.IsAbs(fields[5]) && fields[5] != "/" {
			out = append(out, fields[5])
		}
	}
	return out
}

// protects says whether the directory at the end of chain is one no run
// may bind read-write: a symlink there is trusted.
func (r *rules) protects(chain []Elem) bool {
	if len(chain) == 1 {
		return true // the root
	}
	last := chain[len(chain)-1].ID
	if _, ok := r.top[last]; ok {
		return true
	}
	if _, ok := r.homes[last]; ok {
		return true
	}
	for _, e := range chain {
		if _, ok := r.system[e.ID]; ok {
			return true
		}
	}
	return false
}

// RefusedError is a path that may not be bound read-write.
type RefusedError struct {
	Path string
	Why  string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s %s", e.Path, e.Why) }

// Refuse says why o may not be bound read-write, or nil when it may. The
// rules compare identities, not names, so another spelling of a refused
// directory (a symlink, a bind mount of it) is refused too:
//   - the root;
//   - a system directory (SystemDirs) or anything below one;
//   - a top-level directory itself (TopLevelDirs);
//   - a home directory (the caller's $HOME, root's, any in /etc/passwd)
//     or a directory that contains one.
func Refuse(o *Object) error {
	if why := defaultRules().refusal(o.Chain); why != "" {
		return &RefusedError{Path: o.Path, Why: why}
	}
	return nil
}

func (r *rules) refusal(chain []Elem) string {
	if len(chain) == 1 {
		return "is the host's root directory"
	}
	for i, e := range chain {
		if sys, ok := r.system[e.ID]; ok {
			if i == len(chain)-1 {
				return fmt.Sprintf("is the system directory %s", sys)
			}
			return fmt.Sprintf("lies in the system directory %s", sys)
		}
	}
	last := chain[len(chain)-1].ID
	if top, ok := r.top[last]; ok {
		return fmt.Sprintf("is the top-level directory %s, shared by other programs and users (use a project directory below it)", top)
	}
	if h, ok := r.homes[last]; ok {
		return fmt.Sprintf("is %s, a home directory or a directory that holds one (use a project directory inside it)", h)
	}
	return ""
}
