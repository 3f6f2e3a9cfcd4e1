package landlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests restrict a re-executed copy of the test binary, never the test
// process itself: TestMain runs the scenario passed in envScenario and exits.
const envScenario = "TOOLJAIL_LANDLOCK_TEST_SCENARIO"

// scenario is what the child does: optionally start pinned threads, apply
// the policy, then run ops and report each result.
type scenario struct {
	Policy     Policy `json:"policy"`
	NoRestrict bool   `json:"no_restrict,omitempty"` // control run: ops without Landlock
	Threads    int    `json:"threads,omitempty"`     // threads pinned before Restrict
	Repeat     int    `json:"repeat,omitempty"`      // restrict this many times (cost measurement)
	// ThreadOnly uses RestrictThread on the main thread (locked), where
	// the ops run, instead of Restrict.
	ThreadOnly bool `json:"thread_only,omitempty"`
	Ops        []op `json:"ops"`
}

type op struct {
	Do   string `json:"do"`
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`
	Port int    `json:"port,omitempty"`
	Pid  int    `json:"pid,omitempty"`
}

type childResult struct {
	Enforced Enforced  `json:"enforced"`
	Err      string    `json:"err,omitempty"`
	Results  []string  `json:"results"`
	Micros   []float64 `json:"micros,omitempty"`
}

func TestMain(m *testing.M) {
	if sc := os.Getenv(envScenario); sc != "" {
		os.Exit(childMain(sc))
	}
	os.Exit(m.Run())
}

func childMain(raw string) int {
	var sc scenario
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		fmt.Fprintln(os.Stderr, "bad scenario:", err)
		return 2
	}
	var res childResult
	if sc.ThreadOnly {
		runtime.LockOSThread() // the ops below run on the restricted thread
	}
	pinned := startPinnedThreads(sc.Threads)
	restrict := Restrict
	if sc.ThreadOnly {
		restrict = RestrictThread
	}
	if !sc.NoRestrict {
		for i := 0; i < max(sc.Repeat, 1); i++ {
			t0 := time.Now()
			en, err := restrict(sc.Policy)
			res.Micros = append(res.Micros, float64(time.Since(t0).Nanoseconds())/1e3)
			res.Enforced = en
			if err != nil {
				res.Err = err.Error()
				break
			}
		}
	}
	for _, o := range sc.Ops {
		res.Results = append(res.Results, runOp(o, pinned))
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// startPinnedThreads starts n goroutines, each locked to its own OS thread,
// that run the functions sent to them. They exist before Restrict, so they
// prove that the restriction reached threads other than the caller's.
func startPinnedThreads(n int) []chan func() {
	var out []chan func()
	for range n {
		ch := make(chan func())
		ready := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
			close(ready)
			for f := range ch {
				f()
			}
		}()
		<-ready
		out = append(out, ch)
	}
	return out
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

func runOp(o op, pinned []chan func()) string {
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
	case "connect", "bind":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errName(err)
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}
		if o.Do == "bind" {
			return errName(unix.Bind(fd, sa))
		}
		return errName(unix.Connect(fd, sa))
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
		w, err := WatchDenials()
		if err != nil {
			return err.Error()
		}
		w.Stop()
		return "ok"
	case "threads_read":
		// every pinned thread opens the path; all must agree
		results := make(chan string, len(pinned))
		for _, ch := range pinned {
			ch <- func() {
				fd, err := unix.Open(o.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err == nil {
					unix.Close(fd)
				}
				results <- errName(err)
			}
		}
		seen := map[string]int{}
		for range pinned {
			seen[<-results]++
		}
		if len(seen) != 1 {
			return fmt.Sprintf("threads disagree: %v", seen)
		}
		for k := range seen {
			return k
		}
		return "no threads"
	}
	return "unknown op " + o.Do
}

// run executes sc in a child of the test binary, as cred when not nil.
func run(t testing.TB, sc scenario, cred *syscall.Credential) childResult {
	t.Helper()
	cmd := childCmd(t, sc, cred)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstderr: %s", err, stderr.String())
	}
	var res childResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("child output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return res
}

func childCmd(t testing.TB, sc scenario, cred *syscall.Credential) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), envScenario+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

var nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

// identities are the users the behaviour tests run as.
func identities(t *testing.T) map[string]*syscall.Credential {
	if os.Geteuid() != 0 {
		return map[string]*syscall.Credential{"self": nil}
	}
	return map[string]*syscall.Credential{"root": nil, "uid65534": nobody}
}

func requireABI(t *testing.T, abi int) Support {
	t.Helper()
	s := Probe()
	if s.ABI < abi {
		t.Skipf("needs Landlock ABI %d, kernel offers %d (%s)", abi, s.ABI, s.Reason)
	}
	return s
}

// listenTCP listens on 127.0.0.1 with plain TCP and returns the port.
func listenTCP(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	l, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
