package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ordinary programs run under the default policy with no violation and
// exit 0. Each one prints a known result, so a program that silently did
// less (a thread that never ran, a commit that was not made) fails too.

// ptProgram runs command in a fresh workdir prepared by setup (which may
// skip) and checks exit 0, status exited, zero violations and stdout.
func ptProgram(t *testing.T, u *user, setup func(w string), wantOut string, command ...string) {
	t.Helper()
	w := u.workdir(t)
	if setup != nil {
		setup(w)
	}
	o := u.jailRun(t, w, run{}, command...)
	r := ptParse(t, o)
	if o.code != 0 || r.Status != "exited" || r.ExitCode != 0 {
		t.Fatalf("want exit 0, status exited\n%s", o)
	}
	if len(r.Violations) != 0 {
		t.Errorf("violations under the default policy: %+v\n%s", r.Violations, o)
	}
	if strings.TrimSpace(o.stdout) != wantOut {
		t.Errorf("stdout %q, want %q\n%s", o.stdout, wantOut, o)
	}
}

// hostTool skips unless one of paths exists on the host (the jail binds
// /usr, /bin and /lib* read-only, so it exists inside too).
func hostTool(t *testing.T, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skipf("%s is not installed on this machine", filepath.Base(paths[0]))
	return ""
}

func writeOwned(t *testing.T, u *user, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
}

const pyScript = `import subprocess, threading, sys
out = []
lock = threading.Lock()
def work(i):
    with lock:
        out.append(i * i)
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
p = subprocess.run(["sh", "-c", "echo sub"], capture_output=True, text=True, check=True)
c = subprocess.run([sys.executable, "-c", "import os; print(os.getpid() > 1)"], capture_output=True, text=True, check=True)
print(sum(out), p.stdout.strip(), c.stdout.strip())
`

const goProgram = `package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
)

func main() {
	runtime.GOMAXPROCS(4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// LockOSThread makes the runtime start real threads.
			runtime.LockOSThread()
			mu.Lock()
			sum += i
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	out, err := exec.Command("sh", "-c", "echo child").Output()
	if err != nil {
		panic(err)
	}
	fmt.Println(sum, string(out[:len(out)-1]))
}
`

const cProgram = `#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *work(void *p) { *(int *)p *= 2; return NULL; }

int main(void) {
	pthread_t t[4];
	int v[4] = {1, 2, 3, 4}, sum = 0;
	for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, &v[i]);
	for (int i = 0; i < 4; i++) { pthread_join(t[i], NULL); sum += v[i]; }
	pid_t pid = fork();
	if (pid == 0) _exit(7);
	int st;
	waitpid(pid, &st, 0);
	printf("%d %d\n", sum, WEXITSTATUS(st));
	return 0;
}
`

var (
	goProgOnce sync.Once
	goProgPath string
	goProgErr  error
)

func TestProgramPython(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		py := hostTool(t, "/usr/bin/python3", "/usr/local/bin/python3")
		ptProgram(t, u, func(w string) {
			writeOwned(t, u, filepath.Join(w, "s.py"), pyScript)
		}, "140 sub True", py, "s.py")
	})
}

func TestProgramGoThreads(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("no Go toolchain to build the test program")
		}
		goProgOnce.Do(func() {
			dir, err := os.MkdirTemp(base, "goprog-")
			if err != nil {
				goProgErr = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(goProgram), 0o644); err != nil {
				goProgErr = err
				return
			}
			os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module goprog\n\ngo 1.21\n"), 0o644)
			goProgPath = filepath.Join(base, "goprog")
			cmd := exec.Command("go", "build", "-o", goProgPath, ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
			if out, err := cmd.CombinedOutput(); err != nil {
				goProgErr = err
				goProgPath = string(out)
			}
		})
		if goProgErr != nil {
			t.Fatalf("building the Go program: %v %s", goProgErr, goProgPath)
		}
		ptProgram(t, u, func(w string) {
			if err := copyFile(goProgPath, filepath.Join(w, "goprog")); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(w, "goprog"), u.uid, u.gid)
		}, "499500 child", "./goprog")
	})
}

func TestProgramShellPipelines(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		sh := hostTool(t, "/bin/sh")
		ptProgram(t, u, nil, "1000 999 998 | 3 | ok",
			sh, "-c", `a=$(seq 1 1000 | sort -rn | head -n 3 | tr '\n' ' '); b=$(printf 'x\ny\nz\n' | grep -c .); echo "$a" | sed 's/ $//' | tr -d '\n'; printf ' | %s | ' "$b"; (cat /dev/null; echo ok) | cat`)
	})
}

func TestProgramGcc(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		hostTool(t, "/usr/bin/gcc")
		ptProgram(t, u, func(w string) {
			writeOwned(t, u, filepath.Join(w, "hello.c"), cProgram)
		}, "20 7", "/bin/sh", "-c", "gcc -O1 -pthread -o hello hello.c && ./hello")
	})
}

func TestProgramGit(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		hostTool(t, "/usr/bin/git")
		ptProgram(t, u, func(w string) {
			writeOwned(t, u, filepath.Join(w, "a.txt"), "hello\n")
		}, "1 a.txt", "/bin/sh", "-c",
			`g="git -c user.name=tj -c user.email=tj@example.invalid -c init.defaultBranch=main"
$g init -q . && $g add a.txt && $g commit -q -m first && echo "$($g rev-list --count HEAD) $($g ls-files)"`)
	})
}

// BenchmarkSyscallLoop runs 5 million getppid calls (tjsys loop) on the
// host and in the jail (as the test's own user, default profile) and
// reports the ratio of the wall times: the filter's cost on a
// syscall-heavy program (DESIGN.md section 8: under 2 %). It reports, it
// does not assert.
//
//	TOOLJAIL=bin/tooljail go test -run '^$' -bench SyscallLoop -benchtime 3x ./integration/
func BenchmarkSyscallLoop(b *testing.B) {
	if skipReason != "" {
		b.Skip(skipReason)
	}
	const n = "5000000"
	bin := os.Getenv("TJSYS")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "tjsys")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./tjsys")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("building ./tjsys: %v %s", err, out)
		}
	}
	w, err := os.MkdirTemp(base, "bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(w)
	if err := copyFile(bin, filepath.Join(w, "tjsys")); err != nil {
		b.Fatal(err)
	}
	u := users[0]
	timed := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = w
		cmd.Env = u.environ(nil)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil || !strings.Contains(string(out), "ok") {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return d
	}
	jailArgs := []string{"run", "-q", "--workdir", w}
	for _, d := range u.degraded {
		jailArgs = append(jailArgs, "--allow-degraded", d)
	}
	jailArgs = append(jailArgs, "--", filepath.Join(w, "tjsys"), "loop", "getppid", n)
	// The jail's own start-up is measured apart and subtracted.
	empty := append([]string(nil), jailArgs...)
	empty[len(empty)-1] = "0"
	var host, jail, startup time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		host += timed(filepath.Join(w, "tjsys"), "loop", "getppid", n)
		jail += timed(tooljailBin, jailArgs...)
		startup += timed(tooljailBin, empty...)
	}
	b.StopTimer()
	calls := float64(b.N) * 5e6
	b.ReportMetric(float64(host.Nanoseconds())/calls, "host-ns/call")
	b.ReportMetric(float64((jail-startup).Nanoseconds())/calls, "jail-ns/call")
	b.ReportMetric(float64(jail-startup)/float64(host), "jail/host")
	b.ReportMetric(float64(startup.Milliseconds())/float64(b.N), "startup-ms")
}
