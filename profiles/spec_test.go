package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	s, err := p.Spec(Request{Args: []string{"make", "test"}, Cwd: proj})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != proj || s.Home != "/home/sandbox" || s.Hostname != "tooljail" || s.Profile != "default" || s.Net != jail.NetNone || s.OnViolation != jail.ViolationDeny {
		t.Errorf("spec header: dir %q home %q host %q profile %q net %q onv %q", s.Dir, s.Home, s.Hostname, s.Profile, s.Net, s.OnViolation)
	}
	if !reflect.DeepEqual(s.Args, []string{"make", "test"}) {
		t.Errorf("args %v", s.Args)
	}
	want := jail.Limits{Memory: 1 << 30, CPUs: 1, Pids: 256, Timeout: 10 * time.Minute, NoFile: 1024, FSize: 1 << 30, OutputLimit: 16 << 20, MaxViolations: 10000, NetConns: 128}
	if s.Limits != want {
		t.Errorf("limits %+v, want %+v", s.Limits, want)
	}
	if m := findMount(s, "/usr"); m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: "/usr", Dest: "/usr", Exec: true, Optional: true, KeepSymlink: true}) {
		t.Errorf("/usr mount %+v", m)
	}
	if m := findMount(s, "/etc/ssl/certs"); m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true}) {
		t.Errorf("/etc/ssl/certs mount %+v", m)
	}
	if m := findMount(s, "/home/sandbox"); m == nil || *m != (jail.Mount{Kind: jail.MountTmpfs, Dest: "/home/sandbox", Writable: true, Size: want.Memory, Raise: "--memory SIZE or limits.memory (/home/sandbox is as large as the memory limit), or home_size in the profile's [filesystem]"}) {
		t.Errorf("home mount %+v", m)
	}
	if m := findMount(s, "/tmp"); m == nil || *m != (jail.Mount{Kind: jail.MountTmpfs, Dest: "/tmp", Writable: true, Size: want.Memory, Raise: "--memory SIZE or limits.memory (/tmp is as large as the memory limit), or --tmpfs /tmp:SIZE, or tmpfs in the profile's [filesystem]"}) {
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
	if s.HostUser != nil || s.Trusted != nil {
		t.Errorf("host user %+v, trusted %v: want the jail's default and no files", s.HostUser, s.Trusted)
	}
}

// The workdir is a name, cleaned, never resolved or refused here: the jail
// opens it once and refuses it on what it opened.
func TestWorkdir(t *testing.T) {
	cases := []struct {
		cwd, flag, want string
	}{
		{"/home/u/proj", "", "/home/u/proj"},
		{"/home/u/proj", "sub", "/home/u/proj/sub"},
		{"/home/u/proj", "./sub/../../other/", "/home/u/other"},
		{"/home/u/proj", "..", "/home/u"},
		{"/home/u/proj", "/srv/x/./y/", "/srv/x/y"},
		{"/home/u/proj", "/usr", "/usr"}, // the jail refuses it
		{"/tmp", "", "/tmp"},
	}
	for _, c := range cases {
		got, err := workdir(c.cwd, c.flag)
		if err != nil || got != c.want {
			t.Errorf("workdir(%q, %q) = %q, %v; want %q", c.cwd, c.flag, got, err, c.want)
		}
	}
	// Nothing can be bound at the jail's own root.
	for _, c := range [][2]string{{"/", ""}, {"/home/u", "../.."}, {"/home/u", "/"}} {
		if _, err := workdir(c[0], c[1]); err == nil || !strings.Contains(err.Error(), "--workdir DIR") {
			t.Errorf("workdir(%q, %q): %v, want an error that names --workdir DIR", c[0], c[1], err)
		}
	}
}

func TestSpecWorkdir(t *testing.T) {
	root := tree(t)
	home := filepath.Join(root, "home/user")
	link := filepath.Join(root, "homelink")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, "default")
	// Not resolved: the bind's source, destination and the working
	// directory are the path as given, symlinks and all.
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Cwd: link + "/proj", Workdir: "sub"}, link + "/proj/sub"},
		{Request{Cwd: home + "/proj/", Workdir: "../nosuch"}, home + "/nosuch"},
		{Request{Cwd: home + "//proj/."}, home + "/proj"},
		{Request{Cwd: home, Workdir: "/tmp"}, "/tmp"},
	} {
		c.r.Args = []string{"true"}
		s, err := p.Spec(c.r)
		if err != nil {
			t.Errorf("%+v: %v", c.r, err)
			continue
		}
		if m := findMount(s, c.want); s.Dir != c.want || m == nil || *m != (jail.Mount{Kind: jail.MountBind, Source: c.want, Dest: c.want, Writable: true}) {
			t.Errorf("%+v: dir %q, bind %+v; want %q", c.r, s.Dir, m, c.want)
		}
	}
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err == nil || !strings.Contains(err.Error(), "workdir /") {
		t.Errorf("workdir /: %v", err)
	}
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: "relative"}); err == nil || !strings.Contains(err.Error(), "must be absolute") {
		t.Errorf("relative cwd: %v", err)
	}
}

func TestSpecHostUserAndTrusted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "base.toml", "extends = \"default\"\nhost_user = \"1234\"\n")
	f := writeFile(t, dir, "child.toml", "extends = \"base.toml\"\nhost_user = \"4321:8765\"\n")
	p := mustLoad(t, f)
	defer p.Close()
	*p.Filesystem.Workdir = false
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if s.HostUser == nil || *s.HostUser != (jail.HostID{UID: 4321, GID: 8765}) {
		t.Errorf("host user %+v, want 4321:8765 (the child overrides)", s.HostUser)
	}
	if len(s.Trusted) != 2 || s.Trusted[0] != p.Files()[0] || s.Trusted[1] != p.Files()[1] {
		t.Errorf("trusted %v, want the two profile files %v", s.Trusted, p.Files())
	}
	// "" gives the choice back to the jail.
	if err := p.SetHostUser(""); err != nil {
		t.Fatal(err)
	}
	if s, err = p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err != nil || s.HostUser != nil {
		t.Errorf("host_user \"\": %+v, %v; want nil", s.HostUser, err)
	}
	// Set directly, bypassing SetHostUser: Spec still refuses root.
	root := "0:0"
	p.HostUser = &root
	if _, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"}); err == nil || !strings.Contains(err.Error(), "host_user") || !strings.Contains(err.Error(), "root") {
		t.Errorf("host_user 0:0: %v", err)
	}
	for _, bad := range []string{"root", "0", "1000:0", "no such"} {
		if err := p.SetHostUser(bad); err == nil || !strings.Contains(err.Error(), "host_user: ") {
			t.Errorf("SetHostUser(%q) = %v, want an error naming host_user", bad, err)
		}
	}
}

func TestSpecNoWorkdir(t *testing.T) {
	p := mustLoad(t, "default")
	*p.Filesystem.Workdir = false
	// Even / as the current directory is fine when it is not bound.
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"})
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
	p.Filesystem.Tmpfs = append(p.Filesystem.Tmpfs, "/scratch:1G", "/cache", "/var/tmp:memory")
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
		"/scratch":        {Kind: jail.MountTmpfs, Dest: "/scratch", Writable: true, Size: 1 << 30, Raise: "--tmpfs /scratch:SIZE, or tmpfs in the profile's [filesystem]"},
		"/cache":          {Kind: jail.MountTmpfs, Dest: "/cache", Writable: true, Size: s.Limits.Memory, Raise: "--memory SIZE or limits.memory (/cache is as large as the memory limit), or --tmpfs /cache:SIZE, or tmpfs in the profile's [filesystem]"},
		"/var/tmp":        {Kind: jail.MountTmpfs, Dest: "/var/tmp", Writable: true, Size: s.Limits.Memory, Raise: "--memory SIZE or limits.memory (/var/tmp is as large as the memory limit), or --tmpfs /var/tmp:SIZE, or tmpfs in the profile's [filesystem]"},
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
	p.Env.Pass = append(p.Env.Pass, "CI", "UNSET_HERE", "TERM", "HTTPS_PROXY")
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
	if s.Net != jail.NetAllow || !slices.Contains(s.Allow, "pypi.org:443") || !slices.Contains(s.Allow, "github.com:443") {
		t.Errorf("network profile: net %q, allow %q", s.Net, s.Allow)
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
	for k, v := range map[string]string{"memory": "1GiB", "cpus": "2.5", "pids": "unlimited", "timeout": "90s", "cpu_time": "30s", "nofile": "4096", "fsize": "1M", "output_limit": "0", "max_violations": "5"} {
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
	want := jail.Limits{Memory: 1 << 30, CPUs: 2.5, Timeout: 90 * time.Second, CPUTime: 30 * time.Second, NoFile: 4096, FSize: 1 << 20, MaxViolations: 5, NetConns: 128}
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
	bad := map[string]string{"memory": "12XB", "cpus": "NaN", "pids": "-1", "timeout": "10", "nofile": "1k", "fsize": "1.5G", "cpu_time": "100ms", "max_violations": "-1"}
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
	p.Limits["memory"] = v
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

// network.allow goes to the jail only in the allow mode: a child (or a
// served request) that turns the network off or to the host's keeps no
// list the jail would refuse; AddAllowHost checks each pattern.
func TestSpecAllowList(t *testing.T) {
	for _, c := range []struct {
		mode string
		want []string
	}{{"allow", []string{"pypi.org:443", "files.pythonhosted.org:443"}}, {"none", nil}, {"host", nil}} {
		p := mustLoad(t, "network")
		*p.Filesystem.Workdir = false
		p.Network.Mode = &c.mode
		s, err := p.Spec(Request{Args: []string{"true"}, Cwd: "/"})
		if err != nil {
			t.Fatalf("mode %s: %v", c.mode, err)
		}
		if string(s.Net) != c.mode || !slices.Equal(s.Allow[:min(2, len(s.Allow))], c.want) {
			t.Errorf("mode %s: net %q allow %q, want the list %q", c.mode, s.Net, s.Allow, c.want)
		}
	}
	p := mustLoad(t, "default")
	if err := p.AddAllowHost("*.example.com:8443"); err != nil || !slices.Equal(p.Network.Allow, []string{"*.example.com:8443"}) {
		t.Errorf("AddAllowHost: %v, %q", err, p.Network.Allow)
	}
	if err := p.AddAllowHost("exa mple.com"); err == nil || !strings.Contains(err.Error(), `allow pattern "exa mple.com"`) {
		t.Errorf("AddAllowHost of a bad pattern: %v", err)
	}
}

func TestStartDir(t *testing.T) {
	for _, c := range []struct {
		workdir string
		hasTmp  bool
		want    string
	}{
		{"/home/u/proj", true, "/home/u/proj"},
		{"/home/u/proj", false, "/home/u/proj"},
		{"", true, "/tmp"},
		{"", false, JailHome},
	} {
		if got := startDir(c.workdir, c.hasTmp); got != c.want {
			t.Errorf("startDir(%q, %v) = %q, want %q", c.workdir, c.hasTmp, got, c.want)
		}
	}
}

func TestCheckVars(t *testing.T) {
	for _, c := range []struct {
		vars []string
		want string // "" = accepted
	}{
		{nil, ""},
		{[]string{"A=1", "B=", "C=x=y"}, ""},
		{[]string{"A=1", "NOVALUE"}, `env "NOVALUE": want KEY=VALUE`},
		{[]string{"=1"}, `env: "": not a valid environment variable name`},
		{[]string{"A\x00B=1"}, `env: "A\x00B": not a valid environment variable name`},
		{[]string{"A=1\x002"}, "env A: value contains a NUL byte"},
		// HOME is the profile's to refuse (env.set, env.pass), not a
		// caller's variable's: environment drops and reports it.
		{[]string{"HOME=/x"}, ""},
	} {
		err := checkVars(c.vars)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("checkVars(%q) = %q, want %q", c.vars, got, c.want)
		}
	}
}

func TestBindMounts(t *testing.T) {
	got := bindMounts([]string{"src", "/abs/../data:/data", "./a/"}, []string{"/out:/mnt/out/", "rel:/r"}, "/home/u/proj")
	want := []jail.Mount{
		{Kind: jail.MountBind, Source: "/home/u/proj/src", Dest: "/home/u/proj/src"},
		{Kind: jail.MountBind, Source: "/data", Dest: "/data"},
		{Kind: jail.MountBind, Source: "/home/u/proj/a", Dest: "/home/u/proj/a"},
		{Kind: jail.MountBind, Source: "/out", Dest: "/mnt/out", Writable: true},
		{Kind: jail.MountBind, Source: "/home/u/proj/rel", Dest: "/r", Writable: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bindMounts:\n got %+v\nwant %+v", got, want)
	}
}

func TestSystemMounts(t *testing.T) {
	fs := &Filesystem{System: []string{"/usr/", "/lib"}, Etc: []string{"ssl/certs"}}
	got := systemMounts(fs, true)
	want := []jail.Mount{
		{Kind: jail.MountBind, Source: "/usr", Dest: "/usr", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: jail.MountBind, Source: "/lib", Dest: "/lib", Exec: true, Optional: true, KeepSymlink: true, InRoot: true},
		{Kind: jail.MountBind, Source: "/etc/ssl/certs", Dest: "/etc/ssl/certs", Optional: true, InRoot: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("systemMounts:\n got %+v\nwant %+v", got, want)
	}
}

func TestValidateCheckEach(t *testing.T) {
	// The first bad entry of a list is reported, under the list's key,
	// with the entry's own error.
	for _, c := range []struct {
		fs   Filesystem
		want string
	}{
		{Filesystem{System: []string{"/usr", "usr"}}, `filesystem.system: "usr": want an absolute path such as /usr`},
		{Filesystem{Mask: []string{"/a", "b", "c"}}, `filesystem.mask: "b": want an absolute path inside the jail`},
		{Filesystem{Ro: []string{"a:b"}}, `filesystem.ro: "a:b": DEST "b" must be an absolute path inside the jail`},
		{Filesystem{Rw: []string{":x"}}, `filesystem.rw: ":x": want PATH or PATH:DEST`},
		{Filesystem{Protect: &[]string{"../x"}}, `filesystem.protect: "../x": want a clean path relative to a read-write bind's root, e.g. ".git/hooks" or ".envrc"`},
		{Filesystem{System: []string{"/usr"}, Etc: []string{"hosts"}}, ""},
	} {
		err := c.fs.validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("validate(%+v) = %q, want %q", c.fs, got, c.want)
		}
	}
}
