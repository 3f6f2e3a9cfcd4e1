package hostprobe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

func TestParseNSLink(t *testing.T) {
	for link, want := range map[string]uint64{
		"pid:[4026531836]":    initPIDNS,
		"cgroup:[4026532256]": 4026532256,
		"pid:4026531836":      0,
		"pid:[x]":             0,
		"":                    0,
	} {
		if got := parseNSLink(link); got != want {
			t.Errorf("parseNSLink(%q) = %d, want %d", link, got, want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	const docker = "Name:\ttooljail\nCapInh:\t0000000000000000\nCapEff:\t00000000a80425fb\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	const host = "CapEff:\t000001ffffffffff\nNoNewPrivs:\t0\nSeccomp:\t0\n"
	for _, c := range []struct {
		in   string
		want procStatus
	}{
		{docker, procStatus{capEff: 0xa80425fb, seccomp: 2, noNewPrivs: true}},
		{host, procStatus{capEff: 0x1ffffffffff}},
		{"", procStatus{}},
	} {
		if got := parseStatus(c.in); got != c.want {
			t.Errorf("parseStatus(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	if parseStatus(docker).capEff&capSysAdmin != 0 || parseStatus(host).capEff&capSysAdmin == 0 {
		t.Error("CAP_SYS_ADMIN: Docker's default set lacks it, a host's root has it")
	}
}

// mountinfo of a Docker container (runc's masks over a fresh /proc) with
// a read-only cgroup2 mount, a path with a space, and binfmt_misc.
const dockerMountinfo = `608 540 0:56 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
609 608 0:59 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
612 608 0:62 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
541 609 0:59 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw
542 609 0:59 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
545 609 0:63 / /proc/acpi ro,relatime - tmpfs tmpfs ro
546 609 0:60 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
547 609 0:60 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
548 542 0:70 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw
549 608 0:71 / /srv/with\040space rw - tmpfs tmpfs rw
550 609 0:60 /null /proc/keys rw,nosuid - tmpfs tmpfs rw
bad line
`

func TestParseMountinfo(t *testing.T) {
	ms := parseMountinfo(dockerMountinfo)
	if len(ms) != 11 {
		t.Fatalf("%d mounts, want 11: %+v", len(ms), ms)
	}
	if ms[9].point != "/srv/with space" || ms[2].fsType != "cgroup2" || !ms[2].readOnly || ms[1].readOnly {
		t.Errorf("mounts: %+v", ms)
	}
	want := []string{"/proc/acpi", "/proc/bus", "/proc/kcore", "/proc/keys", "/proc/sys"}
	if got := procOvermounts(ms); !slices.Equal(got, want) {
		t.Errorf("procOvermounts = %q, want %q", got, want)
	}
	if !cgroupReadOnly(ms) {
		t.Error("the cgroup2 mount is read-only")
	}
	host := parseMountinfo("22 27 0:21 / /proc rw,relatime - proc proc rw\n30 1 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n")
	if got := procOvermounts(host); len(got) != 0 || cgroupReadOnly(host) {
		t.Errorf("a host's /proc: overmounts %q, cgroup read-only %v", got, cgroupReadOnly(host))
	}
}

func TestAppArmorConfined(t *testing.T) {
	for in, want := range map[string]string{
		"docker-default (enforce)\n":            "docker-default (enforce)",
		"cri-containerd.apparmor.d (enforce)\n": "cri-containerd.apparmor.d (enforce)",
		"unconfined\n":                          "",
		"docker-default (complain)\n":           "",
		"":                                      "",
	} {
		if got := apparmorConfined(in); got != want {
			t.Errorf("apparmorConfined(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnvValue(t *testing.T) {
	env := []byte("PATH=/bin\x00container=podman\x00containerX=no\x00")
	if got := envValue(env, "container"); got != "podman" {
		t.Errorf("container = %q", got)
	}
	if got := envValue(env, "HOME"); got != "" {
		t.Errorf("HOME = %q", got)
	}
	if got := envValue(nil, "container"); got != "" {
		t.Errorf("unreadable environment: %q", got)
	}
}

// host is the inputs of a process on a host: the initial namespaces.
func hostInputs() containerInputs {
	return containerInputs{
		euid: 0, pidNS: initPIDNS, userNS: initUserNS, cgroupNS: initCgroupNS,
		status:    "CapEff:\t000001ffffffffff\nNoNewPrivs:\t0\nSeccomp:\t0\n",
		mountinfo: "22 27 0:21 / /proc rw,relatime - proc proc rw\n",
		pid1Env:   []byte("HOME=/\x00TERM=linux\x00"),
	}
}

func TestDetectContainer(t *testing.T) {
	docker := hostInputs()
	docker.pidNS, docker.cgroupNS, docker.dockerenv = 4026532256, 4026532300, true
	docker.status = "CapEff:\t00000000a80425fb\nNoNewPrivs:\t0\nSeccomp:\t2\n"
	docker.mountinfo = dockerMountinfo
	docker.apparmor = "docker-default (enforce)\n"

	podman := hostInputs()
	podman.pidNS, podman.userNS, podman.containerenv = 4026532256, 4026532257, true
	podman.pid1Env = []byte("container=podman\x00")
	podman.status = "CapEff:\t00000000800405fb\nNoNewPrivs:\t1\nSeccomp:\t2\n"

	k8s := docker
	k8s.kubernetes, k8s.dockerenv = true, false

	lxc := hostInputs()
	lxc.pidNS, lxc.pid1Env = 4026532256, []byte("container=lxc\x00")

	stale := hostInputs()
	stale.dockerenv = true

	unprivileged := hostInputs()
	unprivileged.euid = 1000
	unprivileged.status = "CapEff:\t0000000000000000\n"

	cgroupOnly := hostInputs()
	cgroupOnly.cgroupNS = 4026532300

	unknown := hostInputs()
	unknown.pidNS, unknown.userNS, unknown.cgroupNS = 0, 0, 0

	for _, c := range []struct {
		name     string
		in       containerInputs
		detected bool
		engine   string
		signs    []string // each is in Signs
	}{
		{"host", hostInputs(), false, "", nil},
		{"host, unprivileged user", unprivileged, false, "", nil},
		{"host with an image's /.dockerenv", stale, false, "", []string{"not taken for a container"}},
		{"namespaces unknown", unknown, false, "", nil},
		{"docker", docker, true, "docker", []string{"a PID namespace of its own", "a cgroup namespace of its own", "5 paths under /proc masked or read-only", "root without CAP_SYS_ADMIN", "/.dockerenv exists"}},
		{"rootless podman", podman, true, "podman", []string{"a user namespace", "/run/.containerenv exists", "PID 1's environment has container=podman"}},
		{"kubernetes", k8s, true, "kubernetes", []string{"KUBERNETES_SERVICE_HOST is set"}},
		{"lxc", lxc, true, "lxc", []string{"PID 1's environment has container=lxc"}},
		{"cgroup namespace only", cgroupOnly, true, "", []string{"a cgroup namespace of its own"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := detectContainer(c.in)
			if got.Detected != c.detected || got.Engine != c.engine {
				t.Errorf("detected %v engine %q, want %v %q; %+v", got.Detected, got.Engine, c.detected, c.engine, got)
			}
			for _, s := range c.signs {
				if !slices.ContainsFunc(got.Signs, func(g string) bool { return strings.Contains(g, s) }) {
					t.Errorf("signs %q lack %q", got.Signs, s)
				}
			}
			if len(c.signs) == 0 && len(got.Signs) != 0 {
				t.Errorf("signs %q, want none", got.Signs)
			}
		})
	}
	d := detectContainer(docker)
	if !d.SeccompFilter || d.NoNewPrivs || d.CapSysAdmin || d.AppArmor != "docker-default (enforce)" || len(d.ProcMasked) != 5 {
		t.Errorf("docker's restrictions: %+v", d)
	}
	if p := detectContainer(podman); !p.NoNewPrivs || p.AppArmor != "" {
		t.Errorf("podman's restrictions: %+v", p)
	}
}

func TestUserNSLayer(t *testing.T) {
	open := userNSKnobs{maxUserNS: 15000, unprivClone: -1, apparmorRestrict: -1}
	withKnob := func(f func(*userNSKnobs)) userNSKnobs { k := open; f(&k); return k }
	noClone := withKnob(func(k *userNSKnobs) { k.unprivClone = 0 })
	restricted := withKnob(func(k *userNSKnobs) { k.apparmorRestrict = 1 })
	for _, c := range []struct {
		name     string
		euid     int
		capAdmin bool
		knobs    userNSKnobs
		filtered bool
		want     userNSCause
		fix      string
	}{
		{"host root", 0, true, open, false, causeNone, ""},
		{"host user", 1000, false, open, false, causeNone, ""},
		{"seccomp filter", 0, false, open, true, causeFilterClone, "docs/containers.md"},
		{"filter before the sysctls", 1000, false, withKnob(func(k *userNSKnobs) { k.maxUserNS = 0 }), true, causeFilterClone, "docs/containers.md"},
		{"max_user_namespaces 0", 0, true, withKnob(func(k *userNSKnobs) { k.maxUserNS = 0 }), false, causeSysctl, "max_user_namespaces=15000"},
		{"unprivileged_userns_clone 0", 1000, false, noClone, false, causeSysctl, "unprivileged_userns_clone=1"},
		{"unprivileged_userns_clone 0 spares root", 0, true, noClone, false, causeNone, ""},
		{"AppArmor restriction", 1000, false, restricted, false, causeAppArmor, "userns,"},
		{"AppArmor restriction spares CAP_SYS_ADMIN", 0, true, restricted, false, causeNone, ""},
		{"AppArmor restriction binds container root", 0, false, restricted, false, causeAppArmor, "userns,"},
	} {
		l, cause := userNSLayer(c.euid, c.capAdmin, c.knobs, c.filtered)
		if cause != c.want || l.Enforced != (c.want == causeNone) || !strings.Contains(l.Fix, c.fix) || l.Name != "user namespaces" {
			t.Errorf("%s: cause %d, layer %+v; want cause %d, fix with %q", c.name, cause, l, c.want, c.fix)
		}
	}
}

func TestParseProbe(t *testing.T) {
	exitErr := exec.Command("/bin/sh", "-c", "exit 1").Run()
	sigsys := exec.Command("/bin/sh", "-c", "kill -SYS $$").Run()
	startErr := &fs.PathError{Op: "fork/exec", Path: "/proc/self/exe", Err: syscall.EPERM}
	for _, c := range []struct {
		name, stderr string
		err          error
		step         string
		errno        syscall.Errno
		reason       string
	}{
		{"ok", "", nil, "", 0, ""},
		{"proc", probeLine(stepProc, errors.New("fsmount proc: operation not permitted")), exitErr, stepProc, 0, "a fresh /proc for the new PID namespace failed: fsmount proc"},
		{"proc with errno", probeLine(stepProc, &fs.PathError{Op: "fsmount", Path: "proc", Err: syscall.EPERM}), exitErr, stepProc, syscall.EPERM, "a fresh /proc for the new PID namespace failed with EPERM"},
		{"hostname", "hostname 1 sethostname: operation not permitted", exitErr, stepHostname, syscall.EPERM, "sethostname in the new UTS namespace failed with EPERM"},
		{"clone refused", "", startErr, stepClone, syscall.EPERM, "clone with the jail's namespaces failed with EPERM"},
		{"child died", "", sigsys, stepChild, 0, "a seccomp filter kills"},
		{"child said something else", "panic: oops", exitErr, stepChild, 0, "exit status 1: panic: oops"},
		{"unknown step", "bogus 1 x", exitErr, stepChild, 0, "bogus 1 x"},
	} {
		p := parseProbe(c.stderr, c.err)
		if p.step != c.step || p.errno != c.errno || (c.reason != "" && !strings.Contains(p.reason(), c.reason)) {
			t.Errorf("%s: %+v, reason %q; want step %q errno %v reason with %q", c.name, p, p.reason(), c.step, c.errno, c.reason)
		}
	}
}

// layersFor builds check's layers with the user namespace layer off or on
// and the cgroup caps off or on.
func layersFor(userns, cgroupOK bool) []Layer {
	ls := []Layer{
		{Name: "user namespaces", Enforced: userns, Reason: "host reason", Fix: "host fix"},
		{Name: LayerLandlock, Enforced: true},
		{Name: LayerSeccomp, Enforced: true},
		{Name: "seccomp-notify", Enforced: true},
	}
	for _, c := range []string{LayerMemory, LayerCPU, LayerPids} {
		ls = append(ls, Layer{Name: "cgroup " + c, Enforced: cgroupOK, Reason: "not writable"})
	}
	return ls
}

func TestDiagnose(t *testing.T) {
	docker := hostInputs()
	docker.pidNS, docker.dockerenv = 4026532256, true
	docker.status = "CapEff:\t00000000a80425fb\nSeccomp:\t2\n"
	docker.mountinfo = dockerMountinfo
	apparmor := docker
	apparmor.apparmor = "docker-default (enforce)\n"
	landlockOff := docker
	landlockOff.landlockErrno = unix.EPERM
	seccompOff := docker
	seccompOff.seccompErrno = unix.EPERM
	filteredHost := hostInputs()
	filteredHost.status = "CapEff:\t000001ffffffffff\nSeccomp:\t2\n"
	filteredHost.landlockErrno = unix.EPERM

	procEPERM := nsProbe{step: stepProc, errno: unix.EPERM}
	for _, c := range []struct {
		name     string
		in       containerInputs
		cause    userNSCause
		probe    nsProbe
		landlock bool // the landlock layer is off
		seccomp  bool // both seccomp layers are off
		cgroupOK bool
		layer    string // the layer whose reason and fix are checked
		reason   string
		fix      string
		refusals []string          // "LAYER: words of the cause" of c.Refusals, in order
		engines  map[string]string // the first refusal's fix, by engine
	}{
		{
			name: "docker's seccomp profile", in: docker, cause: causeFilterClone, cgroupOK: true,
			layer: "user namespaces", reason: "seccomp profile refuses clone with CLONE_NEWUSER", fix: "--security-opt seccomp=FILE",
			refusals: []string{"user namespaces: seccomp profile refuses clone", "user namespaces: next, the container masks"},
			engines:  map[string]string{"docker": "--security-opt seccomp=tooljail-seccomp.json", "podman": "podman run --security-opt seccomp=", "kubernetes": "type: Localhost"},
		},
		{
			name: "docker with AppArmor: what comes next too", in: apparmor, cause: causeFilterClone, cgroupOK: true,
			layer: "user namespaces", reason: "refuses clone", fix: "seccomp=FILE",
			refusals: []string{"user namespaces: refuses clone", "user namespaces: next, the container's AppArmor profile docker-default (enforce) may deny mount", "user namespaces: next, the container masks"},
		},
		{
			name: "masked /proc", in: docker, probe: procEPERM, cgroupOK: true,
			layer: "user namespaces", reason: "a fresh /proc for the new PID namespace failed with EPERM: the container masks", fix: "systempaths=unconfined",
			refusals: []string{"user namespaces: the container masks"},
			engines:  map[string]string{"docker": "--security-opt systempaths=unconfined", "podman": "--security-opt unmask=ALL", "kubernetes": "procMount: Unmasked"},
		},
		{
			name: "AppArmor denies mount", in: apparmor, probe: nsProbe{step: stepTmpfs, errno: unix.EACCES}, cgroupOK: true,
			layer: "user namespaces", reason: "AppArmor profile docker-default (enforce) denies mount", fix: "apparmor=",
			refusals: []string{"user namespaces: AppArmor profile docker-default (enforce) denies mount", "user namespaces: next, the container masks"},
			engines:  map[string]string{"docker": "--security-opt apparmor=unconfined", "podman": "--security-opt apparmor=unconfined", "kubernetes": "appArmorProfile: {type: Unconfined}"},
		},
		{
			name: "seccomp refuses the mount API", in: docker, probe: nsProbe{step: stepTmpfs, errno: unix.EPERM}, cgroupOK: true,
			layer: "user namespaces", reason: "refuses mount and the new mount API", fix: "seccomp=FILE",
			refusals: []string{"user namespaces: refuses mount", "user namespaces: next, the container masks"},
		},
		{
			name: "seccomp refuses sethostname", in: docker, probe: nsProbe{step: stepHostname, errno: unix.EPERM}, cgroupOK: true,
			layer: "user namespaces", reason: "refuses sethostname", fix: "seccomp=FILE",
			refusals: []string{"user namespaces: refuses sethostname", "user namespaces: next, the container masks"},
		},
		{
			name: "AppArmor restriction for container root", in: docker, cause: causeAppArmor, cgroupOK: true,
			layer: "user namespaces", reason: "apparmor_restrict_unprivileged_userns=1", fix: "on the host",
			refusals: []string{"user namespaces: apparmor_restrict_unprivileged_userns=1", "user namespaces: next, the container masks"},
		},
		{
			name: "unexplained failure keeps its reason", in: docker, probe: nsProbe{step: stepProc, errno: unix.EINVAL}, cgroupOK: true,
			layer: "user namespaces", reason: "host reason", fix: "host fix",
		},
		{
			name: "landlock filtered, cgroup read-only", in: landlockOff, landlock: true,
			layer: LayerLandlock, reason: "refuses the Landlock system calls", fix: "seccomp=FILE",
			refusals: []string{"landlock: Landlock system calls", "cgroup: mounted read-only"},
			engines:  map[string]string{"docker": "--security-opt seccomp=", "kubernetes": "type: Localhost"},
		},
		{
			name: "seccomp(2) filtered", in: seccompOff, seccomp: true, cgroupOK: true,
			layer: "seccomp-notify", reason: "refuses seccomp(2)", fix: "seccomp=FILE",
			refusals: []string{"seccomp: refuses seccomp(2)"},
		},
		{
			name: "cgroup caps in a container", in: docker,
			layer: "cgroup memory", reason: "not writable", fix: "--allow-degraded cgroup",
			refusals: []string{"cgroup: mounted read-only"},
			engines:  map[string]string{"docker": "--memory, --cpus, --pids-limit", "podman": "podman run --memory", "kubernetes": "resources.limits.memory"},
		},
		{
			name: "a filter outside a container", in: filteredHost, landlock: true, cgroupOK: true,
			layer: LayerLandlock, reason: "a seccomp filter on this process refuses the Landlock", fix: "RestrictNamespaces=",
		},
		{
			name: "masks outside a container are not explained", in: hostInputs(), probe: procEPERM, cgroupOK: true,
			layer: "user namespaces", reason: "host reason", fix: "host fix",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct := detectContainer(c.in)
			ls := layersFor(c.cause == causeNone && c.probe.step == "", c.cgroupOK)
			if c.cause == causeNone && c.probe.step != "" {
				ls[0].Enforced = false
			}
			if c.landlock {
				ls[1] = Layer{Name: LayerLandlock, Reason: "landlock_create_ruleset(VERSION): operation not permitted", Fix: "check the kernel's Landlock support"}
			}
			if c.seccomp {
				ls[2].Enforced, ls[3].Enforced = false, false
			}
			diagnose(&ct, ls, c.in, c.cause, c.probe)
			i := slices.IndexFunc(ls, func(l Layer) bool { return l.Name == c.layer })
			if l := ls[i]; !strings.Contains(l.Reason, c.reason) || !strings.Contains(l.Fix, c.fix) {
				t.Errorf("layer %s: reason %q fix %q; want %q and %q", c.layer, l.Reason, l.Fix, c.reason, c.fix)
			}
			if len(ct.Refusals) != len(c.refusals) {
				t.Fatalf("refusals %+v, want %q", ct.Refusals, c.refusals)
			}
			for i, r := range ct.Refusals {
				layer, cause, _ := strings.Cut(c.refusals[i], ": ")
				if r.Layer != layer || !strings.Contains(r.Cause, cause) {
					t.Errorf("refusal %d: %s: %q, want %s: %q", i, r.Layer, r.Cause, layer, cause)
				}
				if r.Cause == "" || r.Docker == "" || r.Podman == "" || r.Kubernetes == "" {
					t.Errorf("refusal %+v lacks a cause or a fix", r)
				}
			}
			for engine, want := range c.engines {
				r := ct.Refusals[0]
				have := map[string]string{"docker": r.Docker, "podman": r.Podman, "kubernetes": r.Kubernetes}[engine]
				if !strings.Contains(have, want) {
					t.Errorf("%s fix %q lacks %q", engine, have, want)
				}
			}
		})
	}
}

// The probe that tells a filter's EPERM from the kernel's answer: on a
// host with no filter, clone with CLONE_NEWUSER|CLONE_FS is EINVAL.
func TestCloneFilteredOnHost(t *testing.T) {
	if parseStatus(readText("/proc/self/status")).seccomp != 0 {
		t.Skip("this test process runs under a seccomp filter")
	}
	if cloneFiltered() {
		t.Fatal("no filter, yet the probe says clone is filtered")
	}
}

// profilePath is the seccomp profile docs/containers.md gives containers.
const profilePath = "../docs/containers/seccomp.json"

// ociProfile is the part of the OCI (and Docker) seccomp profile format
// the shipped profile uses.
type ociProfile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *int     `json:"defaultErrnoRet"`
	Architectures   []string `json:"architectures"`
	Syscalls        []struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet *int     `json:"errnoRet"`
		Args     []struct {
			Index    uint   `json:"index"`
			Value    uint64 `json:"value"`
			ValueTwo uint64 `json:"valueTwo"`
			Op       string `json:"op"`
		} `json:"args"`
		Comment string `json:"comment"`
	} `json:"syscalls"`
}

// compileProfile builds the profile with libseccomp, as runc and crun do:
// names this architecture lacks are skipped, like theirs.
func compileProfile(p ociProfile) (*libseccomp.ScmpFilter, error) {
	action := func(name string, errno *int) (libseccomp.ScmpAction, error) {
		switch {
		case name == "SCMP_ACT_ALLOW":
			return libseccomp.ActAllow, nil
		case name == "SCMP_ACT_ERRNO" && errno != nil:
			return libseccomp.ActErrno.SetReturnCode(int16(*errno)), nil
		}
		return 0, fmt.Errorf("action %s (errno %v)", name, errno)
	}
	ops := map[string]libseccomp.ScmpCompareOp{
		"SCMP_CMP_EQ": libseccomp.CompareEqual, "SCMP_CMP_NE": libseccomp.CompareNotEqual,
		"SCMP_CMP_LT": libseccomp.CompareLess, "SCMP_CMP_GT": libseccomp.CompareGreater,
		"SCMP_CMP_MASKED_EQ": libseccomp.CompareMaskedEqual,
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	f, err := libseccomp.NewFilter(def)
	if err != nil {
		return nil, err
	}
	for _, r := range p.Syscalls {
		act, err := action(r.Action, r.ErrnoRet)
		if err != nil {
			return nil, err
		}
		var conds []libseccomp.ScmpCondition
		for _, a := range r.Args {
			op, ok := ops[a.Op]
			if !ok {
				return nil, fmt.Errorf("op %s", a.Op)
			}
			c, err := libseccomp.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
			if err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
		for _, n := range r.Names {
			sc, err := libseccomp.GetSyscallFromName(n)
			if err != nil {
				continue
			}
			if len(conds) == 0 {
				err = f.AddRule(sc, act)
			} else {
				err = f.AddRuleConditional(sc, act, conds)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
		}
	}
	return f, nil
}

// profileCalls are calls whose kernel answer, made harmless by their
// arguments, differs from the profile's refusal (EPERM, or ENOSYS for
// clone3): name, the call, and whether the profile lets it through.
var profileCalls = []struct {
	name  string
	call  func() syscall.Errno
	allow bool
	root  bool // only root's answer tells (the kernel checks CAP_SYS_ADMIN first)
}{
	{"getppid", func() syscall.Errno { return rawErrno(unix.SYS_GETPPID) }, true, false},
	// A multithreaded caller: EINVAL, before a namespace is made.
	{"unshare CLONE_NEWUSER", func() syscall.Errno { return rawErrno(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }, true, false},
	{"unshare CLONE_NEWNS", func() syscall.Errno { return rawErrno(unix.SYS_UNSHARE, unix.CLONE_NEWNS|unix.CLONE_NEWNET) }, false, false},
	// With CLONE_FS: EINVAL from copy_process, before anything is copied.
	{"clone CLONE_NEWUSER", func() syscall.Errno {
		return rawErrno(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_FS)
	}, true, false},
	{"clone CLONE_NEWNET", func() syscall.Errno {
		return rawErrno(unix.SYS_CLONE, unix.CLONE_NEWNET|unix.CLONE_NEWNS|unix.CLONE_FS)
	}, false, false},
	// Size 0: EINVAL from the kernel; the profile answers ENOSYS.
	{"clone3", func() syscall.Errno { return rawErrno(unix.SYS_CLONE3, 0, 0) }, false, false},
	// A null target: EFAULT.
	{"mount", func() syscall.Errno { return rawErrno(unix.SYS_MOUNT, 0, 0, 0, 0, 0) }, true, false},
	// An unknown flag: EINVAL.
	{"umount2", func() syscall.Errno { return rawErrno(unix.SYS_UMOUNT2, 0, 0x80000000) }, true, false},
	{"fsopen", func() syscall.Errno { return rawErrno(unix.SYS_FSOPEN, 0, 0xffff) }, true, true},
	{"pivot_root", func() syscall.Errno { return rawErrno(unix.SYS_PIVOT_ROOT, 0, 0) }, true, true},
	{"sethostname", func() syscall.Errno { return rawErrno(unix.SYS_SETHOSTNAME, 0, 1<<20) }, true, true},
	{"landlock_create_ruleset", func() syscall.Errno {
		return rawErrno(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	}, true, false},
	{"seccomp", func() syscall.Errno {
		allow := uint32(unix.SECCOMP_RET_ALLOW)
		return rawErrno(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&allow)))
	}, true, false},
	// An unknown operation: EOPNOTSUPP from the kernel.
	{"keyctl", func() syscall.Errno { return rawErrno(unix.SYS_KEYCTL, 0xffff) }, false, false},
	{"setns", func() syscall.Errno { return rawErrno(unix.SYS_SETNS, ^uintptr(0), 0) }, false, false},
}

func rawErrno(nr uintptr, a ...uintptr) syscall.Errno {
	var v [6]uintptr
	copy(v[:], a)
	_, _, e := unix.RawSyscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	return e
}

// The seccomp profile docs/containers.md ships, compiled by libseccomp
// and loaded in a child of this test: the calls the jail needs get past
// it, the rest of what Docker's default profile refuses is still refused.
func TestContainerSeccompProfile(t *testing.T) {
	if os.Getenv("TJ_PROFILE_CHILD") == "1" {
		profileChild()
		return
	}
	b, err := os.ReadFile(profilePath)
	if err != nil {
		t.Fatal(err)
	}
	var p ociProfile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", profilePath, err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 || !slices.Contains(p.Architectures, "SCMP_ARCH_X86_64") {
		t.Errorf("%s: default %s (errno %v), architectures %q: want Docker's EPERM default on x86_64", profilePath, p.DefaultAction, p.DefaultErrnoRet, p.Architectures)
	}
	var added []string
	for _, r := range p.Syscalls {
		if strings.HasPrefix(r.Comment, "tooljail:") {
			added = append(added, r.Names...)
		}
		for _, n := range r.Names {
			if _, err := libseccomp.GetSyscallFromName(n); err != nil && strings.HasPrefix(r.Comment, "tooljail:") {
				t.Errorf("%s: tooljail's rule names %s, which libseccomp does not know", profilePath, n)
			}
		}
	}
	slices.Sort(added)
	want := []string{"clone", "fsconfig", "fsmount", "fsopen", "fspick", "mount", "mount_setattr", "move_mount", "open_tree", "pivot_root", "sethostname", "umount2", "unshare"}
	if !slices.Equal(added, want) {
		t.Errorf("%s: tooljail's rules allow %q, want %q (docs/containers.md lists them)", profilePath, added, want)
	}
	if _, err := compileProfile(p); err != nil {
		t.Fatalf("%s does not compile: %v", profilePath, err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestContainerSeccompProfile$")
	cmd.Env = append(os.Environ(), "TJ_PROFILE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "probe "); ok {
			name, errno, _ := strings.Cut(rest, "=")
			got[name] = errno
		}
	}
	root := hasCapSysAdmin()
	for _, c := range profileCalls {
		e, ok := got[c.name]
		refused := e == "EPERM" || (c.name == "clone3" && e == "ENOSYS")
		switch {
		case !ok:
			t.Errorf("%s: no answer from the child\n%s", c.name, out)
		case c.root && !root:
		case c.allow && refused:
			t.Errorf("%s: the profile refuses it (%s); the jail needs it", c.name, e)
		case !c.allow && !refused:
			t.Errorf("%s: the profile lets it through (%s); Docker's default refuses it", c.name, e)
		}
	}
}

// profileChild loads the profile on this thread and prints each call's
// errno.
func profileChild() {
	runtime.LockOSThread()
	b, err := os.ReadFile(profilePath)
	var p ociProfile
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	var f *libseccomp.ScmpFilter
	if err == nil {
		f, err = compileProfile(p)
	}
	if err == nil {
		err = f.Load()
	}
	if err != nil {
		fmt.Println("load:", err)
		os.Exit(1)
	}
	for _, c := range profileCalls {
		name := "ok"
		if e := c.call(); e != 0 {
			name = unix.ErrnoName(e)
		}
		fmt.Printf("probe %s=%s\n", c.name, name)
	}
	os.Exit(0)
}
