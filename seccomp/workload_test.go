package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const nextModeEnv = "TOOLJAIL_SECCOMP_TEST_NEXT"

// childExec execs os.Args[1:] under the filter, as stage 2 does. The
// program gets the child mode named by nextModeEnv (none if empty).
func childExec() int {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, childEnv+"=") {
			env = append(env, kv)
		}
	}
	if next := os.Getenv(nextModeEnv); next != "" {
		env = append(env, childEnv+"="+next)
	}
	err := unix.Exec(os.Args[1], os.Args[1:], env)
	fmt.Fprintln(os.Stderr, "child: exec:", err)
	return 127
}

// childWorkloadGo is a goroutine- and thread-heavy Go program: it runs
// after execve under the inherited filter (unfilteredModes only means the
// test harness does not install a second one).
func childWorkloadGo() int {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%8 == 0 {
				runtime.LockOSThread() // forces new OS threads
				defer runtime.UnlockOSThread()
			}
			buf := make([]byte, 1<<20)
			for k := range buf {
				buf[k] = byte(i + k)
			}
			if _, err := os.ReadDir("/"); err != nil {
				errs <- err
			}
			f, err := os.CreateTemp("", "tooljail-seccomp-wl")
			if err != nil {
				errs <- err
				return
			}
			f.Write(buf[:4096])
			f.Close()
			os.Remove(f.Name())
			time.Sleep(time.Millisecond)
		}(i)
	}
	wg.Wait()
	runtime.GC()
	if out, err := exec.Command("/bin/true").CombinedOutput(); err != nil {
		errs <- fmt.Errorf("exec /bin/true: %v %s", err, out)
	}
	close(errs)
	for err := range errs {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ok", runtime.NumGoroutine())
	return 0
}

// TestWorkloads runs ordinary programs under the default policy in notify
// mode and expects them to succeed with no violation at all.
func TestWorkloads(t *testing.T) {
	requireNotify(t)
	prog, err := CompileDir(Policy{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "hello.c"), []byte("#include <stdio.h>\n#include <pthread.h>\nstatic void *f(void *a){return a;}\nint main(void){pthread_t t; pthread_create(&t,0,f,0); pthread_join(t,0); printf(\"hello\\n\"); return 0;}\n"), 0o644)
	os.WriteFile(filepath.Join(work, "Makefile"), []byte("all:\n\t@echo made\n"), 0o644)

	type wl struct {
		name string
		argv []string
		next string
		need string // a program that must exist, else skip
		want string // in stdout
	}
	python, _ := exec.LookPath("python3")
	wls := []wl{
		{"sh-pipeline", []string{"/bin/sh", "-c", "ls / >/dev/null && cat /etc/hostname | wc -c && echo $(( 6 * 7 ))"}, "", "/bin/sh", "42"},
		{"busybox", []string{"/bin/sh", "-c", "busybox ls / >/dev/null && busybox sh -c 'echo bb | busybox tr b c'"}, "", "busybox", "cc"},
		{"python", []string{python, "-c", "import os, threading, subprocess, socket, tempfile, multiprocessing\n" +
			"t=[threading.Thread(target=lambda: sum(range(10**5))) for _ in range(8)]\n[x.start() for x in t]; [x.join() for x in t]\n" +
			"socket.socket(socket.AF_INET).close(); socket.socketpair()\n" +
			"print(subprocess.run(['/bin/echo','py'],capture_output=True,text=True).stdout.strip(), len(os.listdir('/')) > 0)"}, "", python, "py True"},
		{"go", []string{exe}, "workload-go", "", "ok"},
		{"gcc", []string{"/bin/sh", "-c", "cd " + work + " && gcc -O1 -pthread -o hello hello.c && ./hello"}, "", "gcc", "hello"},
		{"git", []string{"/bin/sh", "-c", "cd " + work + " && git init -q r && cd r && echo x > f && git add f && " +
			"git -c user.name=t -c user.email=t@e commit -qm m && git log --oneline | wc -l"}, "", "git", "1"},
		{"make", []string{"/bin/sh", "-c", "cd " + work + " && make -s"}, "", "make", "made"},
	}
	for _, w := range wls {
		t.Run(w.name, func(t *testing.T) {
			if w.need != "" {
				if _, err := exec.LookPath(w.need); err != nil || w.argv[0] == "" {
					t.Skipf("%s not installed", w.need)
				}
			}
			j := startJailed(t, prog, "exec", childOpts{action: ActionDeny, args: w.argv, env: []string{nextModeEnv + "=" + w.next}})
			st, vs := j.wait(t)
			if !st.Success() || !strings.Contains(j.stdout.String(), w.want) {
				t.Errorf("%v: %v\nstdout: %s\nstderr: %s", w.argv, st, j.stdout.String(), j.stderr.String())
			}
			if len(vs) != 0 {
				t.Errorf("violations: %s", describe(vs))
			}
		})
	}
}
