package landlock_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/profiles"
)

// The behaviour tests run their scenarios where Landlock ships: in a real
// jail (jail.Command), whose supervisor compiles the policy
// (landlock.Compile), whose init builds the ruleset in the jail's mount
// namespace and whose stage 2 enters it and execs the command. The command
// is this test binary, bound read-only into the jail and re-executed with
// envScenario naming the ops to do; TestMain runs them and prints each
// result as JSON on stdout. A control run of the same Spec without Landlock
// shows what the mounts alone allow, so that a denial is Landlock's.
const envScenario = "TOOLJAIL_LANDLOCK_TEST_OPS"

// helperPath is where the test binary is bound in the jail.
const helperPath = "/tooljail-test/landlock.test"

func TestMain(m *testing.M) {
	if raw := os.Getenv(envScenario); raw != "" {
		os.Exit(helperMain(raw))
	}
	jail.Init()
	os.Exit(m.Run())
}

// op is one thing the jailed command does; runOp says how it went: "ok",
// an errno name, or a few words.
type op struct {
	Do   string `json:"do"`
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`
	Port int    `json:"port,omitempty"`
	Pid  int    `json:"pid,omitempty"`
}

func helperMain(raw string) int {
	var ops []op
	if err := json.Unmarshal([]byte(raw), &ops); err != nil {
		fmt.Fprintln(os.Stderr, "bad ops:", err)
		return 2
	}
	results := make([]string, 0, len(ops))
	for _, o := range ops {
		results = append(results, runOp(o))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return 2
	}
	return 0
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// listeners keeps the sockets of "listen" ops open until the command exits.
var listeners []int

func runOp(o op) string {
	switch o.Do {
	case "read":
		b, err := os.ReadFile(o.Path)
		if err == nil && len(b) == 0 {
			return "empty"
		}
		return errName(err)
	case "write":
		fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte("x"))
			unix.Close(fd)
		}
		return errName(err)
	case "create":
		fd, err := unix.Open(o.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return errName(err)
	case "truncate":
		return errName(unix.Truncate(o.Path, 0))
	case "mkdir":
		return errName(unix.Mkdir(o.Path, 0o755))
	case "unlink":
		return errName(unix.Unlink(o.Path))
	case "readdir":
		_, err := os.ReadDir(o.Path)
		return errName(err)
	case "exec":
		pid, err := syscall.ForkExec(o.Path, []string{o.Path}, &syscall.ProcAttr{})
		if err != nil {
			return errName(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return errName(err)
		}
		if ws.ExitStatus() != 0 {
			return fmt.Sprintf("exit %d", ws.ExitStatus())
		}
		return "ok"
	case "link":
		return errName(unix.Link(o.Path, o.To))
	case "rename":
		return errName(unix.Rename(o.Path, o.To))
	case "connect", "bind", "listen":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errName(err)
		}
		sa := &unix.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}
		switch o.Do {
		case "connect":
			err = unix.Connect(fd, sa)
		case "bind":
			err = unix.Bind(fd, sa)
		case "listen":
			if err = unix.Bind(fd, sa); err == nil {
				err = unix.Listen(fd, 8)
			}
			if err == nil {
				listeners = append(listeners, fd)
				return "ok"
			}
		}
		unix.Close(fd)
		return errName(err)
	case "kill0":
		return errName(unix.Kill(o.Pid, 0))
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errName(err)
		}
		defer unix.Close(fd)
		return errName(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + o.Path}))
	case "ptmx":
		fd, err := unix.Open(o.Path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "open " + errName(err)
		}
		defer unix.Close(fd)
		_, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return errName(err)
	case "sh":
		// stdin is a pipe, as the supervisor's stdio relay gives the command.
		cmd := exec.Command("/bin/bash", "-c", o.Path)
		cmd.Stdin = strings.NewReader("from-stdin\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out))
		}
		return strings.TrimSpace(string(out))
	case "watch":
		w, err := landlock.WatchDenials()
		if err != nil {
			return err.Error()
		}
		w.Stop()
		return "ok"
	}
	return "unknown op " + o.Do
}

// hostUser is who the jail runs as on the host: for a root test, uid and
// gid 65534 (Spec.HostUser; the jail never runs as root); otherwise the
// test's own user, as for any supervisor that is not root.
func hostUser() (uid, gid int, spec *jail.HostID) {
	if os.Geteuid() == 0 {
		return 65534, 65534, &jail.HostID{UID: 65534, GID: 65534}
	}
	return os.Geteuid(), os.Getegid(), nil
}

// ownedDir makes a temporary directory that the jail's host user owns.
func ownedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "landlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	uid, gid, _ := hostUser()
	must(t, os.Chown(dir, uid, gid))
	must(t, os.Chmod(dir, 0o755))
	return dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jailSpec is the default profile's Spec for a run in workdir (bound
// read-write, as the CLI binds the current directory) with mounts added
// and the test binary bound in as the command. Seccomp and the cgroup caps
// are off, so that only the mounts and Landlock can deny; Landlock is on
// with the profile's settings (any ABI, TCP not handled).
func jailSpec(t testing.TB, workdir string, mounts ...jail.Mount) *jail.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Spec(profiles.Request{Args: []string{helperPath}, Cwd: workdir})
	if err != nil {
		t.Fatal(err)
	}
	s.Seccomp = nil
	s.Limits.Memory, s.Limits.CPUs, s.Limits.Pids = 0, 0, 0
	s.Limits.Timeout = 2 * time.Minute
	_, _, s.HostUser = hostUser()
	s.Mounts = append(s.Mounts, mounts...)
	s.Mounts = append(s.Mounts, jail.Mount{Kind: jail.MountBind, Source: exe, Dest: helperPath, Exec: true})
	if s.Landlock == nil {
		t.Fatal("the default profile has Landlock off")
	}
	return s
}

// withoutLandlock is s for the control run.
func withoutLandlock(s *jail.Spec) *jail.Spec {
	c := *s
	c.Landlock = nil
	return &c
}

// runJailed runs ops in a jail built from s and returns the run's report
// and each op's result. The run must get as far as the command's exit.
func runJailed(t testing.TB, s *jail.Spec, ops ...op) (*jail.Result, []string) {
	t.Helper()
	res, results, err := jailed(s, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return res, results
}

// jailed is runJailed for a goroutine other than the test's.
func jailed(s *jail.Spec, ops ...op) (*jail.Result, []string, error) {
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.Env = append(append([]string(nil), s.Env...), envScenario+"="+string(raw))
	cmd := jail.Command(&c)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res, err := cmd.Run()
	if err != nil {
		return res, nil, fmt.Errorf("jail: %w", err)
	}
	if res.Status != jail.StatusExited || res.ExitCode != 0 {
		return res, nil, fmt.Errorf("jailed run: status %s, exit %d, %s\nstderr: %s", res.Status, res.ExitCode, res.Reason, stderr.String())
	}
	var results []string
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil || len(results) != len(ops) {
		return res, nil, fmt.Errorf("jailed run output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return res, results, nil
}

// runBoth runs ops without Landlock (the control) and with it, and checks
// that the control run had no Landlock and the other had.
func runBoth(t *testing.T, s *jail.Spec, ops ...op) (control []string, res *jail.Result, restricted []string) {
	t.Helper()
	ctl, control := runJailed(t, withoutLandlock(s), ops...)
	if ctl.Enforcement.LandlockABI != 0 {
		t.Fatalf("control run enforced Landlock ABI %d", ctl.Enforcement.LandlockABI)
	}
	res, restricted = runJailed(t, s, ops...)
	if res.Enforcement.LandlockABI == 0 {
		t.Fatalf("Landlock not enforced: degraded %v", res.Enforcement.Degraded)
	}
	return control, res, restricted
}

func requireABI(t testing.TB, abi int) landlock.Support {
	t.Helper()
	s := landlock.Probe()
	if s.ABI < abi {
		t.Skipf("needs Landlock ABI %d, kernel offers %d (%s)", abi, s.ABI, s.Reason)
	}
	return s
}
