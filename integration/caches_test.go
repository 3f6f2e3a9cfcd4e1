package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

type cachesReport struct {
	Enforcement struct {
		Caches []struct {
			Name     string `json:"name"`
			Path     string `json:"path"`
			HostPath string `json:"host_path"`
		} `json:"caches"`
		HostUID *int `json:"host_uid"`
	} `json:"enforcement"`
}

// A named cache (--cache NAME) is tooljail's own directory in the
// caller's cache directory ($HOME/.cache here, XDG_CACHE_HOME unset),
// created 0700 and owned by the caller, bound read-write where the tool
// looks in the jail's HOME: what one run writes there the next reads.
// Root runs the jail as another user here (a workdir of uid 65534): the
// cache stays root's on the host, through an idmapped bind. NAME=DIR binds
// DIR; the caller's $HOME itself is refused as for --rw; an unknown name
// is exit 125 naming the known ones.
func TestCachesSurviveRuns(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.dir(t)
		if u.cred == nil {
			if u.noIdmap {
				t.Skip("this file system cannot be idmapped: root's cache could not be written by the jail's user")
			}
			if err := os.Chown(w, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		home := u.dir(t)
		env := []string{"HOME=" + home, "XDG_CACHE_HOME="}
		jailed := func(flags []string, script string) *outcome {
			return u.jailRun(t, w, run{args: flags, env: env}, "/bin/sh", "-c", script)
		}
		one := jailed([]string{"--cache", "go-build"}, `echo one > "$HOME/.cache/go-build/marker" && id -u`)
		if one.code != 0 {
			t.Fatalf("run 1: want exit 0\n%s", one)
		}
		hostDir := filepath.Join(home, ".cache/tooljail/caches/go-build")
		var r cachesReport
		if err := json.Unmarshal(one.reportRaw, &r); err != nil {
			t.Fatal(err)
		}
		if c := r.Enforcement.Caches; len(c) != 1 || c[0].Name != "go-build" || c[0].Path != "/home/sandbox/.cache/go-build" || c[0].HostPath != hostDir {
			t.Errorf("enforcement.caches %+v, want go-build at /home/sandbox/.cache/go-build from %s", c, hostDir)
		}
		if u.cred == nil && (r.Enforcement.HostUID == nil || *r.Enforcement.HostUID != 65534) {
			t.Errorf("root with a workdir of 65534: host_uid %v, want 65534", r.Enforcement.HostUID)
		}
		for _, p := range []string{hostDir, filepath.Join(hostDir, "marker")} {
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Fatalf("%s on the host: %v", p, err)
			}
			if int(st.Uid) != u.uid {
				t.Errorf("%s belongs to uid %d, want the caller's %d", p, st.Uid, u.uid)
			}
			if p == hostDir && st.Mode&0o7777 != 0o700 {
				t.Errorf("%s mode %o, want 0700", p, st.Mode&0o7777)
			}
		}
		two := jailed([]string{"--cache", "go-build"}, `cat "$HOME/.cache/go-build/marker"`)
		if two.code != 0 || strings.TrimSpace(two.stdout) != "one" {
			t.Errorf("run 2 does not read what run 1 left in the cache\n%s", two)
		}
		// Without the cache, HOME is the empty tmpfs again.
		if o := jailed(nil, `test ! -e "$HOME/.cache/go-build/marker"`); o.code != 0 {
			t.Errorf("a run without --cache sees the cache\n%s", o)
		}

		mine := u.dir(t)
		if o := jailed([]string{"--cache", "npm=" + mine}, `echo x > "$HOME/.npm/f"`); o.code != 0 {
			t.Errorf("--cache npm=DIR\n%s", o)
		} else if _, err := os.Stat(filepath.Join(mine, "f")); err != nil {
			t.Errorf("--cache npm=DIR: the file is not in DIR: %v", err)
		}
		if o := jailed([]string{"--cache", "npm=" + home}, "true"); o.code != 125 || !strings.Contains(o.stderr, "home directory") {
			t.Errorf("--cache npm=$HOME: want exit 125 refusing a home directory\n%s", o)
		}
		if o := jailed([]string{"--cache", "maven"}, "true"); o.code != 125 || !strings.Contains(o.stderr, "known: go-build, go-mod, pip, npm, cargo-registry") {
			t.Errorf("--cache maven: want exit 125 naming the known caches\n%s", o)
		}
	})
}
