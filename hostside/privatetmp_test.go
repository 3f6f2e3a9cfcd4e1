package hostside

import (
	"os"
	"path/filepath"
	"testing"
)

// The private directory goes with everything the run left in it: read-only
// and unreadable directories included, and a symlink out of it is removed,
// never followed.
func TestPrivateTmpRemoved(t *testing.T) {
	parent := t.TempDir()
	t.Setenv("TMPDIR", parent)
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	me := ID{UID: os.Geteuid(), GID: os.Getegid()}
	tmp, err := MakePrivateTmp("test", me, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(tmp.Path()); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Fatalf("%s: %v %v, want a 0700 directory", tmp.Path(), st, err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(tmp.Path(), p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("a/b/c")
	mk("ro")
	mk("closed/inner")
	for _, f := range []string{"a/b/c/f", "ro/f", "closed/inner/f", "top"} {
		if err := os.WriteFile(filepath.Join(tmp.Path(), f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(tmp.Path(), "link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(tmp.Path(), "ro"), 0o500)
	os.Chmod(filepath.Join(tmp.Path(), "closed"), 0)
	if err := tmp.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp.Path()); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", tmp.Path(), err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("what a symlink in it pointed to was removed: %v", err)
	}
}

// A dead run's private directory (unlocked) goes at the next run of the
// same identity; a live run's (locked), another identity's and anything
// else stay.
func TestStalePrivateTmpRemoved(t *testing.T) {
	parent := t.TempDir()
	t.Setenv("TMPDIR", parent)
	me := ID{UID: os.Geteuid(), GID: os.Getegid()}
	dead, err := MakePrivateTmp("00000000000000d1", me, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead.Path(), "left"), nil, 0o600)
	dead.Close() // its supervisor died: the lock is gone with it
	live, err := MakePrivateTmp("00000000000000a1", me, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	other := filepath.Join(parent, "tooljail-00000000000000b1")
	keep := filepath.Join(parent, "tooljail-notarun")
	for _, d := range []string{other, keep} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		os.Chown(other, 4242, 4242)
	} else {
		other = "" // cannot make another identity's here
	}
	next, err := MakePrivateTmp("00000000000000c1", me, false)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Remove()
	if _, err := os.Lstat(dead.Path()); !os.IsNotExist(err) {
		t.Errorf("the dead run's %s is still there: %v", dead.Path(), err)
	}
	for _, d := range []string{live.Path(), keep, other} {
		if _, err := os.Lstat(d); d != "" && err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
