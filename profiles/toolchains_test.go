package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/toolchain"
)

// standIn builds a venv over a pyenv-like base under root/home/u, as the
// host paths /home/u/... that toolchain.Under(root) reads.
func standIn(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, v := range map[string]string{
		"home/u/.pyenv/versions/3.12.1/bin/python3.12": "elf",
		"home/u/.pyenv/versions/3.12.1/lib/python3.12": "",
		"home/u/venv/pyvenv.cfg":                       "home = /home/u/.pyenv/versions/3.12.1/bin\n",
		"home/u/venv/bin/python3":                      "-> /home/u/.pyenv/versions/3.12.1/bin/python3.12",
		"home/u/proj/x":                                "",
		"usr/lib/jvm/bin/java":                         "elf",
	} {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		switch {
		case strings.HasPrefix(v, "-> "):
			os.Symlink(strings.TrimPrefix(v, "-> "), full)
		case strings.HasSuffix(p, "python3.12") && v == "":
			os.MkdirAll(full, 0o755)
		default:
			os.WriteFile(full, []byte(v), 0o755)
		}
	}
	return root
}

func TestSpecToolchains(t *testing.T) {
	root := standIn(t)
	const venv, base = "/home/u/venv", "/home/u/.pyenv/versions/3.12.1"
	finder := func(env ...string) *Finder {
		return &Finder{FS: toolchain.Under(root), Environ: append([]string{"HOME=/home/u", "PATH=/home/u/venv/bin:/usr/bin"}, env...), Homes: []string{"/home/u"}}
	}
	auto := jail.Toolchain{Kind: "venv", Prefixes: []string{venv, base}, Bin: []string{venv + "/bin"}, Env: []string{"VIRTUAL_ENV=" + venv}, From: FromAuto}
	for _, c := range []struct {
		name    string
		profile []string
		flag    []string
		vars    []string
		want    []jail.Toolchain
		path    string // PATH in the jail
		env     string // one more variable expected in Env
		err     string
	}{
		{name: "none", path: sysPath},
		{name: "auto in the profile", profile: []string{"auto"}, want: []jail.Toolchain{auto}, path: venv + "/bin:" + sysPath, env: "VIRTUAL_ENV=" + venv},
		{name: "auto twice is one", profile: []string{"auto"}, flag: []string{"auto"}, want: []jail.Toolchain{auto}, path: venv + "/bin:" + sysPath},
		{name: "a prefix by flag", flag: []string{base}, want: []jail.Toolchain{{Kind: "python", Prefixes: []string{base}, Bin: []string{base + "/bin"}, From: FromFlag}}, path: base + "/bin:" + sysPath},
		{name: "a prefix by the profile", profile: []string{base}, want: []jail.Toolchain{{Kind: "python", Prefixes: []string{base}, Bin: []string{base + "/bin"}, From: FromProfile}}, path: base + "/bin:" + sysPath},
		{name: "the caller's variable wins", flag: []string{"auto"}, vars: []string{"VIRTUAL_ENV=/elsewhere"}, want: []jail.Toolchain{auto}, env: "VIRTUAL_ENV=/elsewhere"},
		{name: "a prefix the jail shows is not bound again", flag: []string{"/usr/lib/jvm"}, want: []jail.Toolchain{{Kind: "prefix", Prefixes: []string{}, Bin: []string{"/usr/lib/jvm/bin"}, From: FromFlag}}, path: "/usr/lib/jvm/bin:" + sysPath},
		{name: "a bad flag value", flag: []string{"rel/dir"}, err: `--toolchain "rel/dir": want "auto" or an absolute host path`},
		{name: "the home is refused", flag: []string{"/home/u"}, err: "is the home directory /home/u"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustLoad(t, "default")
			p.Filesystem.Toolchains = c.profile
			s, err := p.Spec(Request{Args: []string{"python3"}, Cwd: "/home/u/proj", Toolchains: c.flag, Vars: c.vars, Finder: finder()})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Toolchains, c.want) {
				t.Errorf("toolchains %+v\nwant %+v", s.Toolchains, c.want)
			}
			for _, tc := range c.want {
				for _, pre := range tc.Prefixes {
					m := findMount(s, pre)
					if m == nil || m.Kind != jail.MountBind || m.Source != pre || m.Writable || !m.Exec || m.Optional {
						t.Errorf("prefix %s: mount %+v, want a read-only bind with Exec", pre, m)
					}
				}
			}
			if c.path != "" && !slices.Contains(s.Env, "PATH="+c.path) {
				t.Errorf("env %q, want PATH=%s", s.Env, c.path)
			}
			if c.env != "" && !slices.Contains(s.Env, c.env) {
				t.Errorf("env %q, want %s", s.Env, c.env)
			}
			if !slices.IsSorted(s.Env) {
				t.Errorf("env not sorted: %q", s.Env)
			}
		})
	}
}

// TestSpecToolchainsCheck: a server's check sees every prefix and its
// refusal is the Spec's error.
func TestSpecToolchainsCheck(t *testing.T) {
	root := standIn(t)
	var asked []string
	f := &Finder{FS: toolchain.Under(root), Environ: []string{"HOME=/home/u", "PATH=/home/u/venv/bin"}, Homes: []string{"/home/u"}, Check: func(p string) error {
		asked = append(asked, p)
		if strings.Contains(p, "pyenv") {
			return os.ErrPermission
		}
		return nil
	}}
	p := mustLoad(t, "default")
	_, err := p.Spec(Request{Args: []string{"python3"}, Cwd: "/home/u/proj", Toolchains: []string{"auto"}, Finder: f})
	if err == nil || !reflect.DeepEqual(asked, []string{"/home/u/venv", "/home/u/.pyenv/versions/3.12.1"}) {
		t.Errorf("err %v, asked %q", err, asked)
	}
}

func TestValidateToolchains(t *testing.T) {
	for v, ok := range map[string]bool{"auto": true, "/opt/go": true, "go": false, "": false, "Auto": false} {
		p := &Profile{Filesystem: Filesystem{Toolchains: []string{v}}}
		err := p.Validate()
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "filesystem.toolchains")) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestWithToolchains(t *testing.T) {
	tcs := []jail.Toolchain{
		{Bin: []string{"/a/bin", "/c/bin"}, Env: []string{"GOPROXY=file:///m,direct", "X=1"}},
		{Bin: []string{"/b/bin", "/a/bin"}},
	}
	for _, c := range []struct {
		env, vars, want []string
	}{
		{env: []string{"HOME=/h", "PATH=/usr/bin:/b/bin"}, want: []string{"GOPROXY=file:///m,direct", "HOME=/h", "PATH=/a/bin:/c/bin:/b/bin:/usr/bin", "X=1"}},
		{env: []string{"GOPROXY=off", "HOME=/h"}, vars: []string{"GOPROXY=off"}, want: []string{"GOPROXY=off", "HOME=/h", "PATH=/a/bin:/c/bin:/b/bin", "X=1"}},
	} {
		if got := withToolchains(c.env, tcs, c.vars); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.env, got, c.want)
		}
	}
	if got := withToolchains([]string{"PATH=/usr/bin"}, nil, nil); !reflect.DeepEqual(got, []string{"PATH=/usr/bin"}) {
		t.Errorf("no toolchains changed the env: %q", got)
	}
}

// sysPath is the default profile's PATH.
const sysPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func TestShownHost(t *testing.T) {
	shown := shownHost([]jail.Mount{
		{Kind: jail.MountBind, Source: "/usr", Dest: "/usr"},
		{Kind: jail.MountTmpfs, Dest: "/tmp"},
		{Kind: jail.MountBind, Source: "/tmp/w", Dest: "/tmp/w", Writable: true},
		{Kind: jail.MountBind, Source: "/srv/data", Dest: "/data"},
		{Kind: jail.MountTmpfs, Dest: "/usr/local/cache"},
		{Kind: jail.MountMask, Dest: "/tmp/w/secret"},
	})
	for p, want := range map[string]bool{
		"/usr/bin/python3": true, "/usr": true, "/usr/local/cache/x": false, "/tmp/x": false, "/tmp": false,
		"/tmp/w/.venv/bin/python": true, "/tmp/w": true, "/tmp/w/secret/k": false, "/tmp/ww": false,
		"/data/x": false, "/srv/data/x": false, "/home/u": false,
	} {
		if got := shown(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}

func TestToolchainAsks(t *testing.T) {
	asks, err := toolchainAsks([]string{"auto", "/opt/go"}, []string{"/opt/node", "auto"})
	want := []toolchainAsk{{"auto", FromProfile}, {"/opt/go", FromProfile}, {"/opt/node", FromFlag}, {"auto", FromFlag}}
	if err != nil || !slices.Equal(asks, want) {
		t.Errorf("toolchainAsks = %v, %v; want %v", asks, err, want)
	}
	// A flag's value is checked here, a profile's by Validate.
	if _, err := toolchainAsks([]string{"relative"}, nil); err != nil {
		t.Errorf("profile entry checked again: %v", err)
	}
	if _, err := toolchainAsks(nil, []string{"opt/go"}); err == nil || !strings.HasPrefix(err.Error(), `--toolchain "opt/go": want`) {
		t.Errorf("relative --toolchain: %v", err)
	}
	if asks, err := toolchainAsks(nil, nil); asks != nil || err != nil {
		t.Errorf("nothing asked: %v, %v", asks, err)
	}
}

func TestToolchainBinds(t *testing.T) {
	got := toolchainBinds([]jail.Toolchain{{Kind: "go", Prefixes: []string{"/opt/go"}}, {Kind: "none"}, {Kind: "node", Prefixes: []string{"/a", "/b"}}})
	var dests []string
	for _, m := range got {
		if m.Kind != jail.MountBind || !m.Exec || m.Writable || m.Source != m.Dest {
			t.Errorf("bind %+v: want a read-only bind with exec at the same path", m)
		}
		dests = append(dests, m.Dest)
	}
	if want := []string{"/opt/go", "/a", "/b"}; !slices.Equal(dests, want) {
		t.Errorf("binds at %v, want %v", dests, want)
	}
}
