package jail

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/cgroup"
)

// On v1 the init is forked by a supervisor thread that joined the run's
// group (cgroup.Group.JoinThread): the child must start in every
// hierarchy of the group, and the thread must be back home afterwards, so
// that killing the group can never hit the supervisor.
func TestJoinThreadForksIntoGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup v1 groups need root")
	}
	if s := cgroup.Probe(); s.Mode != cgroup.ModeV1 {
		t.Skipf("not a cgroup v1 host (mode %s)", s.Mode)
	}
	g, err := cgroup.New("jointhread-"+strconv.Itoa(os.Getpid()), cgroup.Resources{Memory: 64 << 20, Pids: 16, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Kill(); err != nil {
			t.Error(err)
		}
		if err := g.Delete(); err != nil {
			t.Error(err)
		}
	}()
	before := readFile(t, "/proc/self/cgroup")

	type result struct {
		cmd        *exec.Cmd
		err        error
		threadCg   string
		threadHome string
	}
	ch := make(chan result)
	go func() {
		// Like the jail: the thread stays locked (and ends with the
		// goroutine) if it cannot get back.
		runtime.LockOSThread()
		leave, err := g.JoinThread()
		if err != nil {
			ch <- result{err: err}
			return
		}
		r := result{threadCg: readFile(t, "/proc/thread-self/cgroup")}
		r.cmd = exec.Command("/bin/sleep", "30")
		r.err = r.cmd.Start()
		if lerr := leave(); lerr != nil {
			if r.err == nil {
				r.cmd.Process.Kill()
				r.cmd.Wait()
			}
			ch <- result{err: lerr}
			return
		}
		r.threadHome = readFile(t, "/proc/thread-self/cgroup")
		runtime.UnlockOSThread()
		ch <- r
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}()

	child := readFile(t, "/proc/"+strconv.Itoa(r.cmd.Process.Pid)+"/cgroup")
	run := "-run-jointhread-" + strconv.Itoa(os.Getpid()) // v1 runs: <base>/tooljail-<owner>-run-<id>
	for _, c := range []string{"memory", "cpu", "cpuacct", "pids", "freezer"} {
		if line := hierarchyLine(child, c); !strings.HasSuffix(line, run) {
			t.Errorf("child's %s cgroup is %q, want the run's group (…%s)", c, line, run)
		}
		if line := hierarchyLine(r.threadCg, c); !strings.HasSuffix(line, run) {
			t.Errorf("joined thread's %s cgroup is %q, want the run's group", c, line)
		}
	}
	if r.threadHome != before {
		t.Errorf("thread did not get back home:\n%s\nwant\n%s", r.threadHome, before)
	}
	// The group holds the child and never the supervisor: none of its
	// threads is in the run's group in any hierarchy.
	tasks, err := filepath.Glob("/proc/self/task/*/cgroup")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("list the supervisor's threads: %v", err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has exited
		}
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids", "freezer"} {
			if line := hierarchyLine(string(b), c); strings.HasSuffix(line, run) {
				t.Errorf("supervisor thread %s is in the run's %s group %q", filepath.Dir(f), c, line)
			}
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hierarchyLine returns the path of controller c in a /proc/*/cgroup text.
func hierarchyLine(text, c string) string {
	for _, l := range strings.Split(text, "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, x := range strings.Split(parts[1], ",") {
			if x == c {
				return parts[2]
			}
		}
	}
	return ""
}
