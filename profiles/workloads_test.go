package profiles

import (
	"slices"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// filesystem.workdir_readonly binds the workdir read-only at the same place
// and still starts there; nothing else of the host becomes writable. A
// child may set it back (a scalar overrides).
func TestSpecWorkdirReadOnly(t *testing.T) {
	root := tree(t)
	proj := root + "/home/user/proj"
	for _, c := range []struct {
		name     string
		profile  func(t *testing.T) *Profile
		writable bool
	}{
		{"default", func(t *testing.T) *Profile { return mustLoad(t, "default") }, true},
		{"readonly", func(t *testing.T) *Profile { return mustLoad(t, "readonly") }, false},
		{"child of readonly setting it back", func(t *testing.T) *Profile {
			f := writeFile(t, t.TempDir(), "rw.toml", "extends = \"readonly\"\n[filesystem]\nworkdir_readonly = false\n")
			return mustLoad(t, f)
		}, true},
		{"default with the key set", func(t *testing.T) *Profile {
			p := mustLoad(t, "default")
			yes := true
			p.Filesystem.WorkdirReadOnly = &yes
			return p
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.profile(t)
			s, err := p.Spec(Request{Args: []string{"true"}, Cwd: proj})
			if err != nil {
				t.Fatal(err)
			}
			m := findMount(s, proj)
			if s.Dir != proj || m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: proj, Dest: proj, Writable: c.writable}) {
				t.Fatalf("dir %q, workdir mount %+v; want %s bound with writable %v", s.Dir, m, proj, c.writable)
			}
			for _, m := range s.Mounts {
				if m.Kind == jail.MountBind && m.Writable && m.Dest != proj {
					t.Errorf("another writable bind: %+v", m)
				}
			}
		})
	}
	// Without a workdir the key is moot: no bind, no error.
	p := mustLoad(t, "readonly")
	*p.Filesystem.Workdir = false
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: proj})
	if err != nil || findMount(s, proj) != nil {
		t.Errorf("readonly without a workdir: %v, mount %+v", err, findMount(s, proj))
	}
}

// What docs/profiles.md says of each workload profile is what it holds:
// the limits, the network, the registries.
func TestWorkloadProfiles(t *testing.T) {
	type want struct {
		memory, cpus, pids, timeout, nofile string
		tmp, home                           string
		mode                                string
		allow                               []string
		env                                 map[string]string
	}
	npmQuiet := map[string]string{"NPM_CONFIG_UPDATE_NOTIFIER": "false", "NPM_CONFIG_FUND": "false"}
	for name, w := range map[string]want{
		"build":    {"2G", "2", "1024", "30m", "4096", "/tmp", "memory", "none", nil, nil},
		"node":     {"1G", "1", "512", "20m", "4096", "/tmp", "memory", "none", nil, npmQuiet},
		"readonly": {"1G", "1", "256", "10m", "1024", "/tmp", "memory", "none", nil, nil},
		"python":   {"1G", "1", "512", "30m", "4096", "/tmp", "memory", "none", nil, nil},
		"go":       {"2G", "2", "1024", "30m", "4096", "/tmp", "memory", "none", nil, map[string]string{"GOTOOLCHAIN": "local", "GO_TELEMETRY_CHILD": "2"}},
		"fetch": {"1G", "1", "512", "20m", "4096", "/tmp", "memory", "allow", []string{
			"registry.npmjs.org:443", "proxy.golang.org:443", "sum.golang.org:443",
			"pypi.org:443", "files.pythonhosted.org:443", "deb.debian.org", "security.debian.org",
		}, npmQuiet},
	} {
		p := mustLoad(t, name)
		got := want{
			p.Limits["memory"], p.Limits["cpus"], p.Limits["pids"], p.Limits["timeout"], p.Limits["nofile"],
			p.Filesystem.Tmpfs[len(p.Filesystem.Tmpfs)-1], *p.Filesystem.HomeSize, *p.Network.Mode, p.Network.Allow, nil,
		}
		if got.memory != w.memory || got.cpus != w.cpus || got.pids != w.pids || got.timeout != w.timeout || got.nofile != w.nofile ||
			got.tmp != w.tmp || got.home != w.home || got.mode != w.mode || !slices.Equal(got.allow, w.allow) {
			t.Errorf("profile %s: %+v, want %+v", name, got, w)
		}
		for k, v := range w.env {
			if p.Env.Set[k] != v {
				t.Errorf("profile %s: env %s = %q, want %q", name, k, p.Env.Set[k], v)
			}
		}
		if *p.Filesystem.WorkdirReadOnly != (name == "readonly") || !*p.Filesystem.Workdir {
			t.Errorf("profile %s: workdir %v, read-only %v", name, *p.Filesystem.Workdir, *p.Filesystem.WorkdirReadOnly)
		}
		if wantAuto := name == "python" || name == "go"; wantAuto != slices.Equal(p.Filesystem.Toolchains, []string{"auto"}) {
			t.Errorf("profile %s: toolchains %q", name, p.Filesystem.Toolchains)
		}
		if len(p.Filesystem.Rw) != 0 {
			t.Errorf("profile %s: read-write binds %q: the workdir is the only host directory it may write", name, p.Filesystem.Rw)
		}
	}
}

// The example of docs/profiles.md that extends fetch with a registry loads,
// keeps fetch's registries and adds its own, by name and by range.
func TestFetchRegistryExample(t *testing.T) {
	p := mustLoad(t, "../examples/profiles/fetch-registry.toml")
	for _, want := range []string{"registry.npmjs.org:443", "proxy.golang.org:443", "npm.internal.example.com:443", "goproxy.internal.example.com:443", "10.20.0.0/16:443"} {
		if !slices.Contains(p.Network.Allow, want) {
			t.Errorf("network.allow %q lacks %q", p.Network.Allow, want)
		}
	}
	if *p.Network.Mode != "allow" || p.Env.Set["NPM_CONFIG_REGISTRY"] != "https://npm.internal.example.com/" || p.Env.Set["GOPROXY"] != "https://goproxy.internal.example.com" {
		t.Errorf("mode %q, env %v", *p.Network.Mode, p.Env.Set)
	}
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: tree(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Allow, "10.20.0.0/16:443") {
		t.Errorf("the jail's allow list %q lacks the range", s.Allow)
	}
}
