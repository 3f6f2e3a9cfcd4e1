package jail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// Protected paths (Spec.Protect): in every writable bind, files that run on
// the host later (git hooks and config, shell rc files, editor and agent
// configuration) are bound read-only over themselves, as trusted files
// are. Only names are looked at, never a walk: the bind's root, the
// repositories at its first two levels, their submodules' git directories
// and a core.hooksPath. What does not exist when the run starts cannot be
// protected (a mount needs a mount point, and tooljail creates nothing on
// the host); what git needs to find a repository's hooks must exist.

// Bounds on what one bind's lookup reads, so that a workdir with huge
// directories costs no more than this.
const (
	maxRepoDirs   = 256  // first-level directories listed for repositories below them
	maxRepoProbes = 4096 // second-level directories probed for a .git
	maxGitFile    = 64 << 10
)

// protectLookup finds, below one writable bind's root, the relative paths
// to protect.
type protectLookup struct {
	root    int    // the bind source's descriptor (O_PATH directory)
	host    string // its host path, for absolute gitdir and hooksPath values
	entries []string
	rels    map[string]bool
	dirs    map[string]map[string]uint8 // listings read: name -> DT_ type
	// required are the rels that must exist and be no symlink: without
	// them a command could plant what git runs (a hooks directory, the
	// config naming it, a .git file naming the git directory).
	required map[string]string // rel -> why
}

// protectIn opens what names asks to protect in every writable bind of
// mounts (srcs their opened sources) and returns the objects, to be bound
// read-only over themselves, and their destinations in the jail, sorted.
func protectIn(names []string, mounts []Mount, srcs []source) (objs []*hostpath.Object, dests []string, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	defer func() {
		if err != nil {
			for _, o := range objs {
				o.Close()
			}
			objs, dests = nil, nil
		}
	}()
	for i, m := range mounts {
		if m.Kind != MountBind || !m.Writable || i >= len(srcs) || srcs[i].obj == nil || !srcs[i].obj.IsDir() {
			continue
		}
		root := srcs[i].obj
		l := &protectLookup{root: int(root.File.Fd()), host: root.Path, entries: names,
			rels: map[string]bool{}, required: map[string]string{}, dirs: map[string]map[string]uint8{}}
		l.find()
		for _, rel := range slices.Sorted(maps.Keys(l.rels)) {
			_, required := l.required[rel]
			if !required && !l.listed(rel) {
				continue // most names are not there: no open for them
			}
			o, err := root.OpenBeneath(rel)
			if err != nil {
				if why, ok := l.required[rel]; ok {
					return objs, dests, fmt.Errorf("%s: %s %s, so a command in the jail could plant what git runs on the host later; fix: %s", m.Dest, path.Join(m.Dest, rel), missingWhat(err), why)
				}
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, hostpath.ErrSymlinkBeneath) || errors.Is(err, unix.ENOTDIR) {
					continue // cannot be protected: the command could replace it anyway
				}
				return objs, dests, fmt.Errorf("protected path %s: %w", path.Join(m.Dest, rel), err)
			}
			objs = append(objs, o)
			dests = append(dests, path.Join(m.Dest, rel))
		}
	}
	sort.Sort(byDest{objs, dests})
	return objs, dests, nil
}

func missingWhat(err error) string {
	if errors.Is(err, hostpath.ErrSymlinkBeneath) {
		return "is a symlink (which cannot be bound over)"
	}
	return "does not exist"
}

// find fills l.rels: the entries at the root and in every repository's
// worktree, and each repository's git entries.
func (l *protectLookup) find() {
	for _, w := range l.worktrees() {
		l.repo(w)
	}
}

// worktrees are the directories (relative, "" for the root) that hold a
// .git: the root and the directories one and two levels below it.
func (l *protectLookup) worktrees() []string {
	out := []string{""}
	first := l.subdirs("")
	if len(first) > maxRepoDirs {
		first = first[:maxRepoDirs]
	}
	probes := 0
	for _, a := range first {
		second := l.subdirs(a) // lists a: its .git is in the listing
		if l.listed(path.Join(a, ".git")) {
			out = append(out, a)
		}
		for _, b := range second {
			if probes++; probes > maxRepoProbes {
				return out
			}
			if l.exists(path.Join(b, ".git")) {
				out = append(out, b)
			}
		}
	}
	return out
}

// subdirs lists the directories in rel by the directory's own entry types
// (no stat), leaving out .git.
func (l *protectLookup) subdirs(rel string) []string {
	var out []string
	for name, typ := range l.list(rel) {
		if typ == unix.DT_DIR && name != ".git" {
			out = append(out, path.Join(rel, name))
		}
	}
	sort.Strings(out)
	return out
}

// listed says whether rel's name is in its directory's listing.
func (l *protectLookup) listed(rel string) bool {
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	_, ok := l.list(dir)[path.Base(rel)]
	return ok
}

// list reads the directory rel once (getdents, no stat): its entries'
// names and types; empty when it cannot be read.
func (l *protectLookup) list(rel string) map[string]uint8 {
	if m, ok := l.dirs[rel]; ok {
		return m
	}
	m := map[string]uint8{}
	l.dirs[rel] = m
	fd, err := l.openFD(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return m
	}
	defer unix.Close(fd)
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return m
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return m
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				m[s] = b[18]
			}
			b = b[reclen:]
		}
	}
}

func (l *protectLookup) exists(rel string) bool {
	var st unix.Stat_t
	return unix.Fstatat(l.root, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// open opens rel beneath the root, through no symlink.
func (l *protectLookup) open(rel string, flags int) (*os.File, error) {
	fd, err := l.openFD(rel, flags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

func (l *protectLookup) openFD(rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	}
	return unix.Openat2(l.root, rel, &how)
}

// read reads the regular file rel, at most maxGitFile bytes.
func (l *protectLookup) read(rel string) ([]byte, bool) {
	f, err := l.open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false // a FIFO or device planted as .git or config
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFile))
	return b, err == nil
}

// repo adds what worktree w protects: the plain entries in w, and when w
// has a .git, its git directory's entries.
func (l *protectLookup) repo(w string) {
	for _, e := range l.entries {
		if !strings.HasPrefix(e, ".git/") {
			l.rels[path.Join(w, e)] = true
		}
	}
	dotgit := path.Join(w, ".git")
	var st unix.Stat_t
	if unix.Fstatat(l.root, dotgit, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		l.gitdir(w, dotgit, true)
	case unix.S_IFREG:
		// A worktree's or submodule's .git file names its git directory:
		// rewritten, it would name one the command made.
		l.require(dotgit, "keep the repository's .git file a regular file, or lift the list (protect = [])")
		data, ok := l.read(dotgit)
		if !ok {
			return
		}
		target, ok := parseGitdirFile(data)
		if !ok {
			return
		}
		if g, ok := l.within(w, target); ok {
			_, worktree := l.read(path.Join(g, "commondir"))
			l.gitdir(w, g, !worktree)
		}
	default:
		l.require(dotgit, "make "+dotgit+" the repository's directory or .git file, or lift the list (protect = [])")
	}
}

// gitdir adds the git directory g's entries (the protect entries under
// ".git/"), its submodules' git directories and its core.hooksPath. A
// repository's own git directory (full) must have hooks and config; a
// worktree's shares them with its main repository.
func (l *protectLookup) gitdir(w, g string, full bool) {
	for _, e := range l.entries {
		if rest, ok := strings.CutPrefix(e, ".git/"); ok {
			l.rels[path.Join(g, rest)] = true
		}
	}
	if !full {
		l.rels[path.Join(g, "config.worktree")] = true
		return
	}
	l.require(path.Join(g, "hooks"), "create it (mkdir "+path.Join(g, "hooks")+"), or lift the list (protect = [])")
	l.require(path.Join(g, "config"), "repair the repository (git init), or lift the list (protect = [])")
	if cfg, ok := l.read(path.Join(g, "config")); ok {
		if hp := hooksPath(cfg); hp != "" {
			if h, ok := l.within(w, hp); ok {
				l.rels[h] = true
				l.require(h, "create the directory core.hooksPath names, or lift the list (protect = [])")
			}
		}
	}
	for _, sub := range l.subdirs(path.Join(g, "modules")) {
		if l.exists(path.Join(sub, "HEAD")) {
			l.gitdir(w, sub, true)
		}
	}
}

func (l *protectLookup) require(rel, fix string) {
	l.rels[rel] = true
	l.required[rel] = fix
}

// within resolves p, absolute (a host path) or relative to the worktree w,
// to a path relative to the bind's root; false when it lies outside.
func (l *protectLookup) within(w, p string) (string, bool) {
	if path.IsAbs(p) {
		rel, ok := strings.CutPrefix(path.Clean(p), strings.TrimSuffix(l.host, "/")+"/")
		if !ok {
			return "", false
		}
		return rel, true
	}
	rel := path.Join(w, p)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// parseGitdirFile reads a .git file: "gitdir: PATH".
func parseGitdirFile(data []byte) (string, bool) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	p, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r"), "gitdir: ")
	p = strings.TrimSpace(p)
	if !ok || p == "" {
		return "", false
	}
	return p, true
}

// hooksPath is the core.hooksPath value of a git config, or "". Section
// and key names are case-insensitive; a quoted value is unquoted; "~/"
// names the host's home, never inside a bind tooljail allows.
func hooksPath(config []byte) string {
	section, value := "", ""
	sc := bufio.NewScanner(bytes.NewReader(config))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if section != "core" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, `"`) {
			v = strings.TrimSpace(v[:i])
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		value = v // the last one wins, as in git
	}
	if strings.HasPrefix(value, "~") {
		return ""
	}
	return value
}

// byDest sorts objects and their destinations together, by destination.
type byDest struct {
	objs  []*hostpath.Object
	dests []string
}

func (b byDest) Len() int           { return len(b.dests) }
func (b byDest) Less(i, j int) bool { return b.dests[i] < b.dests[j] }
func (b byDest) Swap(i, j int) {
	b.objs[i], b.objs[j] = b.objs[j], b.objs[i]
	b.dests[i], b.dests[j] = b.dests[j], b.dests[i]
}
