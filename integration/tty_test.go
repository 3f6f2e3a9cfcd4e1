package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// `tooljail run` with a terminal, driven as a person at a terminal
// drives it: tooljail's stdin, stdout and stderr are the peer of a
// pseudo-terminal this test holds the master of, and tooljail is the
// leader of a session whose controlling terminal that is (as a shell
// starts it), so --tty is its default.

// ttyRun is one tooljail run on the test's terminal.
type ttyRun struct {
	master *os.File
	peer   *os.File // the test's copy: the terminal's settings are read there
	cmd    *exec.Cmd
	rc     runCgroup
	rep    string
	before unix.Termios // the terminal's settings before tooljail started
	mu     sync.Mutex
	out    bytes.Buffer // what tooljail wrote to the terminal
	read   chan struct{}
	err    error
	ctx    context.Context
	cancel context.CancelFunc
}

// openPty makes a pseudo-terminal of rows by cols: its master and peer.
func openPty(t *testing.T, rows, cols uint16) (master, peer *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	// TIOCGPTPEER's argument is the peer's open flags.
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		t.Fatal(errno)
	}
	p := os.NewFile(uintptr(fd), "pty-peer")
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return m, p
}

// startTTY starts `tooljail run FLAGS -- COMMAND` as u in w on a new
// terminal of rows by cols.
func (u *user) startTTY(t *testing.T, w string, rows, cols uint16, flags []string, command ...string) *ttyRun {
	t.Helper()
	rep := filepath.Join(u.dir(t), "report.json")
	args := []string{"run", "--workdir", w, "--report", rep, "-q"}
	for _, d := range u.degraded {
		args = append(args, "--allow-degraded", d)
	}
	args = append(append(append(args, flags...), "--"), command...)
	return u.startTTYArgs(t, w, rows, cols, rep, nil, args)
}

// startTTYArgs starts `tooljail ARGS` as u in w on a new terminal of rows
// by cols, with env added; rep is the --report file ARGS name.
func (u *user) startTTYArgs(t *testing.T, w string, rows, cols uint16, rep string, env []string, args []string) *ttyRun {
	t.Helper()
	r := &ttyRun{rep: rep, read: make(chan struct{})}
	r.master, r.peer = openPty(t, rows, cols)
	before, err := unix.IoctlGetTermios(int(r.peer.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.before = *before
	r.ctx, r.cancel = context.WithTimeout(context.Background(), time.Minute*slow)
	// Signals at their default actions, as a person's shell starts it:
	// ^C must reach the command whatever this test process inherited.
	r.cmd = exec.CommandContext(r.ctx, helperBin, append(append(startDefault(), tooljailBin), args...)...)
	r.cmd.Dir = w
	r.cmd.Env = u.environ(env)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = r.peer, r.peer, r.peer
	if r.rc, err = u.newRunCgroup(); err != nil {
		t.Fatal(err)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setsid: true, Setctty: true, Ctty: 0,
		UseCgroupFD: r.rc.fd >= 0, CgroupFD: r.rc.fd}
	if err := r.cmd.Start(); err != nil {
		r.rc.release()
		t.Fatal(err)
	}
	go func() {
		defer close(r.read)
		b := make([]byte, 4096)
		for {
			n, err := r.master.Read(b)
			r.mu.Lock()
			r.out.Write(b[:n])
			r.err = err
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		r.cancel()
		r.master.Close()
		r.peer.Close()
	})
	return r
}

// output is what tooljail wrote to the terminal so far, with the
// terminal's "\r\n" as "\n".
func (r *ttyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(r.out.String(), "\r\n", "\n")
}

// waitFor waits until the output holds s.
func (r *ttyRun) waitFor(t *testing.T, s string) {
	t.Helper()
	for !strings.Contains(r.output(), s) {
		select {
		case <-r.ctx.Done():
			t.Fatalf("no %q on the terminal within the run's bound; it shows %q (read error %v)", s, r.output(), r.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// end waits for tooljail and returns its exit code and report.
func (r *ttyRun) end(t *testing.T) (int, *report) {
	t.Helper()
	err := r.cmd.Wait()
	r.rc.check(t, r.cmd.Process.Pid)
	if r.ctx.Err() != nil {
		t.Fatalf("tooljail did not end within its bound; the terminal shows %q", r.output())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	// Everything written before the exit is in the terminal's buffers: the
	// peer stays open (r.peer), so read until the output has been quiet a
	// while. An empty master queue alone is not enough: what the slave
	// wrote last may still wait in the pty's flip buffer for a kworker,
	// which a busy host runs late (the last line was lost once so).
	deadline := time.Now().Add(2 * time.Second * slow)
	quietSince, seen := time.Now(), len(r.output())
	for time.Now().Before(deadline) {
		if n := len(r.output()); n != seen || !r.drained() {
			quietSince, seen = time.Now(), n
		} else if time.Since(quietSince) >= 200*time.Millisecond {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var rep report
	b, err := os.ReadFile(r.rep)
	if err != nil {
		t.Fatalf("no report: %v; the terminal shows %q", err, r.output())
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	return code, &rep
}

// drained reports whether the master has nothing left to read.
func (r *ttyRun) drained() bool {
	n, err := unix.IoctlGetInt(int(r.master.Fd()), unix.TIOCINQ)
	return err != nil || n == 0
}

// The command's stdin, stdout and stderr are one terminal of the jail's
// own devpts with the caller's window size, which is its controlling
// terminal; TIOCSTI on it is denied (seccomp), and the report counts its
// output as stdout, marked tty.
func TestTTYIsTheJailsOwn(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		r := u.startTTY(t, w, 33, 101, nil, "/bin/sh", "-c",
			`test -t 0 && test -t 1 && test -t 2 && echo all-three-tty; stty size; tty; echo to-stderr >&2; `+
				`echo "pts-dev $(stat -L -c %d /proc/self/fd/0)"; ./tjhelper tty`)
		code, rep := r.end(t)
		out := r.output()
		if code != 0 {
			t.Fatalf("exit %d; terminal: %q; report %+v", code, out, rep)
		}
		for _, want := range []string{"all-three-tty\n", "33 101\n", "/dev/pts/0\n", "to-stderr\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("terminal output lacks %q: %q", want, out)
			}
		}
		// Not the host's devpts: the device of the terminal's file system.
		var host unix.Stat_t
		if err := unix.Stat("/dev/pts", &host); err != nil {
			t.Fatal(err)
		}
		if hostDev := fmt.Sprintf("pts-dev %d\n", host.Dev); strings.Contains(out, hostDev) {
			t.Errorf("the command's terminal is on the host's devpts (%q): %q", hostDev, out)
		}
		// Opening /dev/tty needs a controlling terminal.
		var tty map[string]string
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "value "); ok && strings.Contains(v, "tiocsti") {
				json.Unmarshal([]byte(v), &tty)
			}
		}
		if tty["open"] != "ok" || tty["tiocsti"] != "EPERM" {
			t.Errorf("inside, /dev/tty and TIOCSTI: %v; want /dev/tty open ok and TIOCSTI EPERM (denied); terminal %q", tty, out)
		}
		// Denied by the seccomp filter, which reports it.
		if v, _ := json.Marshal(rep.Violations); !strings.Contains(string(v), `"ioctl"`) {
			t.Errorf("no ioctl violation reported for TIOCSTI: %s", v)
		}
		if !rep.Stdout.TTY || !rep.Stderr.Merged || rep.Stdout.Bytes == 0 {
			t.Errorf("report: stdout %+v, stderr %+v; want stdout tty with the bytes, stderr merged", rep.Stdout, rep.Stderr)
		}
	})
}

// A resize of the caller's terminal reaches the command as SIGWINCH and
// the new size; ^C typed reaches it as SIGINT from its own terminal.
func TestTTYResizeAndInterrupt(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		r := u.startTTY(t, w, 24, 80, nil, "/bin/sh", "-c",
			`trap 'echo "winch $(stty size)"' WINCH; trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.1; done`)
		r.waitFor(t, "ready\n")
		if err := unix.IoctlSetWinsize(int(r.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 132}); err != nil {
			t.Fatal(err)
		}
		r.waitFor(t, "winch 40 132\n")
		if _, err := r.master.Write([]byte{0x03}); err != nil {
			t.Fatal(err)
		}
		code, rep := r.end(t)
		if out := r.output(); code != 3 || !strings.Contains(out, "got-int\n") {
			t.Errorf("after ^C: exit %d, terminal %q, report status %s; want the trap's got-int and exit 3", code, out, rep.Status)
		}
	})
}

// The caller's terminal is raw while the command runs and as it was
// after, also when the run is killed at its timeout.
func TestTTYRestoredAfterTimeout(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		r := u.startTTY(t, w, 24, 80, []string{"--timeout", "3s"}, "/bin/sh", "-c", "echo ready; sleep 60")
		before := r.before
		r.waitFor(t, "ready\n")
		during, err := unix.IoctlGetTermios(int(r.peer.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if during.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
			t.Errorf("while the command runs the caller's terminal is not raw: lflag %#x", during.Lflag)
		}
		code, rep := r.end(t)
		after, err := unix.IoctlGetTermios(int(r.peer.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != "timeout" || code == 0 {
			t.Errorf("status %s exit %d, want timeout", rep.Status, code)
		}
		if *after != before {
			t.Errorf("the caller's terminal was not restored after a timeout:\nbefore %+v\nafter  %+v", before, after)
		}
	})
}

// Without namespaces the jail has no devpts of its own to give: --tty is
// refused before anything runs (125), never a terminal of the host's.
func TestNoNamespacesRefusesTTY(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		o, rep := noNSRun(t, u, w, []string{"--tty"}, "echo ran")
		if o.code != 125 || rep.Status != "setup_error" || !strings.Contains(o.stderr, "devpts") || strings.Contains(o.stdout, "ran") {
			t.Errorf("--tty without namespaces: %s", o)
		}
	})
}

// A call in a session at a terminal, through the server: the same
// terminal of the jail's own, interactive (keys and sizes go to the
// server as they come): isatty, the size and a resize, what is typed, ^C
// as SIGINT; the caller's terminal restored after.
func TestTTYSessionCall(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		env := []string{"TOOLJAIL_SERVER=" + s.sock}
		args := []string{"session", "start", "--workdir", w}
		if s.profile != "" {
			args = append(args, "--profile", s.profile)
		}
		o := u.exec(t, run{args: args, dir: w, env: env})
		id := strings.TrimSpace(o.stdout)
		if o.code != 0 || len(id) != 32 {
			t.Fatalf("session start: %s", o)
		}
		rep := filepath.Join(u.dir(t), "report.json")
		r := u.startTTYArgs(t, w, 33, 101, rep, env, []string{"run", "-q", "--session", id, "--report", rep, "--", "/bin/sh", "-c",
			`test -t 0 && test -t 1 && echo isatty; stty size; trap 'echo "winch $(stty size)"' WINCH; trap 'echo got-int; exit 3' INT; ` +
				`read line; echo "read $line"; while :; do sleep 0.1; done`})
		r.waitFor(t, "isatty\n33 101\n")
		if _, err := r.master.Write([]byte("typed\r")); err != nil {
			t.Fatal(err)
		}
		r.waitFor(t, "read typed\n")
		if err := unix.IoctlSetWinsize(int(r.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 132}); err != nil {
			t.Fatal(err)
		}
		r.waitFor(t, "winch 40 132\n")
		if _, err := r.master.Write([]byte{0x03}); err != nil {
			t.Fatal(err)
		}
		code, rep2 := r.end(t)
		after, err := unix.IoctlGetTermios(int(r.peer.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if out := r.output(); code != 3 || !strings.Contains(out, "got-int\n") || !rep2.Stdout.TTY {
			t.Errorf("after ^C: exit %d, terminal %q, report stdout %+v", code, out, rep2.Stdout)
		}
		if *after != r.before {
			t.Errorf("the caller's terminal was not restored:\nbefore %+v\nafter  %+v", r.before, after)
		}
		u.exec(t, run{args: []string{"session", "stop", id}, dir: w, env: env})
	})
}
