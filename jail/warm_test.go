package jail_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// warmSpec is the default profile's Spec for args in workdir dir.
func warmSpec(t *testing.T, dir string, env []string, args ...string) *jail.Spec {
	t.Helper()
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		p.AddAllowDegraded("cgroup")
	}
	spec, err := p.Spec(profiles.Request{Args: args, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	spec.Env = append(spec.Env, env...)
	return spec
}

func prepare(t *testing.T, spec *jail.Spec) *jail.Warm {
	t.Helper()
	w, err := jail.Prepare(spec)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(w.Close)
	return w
}

// A warm jail runs the command of its call (arguments, environment,
// stdin, output), and a second warm jail of the same shape sees nothing
// of the first: not its /tmp, not a process it left.
func TestWarmRunsItsCall(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	marker := fmt.Sprintf("0.%d1", time.Now().UnixNano())
	first := warmSpec(t, dir, []string{"TJ_WORD=" + marker}, "/bin/sh", "-c",
		`read line; echo "$TJ_WORD $line"; echo x > /tmp/left; (sleep 1000 $TJ_WORD &) ; ls /tmp`)
	w1, w2 := prepare(t, first), prepare(t, first)
	cmd, err := w1.Command(first)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = strings.NewReader("from stdin\n")
	cmd.CaptureOutput = true
	res, err := cmd.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("first call: %v %+v", err, res)
	}
	if got := *res.Stdout.Text; !strings.HasPrefix(got, marker+" from stdin\n") || !strings.Contains(got, "\nleft\n") {
		t.Errorf("first call's output %q, want %q, then /tmp with left", got, marker+" from stdin")
	}
	if strings.Join(res.Command, " ") != strings.Join(first.Args, " ") {
		t.Errorf("report's command %q, want %q", res.Command, first.Args)
	}
	if procs := hostProcsNamed(marker); len(procs) > 0 {
		t.Errorf("the first call left %v running on the host", procs)
	}
	second := warmSpec(t, dir, nil, "/bin/sh", "-c", "ls -A /tmp/left 2>/dev/null; echo end")
	cmd, err = w2.Command(second)
	if err != nil {
		t.Fatal(err)
	}
	cmd.CaptureOutput = true
	res, err = cmd.Run()
	if err != nil || res.ExitCode != 0 || *res.Stdout.Text != "end\n" {
		t.Errorf("second call: %v, %+v, output %q: want no /tmp/left", err, res, textOf(res))
	}
	if _, err := w1.Command(second); !errors.Is(err, jail.ErrWarmUnfit) {
		t.Errorf("a warm jail taken twice: %v, want ErrWarmUnfit", err)
	}
}

// A call for another jail shape, or for a workdir replaced since the jail
// was built, is refused (the caller runs it cold), and the refused jail
// is gone.
func TestWarmUnfit(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	base := warmSpec(t, dir, nil, "true")
	other := warmSpec(t, dir, nil, "true")
	other.Hostname = "elsewhere"
	if _, err := prepare(t, base).Command(other); !errors.Is(err, jail.ErrWarmUnfit) {
		t.Errorf("another host name: %v, want ErrWarmUnfit", err)
	}
	big := warmSpec(t, dir, []string{"BIG=" + strings.Repeat("x", 200<<10)}, "true")
	if _, err := prepare(t, base).Command(big); !errors.Is(err, jail.ErrWarmUnfit) {
		t.Errorf("200 KiB of environment: %v, want ErrWarmUnfit", err)
	}
	w := prepare(t, base)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir + ".old") })
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	_, err := w.Command(base)
	if !errors.Is(err, jail.ErrWarmUnfit) || !strings.Contains(err.Error(), "workdir was replaced") {
		t.Errorf("replaced workdir: %v, want ErrWarmUnfit naming the workdir", err)
	}
}

// The wall-clock limit counts from the call, not from when the jail was
// built; and a command that is not there fails with its own name.
func TestWarmClocksAndFailures(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	spec := warmSpec(t, dir, nil, "true")
	spec.Limits.Timeout = 2 * time.Second
	w := prepare(t, spec)
	time.Sleep(3 * time.Second)
	cmd, err := w.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cmd.Run(); err != nil || res.Status != jail.StatusExited || res.ExitCode != 0 {
		t.Errorf("a call 3 s after its jail was built, with a 2 s limit: %v %+v", err, res)
	}
	missing := *spec
	missing.Args = []string{"tj-no-such-command"}
	cmd, err = prepare(t, spec).Command(&missing)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cmd.Run()
	if err == nil || res.ExitCode != 127 || !strings.Contains(res.Reason, "tj-no-such-command") {
		t.Errorf("a missing command: %v %+v, want exit 127 naming it", err, res)
	}
}

// Close ends an unused warm jail: its init is gone.
func TestWarmClose(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	w, err := jail.Prepare(warmSpec(t, dir, nil, "true"))
	if err != nil {
		t.Fatal(err)
	}
	before := initsOfThisProcess()
	w.Close()
	if after := initsOfThisProcess(); after >= before && before > 0 {
		t.Errorf("%d inits of this process before Close, %d after", before, after)
	}
	if before == 0 {
		t.Errorf("no parked init found among this process's children")
	}
}

func textOf(r *jail.Result) string {
	if r == nil || r.Stdout.Text == nil {
		return ""
	}
	return *r.Stdout.Text
}

// hostProcsNamed lists host pids whose command line holds name.
func hostProcsNamed(name string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), name) {
			found = append(found, e.Name())
		}
	}
	return found
}

// initsOfThisProcess counts this process's children named tooljail-init.
func initsOfThisProcess() int {
	n := 0
	me := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(tooljail-init") {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(s[i+2:], &state, &ppid); err == nil && ppid == me {
			n++
		}
	}
	return n
}

// WaitResult returns on the init's exit record, before the namespaces are
// torn down and the cgroup removed: by then every process of the jail is
// gone already (the init kills and reaps them first), and the output is
// complete. Checked at once, without polling.
func TestWaitResultLeavesNothing(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	// GNU sleep sums its arguments: the marker is a number that names
	// the process in its command line.
	marker := fmt.Sprintf("0.%d1", time.Now().UnixNano())
	spec := warmSpec(t, dir, nil, "/bin/sh", "-c", "(sleep 1000 "+marker+" &); sleep 0.2; echo out; exit 3")
	for _, warm := range []bool{false, true} {
		cmd := jail.Command(spec)
		if warm {
			var err error
			if cmd, err = prepare(t, spec).Command(spec); err != nil {
				t.Fatal(err)
			}
		}
		cmd.CaptureOutput = true
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		res, err := cmd.WaitResult()
		if left := hostProcsNamed(marker); len(left) > 0 {
			t.Errorf("warm %v: processes of the jail when WaitResult returned: %v", warm, left)
		}
		if err != nil || res.ExitCode != 3 || textOf(res) != "out\n" {
			t.Errorf("warm %v: %v, exit %d, output %q; want exit 3 and \"out\"", warm, err, res.ExitCode, textOf(res))
		}
		if again, err := cmd.Wait(); err != nil || again != res {
			t.Errorf("warm %v: Wait after WaitResult: %v, the same Result: %v", warm, err, again == res)
		}
	}
}

// A parked stage 2 trusts nothing of its call: a message that is not one
// the supervisor writes (a wrong magic, counts that do not fit or wrap,
// a string without its end, bytes after the strings, a cut header, more
// than it can hold) or that does not bring exactly three descriptors
// ends the run as a set-up failure of the call, and the command, whose
// arguments are intact where the forgery leaves them, never runs.
func TestWarmRefusesMalformedCall(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	put := func(msg []byte, field int, v uint32) []byte {
		m := append([]byte(nil), msg...)
		binary.NativeEndian.PutUint32(m[4*field:], v)
		return m
	}
	for _, c := range []struct {
		name  string
		forge func(msg []byte, fds []int) ([]byte, []int)
	}{
		{"bad magic", func(m []byte, f []int) ([]byte, []int) { return put(m, 0, 0x746a6330), f }},
		{"no arguments", func(m []byte, f []int) ([]byte, []int) { return put(m, 1, 0), f }},
		{"one argument fewer", func(m []byte, f []int) ([]byte, []int) {
			return put(m, 1, binary.NativeEndian.Uint32(m[4:])-1), f
		}},
		{"counts that wrap", func(m []byte, f []int) ([]byte, []int) {
			return put(put(put(m, 1, 0x80000000), 2, 0x80000000), 3, 0x80000000), f
		}},
		{"too many strings", func(m []byte, f []int) ([]byte, []int) { return put(m, 2, 8193), f }},
		{"a string without its end", func(m []byte, f []int) ([]byte, []int) { return m[:len(m)-1], f }},
		{"bytes after the strings", func(m []byte, f []int) ([]byte, []int) { return append(m, 'x'), f }},
		{"a cut header", func(m []byte, f []int) ([]byte, []int) { return m[:jail.CallHeaderSize-2], f }},
		{"more than the buffer", func(m []byte, f []int) ([]byte, []int) {
			return append(m, make([]byte, 130<<10)...), f
		}},
		{"two descriptors", func(m []byte, f []int) ([]byte, []int) { return m, f[:2] }},
		{"four descriptors", func(m []byte, f []int) ([]byte, []int) { return m, append(f, f[0]) }},
		{"no descriptor", func(m []byte, f []int) ([]byte, []int) { return m, nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			marker := fmt.Sprintf("0.%d1", time.Now().UnixNano())
			spec := warmSpec(t, dir, nil, "/bin/sh", "-c", "echo ran > "+ran+"; exec sleep 1000 "+marker)
			// Were the forgery taken, the run ends here, and fails.
			spec.Limits.Timeout = 10 * time.Second
			w := prepare(t, spec)
			cmd, err := w.Command(spec)
			if err != nil {
				t.Fatal(err)
			}
			restore := jail.ForgeWarmCalls(c.forge)
			res, err := cmd.Run()
			restore()
			if err == nil || res == nil || res.ExitCode != 125 || !strings.Contains(res.Reason, "warm jail: receive the command") {
				t.Errorf("want a set-up failure of the call (exit 125): %v %+v", err, res)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the command ran")
			}
			if procs := hostProcsNamed(marker); len(procs) > 0 {
				t.Errorf("left running: %v", procs)
			}
		})
	}
	// The control: the same command, unforged, runs.
	ran := filepath.Join(dir, "control")
	spec := warmSpec(t, dir, nil, "/bin/sh", "-c", "echo ran > "+ran)
	cmd, err := prepare(t, spec).Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cmd.Run(); err != nil || res.ExitCode != 0 {
		t.Fatalf("control: %v %+v", err, res)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("control: the command did not run: %v", err)
	}
}

// A terminal (Cmd.TTY) in a warm jail: stage 2 opens it after the call,
// confined, with the call's size; Resize before Start sets the size the
// command sees, as with a cold run.
func TestWarmTTY(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	spec := warmSpec(t, dir, nil, "/bin/sh", "-c", `tty; stty size; read x; echo "got $x"`)
	for _, warm := range []bool{false, true} {
		cmd := jail.Command(spec)
		if warm {
			var err error
			if cmd, err = prepare(t, spec).Command(spec); err != nil {
				t.Fatal(err)
			}
		}
		cmd.TTY = &jail.TTY{Rows: 30, Cols: 90}
		if err := cmd.Resize(31, 91); err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = strings.NewReader("typed\n")
		cmd.CaptureOutput = true
		res, err := cmd.Run()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("warm %v: %v %+v", warm, err, res)
		}
		// The terminal echoes what is typed when it is typed: the
		// echo's place among the lines is the scheduler's.
		got := *res.Stdout.Text
		for _, want := range []string{"typed\r\n", "/dev/pts/0\r\n", "31 91\r\n", "got typed\r\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("warm %v: output %q lacks %q", warm, got, want)
			}
		}
		if !res.Stdout.TTY || !res.Stderr.Merged {
			t.Errorf("warm %v: stdout %+v, stderr %+v", warm, res.Stdout, res.Stderr)
		}
	}
}
