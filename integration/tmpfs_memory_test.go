package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tmpfsSizes are the sizes of /tmp and HOME inside the jail, as statfs
// gives them (blocks times block size).
func tmpfsSizes(t *testing.T, u *user, w string, flags ...string) (tmp, home int64) {
	t.Helper()
	o := u.jailRun(t, w, run{args: flags}, "/bin/sh", "-c", `stat -f -c '%b %S' /tmp "$HOME"`)
	if o.code != 0 {
		t.Fatalf("stat -f /tmp $HOME failed\n%s", o)
	}
	var sizes []int64
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		var blocks, bsize int64
		if _, err := fmt.Sscanf(l, "%d %d", &blocks, &bsize); err != nil {
			t.Fatalf("stat -f line %q: %v\n%s", l, err, o)
		}
		sizes = append(sizes, blocks*bsize)
	}
	if len(sizes) != 2 {
		t.Fatalf("want two sizes\n%s", o)
	}
	return sizes[0], sizes[1]
}

// memTotal is the host's RAM in bytes (/proc/meminfo MemTotal).
func memTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kib << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// /tmp and HOME are as large as the memory limit by default (their pages
// count against it anyway), follow --memory, keep a size of their own
// when one is given (--tmpfs /tmp:SIZE, home_size), and are the kernel's
// default, half of RAM, when memory is unlimited. The sizes do not need a
// cgroup: uid 65534 on a v1 host gets the same mounts.
func TestTmpfsSizedByMemory(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		if tmp, home := tmpfsSizes(t, u, w, "--memory", "96M"); tmp != 96*mib || home != 96*mib {
			t.Errorf("--memory 96M: /tmp %d, HOME %d bytes, want %d each", tmp, home, 96*mib)
		}
		if tmp, home := tmpfsSizes(t, u, w, "--memory", "96M", "--tmpfs", "/tmp:8M"); tmp != 8*mib || home != 96*mib {
			t.Errorf("--tmpfs /tmp:8M: /tmp %d, HOME %d bytes, want %d and %d", tmp, home, 8*mib, 96*mib)
		}
		prof := filepath.Join(u.dir(t), "home.toml")
		if err := os.WriteFile(prof, []byte("extends = \"default\"\n[filesystem]\nhome_size = \"16M\"\ntmpfs = [\"/scratch:memory\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if tmp, home := tmpfsSizes(t, u, w, "--profile", prof, "--memory", "80M"); tmp != 80*mib || home != 16*mib {
			t.Errorf("home_size 16M: /tmp %d, HOME %d bytes, want %d and %d", tmp, home, 80*mib, 16*mib)
		}
		// No limit: the kernel's default, half of the RAM it counts (in
		// whole pages of the RAM's own count).
		half := memTotal(t) / 2
		if tmp, home := tmpfsSizes(t, u, w, "--memory", "0"); tmp != home || tmp < half-(1<<20) || tmp > half+(1<<20) {
			t.Errorf("--memory 0: /tmp %d, HOME %d bytes, want about half of MemTotal, %d", tmp, home, half)
		}
	})
}

// Sized by the memory limit, /tmp and HOME hit the limit before they fill
// up: a write past it is a memory-limit kill whose reason and summary name
// the tmpfs mount whose files count (with what it held when the init's
// samples came, else every writable tmpfs: the OOM killer may stop the
// init with the rest) and the flag and key that raise the limit, and with
// it the mounts. A process's own memory past the limit names the same
// flag.
func TestMemoryKillNamesRaise(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		w := u.workdir(t)
		for _, c := range []struct {
			name, path string
			actions    []string
		}{
			{"files in /tmp", "/tmp", []string{"write", "/tmp/f", "209715200"}},
			{"files in HOME", "/home/sandbox", []string{"write", "/home/sandbox/f", "209715200"}},
			{"anonymous", "", []string{"alloc", "209715200"}},
		} {
			o := u.jail(t, w, []string{"--memory", "64M"}, c.actions...)
			if o.code != 137 || o.report.Status != "memory_limit" {
				t.Errorf("%s: want exit 137 and status memory_limit\n%s", c.name, o)
				continue
			}
			r := o.report.Reason
			for _, want := range []string{"memory limit 64 MiB reached", "files in ", c.path, "raise it with --memory SIZE or limits.memory"} {
				if c.path == "" && want == "files in " {
					continue
				}
				if !strings.Contains(r, want) {
					t.Errorf("%s: reason %q does not say %q", c.name, r, want)
				}
			}
			if s := o.summaryLine(); !strings.HasPrefix(s, "memory_limit: memory limit 64 MiB reached") || !strings.Contains(s, "--memory SIZE or limits.memory") {
				t.Errorf("%s: summary %q does not name the limit and --memory", c.name, s)
			}
			if n := o.notes(t); len(n.FullMounts) != 0 {
				t.Errorf("%s: full_mounts %+v: the memory limit came first", c.name, n.FullMounts)
			}
		}
	})
}
