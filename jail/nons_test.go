package jail

import (
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/jail/internal/nons"
	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/seccomp"
)

// noNSHost is a host where user namespaces are refused and Landlock has abi.
func noNSHost(abi int) hostprobe.Host {
	h := hostprobe.Host{UserNS: hostprobe.Layer{Reason: "a seccomp filter refuses clone with CLONE_NEWUSER", Fix: "lift the filter"}}
	h.Landlock.ABI = abi
	h.Seccomp = seccomp.Support{Filter: true, Notify: true}
	h.Cgroup.Controllers = map[string]bool{}
	return h
}

// noNSSpecFor is the default profile's shape: system dirs, /etc entries,
// a workdir, /tmp and home tmpfs.
func noNSSpecFor() *Spec {
	return &Spec{
		Args: []string{"make"}, Dir: "/src/p", Home: "/home/sandbox",
		Net: NetNone, OnViolation: ViolationDeny,
		Mounts: []Mount{
			{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true},
			{Kind: MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true},
			{Kind: MountTmpfs, Dest: "/home/sandbox", Writable: true},
			{Kind: MountTmpfs, Dest: "/tmp", Writable: true},
			{Kind: MountBind, Source: "/src/p", Dest: "/src/p", Writable: true},
		},
		Landlock:      &LandlockSpec{},
		Seccomp:       &seccomp.Policy{},
		AllowDegraded: []string{LayerNamespaces},
	}
}

// Without the option the run fails closed, naming the option; with it,
// the plan says so in the report.
func TestPlanNoNamespaces(t *testing.T) {
	s := noNSSpecFor()
	s.AllowDegraded = nil
	_, err := makePlan(s, noNSHost(7))
	if err == nil || !strings.Contains(err.Error(), "user namespaces are not available") || !strings.Contains(err.Error(), "--allow-degraded namespaces") {
		t.Fatalf("want the fail-closed error naming --allow-degraded namespaces, got %v", err)
	}
	p, err := makePlan(noNSSpecFor(), noNSHost(7))
	if err != nil {
		t.Fatal(err)
	}
	if p.nons == nil || p.enf.Mode != ModeLandlockSeccomp || p.enf.Namespaces != (Namespaces{}) || !slices.Contains(p.enf.Degraded, LayerNamespaces) {
		t.Fatalf("enforcement: %+v", p.enf)
	}
	if p.mounts[p.nons.tmp].Source != nons.PrivateTmp {
		t.Fatalf("the private directory is not at index %d: %+v", p.nons.tmp, p.mounts)
	}
	// Where namespaces work, the option changes nothing.
	h := noNSHost(7)
	h.UserNS.Enforced = true
	if p, err := makePlan(noNSSpecFor(), h); err != nil || p.nons != nil || p.enf.Mode != ModeNamespaces || !p.enf.Namespaces.User {
		t.Fatalf("with namespaces: %v %+v", err, p)
	}
}

// Landlock is what confines the files: without it the mode refuses, even
// with landlock allowed degraded too.
func TestPlanNoNamespacesNeedsLandlock(t *testing.T) {
	s := noNSSpecFor()
	s.AllowDegraded = []string{LayerNamespaces, LayerLandlock}
	if _, err := makePlan(s, noNSHost(0)); err == nil || !strings.Contains(err.Error(), "nothing would confine") {
		t.Fatalf("no Landlock: want a refusal, got %v", err)
	}
	s.Landlock = nil
	if _, err := makePlan(s, noNSHost(7)); err == nil || !strings.Contains(err.Error(), "turns Landlock off") {
		t.Fatalf("Landlock off in the profile: want a refusal, got %v", err)
	}
	s = noNSSpecFor()
	s.Landlock.MinABI = 8
	s.AllowDegraded = []string{LayerNamespaces, LayerLandlock}
	if _, err := makePlan(s, noNSHost(7)); err == nil || !strings.Contains(err.Error(), "ABI 8") {
		t.Fatalf("min ABI above the kernel's: want a refusal despite landlock allowed degraded, got %v", err)
	}
}

// The rules: only what the view would show, on host paths.
func TestPlanNoNamespacesLandlock(t *testing.T) {
	p, err := makePlan(noNSSpecFor(), noNSHost(7))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]landlock.Access{}
	for _, r := range p.landlock.Rules {
		got[r.Path] = r.Access
	}
	want := map[string]landlock.Access{
		"/usr": landlock.ReadExec, "/etc/ssl/certs": landlock.Read, "/src/p": landlock.ReadWrite,
		nons.PrivateTmp: landlock.ReadWrite, "/proc": landlock.Read,
		"/etc/passwd": landlock.Read, "/etc/group": landlock.Read, "/etc/hosts": landlock.Read, "/etc/hostname": landlock.Read,
		"/dev/null": landlock.Device, "/dev/zero": landlock.Device, "/dev/full": landlock.Device,
		"/dev/random": landlock.Device, "/dev/urandom": landlock.Device,
	}
	for path, a := range want {
		if got[path] != a {
			t.Errorf("rule on %s: %q, want %q", path, got[path], a)
		}
	}
	for path, a := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected rule %s (%s): the host's view holds more than the jail's", path, a)
		}
	}
	// No network namespace: no TCP on ABI 4+.
	if !p.landlock.RestrictTCP || len(p.landlock.ConnectTCP)+len(p.landlock.BindTCP) != 0 {
		t.Errorf("net none without a namespace must deny all TCP: %+v", p.landlock)
	}
	s := noNSSpecFor()
	s.Net = NetHost
	if p, err := makePlan(s, noNSHost(7)); err != nil || p.landlock.RestrictTCP {
		t.Errorf("net host: %v %+v", err, p.landlock)
	}
	if p, err := makePlan(noNSSpecFor(), noNSHost(3)); err != nil || p.landlock.RestrictTCP {
		t.Errorf("ABI 3 cannot restrict TCP; the plan must not claim it: %v %+v", err, p.landlock)
	}
}

// A run without namespaces refuses a session's init first, then a
// terminal.
func TestNoNSRefusal(t *testing.T) {
	for _, c := range []struct {
		name        string
		sessionInit bool
		tty         bool
		want        string // how the error starts; "" for none
	}{
		{"plain run", false, false, ""},
		{"session", true, false, "a session needs"},
		{"terminal", false, true, "a terminal (--tty) needs"},
		{"session with a terminal", true, true, "a session needs"},
	} {
		err := noNSRefusal(c.sessionInit, c.tty)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: noNSRefusal = %v, want nil", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: noNSRefusal = %v, want %q...", c.name, err, c.want)
		}
	}
}
