package hostprobe

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/cgroup"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// Host is what this host and user can enforce.
type Host struct {
	UserNS   Layer
	Landlock landlock.Support
	Seccomp  seccomp.Support
	Cgroup   cgroup.Support
	// userNSCause is why UserNS is not enforced.
	userNSCause userNSCause
}

// The names of check's lines that a run may also be let go without
// (jail.Spec.AllowDegraded spells them alike).
const (
	LayerLandlock      = "landlock"
	LayerSeccomp       = "seccomp"
	LayerSeccompNotify = "seccomp-notify"
	LayerCgroup        = "cgroup"
	LayerMemory        = "memory"
	LayerCPU           = "cpu"
	LayerPids          = "pids"
)

// Layer is one line of `tooljail check`.
type Layer struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	Detail   string `json:"detail,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

var (
	hostOnce sync.Once
	hostInfo Host
)

// Probe reads what this host and user can enforce (without trying a
// user namespace, unlike Check). It is done once per process and cached;
// a jail's start uses it. A caller may call it early, in a goroutine, to
// overlap it with its own start-up work (the CLI does, while it loads the
// profile).
func Probe() Host {
	hostOnce.Do(func() {
		hostInfo = Host{
			Landlock: landlock.Probe(),
			Seccomp:  seccomp.Probe(),
			Cgroup:   cgroup.Probe(),
		}
		hostInfo.UserNS, hostInfo.userNSCause = userNSLayer(os.Geteuid(), hasCapSysAdmin(), readUserNSKnobs(), cloneFiltered())
	})
	return hostInfo
}

// userNSCause is what makes user namespaces unusable, before trying one.
type userNSCause int

const (
	causeNone        userNSCause = iota
	causeFilterClone             // a seccomp filter refuses clone with CLONE_NEWUSER
	causeSysctl                  // user.max_user_namespaces or kernel.unprivileged_userns_clone
	causeAppArmor                // kernel.apparmor_restrict_unprivileged_userns
)

// userNSKnobs are the sysctls that switch unprivileged user namespaces
// off; -1 where the kernel has none.
type userNSKnobs struct {
	maxUserNS, unprivClone, apparmorRestrict int
}

func readUserNSKnobs() userNSKnobs {
	knob := func(path string) int {
		v, err := readInt(path)
		if err != nil {
			return -1
		}
		return v
	}
	return userNSKnobs{
		maxUserNS:        knob("/proc/sys/user/max_user_namespaces"),
		unprivClone:      knob("/proc/sys/kernel/unprivileged_userns_clone"),
		apparmorRestrict: knob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
	}
}

// Privileged says whether this process is real root: uid 0 with
// CAP_SYS_ADMIN. Root in a container usually lacks the capability, and
// cannot do what only real root may (clone a mount of the namespace it
// is in, idmap a mount, keep setgroups); a run treats it as any other
// caller: the jail runs as this process's own identity.
func Privileged() bool { return os.Geteuid() == 0 && hasCapSysAdmin() }

// hasCapSysAdmin says whether CAP_SYS_ADMIN is in this thread's
// effective set (root in a container usually lacks it).
func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[0].Effective&capSysAdmin != 0
}

// userNSLayer decides, without trying one, whether user namespaces can
// work here, in the order the kernel would refuse them: a seccomp filter
// on clone, the sysctls, AppArmor's restriction (which spares only holders
// of CAP_SYS_ADMIN). A run finds out for sure when it starts; `check` also
// tries one.
func userNSLayer(euid int, capAdmin bool, k userNSKnobs, filtered bool) (Layer, userNSCause) {
	l := Layer{Name: "user namespaces", Enforced: true}
	off := func(cause userNSCause, reason, fix string) (Layer, userNSCause) {
		l.Enforced, l.Reason, l.Fix = false, reason, fix
		return l, cause
	}
	switch {
	case filtered:
		return off(causeFilterClone, "a seccomp filter on this process refuses clone with CLONE_NEWUSER (EPERM)", filterRemedy)
	case k.maxUserNS == 0:
		return off(causeSysctl, "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000")
	case euid != 0 && k.unprivClone == 0:
		return off(causeSysctl, "kernel.unprivileged_userns_clone is 0", "sysctl -w kernel.unprivileged_userns_clone=1")
	case (euid != 0 || !capAdmin) && k.apparmorRestrict == 1:
		return off(causeAppArmor, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): mounts inside them are denied",
			"install an AppArmor profile with `userns,` for the tooljail binary, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
	}
	return l, causeNone
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// argProbe is the argv[0] of Check's re-execution (runNSProbe).
const argProbe = "tooljail-probe"

// Child runs one of check's children when this process is one (the
// namespaces and the mount API tried by Check, or the overlay tried by
// ChangesLayer), and never returns in that case; otherwise it returns at
// once. jail.Init calls it first thing in main.
func Child() {
	if len(os.Args) > 0 && os.Args[0] == argProbe {
		probeChild()
	}
	if len(os.Args) == 2 && os.Args[0] == argOverlayProbe {
		overlayProbeChild(os.Args[1])
	}
}

// probeChild runs in a fresh set of namespaces, as the jail's init does,
// and tries what the init needs: a private mount tree, a tmpfs through the
// new mount API, the host name, a fresh /proc. On failure it writes one
// line for parseProbe and exits 1.
func probeChild() {
	fail := func(step string, err error) {
		fmt.Fprint(os.Stderr, probeLine(step, err))
		os.Exit(1)
	}
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		fail(stepMount, fmt.Errorf("make / private: %w", err))
	}
	tmpfs, err := freshMount("tmpfs", 0)
	if err == nil {
		err = unix.MountSetattr(tmpfs, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		if err != nil {
			err = fmt.Errorf("mount_setattr tmpfs: %w", err)
		}
	}
	if err != nil {
		fail(stepTmpfs, err)
	}
	// The host name before /proc: a container's filter on sethostname
	// (Podman's default) is then found even where its /proc masks refuse
	// the procfs too, and check names both fixes at once (diagnose's
	// "next" covers the masks).
	if err := unix.Sethostname([]byte("tooljail")); err != nil {
		fail(stepHostname, fmt.Errorf("sethostname: %w", err))
	}
	if _, err := freshMount("proc", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
		fail(stepProc, err)
	}
	os.Exit(0)
}

// freshMount makes a detached mount of a new fstype file system with
// attrs, as the init does (tj_fresh_fs). The probe exits without
// closing it: nothing else runs in its namespaces.
func freshMount(fstype string, attrs int) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("fsconfig %s: %w", fstype, err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	return mnt, nil
}

// HostCheck is what `tooljail check` reports: every layer, and the
// container tooljail runs in with what it refuses.
type HostCheck struct {
	Layers    []Layer
	Container Container
}

// Check probes every layer, including a real user namespace set up as
// the jail's init sets its own, and explains the layers a container
// refuses.
func Check() HostCheck {
	h := Probe()
	userns := h.UserNS
	var probe nsProbe
	if userns.Enforced {
		if probe = namespaceProbe(); probe.step != "" {
			userns.Enforced = false
			userns.Reason = probe.reason()
			userns.Fix = "tooljail needs Linux 5.12 or later with unprivileged user namespaces allowed"
		} else {
			userns.Detail = "user, mount, pid, net, ipc, uts and cgroup namespaces; new mount API; a fresh /proc"
		}
	}
	layers := []Layer{userns}
	ll := Layer{Name: "landlock", Enforced: h.Landlock.ABI > 0, Reason: h.Landlock.Reason, Fix: h.Landlock.Fix}
	if ll.Enforced {
		ll.Detail = fmt.Sprintf("ABI %d", h.Landlock.ABI)
	}
	layers = append(layers, ll)

	sc := Layer{Name: "seccomp", Enforced: h.Seccomp.Filter, Reason: h.Seccomp.Reason, Fix: h.Seccomp.Fix}
	if sc.Enforced {
		sc.Detail = fmt.Sprintf("allowlist filter, libseccomp API level %d", h.Seccomp.API)
	}
	scn := Layer{Name: "seccomp-notify", Enforced: h.Seccomp.Notify, Reason: h.Seccomp.Reason, Fix: h.Seccomp.Fix}
	if scn.Enforced {
		scn.Detail = "denied syscalls reported by name"
		scn.Reason, scn.Fix = "", ""
	}
	layers = append(layers, sc, scn)

	for _, c := range []string{LayerMemory, LayerCPU, LayerPids} {
		l := Layer{Name: "cgroup " + c, Enforced: h.Cgroup.Controllers[c]}
		if l.Enforced {
			l.Detail = "cgroup " + string(h.Cgroup.Mode)
		} else {
			l.Reason, l.Fix = h.Cgroup.Reason, h.Cgroup.Fix
			if l.Reason == "" {
				l.Reason = fmt.Sprintf("the %s controller is not writable for this user (cgroup mode %s)", c, h.Cgroup.Mode)
			}
		}
		layers = append(layers, l)
	}
	in := readContainerInputs()
	c := detectContainer(in)
	diagnose(&c, layers, in, h.userNSCause, probe)
	layers = append(layers, allowModeLayers(userns, h.Landlock.ABI)...)
	return HostCheck{Layers: layers, Container: c}
}

// allowModeLayers are check's lines for the allow mode: it needs what
// every jail needs (userns, the user and network namespaces tried for
// real), and Landlock ABI 4 for its second wall.
func allowModeLayers(userns Layer, abi int) []Layer {
	mode := Layer{Name: "network allow", Enforced: userns.Enforced}
	if mode.Enforced {
		mode.Detail = "--net allow: proxies and DNS served from listeners the jail makes in its own network namespace"
	} else {
		mode.Reason, mode.Fix = "it needs user and network namespaces: "+userns.Reason, userns.Fix
	}
	tcp := Layer{Name: "landlock tcp", Enforced: abi >= 4}
	if tcp.Enforced {
		tcp.Detail = fmt.Sprintf("ABI %d: in the allow mode TCP connect reaches only the proxies and DNS", abi)
	} else {
		tcp.Reason = fmt.Sprintf("Landlock ABI %d has no TCP rules: the allow mode relies on its namespace alone (no route out)", abi)
		tcp.Fix = "Linux 6.7 or later with Landlock enabled (ABI 4)"
	}
	return []Layer{mode, tcp}
}

// NamespacesFailure tries, once per process, the namespaces the jail's
// init makes, and says why they cannot be made ("" when they can). Probe
// only reads the knobs that forbid them; this tries them for real.
func NamespacesFailure() string {
	if p := namespaceProbe(); p.step != "" {
		return p.reason()
	}
	return ""
}

// namespaceProbe tries the namespaces the init makes, once per process.
var namespaceProbe = sync.OnceValue(runNSProbe)

// runNSProbe runs Check's child in a fresh set of namespaces, as the
// jail's init sets its own, and says how it fared.
func runNSProbe() nsProbe {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{argProbe}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	err := cmd.Run()
	return parseProbe(stderr.String(), err)
}
