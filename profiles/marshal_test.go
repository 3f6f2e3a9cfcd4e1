package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// roundTrip marshals p, loads the output as a file and checks it equals p.
func roundTrip(t *testing.T, p *Profile) {
	t.Helper()
	out, err := p.Marshal()
	if err != nil {
		t.Fatalf("Marshal(%s): %v", p.Name, err)
	}
	if strings.Contains(string(out), "extends") {
		t.Errorf("Marshal(%s) output contains extends:\n%s", p.Name, out)
	}
	f := filepath.Join(t.TempDir(), "shown.toml")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(f)
	if err != nil {
		t.Fatalf("Load(Marshal(%s)): %v\n%s", p.Name, err, out)
	}
	back.Close()
	back.Name, back.Source, back.files = p.Name, p.Source, p.files
	if !reflect.DeepEqual(back, p) {
		t.Errorf("round trip of %s changed it:\nbefore %+v\nafter  %+v\n%s", p.Name, p, back, out)
	}
}

func TestMarshalRoundTripShipped(t *testing.T) {
	for _, info := range List() {
		p, err := Load(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, p)
	}
}

func TestMarshalRoundTripCustom(t *testing.T) {
	f := writeFile(t, t.TempDir(), "c.toml", `extends = "network"
description = "it's \"quoted\"\nand multi-line"
allow_degraded = ["landlock", "cgroup"]
host_user = 1234
[filesystem]
ro = ["data:/mnt/data", "it's"]
rw = ["out"]
mask = ["/etc/os-release"]
toolchains = ["auto", "/opt/go"]
workdir = false
[limits]
memory = 1073741824
cpus = 0.25
pids = "unlimited"
nofile = 0
[env]
set = { "WEIRD.NAME" = "a\tb", EMPTY = "" }
pass = ["CI"]
[seccomp]
enabled = false
allow = ["@debug", "ptrace"]
deny = ["socket"]
[landlock]
restrict_tcp = true
bind_tcp = [8080]
connect_tcp = [443, 80]
`)
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	roundTrip(t, p)
	out, _ := p.Marshal()
	for _, want := range []string{"pids = 'unlimited'", "nofile = 0", "memory = '1073741824'", "cpus = '0.25'", "host_user = '1234'", "toolchains = [\n  'auto',\n  '/opt/go'\n]"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestMarshalAfterOverlay(t *testing.T) {
	p, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetLimit("memory", "2G"); err != nil {
		t.Fatal(err)
	}
	if err := p.AddEnv("FOO=bar=baz"); err != nil {
		t.Fatal(err)
	}
	p.Filesystem.Rw = append(p.Filesystem.Rw, "/srv/x")
	if err := p.SetHostUser("4000:4001"); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, p)
}

// profile show explains host_user, with the jail's own default, and shows
// the empty value of the shipped profiles (a root profile must set it).
func TestMarshalShowsHostUser(t *testing.T) {
	out, err := mustLoad(t, "default").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	def := fmt.Sprintf("%d:%d", jail.DefaultHostUser.UID, jail.DefaultHostUser.GID)
	for _, want := range []string{"\nhost_user = ''\n", "# host user a jail started by root runs as", "never root", def} {
		if !strings.Contains(string(out), want) {
			t.Errorf("profile show lacks %q:\n%s", want, out)
		}
	}
	data, err := shipped.ReadFile("default.toml")
	if err != nil || !strings.Contains(string(data), def) {
		t.Errorf("default.toml does not name the jail's default host user %s (%v)", def, err)
	}
}

func TestMarshalHandmade(t *testing.T) {
	out, err := (&Profile{Name: "empty"}).Marshal()
	if err != nil {
		t.Fatalf("Marshal of an empty profile: %v", err)
	}
	f := writeFile(t, t.TempDir(), "empty.toml", string(out))
	if err := loadErr(t, f); !strings.Contains(err.Error(), "must set every key") {
		t.Errorf("an incomplete shown profile loads: %v", err)
	}
}
