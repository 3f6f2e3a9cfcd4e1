package serve

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// No call may bind a directory that holds the server's socket or its
// audit log: the command could ask the server for a looser run, or read
// and replace the log.
func TestSocketAndAuditLogHidden(t *testing.T) {
	ts := start(t)
	c := ts.client()
	for _, dir := range []string{filepath.Dir(ts.path), filepath.Dir(ts.audit)} {
		os.Chmod(dir, 0o700)
		_, err := c.Run(context.Background(), Request{Argv: []string{"/bin/true"}, Workdir: dir})
		var e *Error
		if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "would show the server's") {
			t.Errorf("workdir %s: %v, want a refusal naming the socket or the audit log", dir, err)
		}
		// A session's jail is one too: its start is refused the same way.
		_, _, err = c.SessionOp(context.Background(), Request{Workdir: dir, SessionOp: &SessionOp{Action: "start", Detach: true}})
		if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "would show the server's") {
			t.Errorf("a session with workdir %s: %v, want a refusal naming the socket or the audit log", dir, err)
		}
	}
	other := t.TempDir()
	os.Chmod(other, 0o777)
	if r := run(t, c, Request{Argv: []string{"/bin/true"}, Workdir: other}); r.ExitCode != 0 {
		t.Errorf("an unrelated workdir: exit %d: %s", r.ExitCode, r.Reason)
	}
}

// A client sends its command only to a server of its own user or root.
func TestClientChecksServer(t *testing.T) {
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
		}
	}()
	conn, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := checkServer(conn, os.Geteuid()); err != nil {
		t.Errorf("own server refused: %v", err)
	}
	for _, c := range []struct {
		peer, uid int
		ok        bool
	}{{1000, 1000, true}, {0, 1000, true}, {0, 0, true}, {1001, 1000, false}, {1000, 0, false}, {-1, 1000, false}} {
		if err := serverProblem(c.peer, c.uid); (err == nil) != c.ok {
			t.Errorf("server uid %d, client uid %d: %v", c.peer, c.uid, err)
		}
	}
}

// Nor the socket's lock file, even alone: a jail that held it open could
// flock it and keep the next server from starting.
func TestLockFileHidden(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.AllowClientProfiles = true })
	text := "extends = \"default\"\n[filesystem]\nro = [\"" + ts.path + LockSuffix + ":/lock\"]\n"
	_, err := ts.client().Run(context.Background(), Request{Argv: []string{"/bin/true"}, ProfileTOML: text})
	var e *Error
	if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "would show the server's lock file") {
		t.Errorf("a bind of the lock file: %v, want a refusal naming it", err)
	}
}

// A served profile's root directory must not hold the socket either; the
// binds taken from it are not host paths and are not looked up as such.
func TestRootDirectoryHidden(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "rootfs", "run", "sock")
	os.MkdirAll(filepath.Dir(sock), 0o700)
	os.WriteFile(sock, nil, 0o600)
	h := hiddenSet{}
	if err := h.add(sock, "socket"); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, c := range []struct {
		root string
		want string
	}{
		{filepath.Join(dir, "rootfs"), "the root directory " + filepath.Join(dir, "rootfs") + " holds the server's socket " + sock},
		{dir, "holds the server's socket"},
		{other, ""},
	} {
		spec := &jail.Spec{Root: c.root, Mounts: []jail.Mount{
			// "/" of the tree, which would be the host's root if it
			// were looked up on the host.
			{Kind: jail.MountBind, Source: "/", Dest: "/x", InRoot: true},
		}}
		err := h.check(spec)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("root %s: %v, want %q", c.root, err, c.want)
		}
	}
}
