package hostprotect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

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
	// kinds are the S_IFMT (0: missing) of the entries already probed.
	kinds map[string]uint32
	buf   []byte // the getdents buffer
	// err is the first thing found that fails the run closed other than a
	// required path missing.
	err error
}

// Open opens, below root (the opened source of one writable bind, shown
// at dest in the jail), what names asks to protect, and returns the
// objects, to be bound read-only over themselves, and their destinations
// in the jail, sorted. On an error it closes what it opened.
func Open(root *hostpath.Object, dest string, names []string) (objs []*hostpath.Object, dests []string, err error) {
	l := &protectLookup{root: int(root.File.Fd()), host: root.Path, entries: names,
		rels: map[string]bool{}, required: map[string]string{}, dirs: map[string]map[string]uint8{},
		kinds: map[string]uint32{}}
	l.find()
	if l.err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dest, l.err)
	}
	walk := root.Walk()
	defer walk.Close()
	if err := l.openAll(dest, walk, &objs, &dests); err != nil {
		for _, o := range objs {
			o.Close()
		}
		return nil, nil, err
	}
	return objs, dests, nil
}

// openAll opens l.rels, each through the directories walk opened before:
// the objects and their destinations below dest are appended to objs and
// dests, in the order of their names.
func (l *protectLookup) openAll(dest string, walk *hostpath.Walker, objs *[]*hostpath.Object, dests *[]string) error {
	// Most names are not there. A directory asked for many (a worktree's
	// top: every rc file and editor directory) is listed, once; for a
	// few (a git directory's info, config.worktree) a failed open is
	// cheaper than a listing.
	perDir := map[string]int{}
	for rel := range l.rels {
		perDir[parentOf(rel)]++
	}
	for _, rel := range slices.Sorted(maps.Keys(l.rels)) {
		_, required := l.required[rel]
		if _, done := l.dirs[parentOf(rel)]; !required && (perDir[parentOf(rel)] > 6 || done) && !l.maybeThere(rel) {
			continue
		}
		o, err := walk.Open(rel)
		if err != nil {
			if why, ok := l.required[rel]; ok {
				return fmt.Errorf("%s: %s %s, so a command in the jail could plant what git runs on the host later; fix: %s", dest, path.Join(dest, rel), missingWhat(err), why)
			}
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, hostpath.ErrSymlinkBeneath) || errors.Is(err, unix.ENOTDIR) {
				continue // cannot be protected: the command could replace it anyway
			}
			return fmt.Errorf("protected path %s: %w", path.Join(dest, rel), err)
		}
		*objs = append(*objs, o)
		*dests = append(*dests, path.Join(dest, rel))
	}
	return nil
}

// parentOf is rel's directory, "" for the root.
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
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
			if l.kind(path.Join(b, ".git")) != 0 {
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
	_, ok := l.list(parentOf(rel))[path.Base(rel)]
	return ok
}

// maybeThere is listed, but true when the directory cannot be listed
// (then only an open can tell).
func (l *protectLookup) maybeThere(rel string) bool {
	m := l.list(parentOf(rel))
	if m == nil {
		return true
	}
	_, ok := m[path.Base(rel)]
	return ok
}

// kind is the S_IFMT of rel (no symlink followed), 0 when it is missing:
// from its directory's listing when that was read and gives the type,
// else by fstatat; remembered.
func (l *protectLookup) kind(rel string) uint32 {
	if k, ok := l.kinds[rel]; ok {
		return k
	}
	var k uint32
	typ, listed := uint8(unix.DT_UNKNOWN), false
	if dir, ok := l.dirs[parentOf(rel)]; ok {
		typ, listed = dir[path.Base(rel)]
		if !listed {
			typ = unix.DT_UNKNOWN
		}
	}
	switch {
	case listed && typ == unix.DT_DIR:
		k = unix.S_IFDIR
	case listed && typ == unix.DT_REG:
		k = unix.S_IFREG
	case listed && typ == unix.DT_LNK:
		k = unix.S_IFLNK
	case listed && typ != unix.DT_UNKNOWN:
		k = unix.S_IFIFO // some other type: what it is does not matter
	case l.dirs[parentOf(rel)] != nil:
		k = 0 // listed, and not there
	default:
		var st unix.Stat_t
		if unix.Fstatat(l.root, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			k = st.Mode & unix.S_IFMT
		}
	}
	l.kinds[rel] = k
	return k
}

// list reads the directory rel once (getdents, no stat): its entries'
// names and types; empty when it does not exist (or is no directory), nil
// when it cannot be read.
func (l *protectLookup) list(rel string) map[string]uint8 {
	if m, ok := l.dirs[rel]; ok {
		return m
	}
	if l.buf == nil {
		l.buf = make([]byte, 16<<10)
	}
	m := listDir(l.root, rel, l.buf)
	l.dirs[rel] = m
	return m
}

// listDir reads the directory rel below root into buf (getdents, no stat):
// its entries' names and types; empty when it does not exist (or is no
// directory), nil when it cannot be read.
func listDir(root int, rel string, buf []byte) map[string]uint8 {
	m := map[string]uint8{}
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		return m
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil // part of it: as good as none
		}
		if n <= 0 {
			return m
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return nil
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

func (l *protectLookup) openFD(rel string, flags int) (int, error) {
	return openBeneath(l.root, rel, flags)
}

// openBeneath opens rel ("" for root) beneath root, through no symlink.
func openBeneath(root int, rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	}
	return unix.Openat2(root, rel, &how)
}

// read reads the regular file rel, at most maxGitFile bytes, through no
// symlink (raw system calls: no poller registration for a short read).
func (l *protectLookup) read(rel string) ([]byte, bool) {
	fd, err := l.openFD(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false // a FIFO or device planted as .git or config
	}
	var out []byte
	buf := make([]byte, min(max(st.Size+1, 512), maxGitFile))
	for len(out) < maxGitFile {
		n, err := unix.Read(fd, buf[:min(len(buf), maxGitFile-len(out))])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n == 0 {
			break
		}
		out = append(out, buf[:n]...)
		if int64(len(out)) > st.Size {
			continue // grew since fstat: read on to the end or the cap
		}
		if int64(len(out)) == st.Size {
			break // all of it, no read for the end
		}
	}
	return out, true
}

// repo adds what worktree w protects: the plain entries in w, and when w
// has a .git, its git directory's entries.
func (l *protectLookup) repo(w string) {
	for _, e := range l.entries {
		if !strings.HasPrefix(e, ".git/") {
			l.rels[path.Join(w, e)] = true
		}
	}
	if !slices.ContainsFunc(l.entries, func(e string) bool { return strings.HasPrefix(e, ".git/") }) {
		return // nothing of git's to protect
	}
	dotgit := path.Join(w, ".git")
	switch l.kind(dotgit) {
	case 0:
		return
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
	hooks, config := slices.Contains(l.entries, ".git/hooks"), slices.Contains(l.entries, ".git/config")
	if !full {
		if config {
			l.rels[path.Join(g, "config.worktree")] = true
		}
		return
	}
	if hooks {
		l.require(path.Join(g, "hooks"), "create it (mkdir "+path.Join(g, "hooks")+"), or lift the list (protect = [])")
		l.hookLinks(path.Join(g, "hooks"))
	}
	if config {
		l.require(path.Join(g, "config"), "repair the repository (git init), or lift the list (protect = [])")
	}
	if cfg, ok := l.read(path.Join(g, "config")); ok && hooks {
		if hp := hooksPath(cfg); oddDots(hp) {
			l.fail("%s names core.hooksPath %q, a path with \"..\" after a name (which tooljail does not resolve); name the directory plainly, or lift the list (protect = [])", path.Join(g, "config"), hp)
		} else if hp != "" {
			if h, ok := l.within(w, hp); ok {
				l.require(h, "create the directory core.hooksPath names, or lift the list (protect = [])")
				l.hookLinks(h)
			}
		}
	}
	for _, sub := range l.subdirs(path.Join(g, "modules")) {
		if l.kind(path.Join(sub, "HEAD")) != 0 {
			l.gitdir(w, sub, true)
		}
	}
}

// hookLinks protects what the symlinks in the hooks directory dir name
// inside the bind (a hook linked to a script the project keeps): the
// directory is read-only, but a command could rewrite the script, which
// git runs on the host. Such a target must exist and be reached through no
// other symlink. A target outside the bind is not writable through it.
func (l *protectLookup) hookLinks(dir string) {
	entries := l.list(dir)
	if !slices.ContainsFunc(slices.Collect(maps.Values(entries)), func(t uint8) bool { return t == unix.DT_LNK || t == unix.DT_UNKNOWN }) {
		return // no link (or missing: required, the run fails; or unreadable)
	}
	dfd, err := openBeneath(l.root, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	buf := make([]byte, unix.PathMax)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		typ := entries[name]
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				typ = unix.DT_LNK
			}
		}
		if typ != unix.DT_LNK {
			continue
		}
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil || n == 0 || n >= len(buf) {
			continue
		}
		if oddDots(string(buf[:n])) {
			l.fail("%s is a symlink to %q, a path with \"..\" after a name (which tooljail does not resolve); make it a file, or lift the list (protect = [])", path.Join(dir, name), buf[:n])
			continue
		}
		if target, ok := l.within(dir, string(buf[:n])); ok {
			l.require(target, "make "+path.Join(dir, name)+" a file rather than a symlink into the bind, or lift the list (protect = [])")
		}
	}
}

func (l *protectLookup) fail(format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf(format, args...)
	}
}

// oddDots says whether the relative path p has a ".." after a name
// ("a/../b"): the kernel resolves it through whatever a is (a symlink,
// perhaps), which a textual join would not. Leading ".." components and
// absolute paths are resolved exactly by within.
func oddDots(p string) bool {
	if path.IsAbs(p) {
		return strings.Contains("/"+p+"/", "/../")
	}
	named := false
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "..":
			if named {
				return true
			}
		case ".", "":
		default:
			named = true
		}
	}
	return false
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
