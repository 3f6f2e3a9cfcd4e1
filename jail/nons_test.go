package jail

import (
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostprobe"
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
	_, err := s.plan(noNSHost(7))
	if err == nil || !strings.Contains(err.Error(), "user namespaces are not available") || !strings.Contains(err.Error(), "--allow-degraded namespaces") {
		t.Fatalf("want the fail-closed error naming --allow-degraded namespaces, got %v", err)
	}
	p, err := noNSSpecFor().plan(noNSHost(7))
	if err != nil {
		t.Fatal(err)
	}
	if p.nons == nil || p.enf.Mode != ModeLandlockSeccomp || p.enf.Namespaces != (Namespaces{}) || !slices.Contains(p.enf.Degraded, LayerNamespaces) {
		t.Fatalf("enforcement: %+v", p.enf)
	}
	if p.mounts[p.nons.tmp].Source != privateTmp {
		t.Fatalf("the private directory is not at index %d: %+v", p.nons.tmp, p.mounts)
	}
	// Where namespaces work, the option changes nothing.
	h := noNSHost(7)
	h.UserNS.Enforced = true
	if p, err := noNSSpecFor().plan(h); err != nil || p.nons != nil || p.enf.Mode != ModeNamespaces || !p.enf.Namespaces.User {
		t.Fatalf("with namespaces: %v %+v", err, p)
	}
}

// Landlock is what confines the files: without it the mode refuses, even
// with landlock allowed degraded too.
func TestPlanNoNamespacesNeedsLandlock(t *testing.T) {
	s := noNSSpecFor()
	s.AllowDegraded = []string{LayerNamespaces, LayerLandlock}
	if _, err := s.plan(noNSHost(0)); err == nil || !strings.Contains(err.Error(), "nothing would confine") {
		t.Fatalf("no Landlock: want a refusal, got %v", err)
	}
	s.Landlock = nil
	if _, err := s.plan(noNSHost(7)); err == nil || !strings.Contains(err.Error(), "turns Landlock off") {
		t.Fatalf("Landlock off in the profile: want a refusal, got %v", err)
	}
	s = noNSSpecFor()
	s.Landlock.MinABI = 8
	s.AllowDegraded = []string{LayerNamespaces, LayerLandlock}
	if _, err := s.plan(noNSHost(7)); err == nil || !strings.Contains(err.Error(), "ABI 8") {
		t.Fatalf("min ABI above the kernel's: want a refusal despite landlock allowed degraded, got %v", err)
	}
}

// The rules: only what the view would show, on host paths.
func TestPlanNoNamespacesLandlock(t *testing.T) {
	p, err := noNSSpecFor().plan(noNSHost(7))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]landlock.Access{}
	for _, r := range p.landlock.Rules {
		got[r.Path] = r.Access
	}
	want := map[string]landlock.Access{
		"/usr": landlock.ReadExec, "/etc/ssl/certs": landlock.Read, "/src/p": landlock.ReadWrite,
		privateTmp: landlock.ReadWrite, "/proc": landlock.Read,
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
	if p, err := s.plan(noNSHost(7)); err != nil || p.landlock.RestrictTCP {
		t.Errorf("net host: %v %+v", err, p.landlock)
	}
	if p, err := noNSSpecFor().plan(noNSHost(3)); err != nil || p.landlock.RestrictTCP {
		t.Errorf("ABI 3 cannot restrict TCP; the plan must not claim it: %v %+v", err, p.landlock)
	}
}

// What the mode cannot do refuses to run.
func TestNoNSSpecRefusals(t *testing.T) {
	cases := map[string]struct {
		mutate func(s *Spec)
		want   string
	}{
		"bind elsewhere":  {func(s *Spec) { s.Mounts = append(s.Mounts, Mount{Kind: MountBind, Source: "/data", Dest: "/mnt"}) }, "at its own path"},
		"other tmpfs":     {func(s *Spec) { s.Mounts = append(s.Mounts, Mount{Kind: MountTmpfs, Dest: "/scratch"}) }, "no tmpfs"},
		"mask below bind": {func(s *Spec) { s.Mounts = append(s.Mounts, Mount{Kind: MountMask, Dest: "/src/p/.env"}) }, "nothing can hide"},
	}
	for name, c := range cases {
		s := noNSSpecFor()
		c.mutate(s)
		if _, err := s.noNSSpec(7); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error with %q, got %v", name, c.want, err)
		}
	}
	s := noNSSpecFor()
	s.Mounts = append(s.Mounts, Mount{Kind: MountMask, Dest: "/root"})
	if _, err := s.noNSSpec(7); err != nil {
		t.Errorf("a mask outside every bind hides what no rule grants: %v", err)
	}
}

// Namespace creation stays denied whatever the profile allows.
func TestNonsSeccomp(t *testing.T) {
	got := nonsSeccomp(seccomp.Policy{Allow: []string{"@namespaces", "ptrace", "clone", "unshare", "setns", "clone3"}, Deny: []string{"chmod"}}, 9, NetHost)
	if !slices.Equal(got.Allow, []string{"ptrace"}) || !slices.Equal(got.Deny, []string{"chmod"}) || len(got.DenySockets) != 0 {
		t.Fatalf("%+v", got)
	}
	// Below ABI 9 nothing else keeps the host's unix sockets out; with no
	// network the host's network is all there is.
	for _, c := range []struct {
		abi  int
		net  NetMode
		want []string
	}{{9, NetNone, []string{"inet"}}, {8, NetHost, []string{"unix"}}, {7, NetNone, []string{"unix", "inet"}}} {
		if got := nonsSeccomp(seccomp.Policy{}, c.abi, c.net); !slices.Equal(got.DenySockets, c.want) {
			t.Errorf("ABI %d, net %s: deny sockets %q, want %q", c.abi, c.net, got.DenySockets, c.want)
		}
	}
}

func TestNonsPaths(t *testing.T) {
	s := noNSSpecFor()
	env := []string{"PATH=/usr/bin", "HOME=/home/sandbox", "TMPDIR=/tmp", "LANG=C"}
	for dir, want := range map[string]string{
		"/src/p":            "/src/p",
		"/src/p/sub":        "/src/p/sub",
		"/tmp":              "/tmp/tooljail-1",
		"/home/sandbox":     "/tmp/tooljail-1",
		"/home/sandbox/a/b": "/tmp/tooljail-1/a/b",
	} {
		got, gotEnv := nonsPaths("/tmp/tooljail-1", s.Mounts, dir, env)
		if got != want {
			t.Errorf("dir %s: %s, want %s", dir, got, want)
		}
		if !slices.Equal(gotEnv, []string{"PATH=/usr/bin", "LANG=C", "HOME=/tmp/tooljail-1", "TMPDIR=/tmp/tooljail-1"}) {
			t.Errorf("env %q", gotEnv)
		}
	}
	// A workdir below /tmp on the host is a bind, not the tmpfs.
	s.Mounts = append(s.Mounts, Mount{Kind: MountBind, Source: "/tmp/w", Dest: "/tmp/w", Writable: true})
	if got, _ := nonsPaths("/tmp/tooljail-1", s.Mounts, "/tmp/w", nil); got != "/tmp/w" {
		t.Errorf("workdir below /tmp: %s", got)
	}
}

func TestMapsID(t *testing.T) {
	const initial = "         0          0 4294967295\n"
	const rootless = "         0       1000          1\n         1     100000      65536\n"
	for _, c := range []struct {
		idMap string
		id    uint64
		want  bool
	}{
		{initial, 524287, true}, {rootless, 0, true}, {rootless, 1000, true}, {rootless, 65536, true},
		{rootless, 65537, false}, {rootless, 524287, false}, {"0 65534 1\n", 524287, false}, {"", 0, false},
	} {
		if got := mapsID(c.idMap, c.id); got != c.want {
			t.Errorf("mapsID(%q, %d) = %v, want %v", c.idMap, c.id, got, c.want)
		}
	}
}
