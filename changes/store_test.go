package changes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"syscall"

	"golang.org/x/sys/unix"
)

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		euid      int
		home, xdg string
		want      string
		err       bool
	}{
		{0, "/root", "/root/.state", "/var/lib/tooljail/changes", false},
		{1000, "/home/a", "", "/home/a/.local/state/tooljail/changes", false},
		{1000, "/home/a", "/home/a/st", "/home/a/st/tooljail/changes", false},
		{1000, "/home/a", "rel/st", "/home/a/.local/state/tooljail/changes", false}, // XDG: relative is ignored
		{1000, "", "", "", true},
		{1000, "home", "", "", true},
	} {
		got, err := DefaultDir(c.euid, c.home, c.xdg)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("DefaultDir(%d, %q, %q) = %q, %v; want %q (error %v)", c.euid, c.home, c.xdg, got, err, c.want, c.err)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef":  true,
		"0123456789ABCDEF0123456789abcdef":  false,
		"0123456789abcdef0123456789abcde":   false,
		"0123456789abcdef0123456789abcdef0": false,
		"../456789abcdef0123456789abcdef01": false,
		"0123456789abcdef012345678/abcdef":  false,
		"":                                  false,
	} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v", id, !want)
		}
	}
	id, err := newID()
	must(t, err)
	if !ValidID(id) {
		t.Errorf("newID() = %q, not valid", id)
	}
}

func TestIDCheckedBeforeUse(t *testing.T) {
	s := newStore(t)
	// A directory named like an escape must never be reached.
	for _, id := range []string{"..", "../store", "/etc", "0123456789ABCDEF0123456789abcdef", ""} {
		if _, err := s.Get(id); err == nil || !strings.Contains(err.Error(), "not a change set id") {
			t.Errorf("Get(%q) = %v", id, err)
		}
		if _, err := s.Apply(id, ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "not a change set id") {
			t.Errorf("Apply(%q) = %v", id, err)
		}
		if err := s.Discard(id); err == nil || !strings.Contains(err.Error(), "not a change set id") {
			t.Errorf("Discard(%q) = %v", id, err)
		}
	}
	if err := s.Discard("0123456789abcdef0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "no change set") {
		t.Errorf("Discard(missing) = %v", err)
	}
}

func TestStoreRefusal(t *testing.T) {
	for _, c := range []struct {
		mode uint32
		uid  uint32
		euid int
		want string
	}{
		{unix.S_IFDIR | 0o700, 1000, 1000, ""},
		{unix.S_IFDIR | 0o700, 0, 0, ""},
		{unix.S_IFDIR | 0o750, 1000, 1000, "chmod 700"},
		{unix.S_IFDIR | 0o701, 1000, 1000, "chmod 700"},
		{unix.S_IFDIR | 0o700, 0, 1000, "belongs to uid 0"},
		{unix.S_IFDIR | 0o700, 1000, 0, "belongs to uid 1000"},
		{unix.S_IFREG | 0o600, 1000, 1000, "not a directory"},
	} {
		st := unix.Stat_t{Mode: c.mode, Uid: c.uid}
		got := storeRefusal(&st, c.euid)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("storeRefusal(%#o uid %d, euid %d) = %q; want %q", c.mode, c.uid, c.euid, got, c.want)
		}
	}
}

func TestOpenCreatesPrivateDirs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state", "tooljail", "changes")
	s, err := Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	for _, p := range []string{filepath.Join(base, "state"), filepath.Join(base, "state", "tooljail"), dir} {
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("%s: mode %v, want drwx------", p, fi.Mode())
		}
	}
	s2, err := Open(dir, Options{}) // it exists now
	must(t, err)
	s2.Close()
	if _, err := Open("relative/dir", Options{}); err == nil {
		t.Error("Open(relative) worked")
	}
}

func TestOpenRefusesSharedStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Chmod(dir, 0o755))
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("Open(0755 store) = %v", err)
	}
	must(t, os.Chmod(dir, 0o700))
	if os.Geteuid() != 0 {
		return // another owner needs root (storeRefusal's table covers it)
	}
	must(t, os.Chown(dir, 65534, 65534))
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("Open(another user's store) = %v", err)
	}
}

// A symlink in the store's path that a jailed run or another user could
// have planted is not followed: the store would be where they say.
func TestOpenRefusesPlantedSymlink(t *testing.T) {
	base := t.TempDir()
	elsewhere := filepath.Join(base, "elsewhere")
	must(t, os.Mkdir(elsewhere, 0o755))
	must(t, os.Mkdir(filepath.Join(base, "state"), 0o755))
	must(t, os.Symlink(elsewhere, filepath.Join(base, "state", "tooljail")))
	_, err := Open(filepath.Join(base, "state", "tooljail", "changes"), Options{})
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Open through a planted symlink = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "changes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store was made where the symlink points: %v", err)
	}
}

func TestCreateLayers(t *testing.T) {
	s := newStore(t)
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 65534, 65534
	}
	p, err := s.Create(2, uid, gid)
	must(t, err)
	if !ValidID(p.ID) || len(p.Upper) != 2 || len(p.Work) != 2 {
		t.Fatalf("Create = %+v", p)
	}
	for sub, want := range map[string]os.FileMode{"upper/0": 0o755, "upper/1": 0o755, "work/0": 0o700, "work/1": 0o700} {
		fi, err := os.Stat(filepath.Join(s.Dir(), p.ID, sub))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s: %v %d:%d; want %v %d:%d", sub, fi.Mode(), st.Uid, st.Gid, want, uid, gid)
		}
	}
	fi, err := os.Stat(filepath.Join(s.Dir(), p.ID))
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("set dir mode %v", fi.Mode())
	}
	// The set is locked while pending: no one else applies or removes it.
	if err := s.Discard(p.ID); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Discard(pending) = %v", err)
	}
	must(t, p.Abort())
	if _, err := os.Stat(filepath.Join(s.Dir(), p.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Abort left the set: %v", err)
	}
}

func TestFinishEmpty(t *testing.T) {
	f := newFixture(t)
	// What overlayfs leaves in work/: a directory of mode 0.
	must(t, os.Mkdir(filepath.Join(f.s.Dir(), f.p.ID, "work", "0", "work"), 0))
	rep, err := f.p.finishWith(f.run(), nil)
	must(t, err)
	if rep.State != StateEmpty || rep.ID != "" || !rep.Recorded || rep.Mode != Review || rep.Entries == nil {
		t.Errorf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(f.s.Dir(), f.p.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty set was kept: %v", err)
	}
}

func TestFinishKeepsSet(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"old.txt": "old\n", "gone.txt": "x"})
	must(t, os.Mkdir(filepath.Join(f.s.Dir(), f.p.ID, "work", "0", "work"), 0))
	f.file("new.txt", "hello\n", 0o644)
	f.file("old.txt", "new\n", 0o644)
	f.del("gone.txt")
	id := f.finish()
	if _, err := os.Stat(filepath.Join(f.s.Dir(), id, "work")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work/ kept: %v", err)
	}
	set, err := f.s.Get(id)
	must(t, err)
	if set.State != StateKept || len(set.Changes) != 3 || set.Totals.Created != 1 || set.Totals.Modified != 1 || set.Totals.Deleted != 1 ||
		set.Argv[0] != "sh" || set.Binds[0].Host != f.host || set.Owner != os.Getuid() {
		t.Errorf("set %+v", set)
	}
	if set.Changes[2].Base.SHA256 == "" || !set.Changes[2].Base.Exists {
		t.Errorf("baseline not kept: %+v", set.Changes[2])
	}
	list, err := f.s.List()
	must(t, err)
	if len(list) != 1 || list[0].ID != id || list[0].Size <= 0 || list[0].Totals.Entries != 3 {
		t.Errorf("List = %+v", list)
	}
	fi, err := os.Stat(filepath.Join(f.s.Dir(), id, setFile))
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("set.json mode %v", fi.Mode())
	}
}

// A host path that changed after the run started was changed by someone
// else (the command could not write the lower layer): the set says so,
// and apply refuses it.
func TestFinishFlagsChangesDuringRun(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"c.txt": "before the run"})
	f.started = time.Unix(0, stamp(t, filepath.Join(f.host, "c.txt")).Ctime+1)
	time.Sleep(50 * time.Millisecond) // past the file system's clock tick
	writeTree(t, f.host, map[string]string{"a.txt": "someone else's, during the run"})
	f.file("a.txt", "command's", 0o644)
	f.file("b.txt", "new", 0o644)
	f.file("c.txt", "command's", 0o644)
	rep, err := f.p.finishWith(f.run(), f.changes)
	must(t, err)
	if rep.State != StateConflict || len(rep.Conflicts) != 1 || rep.Conflicts[0].Path != "a.txt" {
		t.Fatalf("report %+v", rep)
	}
	var ce *ConflictError
	if _, err := f.s.Apply(rep.ID, ApplyOptions{}); !errors.As(err, &ce) || len(ce.Conflicts) != 1 || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("Apply = %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.host, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a conflicting set was partly applied")
	}
	res, err := f.s.Apply(rep.ID, ApplyOptions{Force: true})
	must(t, err)
	if len(res.Conflicts) != 1 || readString(t, filepath.Join(f.host, "a.txt")) != "command's" || readString(t, filepath.Join(f.host, "c.txt")) != "command's" {
		t.Errorf("forced apply: %+v", res)
	}
}

func TestDiscard(t *testing.T) {
	f := newFixture(t)
	f.file("x", "x", 0o644)
	id := f.finish()
	must(t, f.s.Discard(id))
	if _, err := f.s.Get(id); err == nil {
		t.Error("discarded set still there")
	}
	if _, err := os.Stat(filepath.Join(f.host, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Error("discard wrote the project")
	}
}
