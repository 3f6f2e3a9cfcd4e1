package hostprobe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/mountinfo"
)

// Container is what `tooljail check` can tell, from inside, about the
// container (or other sandbox) it runs in, and what that container refuses.
type Container struct {
	// Detected: a namespace of the container's own, masked /proc paths,
	// or root without CAP_SYS_ADMIN. Marker files alone do not count
	// (an image's /.dockerenv can outlive the container it was built in).
	Detected bool `json:"detected"`
	// Engine is the engine the markers name: kubernetes, podman, docker,
	// or PID 1's container= value (lxc, systemd-nspawn...).
	Engine        string   `json:"engine,omitempty"`
	Signs         []string `json:"signs,omitempty"`
	SeccompFilter bool     `json:"seccomp_filter"`
	NoNewPrivs    bool     `json:"no_new_privs"`
	CapSysAdmin   bool     `json:"cap_sys_admin"`
	// AppArmor is the AppArmor profile the process runs under, when it is
	// confined ("docker-default (enforce)").
	AppArmor   string    `json:"apparmor,omitempty"`
	ProcMasked []string  `json:"proc_masked,omitempty"`
	Refusals   []Refusal `json:"refusals,omitempty"`
}

// Refusal is a layer the container refuses, why, and the change to the
// container that lifts it, engine by engine (docs/containers.md).
type Refusal struct {
	Layer      string `json:"layer"`
	Cause      string `json:"cause"`
	Docker     string `json:"docker"`
	Podman     string `json:"podman"`
	Kubernetes string `json:"kubernetes"`
}

// remedy is a cause, its fix in short (a layer's fix) and its fix for
// each engine.
type remedy struct {
	cause, short               string
	docker, podman, kubernetes string
}

func (r remedy) refusal(layer string) Refusal {
	return Refusal{Layer: layer, Cause: r.cause, Docker: r.docker, Podman: r.podman, Kubernetes: r.kubernetes}
}

// The remedies. Each names an option the engine has; the seccomp profile
// is docs/containers/seccomp.json.
var (
	profileDocker = "docker run --security-opt seccomp=tooljail-seccomp.json (the profile in docs/containers/seccomp.json)"
	profilePodman = "podman run --security-opt seccomp=tooljail-seccomp.json"
	profileK8s    = "securityContext.seccompProfile: {type: Localhost, localhostProfile: tooljail-seccomp.json}, the file in the kubelet's seccomp directory (/var/lib/kubelet/seccomp by default)"
	profileShort  = "run the container with the seccomp profile of docs/containers.md (Docker, Podman: --security-opt seccomp=FILE; Kubernetes: seccompProfile of type Localhost)"

	remedySeccompNS       = seccompRemedy("the container's seccomp profile refuses clone with CLONE_NEWUSER (Docker's default profile refuses it, and unshare, for a container without CAP_SYS_ADMIN)")
	remedySeccompMount    = seccompRemedy("the container's seccomp profile refuses mount and the new mount API (Docker's default profile does, for a container without CAP_SYS_ADMIN)")
	remedySeccompHostname = seccompRemedy("the container's seccomp profile refuses sethostname, which tooljail calls in the jail's own UTS namespace (Docker's and Podman's default profiles do, for a container without CAP_SYS_ADMIN)")
	remedySeccompLandlock = seccompRemedy("the container's seccomp profile refuses the Landlock system calls (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self)")
	remedySeccompSeccomp  = seccompRemedy("the container's seccomp profile refuses seccomp(2), which tooljail needs to load its own filter")
	remedyProcMasks       = remedy{
		cause:      "the container masks or write-protects paths in /proc, and the kernel refuses a new procfs in a user namespace while parts of the container's /proc are hidden; the jail needs a fresh /proc for its PID namespace",
		docker:     "docker run --security-opt systempaths=unconfined",
		podman:     "podman run --security-opt unmask=ALL",
		kubernetes: "hostUsers: false in the pod spec and securityContext.procMount: Unmasked (the API server accepts Unmasked only with hostUsers: false)",
		short:      "unmask the container's /proc (Docker: --security-opt systempaths=unconfined; Podman: --security-opt unmask=ALL; Kubernetes: procMount: Unmasked with hostUsers: false); see docs/containers.md",
	}
	remedyCgroup = remedy{
		cause:      "the container gives this user no cgroup it can write, so tooljail cannot cap each run",
		short:      "run with --allow-degraded cgroup and cap the container as a whole (docs/containers.md)",
		docker:     "run tooljail with --allow-degraded cgroup and cap the container as a whole: docker run --memory, --cpus, --pids-limit",
		podman:     "run tooljail with --allow-degraded cgroup and cap the container as a whole: podman run --memory, --cpus, --pids-limit",
		kubernetes: "run tooljail with --allow-degraded cgroup and cap the pod as a whole: resources.limits.memory and resources.limits.cpu (the kubelet's podPidsLimit caps its processes)",
	}
)

// seccompRemedy is the remedy for a refusal of the container's seccomp
// profile: every engine's way to run it with docs/containers/seccomp.json.
func seccompRemedy(cause string) remedy {
	return remedy{cause: cause, short: profileShort, docker: profileDocker, podman: profilePodman, kubernetes: profileK8s}
}

// remedyAppArmorMount is the remedy when the AppArmor profile label
// confines the container and mounts are denied.
func remedyAppArmorMount(label string) remedy {
	return remedy{
		cause:      fmt.Sprintf("the container's AppArmor profile %s denies mount (Docker's docker-default has `deny mount,`)", label),
		docker:     "docker run --security-opt apparmor=unconfined, or an AppArmor profile of yours, loaded on the host, that allows mount, umount and pivot_root (--security-opt apparmor=PROFILE)",
		podman:     "podman run --security-opt apparmor=unconfined, or --security-opt apparmor=PROFILE with such a profile",
		kubernetes: "securityContext.appArmorProfile: {type: Unconfined}, or {type: Localhost, localhostProfile: PROFILE} with such a profile loaded on the node",
		short:      "run the container unconfined by AppArmor or under a profile that allows mount (Docker, Podman: --security-opt apparmor=...; Kubernetes: appArmorProfile); see docs/containers.md",
	}
}

// remedyAppArmorUserns is the remedy when Ubuntu's restriction of
// unprivileged user namespaces applies to a process without CAP_SYS_ADMIN.
var remedyAppArmorUserns = remedy{
	cause:      "the host sets kernel.apparmor_restrict_unprivileged_userns=1, which applies to the container's processes (they lack CAP_SYS_ADMIN): mounts in a new user namespace are denied",
	docker:     "on the host, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; or run the container under an AppArmor profile that has the `userns,` rule (--security-opt apparmor=PROFILE)",
	podman:     "on the host, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; or --security-opt apparmor=PROFILE with a profile that has the `userns,` rule",
	kubernetes: "on the node, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; or securityContext.appArmorProfile: {type: Localhost, localhostProfile: PROFILE} with a profile that has the `userns,` rule",
	short:      "on the host, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile with `userns,` for the container; see docs/containers.md",
}

// The inode numbers of the initial namespaces (include/linux/proc_ns.h),
// fixed since Linux 3.8 (4.6 for cgroup). Comparing with PID 1's
// namespaces would not do: in a container, PID 1 is the container's.
const (
	initUserNS   = 0xEFFFFFFD
	initPIDNS    = 0xEFFFFFFC
	initCgroupNS = 0xEFFFFFFB
)

// capSysAdmin is CAP_SYS_ADMIN's bit in the capability sets.
const capSysAdmin = 1 << unix.CAP_SYS_ADMIN

// containerInputs is everything detection reads, read once.
type containerInputs struct {
	euid                        int
	dockerenv, containerenv     bool
	pid1Env                     []byte // PID 1's environment, nil when unreadable
	kubernetes                  bool   // KUBERNETES_SERVICE_HOST is set
	pidNS, userNS, cgroupNS     uint64 // namespace inode numbers, 0 when unknown
	status, mountinfo           string // /proc/self/status and mountinfo
	apparmor                    string // /proc/self/attr/apparmor/current
	landlockErrno, seccompErrno syscall.Errno
}

// readContainerInputs reads /proc and the marker files, and makes the two
// harmless calls that tell a seccomp filter's EPERM apart from the
// kernel's answer.
func readContainerInputs() containerInputs {
	in := containerInputs{euid: os.Geteuid(), kubernetes: os.Getenv("KUBERNETES_SERVICE_HOST") != ""}
	_, err := os.Lstat("/.dockerenv")
	in.dockerenv = err == nil
	_, err = os.Lstat("/run/.containerenv")
	in.containerenv = err == nil
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		in.pid1Env = b
	}
	in.pidNS = nsInode("/proc/self/ns/pid")
	in.userNS = nsInode("/proc/self/ns/user")
	in.cgroupNS = nsInode("/proc/self/ns/cgroup")
	in.status = readText("/proc/self/status")
	in.mountinfo = readText("/proc/self/mountinfo")
	in.apparmor = readText("/proc/self/attr/apparmor/current")
	// landlock_create_ruleset(NULL, 0, VERSION) answers the ABI version,
	// EOPNOTSUPP or ENOSYS, never EPERM; SECCOMP_GET_ACTION_AVAIL of
	// ALLOW answers 0 (or EINVAL on old kernels).
	_, _, in.landlockErrno = unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	_, _, in.seccompErrno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&allow)))
	return in
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// nsInode is the inode number of a /proc/PID/ns link ("pid:[4026531836]").
func nsInode(link string) uint64 {
	t, err := os.Readlink(link)
	if err != nil {
		return 0
	}
	return parseNSLink(t)
}

func parseNSLink(t string) uint64 {
	_, v, ok := strings.Cut(t, ":[")
	if !ok || !strings.HasSuffix(v, "]") {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// procStatus is what detection reads from /proc/self/status.
type procStatus struct {
	capEff     uint64
	seccomp    int // 0 none, 1 strict, 2 filter
	noNewPrivs bool
}

func parseStatus(s string) procStatus {
	var st procStatus
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "CapEff":
			st.capEff, _ = strconv.ParseUint(v, 16, 64)
		case "Seccomp":
			st.seccomp, _ = strconv.Atoi(v)
		case "NoNewPrivs":
			st.noNewPrivs = v == "1"
		}
	}
	return st
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	point    string // the mount point, unescaped
	readOnly bool   // the per-mount "ro" option
	fsType   string
}

func parseMountinfo(s string) []mountEntry {
	var ms []mountEntry
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 6 || sep+1 >= len(f) {
			continue
		}
		ms = append(ms, mountEntry{
			point:    mountinfo.Unescape(f[4]),
			readOnly: slices.Contains(strings.Split(f[5], ","), "ro"),
			fsType:   f[sep+1],
		})
	}
	return ms
}

// procOvermounts are the mount points below /proc: the paths a container
// masks or makes read-only. binfmt_misc (an automount on a permanently
// empty directory, which does not hide anything) is left out.
func procOvermounts(ms []mountEntry) []string {
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.point, "/proc/") && m.point != "/proc/sys/fs/binfmt_misc" && !slices.Contains(out, m.point) {
			out = append(out, m.point)
		}
	}
	slices.Sort(out)
	return out
}

// cgroupReadOnly says whether a cgroup file system is mounted read-only
// at or below /sys/fs/cgroup.
func cgroupReadOnly(ms []mountEntry) bool {
	for _, m := range ms {
		if (m.point == "/sys/fs/cgroup" || strings.HasPrefix(m.point, "/sys/fs/cgroup/")) &&
			(m.fsType == "cgroup" || m.fsType == "cgroup2") && m.readOnly {
			return true
		}
	}
	return false
}

// apparmorConfined is the label of an enforcing AppArmor profile from
// /proc/self/attr/apparmor/current ("docker-default (enforce)"), or "".
func apparmorConfined(s string) string {
	s = strings.TrimRight(s, "\x00\n")
	if s == "" || s == "unconfined" || !strings.HasSuffix(s, " (enforce)") {
		return ""
	}
	return s
}

// envValue is KEY's value in a NUL-separated environment, or "".
func envValue(env []byte, key string) string {
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// detectContainer decides, from in alone, whether this is a container,
// which engine the markers name and what the container restricts.
func detectContainer(in containerInputs) Container {
	st := parseStatus(in.status)
	ms := parseMountinfo(in.mountinfo)
	c := Container{
		SeccompFilter: st.seccomp == 2,
		NoNewPrivs:    st.noNewPrivs,
		CapSysAdmin:   st.capEff&capSysAdmin != 0,
		AppArmor:      apparmorConfined(in.apparmor),
		ProcMasked:    procOvermounts(ms),
	}
	var signs []string
	if in.pidNS != 0 && in.pidNS != initPIDNS {
		signs = append(signs, "a PID namespace of its own")
	}
	if in.userNS != 0 && in.userNS != initUserNS {
		signs = append(signs, "a user namespace")
	}
	if in.cgroupNS != 0 && in.cgroupNS != initCgroupNS {
		signs = append(signs, "a cgroup namespace of its own")
	}
	if n := len(c.ProcMasked); n > 0 {
		signs = append(signs, fmt.Sprintf("%d paths under /proc masked or read-only", n))
	}
	if in.euid == 0 && !c.CapSysAdmin {
		signs = append(signs, "root without CAP_SYS_ADMIN")
	}
	var markers []string
	if in.dockerenv {
		markers = append(markers, "/.dockerenv exists")
	}
	if in.containerenv {
		markers = append(markers, "/run/.containerenv exists")
	}
	pid1 := envValue(in.pid1Env, "container")
	if pid1 != "" {
		markers = append(markers, "PID 1's environment has container="+pid1)
	}
	if in.kubernetes {
		markers = append(markers, "KUBERNETES_SERVICE_HOST is set")
	}
	if len(signs) == 0 {
		if len(markers) > 0 {
			c.Signs = []string{strings.Join(markers, ", ") + ", but this process shares the host's PID, user and cgroup namespaces and its /proc is unmasked: not taken for a container"}
		}
		return c
	}
	c.Detected = true
	c.Signs = append(signs, markers...)
	switch {
	case in.kubernetes:
		c.Engine = "kubernetes"
	case in.containerenv || pid1 == "podman":
		c.Engine = "podman"
	case in.dockerenv || pid1 == "docker":
		c.Engine = "docker"
	default:
		c.Engine = pid1
	}
	return c
}

// cloneFiltered says whether a seccomp filter on this process refuses
// clone with CLONE_NEWUSER. The call is one the kernel rejects with
// EINVAL before it does anything (CLONE_NEWUSER, and CLONE_NEWNS, with
// CLONE_FS), so EPERM can only come from a filter, which runs first. A
// filter that kills instead would kill the supervisor at the jail's own
// clone all the same.
func cloneFiltered() bool {
	r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_FS, 0, 0, 0, 0, 0)
	if e == 0 {
		// Never happens; should a kernel ever fork here, the copy ends.
		if r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		var ws unix.WaitStatus
		unix.Wait4(int(r), &ws, unix.WALL, nil)
	}
	return e == unix.EPERM
}

// filterRemedy is the fix for a seccomp filter's refusal outside a
// container tooljail recognises (a systemd unit's filters are seccomp too).
const filterRemedy = "lift the filter: in a container, run it with the seccomp profile of docs/containers.md " +
	"(Docker, Podman: --security-opt seccomp=FILE; Kubernetes: seccompProfile of type Localhost); " +
	"under systemd, drop RestrictNamespaces= and the SystemCallFilter= that deny it; `tooljail check` says more"

// nsProbe is how Check's child fared: the step that failed ("" when
// none did) and its errno.
type nsProbe struct {
	step  string // clone, mount, tmpfs, proc, hostname
	errno syscall.Errno
	text  string
}

// The steps of the child, in order.
const (
	stepClone    = "clone"
	stepMount    = "mount"
	stepTmpfs    = "tmpfs"
	stepProc     = "proc"
	stepHostname = "hostname"
	stepChild    = "child" // the child died without saying where
)

// probeStepText says what a step of the probe does, for a reason.
var probeStepText = map[string]string{
	stepClone:    "clone with the jail's namespaces",
	stepMount:    "mount(2) in the new mount namespace",
	stepTmpfs:    "a tmpfs through the new mount API",
	stepProc:     "a fresh /proc for the new PID namespace",
	stepHostname: "sethostname in the new UTS namespace",
	stepChild:    "the probe in the new namespaces",
}

// probeLine is the child's failure line: "STEP ERRNO TEXT".
func probeLine(step string, err error) string {
	var en syscall.Errno
	errors.As(err, &en)
	return fmt.Sprintf("%s %d %v", step, int(en), err)
}

// parseProbe reads the child's failure line or, when the child never
// started, the error of starting it.
func parseProbe(stderr string, runErr error) nsProbe {
	if runErr == nil {
		return nsProbe{}
	}
	line := strings.TrimSpace(stderr)
	if f := strings.SplitN(line, " ", 3); len(f) == 3 && probeStepText[f[0]] != "" {
		if n, err := strconv.Atoi(f[1]); err == nil {
			return nsProbe{step: f[0], errno: syscall.Errno(n), text: f[2]}
		}
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		p := nsProbe{step: stepChild, text: runErr.Error()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSYS {
			p.text += " (a seccomp filter kills a call the jail's init makes)"
		}
		if line != "" {
			p.text += ": " + line
		}
		return p
	}
	p := nsProbe{step: stepClone, text: runErr.Error()}
	var en syscall.Errno
	if errors.As(runErr, &en) {
		p.errno = en
	}
	return p
}

// reason says what failed in Check's child.
func (p nsProbe) reason() string {
	s := probeStepText[p.step] + " failed"
	if p.errno != 0 {
		return s + " with " + unix.ErrnoName(p.errno)
	}
	return s + ": " + p.text
}

// probeRemedy picks the container's cause of a failed step of the child.
func probeRemedy(p nsProbe, c Container) (remedy, bool) {
	mountStep := p.step == stepMount || p.step == stepTmpfs || p.step == stepProc
	switch {
	case p.step == stepClone && p.errno == unix.EPERM && c.SeccompFilter:
		return remedySeccompNS, true
	case mountStep && p.errno == unix.EACCES && c.AppArmor != "":
		return remedyAppArmorMount(c.AppArmor), true
	case p.step == stepProc && p.errno == unix.EPERM && len(c.ProcMasked) > 0:
		return remedyProcMasks, true
	case mountStep && p.errno == unix.EPERM && c.SeccompFilter:
		// EPERM in a user namespace of one's own, where the kernel
		// allows it: a filter.
		return remedySeccompMount, true
	case p.step == stepHostname && p.errno == unix.EPERM && c.SeccompFilter:
		return remedySeccompHostname, true
	}
	return remedy{}, false
}

// layerRemedy is the container's remedy for a layer that is not
// enforced, the reason to give in a container, and the reason to give
// outside one ("": the layer's own stands).
func layerRemedy(l Layer, c Container, in containerInputs, cause userNSCause, p nsProbe) (r remedy, inContainer, outside string, ok bool) {
	switch {
	case l.Name == "user namespaces":
		switch cause {
		case causeFilterClone:
			return remedySeccompNS, remedySeccompNS.cause, "", true
		case causeAppArmor:
			return remedyAppArmorUserns, remedyAppArmorUserns.cause, "", !c.CapSysAdmin
		case causeNone:
			if r, ok := probeRemedy(p, c); ok {
				return r, p.reason() + ": " + r.cause, "", true
			}
		}
	case l.Name == LayerLandlock && in.landlockErrno == unix.EPERM:
		return remedySeccompLandlock, remedySeccompLandlock.cause,
			"a seccomp filter on this process refuses the Landlock system calls", true
	case (l.Name == LayerSeccomp || l.Name == LayerSeccompNotify) && in.seccompErrno == unix.EPERM:
		return remedySeccompSeccomp, remedySeccompSeccomp.cause, "a seccomp filter on this process refuses seccomp(2)", true
	case strings.HasPrefix(l.Name, "cgroup "):
		r := remedyCgroup
		if cgroupReadOnly(parseMountinfo(in.mountinfo)) {
			r.cause = "the container's cgroup file system is mounted read-only, so tooljail cannot cap each run"
		}
		return r, l.Reason, "", true
	}
	return remedy{}, "", "", false
}

// diagnose explains, in the container's terms, the layers that are not
// enforced: it rewrites their reason and fix and, in a container, lists
// what the container refuses with each engine's fix. cause is why
// Probe found user namespaces unusable; p is how Check's child
// fared.
func diagnose(c *Container, layers []Layer, in containerInputs, cause userNSCause, p nsProbe) {
	for i := range layers {
		l := &layers[i]
		if l.Enforced {
			continue
		}
		r, inContainer, outside, ok := layerRemedy(*l, *c, in, cause, p)
		switch {
		case !ok:
		case c.Detected:
			l.Reason, l.Fix = inContainer, r.short
			// One refusal for the three caps, one for both seccomp layers.
			name := l.Name
			switch {
			case strings.HasPrefix(name, "cgroup "):
				name = LayerCgroup
			case name == LayerSeccompNotify:
				name = LayerSeccomp
			}
			c.refuse(name, r)
		case outside != "":
			l.Reason, l.Fix = outside, filterRemedy
		}
	}
	if !c.Detected || layers[0].Enforced {
		return
	}
	// The child stops at the first failure: name what the container will
	// refuse next, once that one is lifted, so that one change does.
	reached := slices.Index(probeSteps, p.step)
	if cause != causeNone {
		reached = -1
	}
	// next adds r, unless it is the refusal already found, with cause.
	next := func(r remedy, cause string) {
		if !slices.ContainsFunc(c.Refusals, func(x Refusal) bool { return x.Cause == r.cause }) {
			r.cause = "next, " + cause
			c.refuse(layers[0].Name, r)
		}
	}
	if c.AppArmor != "" && reached < slices.Index(probeSteps, stepProc) {
		r := remedyAppArmorMount(c.AppArmor)
		next(r, strings.Replace(r.cause, " denies mount", " may deny mount", 1))
	}
	if len(c.ProcMasked) > 0 && reached < slices.Index(probeSteps, stepProc) {
		next(remedyProcMasks, remedyProcMasks.cause)
	}
}

// probeSteps are the child's steps in the order it takes them.
var probeSteps = []string{stepClone, stepMount, stepTmpfs, stepHostname, stepProc}

// refuse adds a refusal of layer, once per layer and cause.
func (c *Container) refuse(layer string, r remedy) {
	if !slices.ContainsFunc(c.Refusals, func(x Refusal) bool { return x.Layer == layer && x.Cause == r.cause }) {
		c.Refusals = append(c.Refusals, r.refusal(layer))
	}
}
