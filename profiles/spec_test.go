package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

func mustLoad(t *testing.T, name string) *Profile {
	t.Helper()
	p, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tree makes root/home/user/proj/sub and returns root (symlinks resolved, so
// that paths compare equal to what Spec returns).
func tree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "home/user/proj/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func findMount(s *jail.Spec, dest string) *jail.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Dest == dest {
			return &s.Mounts[i]
		}
	}
	return nil
}

func TestSpecDefault(t *testing.T) {
	root := tree(t)
	proj := filepath.Join(root, "home/user/proj")
	p := mustLoad(t, "default")
	s, err := p.Spec(Request{Args: []string{"make", "test"}, Cwd: proj, Home: filepath.Join(root, "home/user")})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != proj || s.Home != "/home/sandbox" || s.Hostname != "tooljail" || s.Profile != "default" || s.Net != jail.NetNone || s.OnViolation != jail.ViolationDeny {
		t.Errorf("spec header: dir %q home %q host %q profile %q net %q onv %q", s.Dir, s.Home, s.Hostname, s.Profile, s.Net, s.OnViolation)
	}
	if !reflect.DeepEqual(s.Args, []string{"make", "test"}) {
		t.Errorf("args %v", s.Args)
	}
	want := jail.Limits{Memory: 512 << 20, CPUs: 1, Pids: 256, Timeout: 10 * time.Minute, NoFile: 1024, OutputLimit: 16 << 20}
	if s.Limits != want {
		t.Errorf("limits %+v, want %+v", s.Limits, want)
	}
	if m := findMount(s, "/usr"); m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: "/usr", Dest: "/usr", Exec: true, Optional: true, KeepSymlink: true}) {
		t.Errorf("/usr mount %+v", m)
	}
	if m := findMount(s, "/etc/ssl/certs"); m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true}) {
		t.Errorf("/etc/ssl/certs mount %+v", m)
	}
	if m := findMount(s, "/home/sandbox"); m == nil || *m != (jail.Mount{Kind: jail.MountTmpfs, Dest: "/home/sandbox", Writable: true, Size: 64 << 20}) {
		t.Errorf("home mount %+v", m)
	}
	if m := findMount(s, "/tmp"); m == nil || *m != (jail.Mount{Kind: jail.MountTmpfs, Dest: "/tmp", Writable: true, Size: 64 << 20}) {
		t.Errorf("/tmp mount %+v", m)
	}
	if m := findMount(s, proj); m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: proj, Dest: proj, Writable: true}) {
		t.Errorf("workdir mount %+v", m)
	}
	if s.Seccomp == nil || len(s.Seccomp.Allow) != 0 || s.Landlock == nil || !reflect.DeepEqual(*s.Landlock, jail.LandlockSpec{}) {
		t.Errorf("seccomp %+v landlock %+v", s.Seccomp, s.Landlock)
	}
	for _, m := range s.Mounts {
		if m.Kind == jail.MountBind && m.Writable && m.Dest != proj {
			t.Errorf("unexpected writable bind %+v", m)
		}
	}
	wantEnv := []string{"HOME=/home/sandbox", "LANG=C.UTF-8", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=dumb"}
	if !reflect.DeepEqual(s.Env, wantEnv) {
		t.Errorf("env %v, want %v", s.Env, wantEnv)
	}
}

func TestSpecWorkdirRefusals(t *testing.T) {
	root := tree(t)
	home := filepath.Join(root, "home/user")
	link := filepath.Join(root, "homelink")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, root, "afile", "x")
	cases := []struct {
		name string
		r    Request
		frag string
	}{
		{"root", Request{Cwd: "/", Home: home}, "refusing to use / (the current directory) as the read-write workdir: run from a project directory, pass --workdir DIR, or --no-workdir"},
		{"root via --workdir", Request{Cwd: home + "/proj", Workdir: "/", Home: home}, "refusing to use / (--workdir)"},
		{"home", Request{Cwd: home, Home: home}, "refusing to use your home directory " + home},
		{"home via symlink cwd", Request{Cwd: link, Home: home}, "refusing to use your home directory"},
		{"home given as symlink", Request{Cwd: home, Home: link}, "refusing to use your home directory"},
		{"home with trailing slash", Request{Cwd: home, Home: home + "/"}, "your home directory"},
		{"parent of home", Request{Cwd: filepath.Join(root, "home"), Home: home}, "it contains your home directory"},
		{"grandparent of home", Request{Cwd: home + "/proj", Workdir: "../..", Home: home}, "it contains your home directory"},
		{"system dir", Request{Cwd: "/usr", Home: home}, "system directory /usr"},
		{"etc", Request{Cwd: "/etc", Home: home}, "system directory /etc"},
		{"sys", Request{Cwd: "/sys", Home: home}, "system directory /sys"},
		{"tmp", Request{Cwd: home, Workdir: "/tmp"}, "refusing to use the shared directory /tmp (--workdir)"},
		{"run", Request{Cwd: "/run", Home: home}, "shared directory /run"},
		{"missing", Request{Cwd: home, Workdir: "nosuch", Home: home}, "no such file"},
		{"not a dir", Request{Cwd: root, Workdir: file, Home: home}, "not a directory"},
	}
	p := mustLoad(t, "default")
	for _, c := range cases {
		c.r.Args = []string{"true"}
		_, err := p.Spec(c.r)
		if err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.frag)
		}
	}
	// Below $HOME is fine, through symlinks too (the real path is used);
	// --workdir is relative to the current directory.
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: link + "/proj", Workdir: "sub", Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "proj/sub"); s.Dir != want || findMount(s, want) == nil {
		t.Errorf("dir %q, want %q", s.Dir, want)
	}
	// No home known: only / is refused.
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: home}); err != nil {
		t.Errorf("no $HOME given: %v", err)
	}
}

func TestSpecNoWorkdir(t *testing.T) {
	p := mustLoad(t, "default")
	*p.Filesystem.Workdir = false
	// Even / as the current directory is fine when it is not bound.
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/", Home: "/root"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != "/tmp" {
		t.Errorf("dir %q, want /tmp", s.Dir)
	}
	for _, m := range s.Mounts {
		if m.Kind == jail.MountBind && m.Writable {
			t.Errorf("writable bind without workdir: %+v", m)
		}
	}
	// Without a /tmp tmpfs the home is the working directory.
	p.Filesystem.Tmpfs = nil
	if s, err = p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err != nil || s.Dir != "/home/sandbox" {
		t.Errorf("dir %q, %v; want /home/sandbox", s.Dir, err)
	}
}

func TestSpecBindsAndMasks(t *testing.T) {
	root := tree(t)
	cwd := filepath.Join(root, "home/user/proj")
	link := filepath.Join(root, "link")
	if err := os.Symlink("/nonexistent/target", link); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, "default")
	p.Filesystem.Ro = append(p.Filesystem.Ro, "data", "../shared:/mnt/shared", "/abs/./x/", link)
	p.Filesystem.Rw = append(p.Filesystem.Rw, "out:/out")
	p.Filesystem.Tmpfs = append(p.Filesystem.Tmpfs, "/scratch:1G", "/cache")
	p.Filesystem.Mask = append(p.Filesystem.Mask, "/etc/os-release")
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jail.Mount{
		cwd + "/data":     {Kind: jail.MountBind, Source: cwd + "/data", Dest: cwd + "/data"},
		"/mnt/shared":     {Kind: jail.MountBind, Source: filepath.Join(root, "home/user/shared"), Dest: "/mnt/shared"},
		"/abs/x":          {Kind: jail.MountBind, Source: "/abs/x", Dest: "/abs/x"},
		link:              {Kind: jail.MountBind, Source: link, Dest: link}, // not resolved: the jail resolves sources
		"/out":            {Kind: jail.MountBind, Source: cwd + "/out", Dest: "/out", Writable: true},
		"/scratch":        {Kind: jail.MountTmpfs, Dest: "/scratch", Writable: true, Size: 1 << 30},
		"/cache":          {Kind: jail.MountTmpfs, Dest: "/cache", Writable: true, Size: 64 << 20},
		"/etc/os-release": {Kind: jail.MountMask, Dest: "/etc/os-release"},
	}
	for dest, w := range want {
		var got []jail.Mount
		for _, m := range s.Mounts {
			if m.Dest == dest {
				got = append(got, m)
			}
		}
		// /etc/os-release is also bound by the profile; the mask comes last.
		if len(got) == 0 || got[len(got)-1] != w {
			t.Errorf("mount at %s = %+v, want %+v", dest, got, w)
		}
	}
	// A later mount at the same destination replaces an earlier one.
	p.Filesystem.Tmpfs = append(p.Filesystem.Tmpfs, "/tmp:1G")
	p.Filesystem.Rw = append(p.Filesystem.Rw, "/srv/home:/home/sandbox")
	if s, err = p.Spec(Request{Args: []string{"true"}, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range s.Mounts {
		if seen[m.Dest] && m.Kind != jail.MountMask {
			t.Errorf("two mounts at %s", m.Dest)
		}
		seen[m.Dest] = true
	}
	if m := findMount(s, "/tmp"); m == nil || m.Size != 1<<30 {
		t.Errorf("/tmp = %+v, want the 1G tmpfs", m)
	}
	if m := findMount(s, "/home/sandbox"); m == nil || m.Kind != jail.MountBind || !m.Writable {
		t.Errorf("/home/sandbox = %+v, want the rw bind", m)
	}
	p.Filesystem.Rw = append(p.Filesystem.Rw, "x:relative")
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: cwd}); err == nil || !strings.Contains(err.Error(), `filesystem.rw: "x:relative": DEST "relative" must be an absolute path`) {
		t.Errorf("relative DEST: %v", err)
	}
	p.Filesystem.Rw = nil
	p.Filesystem.Tmpfs = append(p.Filesystem.Tmpfs, "/proc/x")
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: cwd}); err == nil || !strings.Contains(err.Error(), "managed by the jail") {
		t.Errorf("tmpfs on /proc: %v", err)
	}
}

func TestSpecEnvironment(t *testing.T) {
	p := mustLoad(t, "network")
	if err := p.AddEnv("FOO=1"); err != nil {
		t.Fatal(err)
	}
	if err := p.AddEnv("LANG=de_DE.UTF-8"); err != nil { // --env overrides env.set
		t.Fatal(err)
	}
	if err := p.AddEnv("EMPTY="); err != nil {
		t.Fatal(err)
	}
	p.Env.Pass = append(p.Env.Pass, "CI", "UNSET_HERE", "TERM")
	*p.Filesystem.Workdir = false
	environ := []string{"HTTPS_PROXY=http://old", "HTTPS_PROXY=http://proxy:3128", "CI=true", "TERM=xterm", "SECRET=x", "HOME=/root", "=weird", "noequals"}
	s, err := p.Spec(Request{Args: []string{"env"}, Cwd: "/", Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CI=true", "EMPTY=", "FOO=1", "HOME=/home/sandbox", "HTTPS_PROXY=http://proxy:3128", "LANG=de_DE.UTF-8",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}
	if !reflect.DeepEqual(s.Env, want) {
		t.Errorf("env\n got %v\nwant %v", s.Env, want)
	}
	if s.Net != jail.NetHost {
		t.Errorf("network profile: net %q", s.Net)
	}
	for _, bad := range []string{"HOME=/x", "NOVALUE", "=x", "A\x00B=1"} {
		if err := p.AddEnv(bad); err == nil {
			t.Errorf("AddEnv(%q) accepted", bad)
		}
	}
	p.Env.Pass = append(p.Env.Pass, "HOME")
	if _, err := p.Spec(Request{Args: []string{"env"}, Cwd: "/"}); err == nil || !strings.Contains(err.Error(), "env.pass") {
		t.Errorf("passing HOME: %v", err)
	}
}

func TestSpecLimitsAndLayers(t *testing.T) {
	p := mustLoad(t, "strict")
	*p.Filesystem.Workdir = false
	for k, v := range map[string]string{"memory": "1GiB", "cpus": "2.5", "pids": "unlimited", "timeout": "90s", "cpu_time": "30s", "nofile": "4096", "fsize": "1M", "output_limit": "0"} {
		if err := p.SetLimit(k, v); err != nil {
			t.Fatalf("SetLimit(%s, %s): %v", k, v, err)
		}
	}
	if err := p.AddAllowDegraded("landlock, memory"); err != nil {
		t.Fatal(err)
	}
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	want := jail.Limits{Memory: 1 << 30, CPUs: 2.5, Timeout: 90 * time.Second, CPUTime: 30 * time.Second, NoFile: 4096, FSize: 1 << 20}
	if s.Limits != want {
		t.Errorf("limits %+v, want %+v", s.Limits, want)
	}
	if s.OnViolation != jail.ViolationKill || !reflect.DeepEqual(s.AllowDegraded, []string{"landlock", "memory"}) || s.Profile != "strict" {
		t.Errorf("onv %q degraded %v profile %q", s.OnViolation, s.AllowDegraded, s.Profile)
	}

	*p.Seccomp.Enabled = false
	*p.Landlock.Enabled = false
	p.Seccomp.Deny = []string{"socket"}
	if s, err = p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err != nil || s.Seccomp != nil || s.Landlock != nil {
		t.Errorf("disabled layers: seccomp %+v landlock %+v err %v", s.Seccomp, s.Landlock, err)
	}
	*p.Seccomp.Enabled, *p.Landlock.Enabled, *p.Landlock.RestrictTCP, *p.Landlock.MinABI = true, true, true, 4
	p.Landlock.ConnectTCP = []uint16{443}
	if s, err = p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err != nil ||
		!reflect.DeepEqual(s.Seccomp.Deny, []string{"socket"}) ||
		!reflect.DeepEqual(*s.Landlock, jail.LandlockSpec{MinABI: 4, RestrictTCP: true, ConnectTCP: []uint16{443}}) {
		t.Errorf("layers: %+v %+v %v", s.Seccomp, s.Landlock, err)
	}

	// Bad values from flags: the error names the key and quotes the value.
	bad := map[string]string{"memory": "12XB", "cpus": "NaN", "pids": "-1", "timeout": "10", "nofile": "1k", "fsize": "1.5G", "cpu_time": "100ms"}
	for k, v := range bad {
		err := p.SetLimit(k, v)
		if err == nil || !strings.Contains(err.Error(), "limits."+k+": ") || !strings.Contains(err.Error(), `"`+v+`"`) {
			t.Errorf("SetLimit(%s, %q) = %v", k, v, err)
		}
	}
	if err := p.SetLimit("memroy", "1G"); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("unknown limit: %v", err)
	}
	// Set directly (bypassing SetLimit), Spec catches it.
	v := "lots"
	p.Limits.Memory = &v
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err == nil || !strings.Contains(err.Error(), `limits.memory: invalid size "lots"`) {
		t.Errorf("Spec with bad memory: %v", err)
	}
	if err := p.AddAllowDegraded("landlock,seccom"); err == nil || !strings.Contains(err.Error(), `"seccom"`) {
		t.Errorf("unknown layer: %v", err)
	}
}

func TestSpecRefusesUnresolvedProfile(t *testing.T) {
	p := &Profile{Name: "handmade"}
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err == nil || !strings.Contains(err.Error(), "not resolved") {
		t.Errorf("empty profile: %v", err)
	}
	p = mustLoad(t, "default")
	*p.Filesystem.Workdir = false
	if _, err := p.Spec(Request{Cwd: "/"}); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Errorf("no command: %v", err)
	}
}
