package changes

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// richFixture makes a project and a set that touches every kind of
// entry; want is the project as the set leaves it.
func richFixture(t *testing.T) (f *fixture, id string) {
	f = newFixture(t)
	writeTree(t, f.host, map[string]string{
		"keep.txt":         "untouched",
		"mod.txt":          "old content",
		"gone.txt":         "to delete",
		"olddir/a":         "a",
		"olddir/sub/b":     "b",
		"chmod.sh":         "#!/bin/sh\n",
		"file2dir":         "was a file",
		"dir2file/x":       "x",
		"src/main.go":      "package main\n",
		"link":             "",
		"existingdir/keep": "k",
	})
	must(t, os.Remove(filepath.Join(f.host, "link")))
	must(t, os.Symlink("keep.txt", filepath.Join(f.host, "link")))
	f.file("new.txt", "brand new\n", 0o640)
	f.file("mod.txt", "new content", 0o644)
	f.del("gone.txt")
	f.del("olddir")
	f.chmod("chmod.sh", 0o755)
	f.chmod("existingdir", 0o750)
	f.dir("newdir", 0o711)
	f.dir("newdir/deeper", 0o755)
	f.file("newdir/deeper/f", "deep", 0o600)
	f.dir("file2dir", 0o755)
	f.file("file2dir/inside", "in", 0o644)
	f.file("dir2file", "now a file", 0o644)
	f.symlink("newlink", "new.txt")
	f.symlink("link", "mod.txt")
	f.file("src/main.go", "package main // edited\n", 0o644)
	f.file("existingdir/added", "added", 0o644)
	return f, f.finish()
}

func checkRichApplied(t *testing.T, host string) {
	t.Helper()
	for rel, want := range map[string]string{
		"keep.txt": "untouched", "mod.txt": "new content", "new.txt": "brand new\n",
		"newdir/deeper/f": "deep", "file2dir/inside": "in", "dir2file": "now a file",
		"src/main.go": "package main // edited\n", "existingdir/added": "added", "existingdir/keep": "k",
	} {
		if got := readString(t, filepath.Join(host, rel)); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	for _, rel := range []string{"gone.txt", "olddir", "dir2file/x"} {
		if _, err := os.Lstat(filepath.Join(host, rel)); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("%s still there: %v", rel, err)
		}
	}
	for rel, want := range map[string]os.FileMode{
		"new.txt": 0o640, "chmod.sh": 0o755, "existingdir": os.ModeDir | 0o750, "newdir": os.ModeDir | 0o711,
		"newdir/deeper/f": 0o600, "file2dir": os.ModeDir | 0o755,
	} {
		fi, err := os.Lstat(filepath.Join(host, rel))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", rel, fi.Mode(), err, want)
		}
	}
	for rel, want := range map[string]string{"newlink": "new.txt", "link": "mod.txt"} {
		if got, err := os.Readlink(filepath.Join(host, rel)); got != want {
			t.Errorf("%s -> %q (%v), want %q", rel, got, err, want)
		}
	}
	if l := leftovers(t, host); len(l) > 0 {
		t.Errorf("left in the project: %v", l)
	}
}

func TestApply(t *testing.T) {
	f, id := richFixture(t)
	res, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	if res.ID != id || res.Applied != len(f.changes) || len(res.Skipped) != 0 || len(res.Conflicts) != 0 {
		t.Errorf("result %+v", res)
	}
	checkRichApplied(t, f.host)
	set, err := f.s.Get(id)
	must(t, err)
	if set.State != StateApplied {
		t.Errorf("state %q", set.State)
	}
	for _, gone := range []string{upperDir, journalFile} {
		if _, err := os.Lstat(filepath.Join(f.s.Dir(), id, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s kept after the apply: %v", gone, err)
		}
	}
	if _, err := f.s.Apply(id, ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "already applied") {
		t.Errorf("second Apply = %v", err)
	}
	// The copies were moved aside, with what the apply replaced in the
	// project (one object per step that replaced one); the next
	// collection removes them and keeps the applied set's record.
	if _, err := os.Lstat(filepath.Join(f.s.Dir(), id, trashDir)); err != nil {
		t.Errorf("the applied set's copies: %v", err)
	}
	if got := leftovers(t, f.host); len(got) != 0 {
		t.Errorf("temporary names left in the project: %v", got)
	}
	replaced, err := os.ReadDir(filepath.Join(f.s.Dir(), id, trashDir, replacedDir))
	must(t, err)
	if len(replaced) == 0 {
		t.Error("nothing replaced was moved aside")
	}
	if _, err := f.s.GC(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(f.s.Dir(), id, trashDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("GC left an applied set's copies: %v", err)
	}
	if _, err := f.s.Get(id); err != nil {
		t.Errorf("GC removed an applied set's record: %v", err)
	}
}

// A modified file keeps its inode's neighbours: the unchanged files are
// the same objects after the apply (nothing but the set was rewritten).
func TestApplyTouchesOnlyTheSet(t *testing.T) {
	f, id := richFixture(t)
	before := snapshot(t, f.host)
	_, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	after := snapshot(t, f.host)
	for _, rel := range []string{"keep.txt", "existingdir/keep", "src"} {
		if before[rel] != after[rel] && rel != "src" {
			t.Errorf("%s rewritten: %s -> %s", rel, before[rel], after[rel])
		}
	}
}

func TestApplyConflicts(t *testing.T) {
	for name, edit := range map[string]func(host string){
		"modified": func(h string) { os.WriteFile(filepath.Join(h, "mod.txt"), []byte("someone else"), 0o644) },
		"deleted":  func(h string) { os.Remove(filepath.Join(h, "mod.txt")) },
		"created":  func(h string) { os.WriteFile(filepath.Join(h, "new.txt"), []byte("theirs"), 0o644) },
		"chmod":    func(h string) { os.Chmod(filepath.Join(h, "mod.txt"), 0o600) },
		"replaced": func(h string) {
			os.Rename(filepath.Join(h, "keep.txt"), filepath.Join(h, "mod.txt"))
		},
		"dir deleted since": func(h string) { os.RemoveAll(filepath.Join(h, "olddir")) },
	} {
		t.Run(name, func(t *testing.T) {
			f, id := richFixture(t)
			edit(f.host)
			before := snapshot(t, f.host)
			_, err := f.s.Apply(id, ApplyOptions{})
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.ID != id || len(ce.Conflicts) == 0 {
				t.Fatalf("Apply = %v", err)
			}
			if !reflect.DeepEqual(before, snapshot(t, f.host)) {
				t.Errorf("a conflicting apply changed the project")
			}
			set, err := f.s.Get(id)
			must(t, err)
			if set.State != StateConflict {
				t.Errorf("refused set: state %q, want %q", set.State, StateConflict)
			}
			res, err := f.s.Apply(id, ApplyOptions{Force: true})
			must(t, err)
			if len(res.Conflicts) == 0 || readString(t, filepath.Join(f.host, "mod.txt")) != "new content" {
				t.Errorf("forced: %+v", res)
			}
			if l := leftovers(t, f.host); len(l) > 0 {
				t.Errorf("left in the project: %v", l)
			}
		})
	}
}

// A symlink planted in the project after the run, in place of a
// directory the set writes into: the apply refuses, forced or not, and
// writes nothing anywhere.
func TestApplyRefusesPlantedSymlink(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"sub/old": "o", "a.txt": "a"})
	f.file("a.txt", "changed", 0o644)
	f.file("sub/new.txt", "new", 0o644)
	f.file("sub/old", "changed", 0o644)
	id := f.finish()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"old": "outside's"})
	must(t, os.RemoveAll(filepath.Join(f.host, "sub")))
	must(t, os.Symlink(outside, filepath.Join(f.host, "sub")))
	before, beforeOut := snapshot(t, f.host), snapshot(t, outside)
	for _, force := range []bool{false, true} {
		_, err := f.s.Apply(id, ApplyOptions{Force: force})
		if err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("Apply(force %v) = %v", force, err)
		}
	}
	if !reflect.DeepEqual(before, snapshot(t, f.host)) || !reflect.DeepEqual(beforeOut, snapshot(t, outside)) {
		t.Error("the apply wrote something")
	}
}

// The bind's directory itself replaced since the run: not the project.
func TestApplyRefusesReplacedBind(t *testing.T) {
	f := newFixture(t)
	f.file("a", "a", 0o644)
	id := f.finish()
	must(t, os.Rename(f.host, f.host+".moved"))
	must(t, os.Mkdir(f.host, 0o755))
	if _, err := f.s.Apply(id, ApplyOptions{Force: true}); err == nil || !strings.Contains(err.Error(), "no longer the directory") {
		t.Errorf("Apply = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.host, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Error("written into the replacement")
	}
}

func TestApplySkipsProtectedAndSpecial(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{".git/hooks/pre-commit": "safe"})
	f.file(".git/hooks/pre-commit", "evil", 0o755)
	f.changes[0].Protected = true
	f.mkparent("fifo")
	must(t, unix.Mkfifo(f.upper("fifo"), 0o644))
	f.add("fifo", "", TypeFIFO, Entry{Skipped: "a FIFO: special files are not applied"})
	f.file("ok", "ok", 0o644)
	id := f.finish()
	res, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	if res.Applied != 1 || len(res.Skipped) != 2 {
		t.Errorf("result %+v", res)
	}
	if got := readString(t, filepath.Join(f.host, ".git/hooks/pre-commit")); got != "safe" {
		t.Errorf("protected file written: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(f.host, "fifo")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FIFO applied: %v", err)
	}
}

func TestApplyHardLinks(t *testing.T) {
	f := newFixture(t)
	f.file("a", "shared", 0o644)
	f.dir("z", 0o755)
	must(t, os.Link(f.upper("a"), f.upper("z/b")))
	f.add("z/b", "", TypeFile, Entry{Size: 6, Mode: "0644", Link: "a"})
	id := f.finish()
	_, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	a, err1 := os.Stat(filepath.Join(f.host, "a"))
	b, err2 := os.Stat(filepath.Join(f.host, "z/b"))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Errorf("not one file: %v %v", err1, err2)
	}
}

func TestApplySparseFile(t *testing.T) {
	f := newFixture(t)
	f.mkparent("sparse")
	w, err := os.Create(f.upper("sparse"))
	must(t, err)
	_, err = w.WriteAt([]byte("head"), 0)
	must(t, err)
	_, err = w.WriteAt(bytes.Repeat([]byte("d"), 4096), 8<<20)
	must(t, err)
	must(t, w.Truncate(16<<20))
	must(t, w.Close())
	f.add("sparse", "", TypeFile, Entry{Size: 16 << 20, Mode: "0644"})
	id := f.finish()
	_, err = f.s.Apply(id, ApplyOptions{})
	must(t, err)
	p := filepath.Join(f.host, "sparse")
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Size() != 16<<20 {
		t.Fatalf("size %d", fi.Size())
	}
	if blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 1<<20 { // 16 MiB if filled
		t.Errorf("holes filled: %d bytes on disk for a file of 8 KiB of data", blocks)
	}
	got, err := os.ReadFile(p)
	must(t, err)
	want := make([]byte, 16<<20)
	copy(want, "head")
	copy(want[8<<20:], bytes.Repeat([]byte("d"), 4096))
	if !bytes.Equal(got, want) {
		t.Error("content differs")
	}
}

func TestApplyModeAndXattrs(t *testing.T) {
	f := newFixture(t)
	f.file("tool", "#!/bin/sh\n", 0o750)
	must(t, unix.Setxattr(f.upper("tool"), "user.origin", []byte("agent"), 0))
	must(t, unix.Setxattr(f.upper("tool"), "user.overlay.origin", []byte("x"), 0))
	f.file("suid", "x", 0o755)
	must(t, os.Chmod(f.upper("suid"), 0o755|os.ModeSetuid|os.ModeSetgid))
	f.dir("d", os.ModeSetgid|0o775)
	must(t, unix.Setxattr(f.upper("d"), "user.dir", []byte("yes"), 0))
	must(t, unix.Setxattr(f.upper("d"), "user.overlay.opaque", []byte("y"), 0))
	id := f.finish()
	_, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	for rel, want := range map[string]os.FileMode{"tool": 0o750, "suid": 0o755, "d": os.ModeDir | os.ModeSetgid | 0o775} {
		fi, err := os.Lstat(filepath.Join(f.host, rel))
		must(t, err)
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode(), want)
		}
	}
	buf := make([]byte, 64)
	for _, c := range []struct{ rel, name, want string }{{"tool", "user.origin", "agent"}, {"d", "user.dir", "yes"}} {
		n, err := unix.Getxattr(filepath.Join(f.host, c.rel), c.name, buf)
		if err != nil || string(buf[:n]) != c.want {
			t.Errorf("%s %s = %q, %v", c.rel, c.name, buf[:max(n, 0)], err)
		}
	}
	for _, c := range []struct{ rel, name string }{{"tool", "user.overlay.origin"}, {"d", "user.overlay.opaque"}} {
		if _, err := unix.Getxattr(filepath.Join(f.host, c.rel), c.name, buf); !errors.Is(err, unix.ENODATA) {
			t.Errorf("%s: overlayfs's %s copied: %v", c.rel, c.name, err)
		}
	}
}

func TestApplyLargeFile(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"big": "small before"})
	f.mkparent("big")
	w, err := os.Create(f.upper("big"))
	must(t, err)
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	for i := 0; i < 100; i++ {
		for j := range chunk {
			chunk[j] = byte(i*7 + j*13)
		}
		w.Write(chunk)
		h.Write(chunk)
	}
	must(t, w.Close())
	f.add("big", "", TypeFile, Entry{Size: 100 << 20, Mode: "0644"})
	id := f.finish()
	_, err = f.s.Apply(id, ApplyOptions{})
	must(t, err)
	r, err := os.Open(filepath.Join(f.host, "big"))
	must(t, err)
	defer r.Close()
	h2 := sha256.New()
	n, err := io.Copy(h2, r)
	must(t, err)
	if n != 100<<20 || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
		t.Errorf("applied %d bytes, content equal %v", n, bytes.Equal(h.Sum(nil), h2.Sum(nil)))
	}
}

func TestOwnerFor(t *testing.T) {
	old := &unix.Stat_t{Uid: 4242, Gid: 4343}
	src := &unix.Stat_t{Uid: 100000, Gid: 100000}
	idm := BindInfo{UID: 1000, GID: 1001}
	plain := BindInfo{UID: -1, GID: -1}
	for _, c := range []struct {
		name     string
		b        BindInfo
		euid     int
		src, old *unix.Stat_t
		uid, gid int
		ok       bool
	}{
		{"root replaces: the old owner stays", idm, 0, src, old, 4242, 4343, true},
		{"root creates, idmapped bind", idm, 0, src, nil, 1000, 1001, true},
		{"root creates, plain bind: the jail's owner", plain, 0, src, nil, 100000, 100000, true},
		{"root creates a symlink, plain bind", plain, 0, nil, nil, 0, 0, false},
		{"user replaces", plain, 1000, src, old, 0, 0, false},
		{"user creates", plain, 1000, src, nil, 0, 0, false},
	} {
		uid, gid, ok := ownerFor(c.b, c.euid, c.src, c.old)
		if uid != c.uid || gid != c.gid || ok != c.ok {
			t.Errorf("%s: %d:%d %v; want %d:%d %v", c.name, uid, gid, ok, c.uid, c.gid, c.ok)
		}
	}
}

func TestApplyOwnerAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (TestOwnerFor covers the decision)")
	}
	f := newFixture(t)
	f.bind.UID, f.bind.GID = 12345, 12346
	writeTree(t, f.host, map[string]string{"theirs.txt": "x"})
	must(t, os.Chown(filepath.Join(f.host, "theirs.txt"), 4242, 4343))
	f.file("theirs.txt", "edited", 0o644)
	f.dir("new", 0o755)
	f.file("new/made.txt", "new", 0o644)
	f.symlink("ln", "new")
	id := f.finish()
	_, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	for rel, want := range map[string][2]uint32{"theirs.txt": {4242, 4343}, "new": {12345, 12346}, "new/made.txt": {12345, 12346}, "ln": {12345, 12346}} {
		fi, err := os.Lstat(filepath.Join(f.host, rel))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != want[0] || st.Gid != want[1] {
			t.Errorf("%s: %d:%d, want %d:%d", rel, st.Uid, st.Gid, want[0], want[1])
		}
	}
}

func TestStampDiff(t *testing.T) {
	base := Stamp{Exists: true, Dev: 1, Ino: 2, Mode: unix.S_IFREG | 0o644, Size: 10, Mtime: 5, Ctime: 6}
	with := func(f func(*Stamp)) Stamp { s := base; f(&s); return s }
	for _, c := range []struct {
		base, now Stamp
		want      string
	}{
		{base, base, ""},
		{Stamp{}, Stamp{}, ""},
		{Stamp{}, base, "created"},
		{base, Stamp{}, "deleted"},
		{base, with(func(s *Stamp) { s.Ino = 3 }), "replaced"},
		{base, with(func(s *Stamp) { s.Mode = unix.S_IFDIR | 0o644 }), "type"},
		{base, with(func(s *Stamp) { s.Mode = unix.S_IFREG | 0o600 }), "mode changed since the run (0644 -> 0600)"},
		{base, with(func(s *Stamp) { s.Size = 12 }), "size 10 -> 12"},
		{base, with(func(s *Stamp) { s.Mtime = 7 }), "modified"},
		{base, with(func(s *Stamp) { s.Ctime = 7 }), "modified"},
		{with(func(s *Stamp) { s.Mode = unix.S_IFDIR | 0o755 }), with(func(s *Stamp) { s.Mode = unix.S_IFDIR | 0o755; s.Size = 4096 }), ""},
	} {
		got := stampDiff(c.base, c.now)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("stampDiff(%+v, %+v) = %q, want %q", c.base, c.now, got, c.want)
		}
	}
}

// A damaged set.json (an entry naming ".." or another bind) is refused
// before anything is looked up.
func TestApplyRefusesDamagedSet(t *testing.T) {
	for name, edit := range map[string]func(c *Change){
		"dotdot":     func(c *Change) { c.Path = "../outside" },
		"absolute":   func(c *Change) { c.Path = "/etc/passwd" },
		"other bind": func(c *Change) { c.Bind = "/elsewhere" },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.file("a", "a", 0o644)
			edit(&f.changes[0])
			id := f.finish()
			if _, err := f.s.Apply(id, ApplyOptions{Force: true}); err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Errorf("Apply = %v", err)
			}
		})
	}
}

// A command that made its files and directories unreadable (chmod 000)
// leaves copies their unprivileged owner cannot read: apply still writes
// them, with the modes the command gave them.
func TestApplyUnreadableCopies(t *testing.T) {
	f := newFixture(t)
	f.dir("d", 0o700)
	f.file("d/f", "inner\n", 0o600)
	f.file("secret", "s\n", 0o600)
	must(t, os.Chmod(f.upper("d/f"), 0))
	must(t, os.Chmod(f.upper("d"), 0))
	must(t, os.Chmod(f.upper("secret"), 0))
	for i := range f.changes {
		f.changes[i].Mode = "0000"
	}
	id := f.finish()
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+rwx", f.s.Dir(), f.host).Run() })
	if _, err := f.s.Apply(id, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"d", "d/f", "secret"} {
		fi, err := os.Lstat(filepath.Join(f.host, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0 {
			t.Errorf("%s: mode %v, want the command's 0000", rel, fi.Mode())
		}
		os.Chmod(filepath.Join(f.host, rel), 0o700) // to look inside
	}
	for rel, want := range map[string]string{"d/f": "inner\n", "secret": "s\n"} {
		if b, err := os.ReadFile(filepath.Join(f.host, rel)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v", rel, b, err)
		}
	}
}

// Deleted entries below a deleted directory (an opaque directory's
// listing) are gone with it.
func TestApplyNestedDeletes(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"d/a": "a", "d/sub/b": "b", "e/x": "x"})
	f.del("d")
	f.del("d/a")
	f.del("d/sub")
	f.del("d/sub/b")
	f.del("e/x")
	id := f.finish()
	res, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	if res.Applied != 5 {
		t.Errorf("result %+v", res)
	}
	for _, rel := range []string{"d", "e/x"} {
		if _, err := os.Lstat(filepath.Join(f.host, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", rel, err)
		}
	}
	if l := leftovers(t, f.host); len(l) > 0 {
		t.Errorf("left in the project: %v", l)
	}
}

// Where the store and the project do not share a mount, what the apply
// replaced cannot be moved into the store: it is removed at once, and
// nothing is left in the project.
func TestApplyReplacedAcrossMounts(t *testing.T) {
	var a, b unix.Stat_t
	must(t, unix.Stat(os.TempDir(), &a))
	must(t, unix.Stat("/dev/shm", &b))
	if a.Dev == b.Dev {
		t.Skip("/dev/shm and the temporary directory share a file system here")
	}
	dir, err := os.MkdirTemp("/dev/shm", "tjstore-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Open(filepath.Join(dir, "store"), Options{})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	host := filepath.Join(t.TempDir(), "project")
	must(t, os.Mkdir(host, 0o755))
	writeTree(t, host, map[string]string{"a.txt": "old\n"})
	f := newFixtureIn(t, s, host)
	f.file("a.txt", "new\n", 0o644)
	id := f.finish()
	_, err = s.Apply(id, ApplyOptions{})
	must(t, err)
	if got := readString(t, filepath.Join(host, "a.txt")); got != "new\n" {
		t.Errorf("a.txt = %q", got)
	}
	if got := leftovers(t, host); len(got) != 0 {
		t.Errorf("temporary names left in the project: %v", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "store", id, trashDir, replacedDir, "0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replaced file crossed mounts into the store: %v", err)
	}
}
