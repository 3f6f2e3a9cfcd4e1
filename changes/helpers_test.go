package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fixture is a store, a project directory (the bind's host side) and a
// pending change set whose upper layer the test writes by hand, with the
// []Change that Scan would have made of it.
type fixture struct {
	t       testing.TB
	s       *Store
	host    string
	p       *Pending
	bind    BindInfo
	changes []Change
	started time.Time
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	host := filepath.Join(t.TempDir(), "project")
	must(t, os.Mkdir(host, 0o755))
	return newFixtureIn(t, newStore(t), host)
}

func newFixtureIn(t testing.TB, s *Store, host string) *fixture {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(host, &st))
	p, err := s.Create(1, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, s: s, host: host, p: p,
		bind: BindInfo{Dest: "/work", Host: host, Dev: st.Dev, Ino: st.Ino, UID: -1, GID: -1}}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) upper(rel string) string {
	return filepath.Join(f.s.Dir(), f.p.ID, upperDir, "0", rel)
}

// stamp is the host path's Stamp, as Scan records it.
func stamp(t testing.TB, p string) Stamp {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return Stamp{}
	}
	s := stampOfStat(&st)
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		b, err := os.ReadFile(p)
		must(t, err)
		sum := sha256.Sum256(b)
		s.SHA256 = hex.EncodeToString(sum[:])
	}
	return s
}

func (f *fixture) add(rel, kind, typ string, e Entry) {
	e.Bind, e.Path, e.Kind, e.Type = f.bind.Dest, rel, kind, typ
	base := stamp(f.t, filepath.Join(f.host, rel))
	if e.Kind == "" {
		switch {
		case !base.Exists:
			e.Kind = Created
		case typ == TypeSymlink && base.Mode&unix.S_IFMT == unix.S_IFLNK:
			e.Kind = Symlink
		case base.Mode&unix.S_IFMT == unix.S_IFDIR && typ == TypeDir,
			base.Mode&unix.S_IFMT == unix.S_IFREG && typ == TypeFile:
			e.Kind = Modified
		default:
			e.Kind = TypeChanged
		}
	}
	f.changes = append(f.changes, Change{Entry: e, Base: base})
}

func (f *fixture) mkparent(rel string) {
	must(f.t, os.MkdirAll(filepath.Dir(f.upper(rel)), 0o755))
}

func (f *fixture) file(rel, content string, mode os.FileMode) {
	f.mkparent(rel)
	must(f.t, os.WriteFile(f.upper(rel), []byte(content), mode))
	must(f.t, os.Chmod(f.upper(rel), mode))
	sum := sha256.Sum256([]byte(content))
	f.add(rel, "", TypeFile, Entry{Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), Mode: fmt.Sprintf("%04o", mode.Perm())})
}

func (f *fixture) dir(rel string, mode os.FileMode) {
	f.mkparent(rel)
	must(f.t, os.Mkdir(f.upper(rel), mode))
	must(f.t, os.Chmod(f.upper(rel), mode))
	f.add(rel, "", TypeDir, Entry{Mode: fmt.Sprintf("%04o", mode.Perm())})
}

func (f *fixture) symlink(rel, target string) {
	f.mkparent(rel)
	must(f.t, os.Symlink(target, f.upper(rel)))
	f.add(rel, "", TypeSymlink, Entry{Target: target})
}

func (f *fixture) del(rel string) {
	typ := TypeFile
	if fi, err := os.Lstat(filepath.Join(f.host, rel)); err == nil && fi.IsDir() {
		typ = TypeDir
	}
	f.add(rel, Deleted, typ, Entry{})
}

func (f *fixture) chmod(rel string, mode os.FileMode) {
	typ := TypeFile
	if fi, err := os.Lstat(filepath.Join(f.host, rel)); err == nil && fi.IsDir() {
		typ = TypeDir
	}
	f.add(rel, ModeChanged, typ, Entry{Mode: fmt.Sprintf("%04o", mode.Perm())})
}

// run is the run's record; it started after the test set up the host
// unless the test says when.
func (f *fixture) run() RunInfo {
	started := f.started
	if started.IsZero() {
		started = time.Now()
	}
	return RunInfo{Argv: []string{"sh", "-c", "edit"}, Started: started, Ended: time.Now(), Mode: Review,
		Owner: os.Getuid(), Binds: []BindInfo{f.bind}, Protect: []string{".git/hooks"}}
}

// finish keeps the set and returns its id.
func (f *fixture) finish() string {
	f.t.Helper()
	sort.Slice(f.changes, func(i, j int) bool { return f.changes[i].Path < f.changes[j].Path })
	rep, err := f.p.finishWith(f.run(), f.changes)
	if err != nil {
		f.t.Fatal(err)
	}
	if rep.ID != f.p.ID {
		f.t.Fatalf("report %+v: want id %s", rep, f.p.ID)
	}
	return rep.ID
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if strings.HasSuffix(rel, "/") {
			must(t, os.MkdirAll(p, 0o755))
			continue
		}
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// snapshot describes every path below root: type, permissions, owner,
// inode, content or target.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v ino=%d uid=%d gid=%d", fi.Mode(), st.Ino, st.Uid, st.Gid)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		if rel != "." {
			out[rel] = desc
		}
		return nil
	})
	must(t, err)
	return out
}

// leftovers are the names an apply may leave behind by mistake.
func leftovers(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tooljail-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func readString(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

func statOwner(t testing.TB, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}
