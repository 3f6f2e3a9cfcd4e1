package spec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func validSpec() *Spec {
	return &Spec{
		Args: []string{"/bin/true"}, Dir: "/tmp", Home: "/home/sandbox",
		Net: NetNone, OnViolation: ViolationDeny,
		Mounts: []Mount{{Kind: MountBind, Source: "/usr", Dest: "/usr"}},
	}
}

func TestValidate(t *testing.T) {
	if err := validSpec().Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	cases := map[string]func(s *Spec){
		"no command":        func(s *Spec) { s.Args = nil },
		"relative dir":      func(s *Spec) { s.Dir = "tmp" },
		"bad net":           func(s *Spec) { s.Net = "bridge" },
		"bad on-violation":  func(s *Spec) { s.OnViolation = "log" },
		"unknown layer":     func(s *Spec) { s.AllowDegraded = []string{"apparmor"} },
		"bad env":           func(s *Spec) { s.Env = []string{"NOEQUALS"} },
		"relative dest":     func(s *Spec) { s.Mounts[0].Dest = "usr" },
		"unclean dest":      func(s *Spec) { s.Mounts[0].Dest = "/usr/../etc" },
		"root dest":         func(s *Spec) { s.Mounts[0].Dest = "/" },
		"proc dest":         func(s *Spec) { s.Mounts[0].Dest = "/proc/sys" },
		"dev dest":          func(s *Spec) { s.Mounts[0].Dest = "/dev" },
		"relative source":   func(s *Spec) { s.Mounts[0].Source = "usr" },
		"unknown mount":     func(s *Spec) { s.Mounts[0].Kind = "overlay" },
		"negative memory":   func(s *Spec) { s.Limits.Memory = -1 },
		"negative duration": func(s *Spec) { s.Limits.Timeout = -time.Second },
	}
	for name, mutate := range cases {
		s := validSpec()
		mutate(s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

func TestDegradedAllowed(t *testing.T) {
	s := validSpec()
	s.AllowDegraded = []string{LayerCgroup, LayerSeccomp}
	for _, l := range []string{LayerMemory, LayerCPU, LayerPids, LayerCgroup, LayerSeccomp, LayerSeccompNotify} {
		if !s.DegradedAllowed(l) {
			t.Errorf("%s should be allowed degraded by cgroup,seccomp", l)
		}
	}
	if s.DegradedAllowed(LayerLandlock) {
		t.Error("landlock was not named but is allowed degraded")
	}
	s.AllowDegraded = []string{LayerMemory}
	if s.DegradedAllowed(LayerPids) || !s.DegradedAllowed(LayerMemory) {
		t.Error("memory alone must allow only memory")
	}
}

// A Spec's limits travel in the report's form, and come back unchanged.
func TestLimitsJSON(t *testing.T) {
	l := Limits{Memory: 1 << 30, CPUs: 1.5, Pids: 64, Timeout: 90 * time.Second, CPUTime: 2 * time.Second,
		NoFile: 1024, FSize: 1 << 20, OutputLimit: 4096, MaxViolations: 7}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(l.Report())
	if string(b) != string(want) {
		t.Errorf("Limits JSON %s, want the report's form %s", b, want)
	}
	for _, key := range []string{`"memory_bytes":1073741824`, `"timeout_ms":90000`, `"cpu_time_ms":2000`, `"core_bytes":0`, `"max_violations":7`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("Limits JSON %s: no %s", b, key)
		}
	}
	var back Limits
	if err := json.Unmarshal(b, &back); err != nil || back != l {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, l)
	}
	b, _ = json.Marshal(Limits{Timeout: time.Microsecond, CPUTime: 1500*time.Millisecond + time.Microsecond})
	if err := json.Unmarshal(b, &back); err != nil || back.Timeout != time.Millisecond || back.CPUTime != 1501*time.Millisecond {
		t.Errorf("sub-millisecond limits %s read back as %+v, %v; want them rounded up, never to 0", b, back, err)
	}
	if err := json.Unmarshal([]byte(`{"core_bytes":1}`), &back); err == nil {
		t.Error("core_bytes 1 accepted")
	}
}
