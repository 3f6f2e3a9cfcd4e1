package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// writeFile writes content to dir/name (creating directories) and returns
// the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadErr loads path and returns the error, failing if there is none.
func loadErr(t *testing.T, path string) error {
	t.Helper()
	p, err := Load(path)
	if err == nil {
		t.Fatalf("Load(%s) succeeded, want an error; got %+v", path, p)
	}
	return err
}

// wantPos checks that err is (or joins) an *Error at line for key, and that
// its message contains every fragment.
func wantPos(t *testing.T, err error, file string, line int, key string, fragments ...string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %q (%T) is not a *profiles.Error", err, err)
	}
	if pe.File != file || pe.Line != line || pe.Key != key {
		t.Errorf("error at %s:%d key %q, want %s:%d key %q (%v)", pe.File, pe.Line, pe.Key, file, line, key, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestShippedProfilesLoad(t *testing.T) {
	infos := List()
	if len(infos) < 2 || !slices.ContainsFunc(infos, func(i Info) bool { return i.Name == "default" }) ||
		!slices.IsSortedFunc(infos, func(a, b Info) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("List() = %+v, want default and at least one more, by name", infos)
	}
	for _, info := range infos {
		p, err := Load(info.Name)
		if err != nil {
			t.Fatalf("shipped profile %s: %v", info.Name, err)
		}
		if info.Description == "" || p.Description == nil || *p.Description != info.Description {
			t.Errorf("%s: description %q / %v", info.Name, info.Description, p.Description)
		}
		if p.Name != info.Name || p.Source != "embedded:"+info.Name+".toml" {
			t.Errorf("%s: Name %q Source %q", info.Name, p.Name, p.Source)
		}
		if missing := unsetKeys(reflect.ValueOf(p).Elem(), ""); len(missing) > 0 {
			t.Errorf("%s: unset after Load: %v", info.Name, missing)
		}
	}
}

func TestDefaultProfileValues(t *testing.T) {
	p, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Limits.parse()
	if err != nil {
		t.Fatal(err)
	}
	if l.Memory != 1<<30 || l.CPUs != 1 || l.Pids != 256 || l.Timeout.String() != "10m0s" || l.NoFile != 1024 || l.OutputLimit != 16<<20 {
		t.Errorf("default limits = %+v, want DESIGN.md section 4", l)
	}
	if *p.Network.Mode != "none" || !*p.Seccomp.Enabled || !*p.Landlock.Enabled || *p.Seccomp.OnViolation != "deny" || !*p.Filesystem.Workdir {
		t.Errorf("default layers wrong: %+v", p)
	}
	for _, forbidden := range []string{"passwd", "group", "hosts", "hostname", "resolv.conf", "shadow", "ld.so.preload", "mtab", "ssl", "ssl/private", "machine-id"} {
		for _, e := range p.Filesystem.Etc {
			if e == forbidden {
				t.Errorf("default etc lists %q: the jail generates it or it leaks host state", e)
			}
		}
	}
}

func TestUnknownKeyNamesFileLineKey(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "p.toml", "extends = \"default\"\n\n[limits]\nmemory = \"1G\"\nmemroy = \"2G\"\n")
	wantPos(t, loadErr(t, f), f, 5, "limits.memroy", f+":5:1: limits.memroy: unknown key", "did you mean limits.memory?")

	f = writeFile(t, dir, "q.toml", "extends = \"default\"\n[filesystm]\nro = []\n")
	wantPos(t, loadErr(t, f), f, 2, "filesystm", "unknown key")

	f = writeFile(t, dir, "r.toml", "extends = \"default\"\nnetwork.mod = \"host\"\n")
	wantPos(t, loadErr(t, f), f, 2, "network.mod", "did you mean network.mode?")

	// Several unknown keys: every one is reported.
	f = writeFile(t, dir, "s.toml", "extends = \"default\"\nfoo = 1\n[seccomp]\nbar = 2\n")
	err := loadErr(t, f)
	for _, want := range []string{f + ":2:1: foo: unknown key", f + ":4:1: seccomp.bar: unknown key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestSyntaxAndTypeErrorsHaveLines(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "syntax.toml", "extends = \"default\"\n[limits]\nmemory = \"1G\n")
	wantPos(t, loadErr(t, f), f, 3, "", f+":3:")

	f = writeFile(t, dir, "type.toml", "extends = \"default\"\n[filesystem]\n\nworkdir = \"yes\"\n")
	wantPos(t, loadErr(t, f), f, 4, "filesystem.workdir", f+":4:")

	f = writeFile(t, dir, "port.toml", "extends = \"default\"\n[landlock]\nbind_tcp = [70000]\n")
	wantPos(t, loadErr(t, f), f, 3, "landlock.bind_tcp", f+":3:")

	f = writeFile(t, dir, "dup.toml", "extends = \"default\"\n[network]\nmode = \"none\"\nmode = \"host\"\n")
	wantPos(t, loadErr(t, f), f, 4, "mode", f+":4:", "already defined")
}

func TestBadValuesHaveLinesAndQuote(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		content string
		line    int
		key     string
		frag    string
	}{
		{"extends = \"default\"\n[limits]\nmemory = \"12XB\"\n", 3, "limits.memory", `invalid size "12XB"`},
		{"extends = \"default\"\n[limits]\n\ncpus = -1\n", 4, "limits.cpus", `invalid CPU count "-1"`},
		{"extends = \"default\"\n[limits]\ntimeout = \"-5s\"\n", 3, "limits.timeout", `"-5s"`},
		{"extends = \"default\"\n[limits]\npids = true\n", 3, "limits.pids", "want a string or a number"},
		{"extends = \"default\"\n[limits]\ncpu_time = \"500ms\"\n", 3, "limits.cpu_time", "whole seconds"},
		{"extends = \"default\"\nallow_degraded = [\"cgroup\", \"landlok\"]\n", 2, "allow_degraded", `unknown layer "landlok"`},
		{"extends = \"default\"\n[network]\nmode = \"bridge\"\n", 3, "network.mode", `"bridge"`},
		{"extends = \"default\"\n[network]\nmode = \"allow\"\nallow = [\"pypi.org\", \"https://github.com\"]\n", 4, "network.allow", `allow pattern "https://github.com"`},
		{"extends = \"default\"\n[network]\nallow = [\"10.0.0.0/33\"]\n", 3, "network.allow", `allow pattern "10.0.0.0/33"`},
		{"extends = \"default\"\n[limits]\nnet_connections = 0\n", 3, "limits.net_connections", "from 1 to 65535"},
		{"extends = \"default\"\n[seccomp]\non_violation = \"log\"\n", 3, "seccomp.on_violation", `"log"`},
		{"extends = \"default\"\n[filesystem]\nro = [\"data:mnt\"]\n", 3, "filesystem.ro", `DEST "mnt" must be an absolute path`},
		{"extends = \"default\"\n[filesystem]\ntmpfs = [\"/scratch:1XB\"]\n", 3, "filesystem.tmpfs", `invalid size "1XB"`},
		{"extends = \"default\"\n[filesystem]\netc = [\"../shadow\"]\n", 3, "filesystem.etc", `"../shadow"`},
		{"extends = \"default\"\n[filesystem]\netc = [\"/etc/shadow\"]\n", 3, "filesystem.etc", `"/etc/shadow"`},
		{"extends = \"default\"\n[env]\nset = { HOME = \"/root\" }\n", 3, "env.set", "HOME cannot be set"},
		{"extends = \"default\"\n[env.set]\n\"A=B\" = \"x\"\n", 2, "env.set", `"A=B"`},
		{"extends = \"\"\n", 1, "extends", "empty"},
		{"extends = \"default\"\n[filesystem]\nprotect = [\"../.git\"]\n", 3, "filesystem.protect", `"../.git"`},
		{"extends = \"default\"\n[filesystem]\nprotect = [\"/etc\"]\n", 3, "filesystem.protect", `"/etc"`},
		{"extends = \"default\"\n[filesystem]\nprotect = [\".git/\"]\n", 3, "filesystem.protect", `".git/"`},
		{"extends = \"default\"\n[env]\ndeny = [\"A=B\"]\n", 3, "env.deny", `"A=B"`},
		{"extends = \"default\"\n[env]\ndeny = [\"\"]\n", 3, "env.deny", `""`},
		{"extends = \"default\"\n[landlock]\nmin_abi = -1\n", 3, "landlock.min_abi", "negative"},
		{"# who\nextends = \"default\"\nhost_user = \"root\"\n", 3, "host_user", "never runs as the host's root"},
		{"extends = \"default\"\nhost_user = \"1000:0\"\n", 2, "host_user", "gid 0 is root's"},
		{"extends = \"default\"\nhost_user = 1.5\n", 2, "host_user", "want a string"},
		{"extends = \"default\"\nhost_user = 0\n", 2, "host_user", "root"},
	}
	for i, c := range cases {
		f := writeFile(t, dir, "c"+string(rune('a'+i))+".toml", c.content)
		wantPos(t, loadErr(t, f), f, c.line, c.key, c.frag)
	}
}

func TestExtendsAppendsListsOverridesScalars(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "child.toml", `extends = "default"
description = "child"
allow_degraded = ["memory"]
[filesystem]
etc = ["ld.so.cache", "gitconfig"]
ro = ["data"]
tmpfs = ["/scratch:1G"]
[limits]
memory = "1G"
pids = 300
cpus = 0.5
fsize = 1048576
[env]
set = { LANG = "en_US.UTF-8", FOO = "bar" }
pass = ["CI"]
[landlock]
connect_tcp = [443]
`)
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	if *p.Description != "child" || p.Name != f || p.Source != f {
		t.Errorf("description/name/source: %q %q %q", *p.Description, p.Name, p.Source)
	}
	wantEtc := append(append([]string{}, base.Filesystem.Etc...), "gitconfig") // ld.so.cache not repeated
	if !reflect.DeepEqual(p.Filesystem.Etc, wantEtc) {
		t.Errorf("etc = %v, want %v", p.Filesystem.Etc, wantEtc)
	}
	if !reflect.DeepEqual(p.Filesystem.Tmpfs, []string{"/tmp", "/scratch:1G"}) || !reflect.DeepEqual(p.Filesystem.Ro, []string{"data"}) {
		t.Errorf("tmpfs %v ro %v", p.Filesystem.Tmpfs, p.Filesystem.Ro)
	}
	if !reflect.DeepEqual(p.Filesystem.System, base.Filesystem.System) || *p.Filesystem.Workdir != true {
		t.Errorf("inherited filesystem scalars/lists changed: %+v", p.Filesystem)
	}
	if p.Limits["memory"] != "1G" || p.Limits["pids"] != "300" || p.Limits["cpus"] != "0.5" || p.Limits["fsize"] != "1048576" || p.Limits["timeout"] != "10m" {
		t.Errorf("limits = %+v", p.Limits)
	}
	if p.Env.Set["LANG"] != "en_US.UTF-8" || p.Env.Set["FOO"] != "bar" || p.Env.Set["TERM"] != "dumb" || !strings.HasPrefix(p.Env.Set["PATH"], "/usr/local/sbin") {
		t.Errorf("env.set = %v", p.Env.Set)
	}
	if !reflect.DeepEqual(p.AllowDegraded, []string{"memory"}) || !reflect.DeepEqual(p.Landlock.ConnectTCP, []uint16{443}) || !reflect.DeepEqual(p.Env.Pass, []string{"CI"}) {
		t.Errorf("lists: %v %v %v", p.AllowDegraded, p.Landlock.ConnectTCP, p.Env.Pass)
	}
	// The parent is not changed by loading a child.
	again, _ := Load("default")
	if !reflect.DeepEqual(again, base) {
		t.Error("loading a child changed what Load(\"default\") returns")
	}
}

func TestExtendsChainOfFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "base/base.toml", "extends = \"strict\"\n[limits]\nmemory = \"128M\"\n[filesystem]\nro = [\"/opt/a\"]\n")
	f := writeFile(t, dir, "proj/child.toml", "extends = \"../base/base.toml\"\n[filesystem]\nro = [\"/opt/b\"]\n[limits]\npids = 32\n")
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits["memory"] != "128M" || p.Limits["pids"] != "32" || *p.Seccomp.OnViolation != "kill" || p.Limits["timeout"] != "2m" {
		t.Errorf("chain child <- base <- strict <- default not applied: %+v", p.Limits)
	}
	if !reflect.DeepEqual(p.Filesystem.Ro, []string{"/opt/a", "/opt/b"}) {
		t.Errorf("ro = %v", p.Filesystem.Ro)
	}
	// An error in the parent names the parent file.
	writeFile(t, dir, "base/base.toml", "extends = \"default\"\n[limits]\nmemory = \"lots\"\n")
	err = loadErr(t, f)
	if !strings.Contains(err.Error(), filepath.Join(dir, "base/base.toml")+":3:1: limits.memory") {
		t.Errorf("parent error does not name the parent file and line: %v", err)
	}
}

func TestExtendsCycleAndDepth(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.toml", "extends = \"b.toml\"\n")
	writeFile(t, dir, "b.toml", "extends = \"./a.toml\"\n")
	err := loadErr(t, a)
	if !strings.Contains(err.Error(), "extends cycle") || !strings.Contains(err.Error(), "b.toml") {
		t.Errorf("cycle error = %v", err)
	}
	self := writeFile(t, dir, "self.toml", "extends = \"self.toml\"\n")
	if err := loadErr(t, self); !strings.Contains(err.Error(), "extends cycle") {
		t.Errorf("self cycle error = %v", err)
	}
	// A chain longer than maxDepth.
	for i := 0; i < maxDepth+2; i++ {
		writeFile(t, dir, "d"+string(rune('a'+i))+".toml", "extends = \"d"+string(rune('a'+i+1))+".toml\"\n")
	}
	writeFile(t, dir, "d"+string(rune('a'+maxDepth+2))+".toml", "extends = \"default\"\n")
	if err := loadErr(t, filepath.Join(dir, "da.toml")); !strings.Contains(err.Error(), "deeper than") {
		t.Errorf("depth error = %v", err)
	}
}

func TestMissingParent(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "p.toml", "# comment\nextends = \"nosuch\"\n")
	wantPos(t, loadErr(t, f), f, 2, "extends", `no shipped profile by that name`, "default", "strict")

	f = writeFile(t, dir, "q.toml", "extends = \"./gone.toml\"\n")
	err := loadErr(t, f)
	if !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing parent file error = %v", err)
	}
	if !strings.Contains(err.Error(), "gone.toml") {
		t.Errorf("error does not name the missing parent: %v", err)
	}
}

func TestLoadReferences(t *testing.T) {
	if _, err := Load("nosuch"); err == nil || !strings.Contains(err.Error(), "shipped: build, default, ") {
		t.Errorf("unknown shipped name: %v", err)
	}
	if _, err := Load("/nonexistent/p.toml"); err == nil || !strings.Contains(err.Error(), "/nonexistent/p.toml") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("loading a directory succeeded")
	}
	big := writeFile(t, t.TempDir(), "big.toml", "# "+strings.Repeat("x", MaxSize)+"\n")
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

// Profile files are opened by hostpath's rules: a symlink where a jailed run
// could have planted it (any directory that is not a system, top-level or
// home directory) is refused, with the fix.
func TestProfileThroughPlantedSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	real := writeFile(t, dir, "real/p.toml", "extends = \"default\"\n")
	for _, link := range []string{filepath.Join(dir, "link.toml"), filepath.Join(dir, "linkdir")} {
		target := real
		if strings.HasSuffix(link, "dir") {
			target = filepath.Dir(real)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range []string{filepath.Join(dir, "link.toml"), filepath.Join(dir, "linkdir/p.toml")} {
		_, err := Load(ref)
		var se *hostpath.SymlinkError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "give the path it stands for") || !strings.HasPrefix(err.Error(), "profile "+ref+": ") {
			t.Errorf("Load(%s) = %v, want the hostpath symlink error", ref, err)
		}
	}
	// So is a parent reached through one.
	child := writeFile(t, dir, "child.toml", "extends = \"link.toml\"\n")
	if _, err := Load(child); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("extends through a planted symlink: %v", err)
	}
	// The real path loads.
	p, err := Load(real)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// Every file of an extends chain is kept open, as the file that was read.
func TestLoadKeepsFiles(t *testing.T) {
	if p := mustLoad(t, "strict"); p.Files() != nil {
		t.Errorf("shipped profile has files %v", p.Files())
	}
	dir := t.TempDir()
	base := writeFile(t, dir, "base/base.toml", "extends = \"strict\"\n")
	mid := writeFile(t, dir, "proj/mid.toml", "extends = \"../base/base.toml\"\n")
	child := writeFile(t, dir, "proj/child.toml", "extends = \"./mid.toml\"\n")
	p := mustLoad(t, child)
	files := p.Files()
	if len(files) != 3 {
		t.Fatalf("files %v, want 3", files)
	}
	for i, want := range []string{base, mid, child} {
		var st unix.Stat_t
		if err := unix.Stat(want, &st); err != nil {
			t.Fatal(err)
		}
		if files[i].ID() != (hostpath.ID{Dev: st.Dev, Ino: st.Ino}) || files[i].Path != want {
			t.Errorf("file %d: %s %+v, want %s", i, files[i].Path, files[i].ID(), want)
		}
	}
	// Replacing a file after Load does not change what was kept.
	if err := os.Rename(child, child+".old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "proj/child.toml", "extends = \"default\"\n")
	var st unix.Stat_t
	if err := unix.Fstat(int(files[2].File.Fd()), &st); err != nil || st.Ino == 0 {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil || p.Files() != nil {
		t.Errorf("Close: %v, files %v", err, p.Files())
	}
	// A failed load closes what it opened: no descriptor of this process
	// refers to a file under dir. (Counting descriptors is not enough: a
	// finalizer may close an unrelated file between two counts.)
	writeFile(t, dir, "bad.toml", "extends = \"proj/mid.toml\"\nnot_a_key = 1\n")
	loadErr(t, filepath.Join(dir, "bad.toml"))
	writeFile(t, dir, "proj/mid.toml", "extends = \"../base/base.toml\"\n[limits]\nmemory = \"lots\"\n")
	loadErr(t, child+".old")
	if open := fdsUnder(t, dir); len(open) != 0 {
		t.Errorf("descriptors left open after failed loads: %v", open)
	}
}

// fdsUnder lists the targets of this process's descriptors that lie under dir.
func fdsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var under []string
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, dir+"/") {
			under = append(under, target)
		}
	}
	return under
}

func TestReadObject(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "p.toml", "x = 1\n")
	o, err := hostpath.Open(f, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if data, err := readObject(o); err != nil || string(data) != "x = 1\n" {
		t.Errorf("readObject = %q, %v", data, err)
	}
	d, err := hostpath.Open(dir, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := readObject(d); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	// Unreadable: the O_PATH open needs no permission, the read does.
	if os.Geteuid() != 0 {
		secret := writeFile(t, dir, "secret.toml", "x = 1\n")
		os.Chmod(secret, 0)
		if _, err := Load(secret); !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), secret) {
			t.Errorf("unreadable profile: %v", err)
		}
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
	// A file that grew past the limit after it was opened is still cut.
	big := writeFile(t, dir, "big.toml", "")
	bo, err := hostpath.Open(big, hostpath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bo.Close()
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readObject(bo); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("grown file: %v", err)
	}
}

func TestRootProfileMustBeComplete(t *testing.T) {
	f := writeFile(t, t.TempDir(), "root.toml", "[limits]\nmemory = \"1G\"\n")
	err := loadErr(t, f)
	for _, want := range []string{f + ": a profile without `extends` must set every key", "limits.cpus", "seccomp.enabled", "network.mode", `extends = "default"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "limits.memory") {
		t.Errorf("error lists a key that is set: %v", err)
	}
}

// protect and deny replace the parent's list: a child lifts them with an
// empty list, narrows them with its own, and inherits them by silence.
func TestReplacingLists(t *testing.T) {
	dir := t.TempDir()
	def, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if len(*def.Filesystem.Protect) < 20 || !slices.Contains(*def.Filesystem.Protect, ".git/hooks") {
		t.Fatalf("default protect = %q: want the issue's list", *def.Filesystem.Protect)
	}
	if !slices.Contains(*def.Env.Deny, "*_TOKEN") {
		t.Fatalf("default deny = %q: want *_TOKEN in it", *def.Env.Deny)
	}
	for _, c := range []struct {
		body          string
		protect, deny []string
	}{
		{"", *def.Filesystem.Protect, *def.Env.Deny},
		{"[filesystem]\nprotect = []\n[env]\ndeny = []\n", []string{}, []string{}},
		{"[filesystem]\nprotect = [\".envrc\"]\n[env]\ndeny = [\"MY_*\"]\n", []string{".envrc"}, []string{"MY_*"}},
	} {
		f := writeFile(t, dir, "child.toml", "extends = \"default\"\n"+c.body)
		p, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(*p.Filesystem.Protect, c.protect) || !slices.Equal(*p.Env.Deny, c.deny) {
			t.Errorf("%q: protect %q deny %q, want %q and %q", c.body, *p.Filesystem.Protect, *p.Env.Deny, c.protect, c.deny)
		}
		p.Close()
	}
}
