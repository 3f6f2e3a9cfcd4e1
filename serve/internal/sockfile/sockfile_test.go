package sockfile

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	want := "/run/tooljail/sock"
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

// staleSocket leaves a socket file nobody listens on at path, as a killed
// server does; with deadPID, also the lock file it leaves, naming a
// process that has exited.
func staleSocket(t *testing.T, path string, deadPID bool) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if deadPID {
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+LockSuffix, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListenRace: two servers starting at once on a stale socket: exactly
// one listens, the other gets ErrListening naming the winner's pid and
// its lock file. The winner's lock file holds its pid, mode 0600; closing
// removes the socket and the lock file.
func TestListenRace(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	for i := range 20 {
		staleSocket(t, path, i%2 == 1)
		var wg sync.WaitGroup
		ls := make([]net.Listener, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ls[j], errs[j] = Listen(path)
			}()
		}
		close(start)
		wg.Wait()
		var won net.Listener
		for j := range 2 {
			if errs[j] == nil {
				if won != nil {
					t.Fatalf("round %d: both Listens succeeded", i)
				}
				won = ls[j]
				continue
			}
			want := fmt.Sprintf("a server is already listening on %s (pid %d holds %s)", path, os.Getpid(), path+LockSuffix)
			if !errors.Is(errs[j], ErrListening) || !strings.Contains(errs[j].Error(), want) {
				t.Errorf("round %d: the loser: %v, want ErrListening with %q", i, errs[j], want)
			}
		}
		if won == nil {
			t.Fatalf("round %d: no Listen succeeded: %v; %v", i, errs[0], errs[1])
		}
		if c, err := net.Dial("unix", path); err != nil {
			t.Errorf("round %d: the winner does not answer: %v", i, err)
		} else {
			c.Close()
		}
		fi, err := os.Lstat(path + LockSuffix)
		b, _ := os.ReadFile(path + LockSuffix)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || string(b) != strconv.Itoa(os.Getpid())+"\n" {
			t.Errorf("round %d: the lock file: %v %v %q, want a regular file, mode 0600, holding this pid", i, fi, err, b)
		}
		won.Close()
		for _, p := range []string{path, path + LockSuffix} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Errorf("round %d: %s after Close: %v", i, p, err)
			}
		}
	}
}

// TestListenLockRemoved: a server that opened the lock file just before
// its holder removed it and let go wins a lock on a file no longer at the
// path, while a third server holds the one that is (and has no socket
// yet): it must not count that lock, and is refused naming the third.
func TestListenLockRemoved(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	first, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	opened, resume := make(chan struct{}), make(chan struct{})
	var hooked atomic.Bool
	testHookBeforeFlock = func() {
		if hooked.CompareAndSwap(false, true) {
			close(opened)
			<-resume
		}
	}
	defer func() { testHookBeforeFlock = nil }()
	late := make(chan error, 1)
	go func() {
		l, err := Listen(path)
		if l != nil {
			l.Close()
		}
		late <- err
	}()
	select { // the late server has the first one's lock file open
	case <-opened:
	case err := <-late:
		t.Fatalf("the late server never reached its lock: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the late server never reached its lock")
	}
	first.Close()
	third, err := lockSocket(path)
	if err != nil {
		t.Fatalf("the lock after the first server closed: %v", err)
	}
	defer third.release()
	close(resume)
	want := fmt.Sprintf("(pid %d holds %s)", os.Getpid(), path+LockSuffix)
	select {
	case err := <-late:
		if !errors.Is(err, ErrListening) || !strings.Contains(err.Error(), want) {
			t.Errorf("the late server: %v, want ErrListening with %q", err, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the late server did not return")
	}
}

// TestListenLockNoFollow: a symlink where the lock file goes is not
// followed: Listen fails and the link's target is untouched.
func TestListenLockNoFollow(t *testing.T) {
	dir := privateDir(t)
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	if err := os.Symlink(target, filepath.Join(dir, "sock"+LockSuffix)); err != nil {
		t.Fatal(err)
	}
	l, err := Listen(filepath.Join(dir, "sock"))
	if err == nil {
		l.Close()
		t.Fatal("Listen followed a symlink at the lock file")
	}
	if !strings.Contains(err.Error(), "lock file") {
		t.Errorf("error %v, want one naming the lock file", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target: %q", b)
	}
}

func TestParsePID(t *testing.T) {
	for s, want := range map[string]int{"123\n": 123, "123": 0, "": 0, "\n": 0, "-4\n": 0, "x\n": 0, "12\n3\n": 0} {
		if got := parsePID(s); got != want {
			t.Errorf("parsePID(%q) = %d, want %d", s, got, want)
		}
	}
}
