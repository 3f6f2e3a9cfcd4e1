package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The mode without namespaces (--allow-degraded namespaces), run where
// user namespaces are refused: in the emulated container without a user
// namespace of its own (tjhelper _container --no-userns, Docker's default
// seccomp profile and capabilities, as `docker run` without userns-remap
// gives them), as root (the host's) and as uid 65534.

// noNSReport is what these tests read of the report beyond report.
type noNSReport struct {
	Status         string          `json:"status"`
	KilledLeftover *int64          `json:"killed_leftover_processes"`
	Violations     []noNSViolation `json:"violations"`
	Enforcement    struct {
		Mode        string          `json:"mode"`
		Namespaces  map[string]bool `json:"namespaces"`
		LandlockABI int             `json:"landlock_abi"`
		Seccomp     string          `json:"seccomp"`
		NoNewPrivs  bool            `json:"no_new_privs"`
		HostUID     *int            `json:"host_uid"`
		Degraded    []string        `json:"degraded"`
	} `json:"enforcement"`
}

type noNSViolation struct {
	Kind    string `json:"kind"`
	Syscall string `json:"syscall"`
	Path    string `json:"path"`
}

// noNSWrap is the emulated container the tests force the mode in; empty
// where the host itself refuses user namespaces (hostNoUserNS).
var noNSWrap = []string{"_container", "--no-userns", "--seccomp", "docker", "--"}

// noNSOwner is who owns the directories of a run as u: the command's
// identity. Root's command never runs as root: it runs as the workdir's
// owner, here a uid of its own.
func noNSOwner(u *user) (uid, gid int) {
	if u.uid == 0 {
		return 4242, 4242
	}
	return u.uid, u.gid
}

// noNSDirs makes a workdir with tjsys and tjhelper in it, and a directory
// outside it with a secret, both owned by the command's identity (so that
// only Landlock stands between the command and them).
func noNSDirs(t *testing.T, u *user) (w, outside, secret string) {
	t.Helper()
	uid, gid := noNSOwner(u)
	w = u.workdir(t)
	if err := copyFile(tjsysBinary(t), filepath.Join(w, "tjsys")); err != nil {
		t.Fatal(err)
	}
	outside = u.dir(t)
	secret = filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte(marker("secret")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w, outside, secret} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return w, outside, secret
}

func noNSRun(t *testing.T, u *user, w string, flags []string, script string) (*outcome, *noNSReport) {
	t.Helper()
	args := append([]string{"--allow-degraded", "namespaces", "--env", "TJSYS_JAILED=1"}, flags...)
	o := u.jailRun(t, w, run{args: args, wrap: noNSWrap}, "/bin/sh", "-c", script)
	if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container") {
		t.Skipf("the emulated container cannot start here: %s", o.stderr)
	}
	var r noNSReport
	if err := json.Unmarshal(o.reportRaw, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return o, &r
}

// Confined without namespaces: a file outside the workdir cannot be read,
// nothing outside the workdir and the private TMPDIR can be written, the
// seccomp filter's denials are named, a process outside the run cannot be
// signalled, what the command leaves is killed, and the private directory
// is gone after the run.
func TestNoNamespacesConfines(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, outside, secret := noNSDirs(t, u)
		uid, _ := noNSOwner(u)
		// A process of the command's own user outside the run.
		decoyMark := marker("decoy")
		decoy := exec.Command(helperBin, "hold", decoyMark)
		decoy.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if os.Geteuid() == 0 {
			decoy.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
		}
		if err := decoy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			decoy.Process.Kill()
			decoy.Wait()
		}()
		// A service of the host on a unix socket the command's user may
		// connect to (a D-Bus session bus, a container engine's socket).
		bus := filepath.Join(outside, "bus.sock")
		l, err := net.Listen("unix", bus)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := os.Chown(bus, uid, uid); err != nil {
			t.Fatal(err)
		}
		daemon := marker("nonsdaemon")
		script := fmt.Sprintf(`./tjsys read:%s write:%s/x "write:$TMPDIR/f" "read:$TMPDIR/f" write:%s/inwd write:/tmp/%s ptrace unshare setns kill:%d:0 socket-inet
./tjhelper connect-unix %s
echo "TMPDIR=$TMPDIR"
echo "HOME=$HOME"
./tjhelper daemon %s`, secret, outside, w, marker("tmp"), decoy.Process.Pid, bus, daemon)
		o, r := noNSRun(t, u, w, nil, script)
		if o.code != 0 || r.Status != "exited" {
			t.Fatalf("want exit 0\n%s", o)
		}
		lines := o.lines()
		if len(lines) != 15 {
			t.Fatalf("want 15 lines\n%s", o)
		}
		want := []string{"errno EACCES", "errno EACCES", "ok", `data "tjsys"`, "ok", "errno EACCES", "errno EPERM", "errno EPERM", "errno EPERM", "errno EPERM",
			"errno EPERM", "errno EPERM"}
		what := []string{"read a file outside the workdir", "write outside the workdir", "write the private TMPDIR", "read it back", "write the workdir",
			"write the host's /tmp", "ptrace", "unshare", "setns", "signal a process of its own user outside the run",
			"an inet socket with --net none", "connect to a host service's unix socket"}
		for i, wl := range want {
			if i == 9 && r.Enforcement.LandlockABI < 6 {
				continue // signal scoping needs Landlock ABI 6
			}
			if lines[i] != wl {
				t.Errorf("%s: %q, want %q", what[i], lines[i], wl)
			}
		}
		tmp, _ := strings.CutPrefix(lines[12], "TMPDIR=")
		if !strings.HasPrefix(tmp, "/") || lines[13] != "HOME="+tmp {
			t.Errorf("TMPDIR and HOME: %q %q", lines[12], lines[13])
		}
		if _, err := os.Stat(filepath.Join(outside, "x")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a file was written outside the workdir: %v", err)
		}
		if _, err := os.Stat(filepath.Join(w, "inwd")); err != nil {
			t.Errorf("the workdir write did not land: %v", err)
		}
		if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the private TMPDIR %s is still there after the run: %v", tmp, err)
		}
		requireGone(t, daemon)
		if n := r.KilledLeftover; n == nil || *n != 1 {
			t.Errorf("killed_leftover_processes %v, want 1 (the daemon)", n)
		}
		if err := decoy.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the process outside the run is gone: %v", err)
		}

		e := r.Enforcement
		if e.Mode != "landlock-seccomp" || !slices.Contains(e.Degraded, "namespaces") || !e.NoNewPrivs || e.Seccomp != "notify" {
			t.Errorf("enforcement: %+v", e)
		}
		if len(e.Namespaces) != 7 {
			t.Errorf("namespaces: %v, want all seven listed", e.Namespaces)
		}
		for ns, on := range e.Namespaces {
			if on {
				t.Errorf("namespace %s reported enforced", ns)
			}
		}
		if e.HostUID == nil || *e.HostUID != uid {
			t.Errorf("host_uid %v, want %d: the command runs as the workdir's owner", e.HostUID, uid)
		}
		for _, call := range []string{"ptrace", "socket"} {
			if !slices.ContainsFunc(r.Violations, func(v noNSViolation) bool { return v.Kind == "syscall" && v.Syscall == call }) {
				t.Errorf("%s is not reported by name: %+v", call, r.Violations)
			}
		}
	})
}

// The command runs as an unprivileged identity with no capability, and a
// run killed for its timeout leaves nothing behind either.
func TestNoNamespacesIdentityAndTimeout(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		uid, gid := noNSOwner(u)
		daemon, orphan := marker("nonstdaemon"), marker("nonstorphan")
		tmo := 3 * time.Second * slow
		o, r := noNSRun(t, u, w, []string{"--timeout", tmo.String()},
			fmt.Sprintf("./tjhelper ids ';' caps ';' daemon %s ';' spawn %s ';' sleep 60s", daemon, orphan))
		if r.Status != "timeout" || o.code != 124 {
			t.Fatalf("want status timeout\n%s", o)
		}
		if got := o.lines(); len(got) < 2 {
			t.Fatalf("want the ids and caps lines\n%s", o)
		}
		var ids struct {
			UID, EUID, GID, EGID int
			Groups               []int
		}
		o.value(t, 0, &ids)
		if ids.UID != uid || ids.EUID != uid || ids.GID != gid || ids.EGID != gid || len(ids.Groups) != 0 {
			t.Errorf("ids %+v, want uid and gid %d:%d and no supplementary group", ids, uid, gid)
		}
		var caps map[string]string
		o.value(t, 1, &caps)
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
			if caps[k] != "0000000000000000" {
				t.Errorf("%s %q: the command has capabilities", k, caps[k])
			}
		}
		if u.uid == 0 && caps["CapBnd"] != "0000000000000000" {
			t.Errorf("CapBnd %q: root's command keeps a bounding set", caps["CapBnd"])
		}
		if caps["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs %q", caps["NoNewPrivs"])
		}
		requireGone(t, daemon, orphan)
		if r.KilledLeftover != nil {
			t.Errorf("killed_leftover_processes %d in a run killed for its timeout, want absent (not counted)", *r.KilledLeftover)
		}
	})
}

// Without the option the run fails closed and names it; root with a
// workdir of root's, which the command could not write without an
// idmapped mount, fails closed too.
func TestNoNamespacesFailsClosed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		o := u.exec(t, run{args: []string{"run", "--workdir", w, "--allow-degraded", "cgroup", "--", w + "/tjhelper", "exit", "0"}, dir: w, wrap: noNSWrap})
		oneLineError(t, o, "user namespaces are not available", "--allow-degraded namespaces")
		c := u.exec(t, run{args: []string{"check"}, wrap: noNSWrap})
		if c.code != 1 || !strings.Contains(c.stdout, "default profile: cannot be enforced here") || !strings.Contains(c.stdout, "--allow-degraded namespaces") {
			t.Errorf("check does not name the mode without namespaces\n%s", c)
		}
		if hostNoUserNS {
			// The host's own refusal: check names the knob and its fix.
			for _, want := range []string{"user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"} {
				if !strings.Contains(c.stdout, want) {
					t.Errorf("check does not say %q\n%s", want, c)
				}
			}
			// The rest needs a user namespace to emulate a container in.
			return
		}
		if u.uid != 0 {
			return
		}
		// Root of a container's user namespace that maps root alone (as
		// the emulation's default does): no unprivileged uid to run the
		// command as, and it never runs as root. (As uid 65534 the host's
		// root-owned symlinks show as the overflow uid there, which
		// hostpath refuses first.)
		o = u.inContainer(t, []string{"--seccomp", "docker"}, run{
			args: []string{"run", "--workdir", w, "--allow-degraded", "namespaces,cgroup", "--", w + "/tjhelper", "exit", "0"}, dir: w})
		oneLineError(t, o, "does not map", "never runs as root")
		rw := u.workdir(t)
		if err := os.Chown(rw, 0, 0); err != nil {
			t.Fatal(err)
		}
		o = u.exec(t, run{args: []string{"run", "--workdir", rw, "--allow-degraded", "namespaces,cgroup", "--", rw + "/tjhelper", "exit", "0"}, dir: rw, wrap: noNSWrap})
		oneLineError(t, o, "belongs to 0:0", "never runs as root")
	})
}

// Where namespaces can be made, allowing the mode changes nothing.
func TestNoNamespacesOnlyWhereRefused(t *testing.T) {
	if hostNoUserNS {
		t.Skip("this host refuses user namespaces")
	}
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--allow-degraded", "namespaces"}, "exit", "0")
		var r noNSReport
		if err := json.Unmarshal(o.reportRaw, &r); err != nil || o.code != 0 {
			t.Fatalf("%v\n%s", err, o)
		}
		if r.Enforcement.Mode != "namespaces" || !r.Enforcement.Namespaces["user"] || slices.Contains(r.Enforcement.Degraded, "namespaces") {
			t.Errorf("enforcement: %+v", r.Enforcement)
		}
	})
}

// The profile key allows the mode as the flag does; a profile inside the
// workdir, which the command could change for the next run and which no
// mount can make read-only here, is refused.
func TestNoNamespacesProfileKey(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, outside, _ := noNSDirs(t, u)
		body := "extends = \"default\"\nallow_degraded = [\"namespaces\", \"cgroup\"]\n"
		for _, dir := range []string{outside, w} {
			prof := filepath.Join(dir, "p.toml")
			if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if dir == w {
				o := u.exec(t, run{args: []string{"run", "--profile", prof, "--workdir", w, "--", w + "/tjhelper", "exit", "0"}, dir: w, wrap: noNSWrap})
				oneLineError(t, o, "p.toml", "cannot be made read-only")
				continue
			}
			o := u.exec(t, run{args: []string{"run", "--profile", prof, "--workdir", w, "--json", "--", w + "/tjhelper", "exit", "0"}, dir: w, wrap: noNSWrap})
			var r noNSReport
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || o.code != 0 || r.Enforcement.Mode != "landlock-seccomp" {
				t.Errorf("profile with allow_degraded namespaces: %v %+v\n%s", err, r.Enforcement, o)
			}
		}
	})
}

// Killing the supervisor ends the run too: the reaper's parent-death
// signal makes it kill everything the command started.
func TestNoNamespacesSupervisorKilled(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		daemon, fg := marker("nonskdaemon"), marker("nonskfg")
		argv := []string{tooljailBin, "run", "-q", "--workdir", w, "--allow-degraded", "namespaces,cgroup",
			"--", filepath.Join(w, "tjhelper"), "daemon", daemon, ";", "hold", fg}
		if len(noNSWrap) > 0 {
			argv = append(append([]string{helperBin}, noNSWrap...), argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		// A supervisor killed so leaves its private directory behind
		// until the next run: in a directory of the test's.
		tmpdir := u.dir(t)
		cmd.Dir, cmd.Env = w, u.environ([]string{"TMPDIR=" + tmpdir})
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}()
		// The supervisor is the process running tooljail; the daemon's argv
		// is "tjhelper _hold MARKER".
		supervisor := func() (int, bool) {
			sup, held := 0, false
			for _, p := range hostProcs(fg) {
				pid, rest, _ := strings.Cut(p, ": ")
				if strings.HasPrefix(rest, tooljailBin+" run") {
					sup, _ = strconv.Atoi(pid)
				}
			}
			for _, p := range hostProcs(daemon) {
				held = held || strings.Contains(p, ": tjhelper _hold ")
			}
			return sup, held && sup > 0
		}
		deadline := time.Now().Add(30 * time.Second * slow)
		sup, ok := supervisor()
		for ; !ok; sup, ok = supervisor() {
			if time.Now().After(deadline) {
				t.Fatalf("the command did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		requireGone(t, daemon, fg)
		left, _ := filepath.Glob(filepath.Join(tmpdir, "tooljail-*"))
		if len(left) != 1 {
			t.Fatalf("want the killed run's private directory in %s, found %q", tmpdir, left)
		}
		// The next run of the same identity there removes it (and its own).
		o := u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces"}, wrap: noNSWrap, env: []string{"TMPDIR=" + tmpdir}}, "/bin/true")
		if o.code != 0 {
			t.Fatalf("the next run\n%s", o)
		}
		if left, _ := filepath.Glob(filepath.Join(tmpdir, "tooljail-*")); len(left) != 0 {
			t.Errorf("private directories left after the next run: %q", left)
		}
	})
}
