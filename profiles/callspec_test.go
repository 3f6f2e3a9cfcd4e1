package profiles

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/toolchain"
)

// CallSpec must give a session's call what Spec gives the same request:
// Spec is the oracle, and CallSpec differs only in not building the jail
// again. A call that could pass the environment rules or the limits'
// ceiling through CallSpec would fail here.
func TestCallSpecAsSpec(t *testing.T) {
	root := tree(t)
	proj := filepath.Join(root, "home/user/proj")
	for _, c := range []struct {
		name    string
		profile string
		vars    []string
		limits  map[string]string
	}{
		{name: "plain", profile: "default"},
		{name: "the jail's own and credentials dropped", profile: "default",
			vars: []string{"HOME=/root", "OPENAI_API_KEY=sk", "GITHUB_TOKEN=x", "LANG=C.UTF-8", "X=1"}},
		{name: "a caller's PATH after the jail's", profile: "default",
			vars: []string{"PATH=/opt/nothere/bin:/usr/bin:" + proj + "/bin"}},
		{name: "the network profile's proxies and set", profile: "network", vars: []string{"HTTPS_PROXY=http://x:1"}},
		{name: "a timeout and an output limit", profile: "default", limits: map[string]string{"timeout": "7s", "output_limit": "1M"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustLoad(t, c.profile)
			base, err := p.Spec(Request{Args: []string{"(session)"}, Cwd: proj})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.limits {
				if err := p.SetLimit(k, v); err != nil {
					t.Fatal(err)
				}
			}
			r := Request{Args: []string{"sh", "-c", "env"}, Cwd: proj, Vars: c.vars}
			want, err := p.Spec(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.CallSpec(base, Request{Args: r.Args, Vars: r.Vars})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("CallSpec differs from Spec\n got %+v\nwant %+v", got, want)
			}
			if c.limits["timeout"] != "" && got.Limits.Timeout != 7*time.Second {
				t.Errorf("timeout %v, want 7s", got.Limits.Timeout)
			}
			if base.Limits.Timeout == got.Limits.Timeout && c.limits["timeout"] != "" {
				t.Errorf("the call's timeout changed nothing")
			}
		})
	}
}

// A session's toolchains give each call their PATH and variables, unless
// the call sets the variable itself.
func TestCallSpecToolchains(t *testing.T) {
	root := standIn(t)
	finder := &Finder{FS: toolchain.Under(root), Environ: []string{"HOME=/home/u", "PATH=/home/u/venv/bin:/usr/bin"}, Homes: []string{"/home/u"}}
	for _, vars := range [][]string{nil, {"VIRTUAL_ENV=/elsewhere"}, {"PATH=/usr/local/go/bin"}} {
		p := mustLoad(t, "default")
		start := Request{Args: []string{"(session)"}, Cwd: "/home/u/proj", Toolchains: []string{"/home/u/venv"}, Finder: finder}
		base, err := p.Spec(start)
		if err != nil {
			t.Fatal(err)
		}
		if len(base.Toolchains) == 0 {
			t.Fatal("the stand-in venv was not found: the test would prove nothing")
		}
		r := start
		r.Args, r.Vars = []string{"python3"}, vars
		want, err := p.Spec(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.CallSpec(base, Request{Args: r.Args, Vars: vars})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Env, want.Env) || !reflect.DeepEqual(got.EnvDropped, want.EnvDropped) {
			t.Errorf("vars %q: env\n got %q\nwant %q", vars, got.Env, want.Env)
		}
	}
}

// A call's limits are checked as a run's: a value above [limits.max] or
// a bad variable is refused, not passed to the session's jail.
func TestCallSpecRefuses(t *testing.T) {
	p := mustLoad(t, "default")
	*p.Filesystem.Workdir = false
	base, err := p.Spec(Request{Args: []string{"(session)"}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	p.LimitsMax = LimitsMax{"timeout": "1m"}
	if err := p.SetLimit("timeout", "2h"); err != nil {
		t.Fatal(err) // SetLimit checks the value's form; the ceiling is the profile's check
	}
	if _, err := p.CallSpec(base, Request{Args: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "limits.max") {
		t.Errorf("a timeout above limits.max: %v", err)
	}
	p.LimitsMax = nil
	if _, err := p.CallSpec(base, Request{Args: []string{"true"}, Vars: []string{"A\x00=1"}}); err == nil {
		t.Error("a variable with a NUL in its name was taken")
	}
}
