package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// With a real engine: Debian's podman runs the built tooljail inside a
// container whose root file system is the host's own (`podman run
// --rootfs`), so that no image has to be pulled, with podman's default
// security and with docs/containers.md's Podman recipe. Podman runs as
// root (rootful): the host user is root; the container's user is root or
// uid 65534 (`--user`).
//
// The container is started in a mount namespace of the test's own, where
//   - the host's / is bound, recursively, on a directory of base, and that
//     directory is the container's root: crun cannot pivot_root into the
//     root mount a process already stands on (EBUSY for `--rootfs /`);
//   - a tmpfs covers that root's /run: podman creates /run/.containerenv
//     on the root file system it is given, which would be the host's;
//   - a cgroup2 at /sys/fs/cgroup/unified (a hybrid cgroup host, as here)
//     is unmounted: crun refuses hybrid hosts outright ("cgroups in hybrid
//     mode not supported"), even with --cgroups=disabled.
//
// and with --cgroups=disabled (no cgroup of the host's is made),
// --network=none (no bridge or firewall rule on the host) and
// --events-backend=none. Podman sets RLIMIT_NOFILE and RLIMIT_NPROC to
// 1048576 for a rootful container, which a host without CAP_SYS_RESOURCE
// cannot raise to: the test passes the host's own limits instead.

// podmanScript prepares the mount namespace and execs podman: $1 is the
// directory that becomes the container's root, the rest podman's argv.
const podmanScript = `set -e
root=$1; shift
if [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then umount /sys/fs/cgroup/unified; fi
mount --rbind / "$root"
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
exec "$@"
`

var (
	podmanOnce sync.Once
	podmanSkip string
	podmanRoot string // the container's root (the host's /, bound there)
)

// podmanReady skips t unless podman can start a container here.
func podmanReady(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	podmanOnce.Do(func() { podmanSkip = probePodman() })
	if podmanSkip != "" {
		t.Skip(podmanSkip)
	}
}

// probePodman says why podman cannot start a container here ("": it can).
func probePodman() string {
	if os.Geteuid() != 0 {
		return "the podman tests start rootful podman and need root (rootless podman needs subordinate uid ranges and is not covered)"
	}
	if _, err := exec.LookPath("podman"); err != nil {
		return "podman is not installed (Debian: apt-get install podman)"
	}
	for _, tool := range []string{"mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (util-linux)"
		}
	}
	d, err := os.MkdirTemp(base, "podman-root-")
	if err != nil {
		return err.Error()
	}
	podmanRoot = d
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
	defer cancel()
	if o := podmanRun(ctx, nil, "/bin/true"); o.code != 0 || o.err != nil {
		return fmt.Sprintf("podman cannot start a container here: %s", o)
	}
	return ""
}

// podmanOutcome is one `podman run`.
type podmanOutcome struct {
	args           []string
	code           int
	err            error // podman could not be started, or timed out
	stdout, stderr string
}

func (o *podmanOutcome) String() string {
	return fmt.Sprintf("%s\nexit %d (%v)\nstdout: %q\nstderr: %q", strings.Join(o.args, " "), o.code, o.err, trunc(o.stdout), trunc(o.stderr))
}

// outcome is o as the harness's outcome of tooljail (the container's
// exit is tooljail's: podman run passes it on).
func (o *podmanOutcome) outcome() *outcome {
	return &outcome{code: o.code, stdout: o.stdout, stderr: o.stderr, args: o.args}
}

// podmanRun runs command in a container of the host's root with podman's
// options opts (security, --user) added to the fixed ones.
func podmanRun(ctx context.Context, opts []string, command ...string) *podmanOutcome {
	var nofile, nproc syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile)
	syscall.Getrlimit(6 /* RLIMIT_NPROC */, &nproc)
	// podman's own default for nproc, 32768 (containers.conf), when the
	// host allows it: the host's own hard limit was refused here (EPERM
	// from crun's setrlimit), for reasons of podman's.
	nproc.Cur = min(nproc.Cur, 32768)
	nproc.Max = min(nproc.Max, 32768)
	args := []string{"podman", "--events-backend=none", "run", "--rm",
		"--cgroups=disabled", "--network=none",
		fmt.Sprintf("--ulimit=nofile=%d:%d", nofile.Cur, nofile.Max),
		fmt.Sprintf("--ulimit=nproc=%d:%d", nproc.Cur, nproc.Max)}
	args = append(args, opts...)
	// --rootfs takes no value: the first argument after the options is
	// the root file system, and every later one is the command's.
	args = append(append(args, "--rootfs", podmanRoot), command...)
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", podmanScript, "sh", podmanRoot}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Dir = base
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := &podmanOutcome{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.err = fmt.Errorf("podman did not end within its deadline: %v", ctx.Err())
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		o.err = err
	}
	return o
}

// podman runs tooljail's args in a container, failing t if podman itself
// fails (its own errors say "Error:"; tooljail's say "tooljail:").
func podman(t *testing.T, opts []string, args ...string) *podmanOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
	defer cancel()
	o := podmanRun(ctx, opts, append([]string{tooljailBin}, args...)...)
	if o.err != nil || strings.HasPrefix(o.stderr, "Error: ") {
		t.Fatalf("podman failed\n%s", o)
	}
	return o
}

// podmanUser is one user of the container: --user, and who owns the
// directories a run of it uses.
type podmanUser struct {
	name string
	opts []string
	uid  int
}

var podmanUsers = []podmanUser{
	{name: "root", uid: 0},
	{name: "uid65534", opts: []string{"--user", "65534:65534"}, uid: 65534},
}

// podmanDir makes a directory of base owned by uid, removed after t.
func podmanDir(t *testing.T, uid int) string {
	t.Helper()
	d, err := os.MkdirTemp(base, "podman-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chown(d, uid, uid); err != nil {
		t.Fatal(err)
	}
	return d
}

// podmanDirs makes a workdir with tjsys in it and, outside it, a file of
// the same owner (so that only the jail stands between the command and
// it), both owned by uid.
func podmanDirs(t *testing.T, uid int) (w, outside, secret string) {
	t.Helper()
	w = podmanDir(t, uid)
	if err := copyFile(tjsysBinary(t), filepath.Join(w, "tjsys")); err != nil {
		t.Fatal(err)
	}
	outside = podmanDir(t, uid)
	secret = filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte(marker("secret")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(w, "tjsys"), secret} {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return w, outside, secret
}

// podmanCheck is `tooljail check --json` in a container.
func podmanCheck(t *testing.T, opts []string) (*containerCheck, *podmanOutcome) {
	t.Helper()
	o := podman(t, opts, "check", "--json")
	var c containerCheck
	var engine struct {
		Container struct {
			Engine string `json:"engine"`
		} `json:"container"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &c); err != nil {
		t.Fatalf("check --json: %v\n%s", err, o)
	}
	json.Unmarshal([]byte(o.stdout), &engine)
	if !c.Container.Detected || engine.Container.Engine != "podman" || c.Container.CapSysAdmin {
		t.Errorf("detected %v, engine %q, CAP_SYS_ADMIN %v: want true, podman, false\n%s",
			c.Container.Detected, engine.Container.Engine, c.Container.CapSysAdmin, o)
	}
	return &c, o
}

// podmanRecipe is docs/containers.md's Podman recipe: its seccomp profile
// and unmask=ALL (and AppArmor unconfined where AppArmor is on).
func podmanRecipe(t *testing.T) []string {
	t.Helper()
	profile, err := filepath.Abs("../docs/containers/seccomp.json")
	if err == nil {
		_, err = os.Stat(profile)
	}
	if err != nil {
		t.Skipf("docs/containers/seccomp.json is not at hand: %v", err)
	}
	opts := []string{"--security-opt", "seccomp=" + profile, "--security-opt", "unmask=ALL"}
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.TrimSpace(string(b)) == "Y" {
		opts = append(opts, "--security-opt", "apparmor=unconfined")
	}
	return opts
}

// With podman's default security, check finds the container, says what
// it refuses and gives podman's option for it from docs/containers.md;
// run fails closed in one line that points at the page.
func TestPodmanDefaultSecurity(t *testing.T) {
	podmanReady(t)
	for _, pu := range podmanUsers {
		t.Run(pu.name, func(t *testing.T) {
			c, o := podmanCheck(t, pu.opts)
			if o.code != 1 || c.DefaultProfile.Enforceable {
				t.Errorf("want exit 1 and the default profile not enforceable\n%s", o)
			}
			enforced, reason, fix := c.layer(t, "user namespaces")
			if enforced || !strings.Contains(fix, "docs/containers.md") {
				t.Errorf("user namespaces: enforced %v, reason %q, fix %q", enforced, reason, fix)
			}
			// Podman's default seccomp profile lets a user namespace be
			// made but refuses sethostname, and its /proc masks refuse
			// the jail's fresh /proc: check names both options of
			// docs/containers.md's Podman recipe, the second as what
			// the container refuses next.
			if !strings.Contains(reason, "sethostname") || !slices.Contains(c.Container.ProcMasked, "/proc/sys") {
				t.Errorf("reason %q, /proc masked %q: want sethostname named and /proc/sys masked", reason, c.Container.ProcMasked)
			}
			var fixes []string
			for _, r := range c.Container.Refusals {
				if r.Layer == "user namespaces" {
					fixes = append(fixes, r.Podman)
				}
			}
			for _, want := range []string{"podman run --security-opt seccomp=", "podman run --security-opt unmask=ALL"} {
				if !slices.ContainsFunc(fixes, func(f string) bool { return strings.Contains(f, want) }) {
					t.Errorf("the Podman fixes for user namespaces %q lack %q\n%s", fixes, want, o)
				}
			}

			w := podmanDir(t, pu.uid)
			r := podman(t, pu.opts, "run", "--workdir", w, "--allow-degraded", "cgroup", "--", "/bin/true")
			// Podman's profile lets the namespaces be made: the jail's
			// init fails at its /proc, and says why and the way out.
			oneLineError(t, r.outcome(), "/proc", "masks", "docs/containers.md", "--allow-degraded namespaces")
		})
	}
}

// podmanReport is what the podman tests read of a run's report.
type podmanReport struct {
	Status      string `json:"status"`
	Enforcement struct {
		Mode        string          `json:"mode"`
		Namespaces  map[string]bool `json:"namespaces"`
		LandlockABI int             `json:"landlock_abi"`
		Degraded    []string        `json:"degraded"`
	} `json:"enforcement"`
}

// podmanJail runs tjsys's ops in a jail in w, in a container with opts,
// and returns its result lines and report.
func podmanJail(t *testing.T, opts []string, uid int, w string, flags []string, ops ...string) ([]string, *podmanReport) {
	t.Helper()
	rep := filepath.Join(podmanDir(t, uid), "report.json")
	args := append([]string{"run", "--workdir", w, "--report", rep, "--allow-degraded", "cgroup", "--env", "TJSYS_JAILED=1"}, flags...)
	o := podman(t, opts, append(append(args, "--", filepath.Join(w, "tjsys")), ops...)...)
	if o.code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	var r podmanReport
	b, err := os.ReadFile(rep)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.Status != "exited" {
		t.Fatalf("report: %v %s\n%s", err, b, o)
	}
	return o.outcome().lines(), &r
}

// podmanContained checks, on the host, that a run wrote the workdir and
// nothing outside it.
func podmanContained(t *testing.T, w, outside, planted string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(w, "inwd")); err != nil {
		t.Errorf("the workdir write did not land: %v", err)
	}
	for _, p := range []string{filepath.Join(outside, "x"), planted} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was written on the host: %v", p, err)
		}
	}
}

// With docs/containers.md's Podman recipe, check finds every namespace
// usable and a run is a full jail: the workdir is writable, /etc is not,
// and a file outside the workdir is not there at all (the jail's mount
// namespace shows only the profile's paths).
func TestPodmanDocumentedOptions(t *testing.T) {
	podmanReady(t)
	recipe := podmanRecipe(t)
	for _, pu := range podmanUsers {
		t.Run(pu.name, func(t *testing.T) {
			opts := append(slices.Clone(recipe), pu.opts...)
			c, o := podmanCheck(t, opts)
			if enforced, reason, _ := c.layer(t, "user namespaces"); !enforced {
				t.Fatalf("user namespaces not enforced: %s\n%s", reason, o)
			}
			if slices.ContainsFunc(c.Container.Refusals, func(r refusalJSON) bool { return r.Layer == "user namespaces" }) {
				t.Errorf("a refusal of user namespaces with the recipe: %+v", c.Container.Refusals)
			}

			w, outside, secret := podmanDirs(t, pu.uid)
			planted := "/etc/" + marker("planted")
			l, r := podmanJail(t, opts, pu.uid, w, nil,
				"write:"+w+"/inwd", "write:"+planted, "read:"+secret, "write:"+outside+"/x")
			want := []string{"ok", "errno EROFS", "errno ENOENT", "errno ENOENT"}
			if !slices.Equal(l, want) {
				t.Errorf("write the workdir, write /etc, read and write outside the workdir: %q, want %q", l, want)
			}
			e := r.Enforcement
			if e.Mode == "landlock-seccomp" || !e.Namespaces["user"] || !e.Namespaces["mount"] || !e.Namespaces["pid"] {
				t.Errorf("enforcement: %+v, want a jail with its namespaces", e)
			}
			podmanContained(t, w, outside, planted)
		})
	}
}

// With podman's default security, which refuses the jail's namespaces,
// --allow-degraded namespaces runs the command confined by Landlock and
// seccomp alone: the workdir is writable, a file outside it of the same
// owner can be neither read nor written, /etc not written, and the report
// says landlock-seccomp with every namespace off. The container's root
// runs the command as the workdir's owner, here 4242.
func TestPodmanNoNamespaces(t *testing.T) {
	podmanReady(t)
	for _, pu := range podmanUsers {
		t.Run(pu.name, func(t *testing.T) {
			c, o := podmanCheck(t, pu.opts)
			if enforced, _, _ := c.layer(t, "user namespaces"); enforced {
				t.Skipf("podman's default security lets the jail make its namespaces here; the mode without them is not needed\n%s", o)
			}
			owner := pu.uid
			if owner == 0 {
				owner = 4242
			}
			w, outside, secret := podmanDirs(t, owner)
			planted := "/etc/" + marker("planted")
			l, r := podmanJail(t, pu.opts, pu.uid, w, []string{"--allow-degraded", "namespaces"},
				"write:"+w+"/inwd", "write:"+planted, "read:"+secret, "write:"+outside+"/x")
			want := []string{"ok", "errno EACCES", "errno EACCES", "errno EACCES"}
			if !slices.Equal(l, want) {
				t.Errorf("write the workdir, write /etc, read and write outside the workdir: %q, want %q", l, want)
			}
			e := r.Enforcement
			if e.Mode != "landlock-seccomp" || !slices.Contains(e.Degraded, "namespaces") || len(e.Namespaces) != 7 {
				t.Errorf("enforcement: %+v, want landlock-seccomp with namespaces degraded", e)
			}
			for ns, on := range e.Namespaces {
				if on {
					t.Errorf("namespace %s reported enforced", ns)
				}
			}
			podmanContained(t, w, outside, planted)
		})
	}
}
