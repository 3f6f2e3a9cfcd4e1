package jail

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/landlock"
)

func validSpec() *Spec {
	return &Spec{
		Args: []string{"/bin/true"}, Dir: "/tmp", Home: "/home/sandbox",
		Net: NetNone, OnViolation: ViolationDeny,
		Mounts: []Mount{{Kind: MountBind, Source: "/usr", Dest: "/usr"}},
	}
}

func TestSortMounts(t *testing.T) {
	in := []Mount{
		{Kind: MountMask, Dest: "/a"},
		{Kind: MountBind, Dest: "/tmp/work/sub"},
		{Kind: MountTmpfs, Dest: "/tmp"},
		{Kind: MountBind, Dest: "/tmp/work"},
		{Kind: MountBind, Dest: "/usr", Source: "first"},
		{Kind: MountBind, Dest: "/usr", Source: "second"},
	}
	var got []string
	for _, m := range sortMounts(in) {
		got = append(got, m.Dest+m.Source)
	}
	want := "/tmp /usrfirst /usrsecond /tmp/work /tmp/work/sub /a"
	if strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
}

func TestPlanFailsClosed(t *testing.T) {
	h := hostprobe.Host{UserNS: hostprobe.Layer{Enforced: true}}
	h.Cgroup.Controllers = map[string]bool{}
	s := validSpec()
	s.Landlock = &LandlockSpec{}
	s.Limits.Memory = 1 << 20
	if _, err := makePlan(s, h); err == nil || !strings.Contains(err.Error(), "landlock") || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("want a failure naming landlock and memory, got %v", err)
	}
	s.AllowDegraded = []string{LayerLandlock, LayerMemory}
	p, err := makePlan(s, h)
	if err != nil {
		t.Fatalf("with both allowed degraded: %v", err)
	}
	if strings.Join(p.enf.Degraded, ",") != "landlock,memory" || p.enf.Caps["memory"] || p.resources.Memory != 0 || p.landlock != nil {
		t.Fatalf("degraded run claims too much: %+v %+v", p.enf, p.resources)
	}
	h.Landlock.ABI = 3
	s.Landlock.MinABI = 4
	s.AllowDegraded = nil
	s.Limits.Memory = 0
	if _, err := makePlan(s, h); err == nil || !strings.Contains(err.Error(), "ABI 4") {
		t.Fatalf("min ABI above the kernel's must fail closed, got %v", err)
	}
	h.UserNS = hostprobe.Layer{Reason: "off", Fix: "turn it on"}
	if _, err := makePlan(validSpec(), h); err == nil {
		t.Fatal("no user namespaces must fail")
	}
}

func TestPlanMountsAndLandlock(t *testing.T) {
	dir := t.TempDir()
	h := hostprobe.Host{UserNS: hostprobe.Layer{Enforced: true}}
	h.Landlock.ABI = 7
	s := validSpec()
	s.Landlock = &LandlockSpec{}
	s.Mounts = []Mount{
		{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true},
		{Kind: MountBind, Source: dir + "/missing", Dest: "/opt", Optional: true},
		{Kind: MountBind, Source: dir, Dest: "/work", Writable: true},
		{Kind: MountBind, Source: "/etc/hostname", Dest: "/data"},
		{Kind: MountMask, Dest: "/work/secret"},
	}
	p, err := makePlan(s, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.mounts) != 5 {
		t.Fatalf("plan touches no host path, so it keeps every mount: %+v", p.mounts)
	}
	got := map[string]landlock.Access{}
	for _, r := range p.landlock.Rules {
		got[r.Path] = r.Access
	}
	want := map[string]landlock.Access{"/": landlock.List, "/usr": landlock.ReadExec, "/work": landlock.ReadWrite, "/data": landlock.Read, "/dev/null": landlock.Device, "/proc": landlock.Read}
	for path, a := range want {
		if got[path] != a {
			t.Errorf("rule %s = %q, want %q", path, got[path], a)
		}
	}
	if _, ok := got["/work/secret"]; ok {
		t.Error("masks get no rule of their own")
	}
}
