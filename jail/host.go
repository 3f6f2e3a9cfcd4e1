package jail

import (
	"bytes"
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
}

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

// ProbeHost reads what this host and user can enforce (without trying a
// user namespace, unlike CheckHost). It is done once per process and
// cached; Start uses it. A caller may call it early, in a goroutine, to
// overlap it with its own start-up work (the CLI does, while it loads the
// profile).
func ProbeHost() Host { return probeHost() }

// probeHost reads what the layers can do here; cheap, done once per process.
func probeHost() Host {
	hostOnce.Do(func() {
		hostInfo = Host{
			UserNS:   userNSSysctls(),
			Landlock: landlock.Probe(),
			Seccomp:  seccomp.Probe(),
			Cgroup:   cgroup.Probe(),
		}
	})
	return hostInfo
}

// userNSSysctls reads the knobs that switch unprivileged user namespaces
// off. A run finds out for sure when it starts; `check` also tries one.
func userNSSysctls() Layer {
	l := Layer{Name: "user namespaces", Enforced: true}
	if v, err := readInt("/proc/sys/user/max_user_namespaces"); err == nil && v == 0 {
		l.Enforced, l.Reason = false, "user.max_user_namespaces is 0"
		l.Fix = "sysctl -w user.max_user_namespaces=15000"
		return l
	}
	if os.Geteuid() != 0 {
		if v, err := readInt("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && v == 0 {
			l.Enforced, l.Reason = false, "kernel.unprivileged_userns_clone is 0"
			l.Fix = "sysctl -w kernel.unprivileged_userns_clone=1"
			return l
		}
		if v, err := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && v == 1 {
			l.Enforced, l.Reason = false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): mounts inside them are denied"
			l.Fix = "install an AppArmor profile with `userns,` for the tooljail binary, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
			return l
		}
	}
	return l
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

const argProbe = "tooljail-probe"

// probeChild runs in a fresh user and mount namespace and tries what the
// init needs: the new mount API and a tmpfs.
func probeChild() {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == nil {
		err = unix.FsconfigCreate(fs)
	}
	var mnt int
	if err == nil {
		mnt, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0)
	}
	if err == nil {
		err = unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mount API in a user namespace: %v", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// CheckHost probes every layer, including a real user namespace.
func CheckHost() []Layer {
	h := probeHost()
	userns := h.UserNS
	if userns.Enforced {
		cmd := exec.Command("/proc/self/exe")
		cmd.Args = []string{argProbe}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		}
		if err := cmd.Run(); err != nil {
			userns.Enforced = false
			userns.Reason = strings.TrimSpace(stderr.String())
			if userns.Reason == "" {
				userns.Reason = err.Error()
			}
			userns.Fix = "tooljail needs Linux 5.12 or later with unprivileged user namespaces allowed"
		} else {
			userns.Detail = "user, mount, pid, net, ipc, uts and cgroup namespaces; new mount API"
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
	return layers
}
