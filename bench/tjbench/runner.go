package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// A runner does one complete run of something (a command, a jail) and
// returns only when it is over, child processes reaped.
type runner struct {
	name string
	run  func() error
}

// devNull is the stdin, stdout and stderr of every timed run: one
// descriptor for the whole bench, so os/exec starts no copying goroutines
// and opens nothing per run.
var devNull *os.File

// execRunner runs argv in dir with env (nil: the driver's environment),
// as cred when not nil. A failed run is run once more with its output
// captured, for the error message.
func execRunner(name string, argv []string, dir string, env []string, cred *syscall.Credential) runner {
	return runner{name: name, run: func() error {
		cmd := command(argv, dir, env, cred)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
		if err := cmd.Run(); err != nil {
			return explain(name, argv, dir, env, cred, err)
		}
		return nil
	}}
}

func command(argv []string, dir string, env []string, cred *syscall.Credential) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// explain reruns a failed command with its output captured and returns an
// error that shows it.
func explain(name string, argv []string, dir string, env []string, cred *syscall.Credential, first error) error {
	cmd := command(argv, dir, env, cred)
	cmd.Stdin = devNull
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if len(text) > 2000 {
		text = text[:2000] + "..."
	}
	return fmt.Errorf("%s: %s (in %s): %v; rerun: %v, output: %q", name, strings.Join(argv, " "), dir, first, err, text)
}

// jailRunner runs spec in-process with the jail package (a fresh Cmd each
// time, the Spec copied so that no run sees another's changes).
func jailRunner(name string, spec *jail.Spec) runner {
	return jailRunnerFresh(name, spec, false)
}

// jailRunnerFresh is jailRunner, each run building its jail's root when
// fresh (jail.Cmd.FreshRoot), as a one-shot `tooljail run` does.
func jailRunnerFresh(name string, spec *jail.Spec, fresh bool) runner {
	return runner{name: name, run: func() error {
		s := *spec
		cmd := jail.Command(&s)
		cmd.FreshRoot = fresh
		res, err := cmd.Run()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s: exit %d, status %s: %s", name, res.ExitCode, res.Status, res.Reason)
		}
		return nil
	}}
}

// nsRunner is the "namespaces only" layer: clone with the jail's
// namespaces and a one-uid map, then exec /bin/true directly (no init, no
// mounts, no stage 2).
func nsRunner(name string) runner {
	euid, egid := os.Geteuid(), os.Getegid()
	return runner{name: name, run: func() error {
		cmd := exec.Command("/bin/true")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
				syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: euid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: egid, Size: 1}},
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}}
}

// alternate runs the runners round by round, n rounds, and returns each
// runner's wall times and the CPU each run cost. Each round starts one
// runner further along (A,B,C; B,C,A; ...) so that drift, and whatever one
// run leaves behind for the next (warm caches, a busy CPU), hits every
// runner alike.
func alternate(runners []runner, n int) (wall, cpu [][]time.Duration, err error) {
	wall = make([][]time.Duration, len(runners))
	cpu = make([][]time.Duration, len(runners))
	for round := 0; round < n; round++ {
		for k := range runners {
			i := (round + k) % len(runners)
			c0 := cpuTime()
			start := time.Now()
			if err := runners[i].run(); err != nil {
				return nil, nil, err
			}
			wall[i] = append(wall[i], time.Since(start))
			cpu[i] = append(cpu[i], cpuTime()-c0)
		}
	}
	return wall, cpu, nil
}

// cpuTime is the CPU time, user and system, of this process and of the
// children it has reaped: around a run, what the run cost, whether it ran
// in this process (the jail package's supervisor, its reaped init and
// everything below it) or as a child (the CLI, bwrap), with os/exec's
// own part of starting a child.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// warm runs every runner a few times untimed: page cache, the seccomp
// filter caches (in memory for the jail package, on disk for the CLI).
func warm(runners []runner, n int) error {
	_, _, err := alternate(runners, n)
	return err
}

// parallel runs r total times on conc workers and returns the wall time.
// The first error stops the workers.
func parallel(r runner, conc, total int) (time.Duration, error) {
	jobs := make(chan struct{}, total)
	for i := 0; i < total; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	errs := make(chan error, conc)
	stop := make(chan struct{})
	start := time.Now()
	for w := 0; w < conc; w++ {
		go func() {
			for range jobs {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if err := r.run(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for w := 0; w < conc; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
			close(stop)
		}
	}
	return time.Since(start), first
}
