// Package integration runs the built tooljail binary ($TOOLJAIL) against a
// small static helper program ($TJHELPER, built from ./tjhelper) and proves,
// from inside the jail and on the host afterwards, what the jail promises.
//
// As root every test runs twice: as root ("root") and as uid 65534
// ("uid65534", through SysProcAttr.Credential); in the VM guests, which
// also run the suite as an unprivileged user, root runs it once. As any
// other user it runs once, as that user ("self"). The package imports no
// cgo package, so
// `CGO_ENABLED=0 go test -c` gives a binary that runs in the VM guests.
//
//	make integration                       # builds both binaries, runs this
//	TOOLJAIL=bin/tooljail TJHELPER=bin/tjhelper go test -count=1 ./integration/
package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// skipReason, when set, skips every test (the binaries are missing).
	skipReason string
	// tooljailBin and helperBin are copies in base, reachable by every user.
	tooljailBin string
	helperBin   string
	// base is a 0755 directory under /tmp holding every test directory.
	base  string
	users []*user
	// slow scales the few time budgets the tests give the jailed command:
	// the VM guests run under software emulation, several times slower.
	slow time.Duration = 1
	// hostNoUserNS: this host refuses user namespaces outright
	// (user.max_user_namespaces=0, as the VM guests' nouserns suites set
	// it). Only the tests of the mode without namespaces run then, with
	// nothing emulated: noNSWrap is empty.
	hostNoUserNS bool
)

// user is one identity the suite runs tooljail as.
type user struct {
	name     string
	uid, gid int
	cred     *syscall.Credential // nil: the test process's own identity
	// degraded are the layers `tooljail check` says cannot be enforced for
	// this user and that the suite allows (cgroup caps, seccomp).
	degraded []string
	check    checkResult
	// dirUID and dirGID own the directories the tests make (dir). They
	// are the user's, except for root where the host cannot idmap the
	// test directories' file system (tmpfs before Linux 6.3): there a
	// root-started jail could not write a root-owned workdir, so root's
	// test directories belong to an unprivileged owner, whom the jail
	// then runs as (noIdmap).
	dirUID, dirGID int
	noIdmap        bool
}

type checkResult struct {
	Layers []struct {
		Name     string `json:"name"`
		Enforced bool   `json:"enforced"`
		Reason   string `json:"reason"`
		Fix      string `json:"fix"`
	} `json:"layers"`
}

func (c checkResult) enforced(name string) bool {
	for _, l := range c.Layers {
		if l.Name == name {
			return l.Enforced
		}
	}
	return false
}

// cgroupDegraded says whether this user cannot set the cgroup caps here.
func (u *user) cgroupDegraded() bool {
	for _, d := range u.degraded {
		if d == "cgroup" {
			return true
		}
	}
	return false
}

func TestMain(m *testing.M) {
	code := func() int {
		err := setup()
		if base != "" {
			defer os.RemoveAll(base)
		}
		if os.Getenv("TJ_VM_NOUSERNS") == "1" && !hostNoUserNS {
			// The guest's nouserns suite must test the real refusal,
			// not fall back to the emulation.
			fmt.Fprintln(os.Stderr, "integration: TJ_VM_NOUSERNS=1 but user.max_user_namespaces is not 0")
			return 1
		}
		if err != nil && os.Getenv("TJ_VM") == "1" {
			// A guest is booted for this suite: skipping it all is a failure.
			fmt.Fprintf(os.Stderr, "integration: %v\n", err)
			return 1
		}
		if err != nil {
			skipReason = err.Error()
			fmt.Fprintf(os.Stderr, "integration: SKIPPING every test: %s\n", skipReason)
		}
		return m.Run()
	}()
	os.Exit(code)
}

func setup() error {
	if os.Getenv("TJ_VM") == "1" {
		slow = 4
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		hostNoUserNS = true
		noNSWrap = nil
	}
	tj := os.Getenv("TOOLJAIL")
	if tj == "" {
		return fmt.Errorf("TOOLJAIL is not set: run `make integration`, or set TOOLJAIL to a built bin/tooljail")
	}
	if _, err := os.Stat(tj); err != nil {
		return fmt.Errorf("TOOLJAIL=%s: %v (run `make build` first)", tj, err)
	}
	var err error
	base, err = os.MkdirTemp("/tmp", "tjit-")
	if err != nil {
		return err
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	helper := os.Getenv("TJHELPER")
	if helper == "" {
		// Build it when a Go toolchain is at hand (not in the VM guests).
		helper = filepath.Join(base, "tjhelper.built")
		cmd := exec.Command("go", "build", "-trimpath", "-o", helper, "./tjhelper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("TJHELPER is not set and building ./tjhelper failed: %v: %s", err, out)
		}
	}
	// Copies in base: the unprivileged user must reach both, and workdirs
	// get hard links of the helper (same file system).
	tooljailBin = filepath.Join(base, "tooljail")
	helperBin = filepath.Join(base, "tjhelper")
	if err := copyFile(tj, tooljailBin); err != nil {
		return fmt.Errorf("TOOLJAIL: %v", err)
	}
	if err := copyFile(helper, helperBin); err != nil {
		return fmt.Errorf("TJHELPER: %v (run `make bin/tjhelper`)", err)
	}
	switch {
	case os.Geteuid() == 0 && vmCgroup != "":
		// The VM guests run this suite twice, as root and as an
		// unprivileged user with a delegated subtree: root's run need not
		// repeat the unprivileged one (emulated guests are slow).
		users = []*user{{name: "root", uid: 0, gid: 0}}
	case os.Geteuid() == 0:
		users = []*user{
			{name: "root", uid: 0, gid: 0},
			{name: "uid65534", uid: 65534, gid: 65534, cred: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}},
		}
	default:
		users = []*user{{name: "self", uid: os.Geteuid(), gid: os.Getegid()}}
	}
	for _, u := range users {
		u.dirUID, u.dirGID = u.uid, u.gid
		if err := u.probe(); err != nil {
			return err
		}
	}
	return nil
}

// probeIdmap says whether a root-started jail can run in a root-owned
// workdir here: it needs an idmapped mount of the workdir's file system.
func (u *user) probeIdmap() error {
	d, err := os.MkdirTemp(base, "idmap-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(d)
	if err := os.Chmod(d, 0o755); err != nil {
		return err
	}
	if err := os.Link(helperBin, filepath.Join(d, "tjhelper")); err != nil {
		if err := copyFile(helperBin, filepath.Join(d, "tjhelper")); err != nil {
			return err
		}
	}
	args := []string{"run", "--workdir", d}
	for _, l := range u.degraded {
		args = append(args, "--allow-degraded", l)
	}
	cmd := exec.Command(tooljailBin, append(args, "--", filepath.Join(d, "tjhelper"), "exit", "0")...)
	cmd.Dir = base
	cmd.Env = u.environ(nil)
	// In a cgroup of its own, as every test's run: in a VM guest the
	// suite's leaf holds the suite, and cgroup v2 gives no caps below it.
	rc, err := u.newRunCgroup()
	if err != nil {
		return err
	}
	defer rc.release()
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil:
	case strings.Contains(string(out), "idmapped"):
		u.noIdmap, u.dirUID, u.dirGID = true, 4242, 4242
		fmt.Fprintf(os.Stderr, "integration: %s: this file system cannot be idmapped; test directories belong to 4242: %s", u.name, out)
	default:
		return fmt.Errorf("tooljail run as %s in a root-owned workdir: %v: %s", u.name, err, out)
	}
	return nil
}

// probe asks `tooljail check --json`, as u, what it can enforce, and allows
// exactly those layers degraded among the ones the suite tolerates.
func (u *user) probe() error {
	cmd := exec.Command(tooljailBin, "check", "--json")
	cmd.Dir = base
	cmd.Env = u.environ(nil)
	rc, err := u.newRunCgroup()
	if err != nil {
		return err
	}
	defer rc.release()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return fmt.Errorf("tooljail check --json as %s: %v", u.name, err)
	}
	if err := json.Unmarshal(out, &u.check); err != nil {
		return fmt.Errorf("tooljail check --json as %s: %v: %s", u.name, err, out)
	}
	if len(u.check.Layers) == 0 {
		return fmt.Errorf("tooljail check --json as %s: no layers: %s", u.name, out)
	}
	if !u.check.enforced("cgroup memory") || !u.check.enforced("cgroup cpu") || !u.check.enforced("cgroup pids") {
		u.degraded = append(u.degraded, "cgroup")
	}
	if !u.check.enforced("seccomp") {
		u.degraded = append(u.degraded, "seccomp")
	} else if !u.check.enforced("seccomp-notify") {
		u.degraded = append(u.degraded, "seccomp-notify")
	}
	// An explicit opt-in for hosts that lack more (e.g. a VM kernel without
	// Landlock in its LSM list): a comma-separated list of layers.
	if extra := os.Getenv("TOOLJAIL_TEST_ALLOW_DEGRADED"); extra != "" {
		u.degraded = append(u.degraded, strings.Split(extra, ",")...)
	}
	fmt.Fprintf(os.Stderr, "integration: %s: allow-degraded %v (from tooljail check)\n", u.name, u.degraded)
	if u.uid == 0 && !hostNoUserNS {
		return u.probeIdmap()
	}
	return nil
}

// environ is the environment tooljail runs with: the test's own, with HOME
// fitting the user, plus extra.
func (u *user) environ(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TOOLJAIL_AUDIT_LOG=") {
			continue
		}
		env = append(env, kv)
	}
	home := os.Getenv("HOME")
	if u.cred != nil {
		home = "/nonexistent"
	}
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return append(env, extra...)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// eachUser runs f as a parallel subtest for every user.
func eachUser(t *testing.T, f func(t *testing.T, u *user)) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
	forUsers(t, f)
}

// forUsers runs f as a parallel subtest for every user.
func forUsers(t *testing.T, f func(t *testing.T, u *user)) {
	t.Helper()
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			f(t, u)
		})
	}
}

// dir makes an empty directory owned by u.
func (u *user) dir(t *testing.T) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	d, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, u.dirUID, u.dirGID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// workdir makes a directory owned by u holding the helper: read-write binds
// allow execution, read-only ones (Landlock read only) do not.
func (u *user) workdir(t *testing.T) string {
	t.Helper()
	d := u.dir(t)
	if err := os.Link(helperBin, filepath.Join(d, "tjhelper")); err != nil {
		if err := copyFile(helperBin, filepath.Join(d, "tjhelper")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func marker(what string) string {
	var b [6]byte
	rand.Read(b[:])
	return "tjmark-" + what + "-" + hex.EncodeToString(b[:])
}

// run is one invocation of tooljail.
type run struct {
	args       []string // everything after the tooljail binary
	env        []string // added to the environment
	dir        string   // current directory (default base)
	stdin      *os.File
	extraFiles []*os.File
	// wrap runs tooljail through the helper: tjhelper wrap... tooljail args...
	wrap []string
	bin  string // a tooljail binary other than tooljailBin
	// timeout bounds the run on a fast host (scaled by slow); 0 is a
	// minute. Only the online workloads (a build from the network) need more.
	timeout time.Duration
}

type outcome struct {
	code           int
	stdout, stderr string
	// report is from --report FILE (jail runs); a zero report with
	// noReport set when tooljail wrote none.
	report    *report
	noReport  bool
	reportRaw []byte
	args      []string
}

func (o *outcome) String() string {
	return fmt.Sprintf("tooljail %s\nexit %d\nstdout: %q\nstderr: %q\nreport: %s", strings.Join(o.args, " "), o.code, trunc(o.stdout), trunc(o.stderr), trunc(string(o.reportRaw)))
}

func trunc(s string) string {
	if len(s) > 3000 {
		return s[:1500] + "..." + s[len(s)-1500:]
	}
	return s
}

// exec runs tooljail as u with r.args, bounded to r.timeout (a minute) on
// a fast host.
func (u *user) exec(t *testing.T, r run) *outcome {
	t.Helper()
	limit := time.Minute * slow
	if r.timeout > 0 {
		limit = r.timeout * slow
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	bin := tooljailBin
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.CommandContext(ctx, bin, r.args...)
	if r.wrap != nil {
		cmd = exec.CommandContext(ctx, helperBin, append(append(append([]string{}, r.wrap...), bin), r.args...)...)
	}
	cmd.Dir = r.dir
	if cmd.Dir == "" {
		cmd.Dir = base
	}
	cmd.Env = u.environ(r.env)
	if r.stdin != nil {
		cmd.Stdin = r.stdin
	}
	cmd.ExtraFiles = r.extraFiles
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	// Its own process group: whatever a broken jail lets escape cannot
	// signal the test, and a hung run is killed as a group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, stderr, held, err := runPiped(ctx, t, cmd)
	if cmd.Process != nil {
		rc.check(t, cmd.Process.Pid)
	} else {
		rc.release()
	}
	o := &outcome{stdout: stdout, stderr: stderr, args: r.args}
	if ee, ok := err.(*exec.ExitError); ok {
		o.code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("tooljail did not end within %s\n%s", limit, o)
	}
	if len(held) > 0 {
		t.Fatalf("tooljail exited but these processes still hold its stdout or stderr: they outlived the run\n%s\n%s", strings.Join(held, "\n"), o)
	}
	if err != nil && o.code == 0 {
		t.Fatalf("tooljail %v: %v", r.args, err)
	}
	return o
}

// runPiped starts cmd with stdout and stderr on pipes of its own, not
// os/exec's, and waits for its exit and then for the pipes' end, up to ctx's
// end. os/exec's Wait would wait for ever for a process that outlived cmd
// with a copy of a write end; here, what still holds one once cmd has exited
// is named in held, unless it is this test's own fork that has not yet
// exec'd (it holds a copy of every descriptor for that moment, which on a
// loaded machine can last seconds): waitClosed tells the two apart.
func runPiped(ctx context.Context, t *testing.T, cmd *exec.Cmd) (stdout, stderr string, held []string, err error) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var outB, errB bytes.Buffer
	inos := []uint64{pipeIno(outR), pipeIno(errR)}
	cmd.Stdout, cmd.Stderr = outW, errW
	outDone, errDone := drainInto(&outB, outR), drainInto(&errB, errR)
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err == nil {
		err = cmd.Wait()
	}
	held = waitClosed(ctx, inos, []*os.File{outR, errR}, outDone, errDone)
	return outB.String(), errB.String(), held, err
}

// drainInto copies r into b until EOF, then closes r and done.
func drainInto(b *bytes.Buffer, r *os.File) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		io.Copy(b, r)
	}()
	return done
}

// pipeIno is the inode of a pipe end: both ends share it.
func pipeIno(f *os.File) uint64 {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return 0
	}
	return st.Ino
}

// waitClosed waits, after tooljail exited, until every process holding
// a write end of the pipes inos has let go (done closes for each), and
// returns the holders that are not this test's own forks in flight: those
// outlived the run. It looks every 100ms, so a leak is caught while it
// lasts; pipes still open when ctx ends are a leak too. On a leak it closes
// readers, so that the copies end.
func waitClosed(ctx context.Context, inos []uint64, readers []*os.File, done ...<-chan struct{}) []string {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for _, d := range done {
		for waiting := true; waiting; {
			select {
			case <-d:
				waiting = false
			case <-tick.C:
				if l := pipeHolders(inos); len(l) > 0 {
					closeAll(readers)
					return l
				}
			case <-ctx.Done():
				closeAll(readers)
				return []string{"(the pipes stayed open until the run's deadline)"}
			}
		}
	}
	return nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// pipeHolders lists the processes, other than this test and its children
// that are still this test's program (a fork before its exec), that hold
// a write end of one of the pipes.
func pipeHolders(inos []uint64) []string {
	self, _ := os.Readlink("/proc/self/exe")
	me := strconv.Itoa(os.Getpid())
	var l []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(target, "pipe:[") {
			continue
		}
		ino, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "pipe:["), "]"), 10, 64)
		if !slices.Contains(inos, ino) {
			continue
		}
		pid := strings.Split(fd, "/")[2]
		info, _ := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
		if !writable(info) || pid == me {
			continue
		}
		exe, _ := os.Readlink("/proc/" + pid + "/exe")
		if exe == self && parentOf(pid) == me {
			continue // this test's fork, not yet exec'd
		}
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		l = append(l, fmt.Sprintf("pid %s (%s): %s", pid, exe, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return l
}

// writable says whether an fdinfo's flags open the file for writing.
func writable(fdinfo []byte) bool {
	for _, line := range strings.Split(string(fdinfo), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && f&(unix.O_WRONLY|unix.O_RDWR) != 0
		}
	}
	return false
}

// jail runs the helper with actions in workdir w: tooljail run --workdir w
// --report FILE [degraded] flags -- w/tjhelper actions... The report is
// parsed into o.report.
func (u *user) jail(t *testing.T, w string, flags []string, actions ...string) *outcome {
	t.Helper()
	return u.jailRun(t, w, run{args: flags}, append([]string{filepath.Join(w, "tjhelper")}, actions...)...)
}

// jailRun is jail with a full run (stdin, env, extra files) and any command.
func (u *user) jailRun(t *testing.T, w string, r run, command ...string) *outcome {
	t.Helper()
	rep := filepath.Join(u.dir(t), "report.json")
	args := []string{"run", "--workdir", w, "--report", rep}
	for _, d := range u.degraded {
		args = append(args, "--allow-degraded", d)
	}
	args = append(args, r.args...)
	args = append(args, "--")
	r.args = append(args, command...)
	if r.dir == "" {
		r.dir = w
	}
	o := u.exec(t, r)
	o.report = new(report)
	if b, err := os.ReadFile(rep); err == nil {
		o.reportRaw = b
		if err := json.Unmarshal(b, o.report); err != nil {
			t.Fatalf("report is not valid JSON: %v\n%s", err, o)
		}
	} else {
		o.noReport = true
	}
	return o
}

// lines are the helper's result lines.
func (o *outcome) lines() []string {
	s := strings.TrimRight(o.stdout, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// ok fails the test unless the run exited 0 with n result lines.
func (o *outcome) ok(t *testing.T, n int) []string {
	t.Helper()
	l := o.lines()
	if o.code != 0 || len(l) != n || o.noReport {
		t.Fatalf("want exit 0, %d result lines and a report\n%s", n, o)
	}
	return l
}

// value decodes result line i ("value JSON") into v.
func (o *outcome) value(t *testing.T, i int, v any) {
	t.Helper()
	l := o.lines()
	if i >= len(l) || !strings.HasPrefix(l[i], "value ") {
		t.Fatalf("result line %d is not a value\n%s", i, o)
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l[i], "value ")), v); err != nil {
		t.Fatalf("result line %d: %v\n%s", i, err, o)
	}
}

// failed reports whether result line i is an error (errno or other).
func failed(line string) bool {
	return strings.HasPrefix(line, "errno ") || strings.HasPrefix(line, "error ")
}

// report is the part of the tooljail.report/v1 JSON the tests read.
type report struct {
	Schema      string   `json:"schema"`
	Version     string   `json:"version"`
	ID          string   `json:"id"`
	Command     []string `json:"command"`
	Workdir     string   `json:"workdir"`
	Profile     string   `json:"profile"`
	StartedAt   string   `json:"started_at"`
	Status      string   `json:"status"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal"`
	Reason      string   `json:"reason"`
	WallTimeMs  *int64   `json:"wall_time_ms"`
	CPUUserMs   *int64   `json:"cpu_user_ms"`
	CPUSystemMs *int64   `json:"cpu_system_ms"`
	Stdout      stream   `json:"stdout"`
	Stderr      stream   `json:"stderr"`
	Violations  []any    `json:"violations"`
	EnvDropped  []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"env_dropped"`
	Limits struct {
		MemoryBytes      int64   `json:"memory_bytes"`
		CPUs             float64 `json:"cpus"`
		Pids             int64   `json:"pids"`
		TimeoutMs        int64   `json:"timeout_ms"`
		CPUTimeMs        int64   `json:"cpu_time_ms"`
		NoFile           uint64  `json:"nofile"`
		FSizeBytes       int64   `json:"fsize_bytes"`
		OutputLimitBytes int64   `json:"output_limit_bytes"`
		CoreBytes        *int64  `json:"core_bytes"`
	} `json:"limits"`
	Enforcement struct {
		Namespaces  map[string]bool `json:"namespaces"`
		LandlockABI int             `json:"landlock_abi"`
		Seccomp     string          `json:"seccomp"`
		Cgroup      string          `json:"cgroup"`
		Caps        map[string]bool `json:"caps"`
		NoNewPrivs  bool            `json:"no_new_privs"`
		Degraded    []string        `json:"degraded"`
		Protected   []string        `json:"protected"`
	} `json:"enforcement"`
}

type stream struct {
	Bytes     int64   `json:"bytes"`
	Truncated bool    `json:"truncated"`
	Text      *string `json:"text"`
	Base64    *string `json:"base64"`
	Merged    bool    `json:"merged"`
	TTY       bool    `json:"tty"`
}

// hostProcs lists host pids whose command line contains s.
func hostProcs(s string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// settledProcs is hostProcs for a command that may be in the middle of
// an execve: between the new memory map and its arguments the kernel
// shows an empty command line (seen in the 6.1 guest), so it polls
// briefly for a process to carry the marker.
func settledProcs(s string) []string {
	deadline := time.Now().Add(5 * time.Second * slow)
	for {
		found := hostProcs(s)
		if len(found) > 0 || time.Now().After(deadline) {
			return found
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireGone fails unless no host process carries any of the markers,
// polling briefly: the kernel may still be tearing the jail down.
func requireGone(t *testing.T, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		for _, m := range markers {
			left = append(left, hostProcs(m)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived the run:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oneLineError checks tooljail's own failure: exit 125, nothing on stdout,
// exactly one "tooljail: ..." line on stderr.
func oneLineError(t *testing.T, o *outcome, want ...string) {
	t.Helper()
	if o.code != 125 {
		t.Fatalf("want exit 125\n%s", o)
	}
	if o.stdout != "" {
		t.Errorf("stdout is not empty\n%s", o)
	}
	lines := strings.Split(strings.TrimRight(o.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "tooljail: ") || !strings.HasSuffix(o.stderr, "\n") {
		t.Errorf("want one line \"tooljail: ...\" on stderr\n%s", o)
	}
	for _, w := range want {
		if !strings.Contains(o.stderr, w) {
			t.Errorf("stderr does not mention %q\n%s", w, o)
		}
	}
}

// The leak check of exec can fail: a background process that keeps the
// pipes after its parent exited is named.
func TestPipeHoldersFound(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := drainInto(&out, r)
	cmd := exec.Command("/bin/sh", "-c", "sleep 5 & exit 0")
	cmd.Stdout = w
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := waitClosed(ctx, []uint64{pipeIno(r)}, []*os.File{r}, done)
	for _, h := range held {
		if pid, err := strconv.Atoi(strings.Fields(h)[1]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if len(held) != 1 || !strings.Contains(held[0], "sleep 5") {
		t.Fatalf("holders %q, want the background sleep", held)
	}
	<-done
}
