package integration

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// Inside an emulated container (tjhelper _container: a user, mount and PID
// namespace of its own, Docker's capabilities, no_new_privs, a seccomp
// filter modelled on moby's default profile, optionally Docker's /proc
// masks), `tooljail check` names what the container refuses and the fix
// for each engine, and `tooljail run` fails closed.

// containerCheck is `tooljail check --json` with its container part.
type containerCheck struct {
	checkResult
	Container struct {
		Detected      bool          `json:"detected"`
		Signs         []string      `json:"signs"`
		SeccompFilter bool          `json:"seccomp_filter"`
		NoNewPrivs    bool          `json:"no_new_privs"`
		CapSysAdmin   bool          `json:"cap_sys_admin"`
		ProcMasked    []string      `json:"proc_masked"`
		Refusals      []refusalJSON `json:"refusals"`
	} `json:"container"`
	DefaultProfile struct {
		Enforceable bool   `json:"enforceable"`
		Reason      string `json:"reason"`
	} `json:"default_profile"`
}

// refusalJSON is one of container.refusals.
type refusalJSON struct {
	Layer      string `json:"layer"`
	Cause      string `json:"cause"`
	Docker     string `json:"docker"`
	Podman     string `json:"podman"`
	Kubernetes string `json:"kubernetes"`
}

// layer is the named layer of the check.
func (c *containerCheck) layer(t *testing.T, name string) (enforced bool, reason, fix string) {
	t.Helper()
	for _, l := range c.Layers {
		if l.Name == name {
			return l.Enforced, l.Reason, l.Fix
		}
	}
	t.Fatalf("no layer %q in %+v", name, c.Layers)
	return
}

// refusal checks that the container refuses layer with a fix for each
// engine that says the given words.
func (c *containerCheck) refusal(t *testing.T, layer string, docker, podman, kubernetes []string) {
	t.Helper()
	i := slices.IndexFunc(c.Container.Refusals, func(r refusalJSON) bool { return r.Layer == layer })
	if i < 0 {
		t.Fatalf("no refusal of %q in %+v", layer, c.Container.Refusals)
	}
	r := c.Container.Refusals[i]
	for engine, words := range map[string][]string{r.Docker: docker, r.Podman: podman, r.Kubernetes: kubernetes} {
		for _, w := range words {
			if !strings.Contains(engine, w) {
				t.Errorf("refusal of %s: fix %q lacks %q", layer, engine, w)
			}
		}
	}
}

// inContainer runs tooljail ARGS as u in the emulated container of mode
// (tjhelper _container flags), skipping where it cannot start.
func (u *user) inContainer(t *testing.T, flags []string, r run) *outcome {
	t.Helper()
	r.wrap = append(append([]string{"_container"}, flags...), "--")
	o := u.exec(t, r)
	if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container: start the container") {
		t.Skipf("the emulated container cannot start here (user namespaces?): %s", o.stderr)
	}
	return o
}

func (u *user) checkInContainer(t *testing.T, flags ...string) (*containerCheck, *outcome) {
	t.Helper()
	o := u.inContainer(t, flags, run{args: []string{"check", "--json"}})
	var c containerCheck
	if err := json.Unmarshal([]byte(o.stdout), &c); err != nil {
		t.Fatalf("check --json: %v\n%s", err, o)
	}
	if !c.Container.Detected || c.Container.CapSysAdmin || !c.Container.NoNewPrivs {
		t.Errorf("the emulated container: detected %v, CAP_SYS_ADMIN %v, no_new_privs %v; want true, false, true\n%s",
			c.Container.Detected, c.Container.CapSysAdmin, c.Container.NoNewPrivs, o)
	}
	if !slices.Contains(c.Container.Signs, "a PID namespace of its own") || !slices.Contains(c.Container.Signs, "root without CAP_SYS_ADMIN") {
		t.Errorf("signs %q lack the PID namespace or root without CAP_SYS_ADMIN", c.Container.Signs)
	}
	return &c, o
}

// Docker's default: its seccomp profile refuses user namespaces. check
// says so, names the seccomp profile for each engine, and exits 1.
func TestContainerCheckDockerDefault(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		c, o := u.checkInContainer(t, "--seccomp", "docker", "--proc-masks")
		if o.code != 1 || c.DefaultProfile.Enforceable {
			t.Errorf("want exit 1 and the default profile not enforceable\n%s", o)
		}
		if !c.Container.SeccompFilter || !slices.Contains(c.Container.ProcMasked, "/proc/sys") {
			t.Errorf("seccomp filter %v, /proc masked %q: want the filter and /proc/sys among the masks", c.Container.SeccompFilter, c.Container.ProcMasked)
		}
		enforced, reason, fix := c.layer(t, "user namespaces")
		if enforced || !strings.Contains(reason, "seccomp profile refuses clone with CLONE_NEWUSER") || !strings.Contains(fix, "docs/containers.md") {
			t.Errorf("user namespaces: enforced %v, reason %q, fix %q", enforced, reason, fix)
		}
		c.refusal(t, "user namespaces",
			[]string{"docker run --security-opt seccomp="}, []string{"podman run --security-opt seccomp="},
			[]string{"seccompProfile", "type: Localhost"})

		text := u.inContainer(t, []string{"--seccomp", "docker", "--proc-masks"}, run{args: []string{"check"}})
		for _, w := range []string{"user namespaces  NOT ENFORCED", "container", "Docker:", "Podman:", "Kubernetes:", "docs/containers.md", "default profile: cannot be enforced here"} {
			if !strings.Contains(text.stdout, w) {
				t.Errorf("check's text lacks %q\n%s", w, text)
			}
		}
		if text.code != 1 {
			t.Errorf("check: exit %d, want 1\n%s", text.code, text)
		}
	})
}

// A container whose seccomp profile is docs/containers.md's but whose
// /proc is masked: the fresh /proc the jail needs is refused, and check
// names the option that unmasks it in each engine.
func TestContainerCheckProcMasks(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		c, o := u.checkInContainer(t, "--seccomp", "tooljail", "--proc-masks")
		if o.code != 1 || c.DefaultProfile.Enforceable {
			t.Errorf("want exit 1 and the default profile not enforceable\n%s", o)
		}
		enforced, reason, _ := c.layer(t, "user namespaces")
		if enforced || !strings.Contains(reason, "a fresh /proc") || !strings.Contains(reason, "masks") {
			t.Errorf("user namespaces: enforced %v, reason %q", enforced, reason)
		}
		c.refusal(t, "user namespaces",
			[]string{"--security-opt systempaths=unconfined"}, []string{"--security-opt unmask=ALL"},
			[]string{"procMount: Unmasked", "hostUsers: false"})
	})
}

// With docs/containers.md's seccomp profile and an unmasked /proc, the
// namespaces the jail needs are there.
func TestContainerCheckWithProfile(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		c, o := u.checkInContainer(t, "--seccomp", "tooljail")
		if enforced, reason, _ := c.layer(t, "user namespaces"); !enforced {
			t.Errorf("user namespaces not enforced: %s\n%s", reason, o)
		}
		if !c.Container.SeccompFilter || len(c.Container.ProcMasked) != 0 {
			t.Errorf("seccomp filter %v, /proc masked %q: want the filter and no masks", c.Container.SeccompFilter, c.Container.ProcMasked)
		}
		for _, r := range c.Container.Refusals {
			if r.Layer == "user namespaces" {
				t.Errorf("refusal of user namespaces: %+v", r)
			}
		}
	})
}

// tooljail run under Docker's default profile fails closed, in one line
// that says why and points at the recipes.
func TestContainerRunFailsClosed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.inContainer(t, []string{"--seccomp", "docker", "--proc-masks"}, run{
			args: []string{"run", "--workdir", w, "--allow-degraded", "cgroup", "--", w + "/tjhelper", "exit", "0"},
			dir:  w,
		})
		oneLineError(t, o, "user namespaces are not available", "CLONE_NEWUSER", "docs/containers.md")
	})
}

// The emulation itself: the filter answers as moby's profile does, and as
// docs/containers.md's in the tooljail mode; EINVAL and ENOENT are the
// kernel's answers past the filter (tjsys's arguments make them so).
func TestContainerEmulatedFilter(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		tjsys := tjsysBinary(t)
		calls := []string{"getppid", "unshare", "setns", "clone", "clone3", "mount", "umount2", "keyctl"}
		for mode, want := range map[string][]string{
			"docker":   {"ok", "errno EPERM", "errno EPERM", "errno EPERM", "errno ENOSYS", "errno EPERM", "errno EPERM", "errno EPERM"},
			"tooljail": {"ok", "errno EINVAL", "errno EPERM", "errno EPERM", "errno ENOSYS", "errno ENOENT", "errno ENOENT", "errno EPERM"},
		} {
			r := run{bin: tjsys, args: calls, env: []string{"TJSYS_JAILED=1"}}
			o := u.inContainer(t, []string{"--seccomp", mode}, r)
			if got := o.lines(); o.code != 0 || !slices.Equal(got, want) {
				t.Errorf("%s: %q, want %q\n%s", mode, got, want, o)
			}
		}
	})
}

// In a container whose seccomp profile lets tooljail make its namespaces
// (docs/containers.md's) and whose /proc is unmasked, a run works, as the
// container's root (no CAP_SYS_ADMIN: it cannot clone the container's
// mounts or idmap them, so the jail runs as that user itself) and as a
// user whose container shows the host's root files as the overflow uid (a
// one-uid map: /etc/localtime, a symlink of an owner outside the
// namespace, must still be trusted). The run is contained as anywhere:
// the workdir is writable, a system file is not.
func TestContainerRunWorks(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		// The container's root runs the jail as itself: its workdir is
		// its own (a test directory of another owner, where the host
		// cannot idmap, is of a uid the container does not map).
		if err := os.Chown(w, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		h := w + "/tjhelper"
		o := u.inContainer(t, []string{"--seccomp", "tooljail"}, run{
			args: []string{"run", "--workdir", w, "--allow-degraded", "cgroup", "--",
				h, "write", w + "/out", "3", ";", "write", "/etc/tooljail-planted", "1", ";", "read", "/etc/localtime"},
			dir: w,
		})
		l := o.lines()
		if o.code != 0 || len(l) != 3 {
			t.Fatalf("want exit 0 and 3 result lines\n%s", o)
		}
		// /etc/localtime is read when the host has one (the VM guests do
		// not): the run got past it either way.
		tz := "value "
		if _, err := os.Lstat("/etc/localtime"); err != nil {
			tz = "errno ENOENT"
		}
		if l[0] != "ok" || !strings.HasPrefix(l[1], "errno ") || !strings.HasPrefix(l[2], tz) {
			t.Errorf("workdir write %q, /etc write %q, /etc/localtime read %q: want ok, an errno, %q\n%s", l[0], l[1], l[2], tz, o)
		}
		if _, err := os.Stat("/etc/tooljail-planted"); err == nil {
			t.Errorf("/etc/tooljail-planted exists on the host")
		}
	})
}
