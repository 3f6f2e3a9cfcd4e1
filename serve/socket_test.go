package serve

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestListenModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, "sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, os.ModeDir | 0o700}, {path, os.ModeSocket | 0o600}} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.want)
		}
	}
}

func TestListenLiveRefused(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Listen(path)
	if !errors.Is(err, ErrListening) || !strings.Contains(err.Error(), "a server is already listening on "+path) {
		t.Fatalf("a second Listen: %v", err)
	}
	// The live server's socket is untouched.
	if c, err := net.Dial("unix", path); err != nil {
		t.Errorf("the first server is no longer reachable: %v", err)
	} else {
		c.Close()
	}
}

func TestListenStaleReplaced(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	// A socket file nobody listens on, as a killed server leaves it.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatal(err)
	}
	l2, err := Listen(path)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	l2.Close()
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	os.WriteFile(path, []byte("data"), 0o600)
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "data" {
		t.Error("the file was changed")
	}
}

func TestDirProblem(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		os.Mkdir(p, mode)
		os.Chmod(p, mode)
		return p
	}
	link := filepath.Join(base, "link")
	os.Symlink(mk("target", 0o700), link)
	uid := os.Geteuid()
	for _, c := range []struct {
		path string
		uid  int
		want string // "" for none
	}{
		{mk("private", 0o700), uid, ""},
		{mk("shared-read", 0o755), uid, "lets other users in"},
		{mk("group-enter", 0o710), uid, "lets other users in"},
		{mk("group-writable", 0o770), uid, "lets other users in"},
		{mk("sticky", 0o1777), uid, "lets other users in"},
		{mk("other-owner", 0o700), uid + 1, "owned by uid"},
		{link, uid, "not a directory"},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		err = dirProblem(c.path, fi, c.uid)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if p := DefaultPath(); p != "/run/user/1000/tooljail.sock" {
		t.Errorf("with XDG_RUNTIME_DIR: %s", p)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	want := "/run/tooljail.sock"
	if os.Geteuid() != 0 {
		want = "/tmp/tooljail-" + strconv.Itoa(os.Geteuid()) + "/sock"
	}
	if p := DefaultPath(); p != want {
		t.Errorf("DefaultPath %s, want %s", p, want)
	}
	t.Setenv("TOOLJAIL_SERVER", "/elsewhere/sock")
	if p := ClientPath(); p != "/elsewhere/sock" {
		t.Errorf("ClientPath with TOOLJAIL_SERVER: %s", p)
	}
}

// privateDir is a temporary directory only its owner can enter, as a
// socket's directory must be.
func privateDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
