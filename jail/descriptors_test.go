package jail_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// fdTargets is this process's open descriptors: number → what it refers to.
func fdTargets(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the ReadDir's own descriptor, closed by now
		}
		m[e.Name()] = target
	}
	return m
}

// settledFDs is fdTargets once two readings 50 ms apart agree (at most
// 5 s): the descriptors a run that just returned left to goroutines that
// end right after it are closed by then.
func settledFDs(t *testing.T) map[string]string {
	t.Helper()
	prev := fdTargets(t)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		cur := fdTargets(t)
		if len(fdDiff(prev, cur)) == 0 {
			return cur
		}
		prev = cur
	}
	return prev
}

// fdDiff lists what differs between the descriptors before and after, by
// what they are open on, whatever their numbers: a root template the
// package builds again (a mount elsewhere on the host drops it) comes
// back under another number, and is the same one descriptor.
func fdDiff(before, after map[string]string) []string {
	count := map[string]int{}
	for _, target := range after {
		count[target]++
	}
	for _, target := range before {
		count[target]--
	}
	var d []string
	for target, n := range count {
		switch {
		case n > 0:
			d = append(d, fmt.Sprintf("+%d %s", n, target))
		case n < 0:
			d = append(d, fmt.Sprintf("%d %s", n, target))
		}
	}
	sort.Strings(d)
	return d
}

// An embedding process keeps no descriptor per run: after a first round of
// every kind of run (which opens the package's per-process descriptors:
// this executable, /proc, a user namespace per id mapping, a root
// template and the mount table it polls), more rounds leave its
// descriptors as they were. Each kind ends its own way: an exit,
// output relayed to writers, stdin relayed, a timeout kill, a command that
// is not there, a run cancelled through its context, a warm jail, and a
// session's calls and stop.
func TestRunsKeepNoDescriptors(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	run := func(name string, cmd *jail.Cmd, wantExit int) {
		t.Helper()
		res, err := cmd.Run()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.ExitCode != wantExit {
			t.Fatalf("%s: exit %d (%s: %s), want %d", name, res.ExitCode, res.Status, res.Reason, wantExit)
		}
	}
	kinds := []struct {
		name string
		do   func()
	}{
		{"exit", func() { run("exit", jail.Command(warmSpec(t, dir, nil, "/bin/sh", "-c", "exit 3")), 3) }},
		{"relayed", func() {
			cmd := jail.Command(warmSpec(t, dir, nil, "/bin/sh", "-c", "cat; echo err >&2"))
			var out, errOut bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader("in\n"), &out, &errOut
			run("relayed", cmd, 0)
			if out.String() != "in\n" || errOut.String() != "err\n" {
				t.Fatalf("relayed: stdout %q, stderr %q", out.String(), errOut.String())
			}
		}},
		{"timeout", func() {
			spec := warmSpec(t, dir, nil, "/bin/sh", "-c", "sleep 100 & sleep 100")
			spec.Limits.Timeout = 100 * time.Millisecond
			cmd := jail.Command(spec)
			cmd.CaptureOutput = true
			res, err := cmd.Run()
			if err != nil || res.Status != jail.StatusTimeout {
				t.Fatalf("timeout: %v, status %v", err, res)
			}
		}},
		{"missing command", func() {
			res, err := jail.Command(warmSpec(t, dir, nil, "/no/such/command")).Run()
			if err == nil && res.ExitCode == 0 {
				t.Fatalf("missing command: ran (%+v)", res)
			}
		}},
		{"cancelled", func() {
			ctx, cancel := context.WithCancel(context.Background())
			cmd := jail.CommandContext(ctx, warmSpec(t, dir, nil, "/bin/sleep", "100"))
			if err := cmd.Start(); err != nil {
				t.Fatalf("cancelled: %v", err)
			}
			cancel()
			cmd.Wait()
		}},
		{"warm", func() {
			spec := warmSpec(t, dir, nil, "/bin/sh", "-c", "exit 4")
			w, err := jail.Prepare(spec)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			defer w.Close()
			cmd, err := w.Command(spec)
			if err != nil {
				t.Fatalf("warm: %v", err)
			}
			run("warm", cmd, 4)
		}},
		{"session", func() {
			s, err := jail.StartSession(warmSpec(t, dir, nil, "true"), jail.SessionLimits{})
			if err != nil {
				t.Fatalf("StartSession: %v", err)
			}
			defer s.Stop()
			call(t, s, true, `sleep 100 & echo kept`)
			call(t, s, false, `sleep 100 & exit 0`)
		}},
	}
	round := func() {
		for _, k := range kinds {
			k.do()
		}
	}
	round()
	// As at the end: what a relay's goroutine of the first round still
	// held must not be taken for the package's own (a busy host).
	before := settledFDs(t)
	for i := 0; i < 3; i++ {
		round()
	}
	// A relay's goroutine may close its end just after Wait: settle.
	var diff []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		runtime.GC()
		if diff = fdDiff(before, fdTargets(t)); len(diff) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(diff) > 0 {
		t.Errorf("three rounds of runs after the first changed this process's descriptors:\n%s", strings.Join(diff, "\n"))
	}
}
