package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The host side of the jail: what the supervisor opens, writes and runs as
// on the host must not be steerable by what an earlier run left behind in
// the directories it could write, and a root caller's jail is never the
// host's root. Each test plays the attacker from inside a jail, then
// checks the host.

// hsReport is the part of the report these tests read.
type hsReport struct {
	Status      string        `json:"status"`
	Violations  []ptViolation `json:"violations"`
	Enforcement struct {
		HostUID     int      `json:"host_uid"`
		HostGID     int      `json:"host_gid"`
		Idmapped    []string `json:"idmapped"`
		UnixSockets string   `json:"unix_sockets"`
		LandlockABI int      `json:"landlock_abi"`
	} `json:"enforcement"`
}

func hsParse(t *testing.T, o *outcome) *hsReport {
	t.Helper()
	if o.reportRaw == nil {
		t.Fatalf("no report\n%s", o)
	}
	r := new(hsReport)
	if err := json.Unmarshal(o.reportRaw, r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return r
}

// runArgs are `tooljail run` with the user's degraded layers, the workdir
// w (or none) and flags, then the command.
func (u *user) runArgs(w string, flags []string, command ...string) []string {
	args := []string{"run"}
	if w != "" {
		args = append(args, "--workdir", w)
	} else {
		args = append(args, "--no-workdir")
	}
	for _, d := range u.degraded {
		args = append(args, "--allow-degraded", d)
	}
	args = append(append(args, flags...), "--")
	return append(args, command...)
}

func writeFile(t *testing.T, p, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

// A second jail that can write the parent of another run's workdir swaps
// the workdir with a symlink to / in a loop while the other run starts,
// again and again: the victim either refuses the symlink or gets its own
// directory, and its marker never lands anywhere else on the host.
func TestWorkdirExchangeRace(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		p := u.workdir(t) // the attacker's workdir
		victim := filepath.Join(p, "w")
		if err := os.Mkdir(victim, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(victim, u.dirUID, u.dirGID)
		var vst syscall.Stat_t
		if err := syscall.Stat(victim, &vst); err != nil {
			t.Fatal(err)
		}
		swap := filepath.Join(p, "swap")
		attacker := make(chan *outcome, 1)
		go func() {
			attacker <- u.jail(t, p, nil, "symlink", "/", swap, ";", "exchange", victim, swap, (3 * time.Second * slow).String())
		}()
		mark := marker("race")
		refused, ran := 0, 0
		deadline := time.Now().Add(time.Minute * slow)
	loop:
		for i := 0; i < 40 && time.Now().Before(deadline); i++ {
			select {
			case a := <-attacker:
				attacker <- a
				break loop
			default:
			}
			o := u.exec(t, run{args: u.runArgs(victim, nil, "/bin/sh", "-c", fmt.Sprintf("echo hit > %s-%d", mark, i))})
			switch {
			case o.code == 0:
				ran++
			case o.code == 125 && strings.Contains(o.stderr, "symlink"):
				refused++
			default:
				t.Fatalf("try %d: want exit 0 or a refused symlink\n%s", i, o)
			}
		}
		a := <-attacker
		if l := a.lines(); len(l) != 2 || l[0] != "ok" || !strings.HasPrefix(l[1], "value ") {
			t.Fatalf("the attacker did not swap the directories\n%s", a)
		}
		t.Logf("%d runs, %d refused the swapped-in symlink; attacker: %s", ran, refused, a.lines()[1])
		// Every marker is in the victim's own directory, wherever the
		// swaps left it; none reached the host's root or anywhere else.
		if m, _ := filepath.Glob("/" + mark + "*"); len(m) > 0 {
			t.Fatalf("a run wrote into the host's /: %v", m)
		}
		for _, name := range []string{victim, swap} {
			var st syscall.Stat_t
			if syscall.Lstat(name, &st) != nil || st.Ino != vst.Ino {
				continue
			}
			ents, _ := os.ReadDir(name)
			if len(ents) != ran {
				t.Errorf("%d markers in the victim's directory, %d runs succeeded", len(ents), ran)
			}
		}
	})
}

// A symlink an earlier run planted in its workdir does not redirect the
// next run's bind, neither as the last component nor in the middle.
func TestPlantedBindSourceSymlink(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		secret := u.dir(t)
		writeFile(t, filepath.Join(secret, "s"), "TOPSECRET", 0o644)
		os.Mkdir(filepath.Join(secret, "sub"), 0o755)
		o := u.jail(t, w, nil, "symlink", secret, filepath.Join(w, "out"), ";", "symlink", secret, filepath.Join(w, "via"))
		o.ok(t, 2)
		for _, bind := range []string{
			"--rw=" + filepath.Join(w, "out") + ":/out",
			"--ro=" + filepath.Join(w, "out") + ":/out",
			"--rw=" + filepath.Join(w, "via", "sub") + ":/out",
		} {
			o := u.exec(t, run{args: u.runArgs(w, []string{bind}, filepath.Join(w, "tjhelper"), "write", "/out/planted", "1")})
			oneLineError(t, o, "symlink", "give the path it stands for")
		}
		for _, p := range []string{"planted", "sub/planted"} {
			if _, err := os.Stat(filepath.Join(secret, p)); err == nil {
				t.Errorf("a run wrote %s through a planted symlink", p)
			}
		}
	})
}

// A bind of anything on the host's procfs is refused: the jail would see
// every host process and could reach their files through /proc/PID/root
// (a served jail, the server's socket).
func TestProcfsBindRefused(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, bind := range []string{"--ro=/proc:/hostproc", "--ro=/proc/self:/me", "--ro=/proc/sys:/sys2"} {
			o := u.exec(t, run{args: u.runArgs(w, []string{bind}, "/bin/true")})
			oneLineError(t, o, "on a proc filesystem", "bind what you need from elsewhere")
		}
	})
}

// The report and the audit log are opened before the jail starts: never
// through a symlink or a FIFO an earlier run left, never inside the run's
// own read-write binds, and a FIFO cannot hang tooljail.
func TestOutputsNotPlanted(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		d := u.workdir(t) // an earlier run's workdir
		victim := filepath.Join(u.dir(t), "victim")
		writeFile(t, victim, "ORIGINAL", 0o644)
		os.Chown(victim, u.dirUID, u.dirGID)
		o := u.jail(t, d, nil, "symlink", victim, filepath.Join(d, "report.json"), ";", "mkfifo", filepath.Join(d, "fifo.json"), ";",
			"symlink", victim, filepath.Join(d, "audit.log"))
		o.ok(t, 3)
		w := u.workdir(t)
		cmd := []string{filepath.Join(w, "tjhelper"), "exit", "0"}
		for _, c := range []struct {
			flag, path string
			want       []string
		}{
			{"--report", filepath.Join(d, "report.json"), []string{"symlink"}},
			{"--audit-log", filepath.Join(d, "audit.log"), []string{"symlink"}},
			{"--report", filepath.Join(d, "fifo.json"), []string{"FIFO"}},
			{"--audit-log", filepath.Join(d, "fifo.json"), []string{"FIFO"}},
			{"--report", filepath.Join(w, "report.json"), []string{"inside", "read-write"}},
			{"--audit-log", filepath.Join(w, "sub", "..", "audit.log"), []string{"inside", "read-write"}},
		} {
			start := time.Now()
			o := u.exec(t, run{args: u.runArgs(w, []string{c.flag, c.path}, cmd...)})
			oneLineError(t, o, c.want...)
			if took := time.Since(start); took > 10*time.Second*slow {
				t.Errorf("%s %s: tooljail took %s to refuse it", c.flag, c.path, took)
			}
		}
		if b, _ := os.ReadFile(victim); string(b) != "ORIGINAL" {
			t.Errorf("the file behind a planted symlink changed: %q", b)
		}
		for _, p := range []string{filepath.Join(w, "report.json"), filepath.Join(w, "audit.log")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created although it was refused", p)
			}
		}
	})
}

// A profile inside the run's read-write workdir (and every file it
// extends) cannot be changed, replaced or moved away by the run for the
// next run; the rest of its directory stays writable.
func TestTrustedProfileProtected(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		ci := filepath.Join(w, "ci")
		os.Mkdir(ci, 0o755)
		os.Chown(ci, u.dirUID, u.dirGID)
		base := "extends = \"default\"\n"
		prof := "extends = \"../base.toml\"\n"
		writeFile(t, filepath.Join(w, "base.toml"), base, 0o644)
		writeFile(t, filepath.Join(ci, "jail.toml"), prof, 0o644)
		o := u.jail(t, w, []string{"--profile", filepath.Join(ci, "jail.toml")},
			"write", filepath.Join(ci, "jail.toml"), "3", ";",
			"write", filepath.Join(w, "base.toml"), "3", ";",
			"rename", filepath.Join(ci, "jail.toml"), filepath.Join(ci, "old.toml"), ";",
			"remove", filepath.Join(ci, "jail.toml"), ";",
			"rename", ci, filepath.Join(w, "ci.old"), ";",
			"write", filepath.Join(ci, "other"), "3")
		l := o.ok(t, 6)
		for i, what := range []string{"write the profile", "write the profile it extends", "rename the profile", "remove the profile", "rename its directory"} {
			if !failed(l[i]) {
				t.Errorf("%s: %s, want a failure", what, l[i])
			}
		}
		if l[5] != "ok" {
			t.Errorf("a new file next to the profile: %s, want ok", l[5])
		}
		if b, _ := os.ReadFile(filepath.Join(ci, "jail.toml")); string(b) != prof {
			t.Errorf("the profile changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(w, "base.toml")); string(b) != base {
			t.Errorf("the profile it extends changed: %q", b)
		}
	})
}

// poisonCache replaces the cached filter of the one policy in dir with an
// allow-all filter whose header is valid (the review's attack).
func poisonCache(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.bpf"))
	if len(files) != 1 {
		t.Fatalf("want one cached filter in %s, have %v", dir, files)
	}
	old, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	magic := []byte("tooljail-seccomp-cache v1\n")
	if !bytes.HasPrefix(old, magic) {
		t.Fatalf("%s: not a cache file of the known format", files[0])
	}
	hdr := old[:len(magic)+32+1] // magic, key hash, notify
	allow := make([]byte, 8)
	binary.LittleEndian.PutUint16(allow[0:], 0x06) // BPF_RET|BPF_K
	binary.LittleEndian.PutUint32(allow[4:], 0x7fff0000)
	sum := sha256.Sum256(allow)
	poison := append(append(append([]byte{}, hdr...), sum[:]...), allow...)
	if err := os.WriteFile(files[0], poison, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A seccomp cache inside a read-write bind of the run is not used: the
// poisoned (allow-all) filter the review planted there does not take
// effect, though it does where the cache is used (which shows the poison
// is one the cache would accept). The run cannot write the cache either.
func TestSeccompCacheInsideBind(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		prof := filepath.Join(u.dir(t), "p.toml")
		// Not a shipped policy, so the filter comes from the cache.
		writeFile(t, prof, "extends = \"default\"\n[seccomp]\ndeny = [\"getcpu\"]\n", 0o644)
		w := u.sysWorkdir(t)
		inside := filepath.Join(w, "cache")
		outside := filepath.Join(u.dir(t), "cache")
		for _, c := range []string{inside, outside} {
			// Fill the cache: a run with TOOLJAIL_CACHE_DIR set.
			o2 := u.exec(t, run{args: u.runArgs(u.workdir(t), []string{"--profile", prof}, "/bin/true"), env: []string{"TOOLJAIL_CACHE_DIR=" + c}})
			if o2.code != 0 {
				t.Fatalf("filling the cache in %s\n%s", c, o2)
			}
			poisonCache(t, filepath.Join(c, "seccomp"))
			if u.noIdmap && c == inside {
				// Root's run there is the workdir owner's (no idmap):
				// the cache inside is that owner's, as the rest of
				// the workdir, or the run cannot open it to protect it.
				chownTree(t, c, u.dirUID, u.dirGID)
			}
		}
		// keyctl is denied by the default policy; allow-all would let the
		// kernel answer (EINVAL or ENOKEY), not EPERM.
		o := u.jailRun(t, w, run{args: []string{"--profile", prof, "--env", "TJSYS_JAILED=1"}, env: []string{"TOOLJAIL_CACHE_DIR=" + inside}},
			filepath.Join(w, "tjsys"), "keyctl")
		if l := o.lines(); o.code != 0 || len(l) != 1 || l[0] != "errno EPERM" {
			t.Errorf("with the poisoned cache inside the workdir: keyctl %v, want errno EPERM (the cache must not be used)\n%s", l, o)
		}
		o = u.jailRun(t, w, run{args: []string{"--profile", prof, "--env", "TJSYS_JAILED=1"}, env: []string{"TOOLJAIL_CACHE_DIR=" + outside}},
			filepath.Join(w, "tjsys"), "keyctl")
		if l := o.lines(); len(l) != 1 || l[0] == "errno EPERM" {
			t.Errorf("control: with the poisoned cache outside the binds, keyctl %v; the poison should have been used (is the test's poison still accepted by the cache?)\n%s", l, o)
		}
		// The cache inside the workdir is read-only to the run, and cannot
		// be moved away.
		o = u.jailRun(t, w, run{args: []string{"--profile", prof}, env: []string{"TOOLJAIL_CACHE_DIR=" + inside}},
			filepath.Join(w, "tjhelper"), "write", filepath.Join(inside, "seccomp", "x.bpf"), "3", ";",
			"rename", inside, filepath.Join(w, "cache.old"))
		if l := o.ok(t, 2); !failed(l[0]) || !failed(l[1]) {
			t.Errorf("the run changed the cache inside its workdir: %v", l)
		}
	})
}

// A mask whose path is gone (an earlier run with the directory read-write
// renamed it) fails the run instead of silently showing the secret under
// its new name.
func TestMaskMissingRefused(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		os.Mkdir(filepath.Join(w, "secrets.moved"), 0o755)
		writeFile(t, filepath.Join(w, "secrets.moved", "key"), "TOPSECRET", 0o644)
		o := u.exec(t, run{args: u.runArgs(w, []string{"--mask", filepath.Join(w, "secrets", "key")}, filepath.Join(w, "tjhelper"), "exit", "0")})
		if o.code != 125 || !strings.Contains(o.stderr, "mask") || !strings.Contains(o.stderr, "nothing is there") {
			t.Fatalf("want exit 125 naming the missing mask\n%s", o)
		}
	})
}

// hostIDs reads the Uid and Gid lines of a host process's status.
func hostIDs(t *testing.T, pid string) (uid, gid string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "Uid:" {
			uid = strings.Join(f[1:], " ")
		}
		if len(f) >= 2 && f[0] == "Gid:" {
			gid = strings.Join(f[1:], " ")
		}
	}
	return uid, gid
}

// parentOf is a host process's parent pid, or "".
func parentOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces: the fields after it follow ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// jailedHostIDs runs a command that sleeps in the jail and reads its host
// uid and gid lines from the host.
func (u *user) jailedHostIDs(t *testing.T, w string, flags []string) (uid, gid string, o *outcome) {
	t.Helper()
	mark := marker("ids")
	done := make(chan *outcome, 1)
	go func() { done <- u.jail(t, w, flags, "sleep", (3 * time.Second * slow).String(), mark) }()
	deadline := time.Now().Add(20 * time.Second * slow)
	for time.Now().Before(deadline) && uid == "" {
		// The supervisor's command line carries the marker too, and the
		// init blanks its own: the jail's processes are the command and
		// its parent, the init.
		var procs []string
		for _, p := range hostProcs(mark) {
			pid, cmdline, _ := strings.Cut(p, ": ")
			if strings.HasPrefix(cmdline, filepath.Join(w, "tjhelper")+" ") {
				procs = append(procs, pid, parentOf(pid))
			}
		}
		if len(procs) < 2 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for _, pid := range procs {
			pu, pg := hostIDs(t, pid)
			if uid != "" && (pu != uid || pg != gid) {
				t.Errorf("the jail's processes differ in host ids: Uid %s Gid %s and Uid %s Gid %s", uid, gid, pu, pg)
			}
			uid, gid = pu, pg
		}
	}
	o = <-done
	if uid == "" {
		t.Fatalf("the jailed command never showed up on the host\n%s", o)
	}
	return uid, gid, o
}

// Started by root, neither the jail's init nor the command is the host's
// root: a root-owned workdir gets the unprivileged default identity (and
// is idmapped, so what the command writes still belongs to root), a
// workdir of another owner that owner's, --host-user the one asked for.
// Root-only files in a read-only bind stay unreadable.
func TestRootStartedJailIsNotRoot(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if u.uid != 0 {
			w := u.workdir(t)
			oneLineError(t, u.exec(t, run{args: u.runArgs(w, []string{"--host-user", "4242:4242"}, filepath.Join(w, "tjhelper"), "exit", "0")}), "only real root")
			return
		}
		w := u.workdir(t)
		want := fmt.Sprint(u.dirUID)
		if u.dirUID == 0 {
			want = "524287"
		}
		uid, gid, o := u.jailedHostIDs(t, w, nil)
		r := hsParse(t, o)
		if strings.Fields(uid)[0] != want || strings.Contains(" "+uid+" ", " 0 ") || strings.Contains(" "+gid+" ", " 0 ") {
			t.Errorf("the jailed command's host ids: Uid %s Gid %s; want uid %s and never 0", uid, gid, want)
		}
		if fmt.Sprint(r.Enforcement.HostUID) != want {
			t.Errorf("enforcement.host_uid = %d, want %s", r.Enforcement.HostUID, want)
		}
		uid, _, o = u.jailedHostIDs(t, w, []string{"--host-user", "4242:4243"})
		if strings.Fields(uid)[0] != "4242" || hsParse(t, o).Enforcement.HostGID != 4243 {
			t.Errorf("--host-user 4242:4243: host Uid %s, report %s", uid, o.reportRaw)
		}
		oneLineError(t, u.exec(t, run{args: u.runArgs(w, []string{"--host-user", "0"}, filepath.Join(w, "tjhelper"), "exit", "0")}), "root")

		// A root-only file in a read-only bind, and a file the command
		// writes in a root-owned workdir.
		ro := u.dir(t)
		os.Chmod(ro, 0o755)
		writeFile(t, filepath.Join(ro, "shadow"), "TOPSECRET", 0o600)
		os.Chown(filepath.Join(ro, "shadow"), 0, 0)
		rootw := filepath.Join(base, "rootw-"+marker("w"))
		if err := os.Mkdir(rootw, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(rootw) })
		o = u.exec(t, run{args: u.runArgs(rootw, []string{"--ro", ro + ":/ro"}, helperBinIn(t, rootw), "read", "/ro/shadow", ";", "write", filepath.Join(rootw, "new"), "1")})
		if u.noIdmap {
			// This kernel cannot idmap the file system: the run fails
			// closed and names the fix.
			oneLineError(t, o, "idmapped", "--host-user")
			// With the identity chosen, the bind is shown as it is:
			// the run goes ahead as that user, who cannot write there.
			o = u.exec(t, run{args: u.runArgs(rootw, []string{"--host-user", "4242:4242"}, filepath.Join(rootw, "tjhelper"), "write", filepath.Join(rootw, "new"), "1")})
			if l := o.lines(); o.code != 0 || len(l) != 1 || l[0] != "errno EACCES" {
				t.Errorf("--host-user where idmapping is not supported: want the run, and EACCES writing the root-owned workdir\n%s", o)
			}
			return
		}
		if l := o.lines(); o.code != 0 || len(l) != 2 || l[0] != "errno EACCES" || l[1] != "ok" {
			t.Fatalf("want the root-only file unreadable and the write to work\n%s", o)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(rootw, "new"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("a file written in a root-owned workdir: %v, owner %d:%d, want 0:0", err, st.Uid, st.Gid)
		}
	})
}

// helperBinIn links the helper into dir (owned by root) for a run there.
func helperBinIn(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tjhelper")
	if err := os.Link(helperBin, p); err != nil {
		if err := copyFile(helperBin, p); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// setuid and setgid bits cannot be created, whatever the file; the call
// is denied and reported by name. Read-write binds are nosuid as well.
func TestNoSetuidFiles(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.workdir(t)
		f := filepath.Join(w, "copy")
		o := u.jail(t, w, nil, "write", f, "10", ";", "chmod", f, "4755", ";", "chmod", f, "2755", ";", "chmod", f, "755")
		l := o.ok(t, 4)
		if l[0] != "ok" || l[1] != "errno EPERM" || l[2] != "errno EPERM" || l[3] != "ok" {
			t.Errorf("chmod 4755, 2755, 755: %v; want EPERM, EPERM, ok", l[1:])
		}
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil || st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
			t.Errorf("the file on the host: %v, mode %o", err, st.Mode)
		}
		r := hsParse(t, o)
		found := false
		for _, v := range r.Violations {
			if v.Syscall == "fchmodat" || v.Syscall == "chmod" {
				found = v.Count == 2
			}
		}
		if !found {
			t.Errorf("the denied chmod calls are not reported (twice) by name: %+v", r.Violations)
		}
	})
}

// The kernel's knobs in the jail's /proc are read-only and its secrets
// masked even with Landlock off, so no single layer stands alone.
func TestProcKnobsReadOnly(t *testing.T) {
	// The knobs this kernel has (sysrq-trigger needs CONFIG_MAGIC_SYSRQ).
	var knobs []string
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"} {
		if _, err := os.Lstat(p); err == nil {
			knobs = append(knobs, p)
		}
	}
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		prof := filepath.Join(u.dir(t), "nolandlock.toml")
		writeFile(t, prof, "extends = \"default\"\n[landlock]\nenabled = false\n", 0o644)
		args := []string{"open", "/proc/sys/kernel/core_pattern", "w", ";",
			"read", "/proc/keys", ";",
			"read", "/proc/kallsyms", ";",
			"read", "/proc/self/status"}
		for _, k := range knobs {
			args = append(args, ";", "mountro", k)
		}
		o := u.jail(t, w, []string{"--profile", prof}, args...)
		l := o.ok(t, 4+len(knobs))
		// Not root on the host nor in the jail: the permission check
		// refuses before the read-only mount would.
		if l[0] != "errno EROFS" && l[0] != "errno EACCES" {
			t.Errorf("open /proc/sys/kernel/core_pattern for writing: %s, want EACCES or EROFS", l[0])
		}
		for i, p := range []string{"/proc/keys", "/proc/kallsyms"} {
			if l[1+i] != `value ""` && l[1+i] != "errno ENOENT" {
				t.Errorf("%s: %s, want it masked (empty)", p, l[1+i])
			}
		}
		if !strings.HasPrefix(l[3], "value ") {
			t.Errorf("/proc/self/status: %s, want it readable", l[3])
		}
		for i, k := range knobs {
			if l[4+i] != `value "ro"` {
				t.Errorf("%s is on a %s mount, want a read-only one", k, l[4+i])
			}
		}
	})
}

// Every masked /proc file this kernel has reads empty in the jail, and
// every masked directory lists nothing.
func TestProcMasks(t *testing.T) {
	var files, dirs []string
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/kallsyms", "/proc/sched_debug", "/proc/latency_stats", "/proc/timer_stats", "/proc/acpi", "/proc/scsi"} {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		prof := filepath.Join(u.dir(t), "nolandlock.toml")
		writeFile(t, prof, "extends = \"default\"\n[landlock]\nenabled = false\n", 0o644)
		args := []string{"self"} // a first line, in case this kernel has none of them
		for _, f := range files {
			args = append(args, ";", "read", f)
		}
		for _, d := range dirs {
			args = append(args, ";", "ls", d)
		}
		o := u.jail(t, w, []string{"--profile", prof}, args...)
		l := o.ok(t, 1+len(files)+len(dirs))[1:]
		for i, f := range files {
			if l[i] != `value ""` {
				t.Errorf("%s: %s, want it masked (empty)", f, l[i])
			}
		}
		for i, d := range dirs {
			if got := l[len(files)+i]; got != "value []" {
				t.Errorf("%s: %s, want it masked (an empty directory)", d, got)
			}
		}
	})
}

// A tooljail binary inside the run's workdir is bound read-only over
// itself: the command cannot replace what the next run executes.
func TestExecutableProtected(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		bin := filepath.Join(w, "tooljail")
		if err := copyFile(tooljailBin, bin); err != nil {
			t.Fatal(err)
		}
		os.Chmod(bin, 0o755)
		before, _ := os.ReadFile(bin)
		o := u.exec(t, run{bin: bin, args: u.runArgs(w, nil, filepath.Join(w, "tjhelper"), "write", bin, "1", ";", "remove", bin, ";", "write", filepath.Join(w, "ok"), "1")})
		l := o.ok(t, 3)
		if !failedWith(l[0], "EROFS", "EACCES", "ETXTBSY") || !failedWith(l[1], "EBUSY", "EROFS", "EACCES", "EPERM") || l[2] != "ok" {
			t.Errorf("write, remove the running tooljail, write the workdir: %q; want both refused, the control ok\n%s", l, o)
		}
		if after, _ := os.ReadFile(bin); !bytes.Equal(before, after) {
			t.Error("the tooljail binary in the workdir was changed by the run")
		}
	})
}

// Every bind is nosuid: the workdir, a read-only bind, the system binds.
func TestBindsNosuid(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		ro := u.dir(t)
		os.Chmod(ro, 0o755)
		o := u.jail(t, w, []string{"--ro", ro + ":/ro"}, "mountsuid", w, ";", "mountsuid", "/ro", ";", "mountsuid", "/usr")
		for i, l := range o.ok(t, 3) {
			if l != `value "nosuid"` {
				t.Errorf("%s: %s, want nosuid", []string{w, "/ro", "/usr"}[i], l)
			}
		}
	})
}

// Started by root with seccomp off, a run refuses to idmap a read-write
// bind: through it the command would be the owner, and nothing would stop
// it from leaving a setuid file of that owner on the host.
func TestIdmapNeedsSeccomp(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if u.uid != 0 {
			t.Skip("only a root-started jail is idmapped")
		}
		rootw := filepath.Join(base, "rootw-"+marker("s"))
		if err := os.Mkdir(rootw, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(rootw) })
		prof := filepath.Join(u.dir(t), "noseccomp.toml")
		writeFile(t, prof, "extends = \"default\"\nallow_degraded = [\"seccomp\"]\n[seccomp]\nenabled = false\n", 0o644)
		o := u.exec(t, run{args: u.runArgs(rootw, []string{"--profile", prof}, "/bin/true")})
		oneLineError(t, o, "seccomp", "--host-user")
		if ents, _ := os.ReadDir(rootw); len(ents) != 0 {
			t.Errorf("the refused run left %v in the workdir", ents)
		}
		// With the identity chosen, the bind is shown as it is: the jail
		// is that user, and the root-owned workdir is not writable.
		os.Chmod(rootw, 0o755)
		o = u.exec(t, run{args: u.runArgs(rootw, []string{"--profile", prof, "--host-user", "4242:4242"}, "/bin/sh", "-c", "echo x > f || echo refused")})
		if o.code != 0 || !strings.Contains(o.stdout, "refused") {
			t.Errorf("--host-user with seccomp off: want the run, and the write refused\n%s", o)
		}
		if _, err := os.Stat(filepath.Join(rootw, "f")); err == nil {
			t.Error("the jail wrote into a root-owned workdir through a bind that was not idmapped")
		}
	})
}

// A host unix socket inside a read-only bind: what the report says about
// unix sockets is what the command finds (on Landlock ABI 9 it cannot
// connect; below that it can, and the report must say so).
func TestUnixSocketInBind(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		d := u.dir(t)
		os.Chmod(d, 0o755)
		sock := filepath.Join(d, "s")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		os.Chmod(sock, 0o777)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--ro", d + ":/sockdir"}, "connect-unix", "/sockdir/s")
		lines := o.ok(t, 1)
		r := hsParse(t, o)
		switch {
		case r.Enforcement.UnixSockets == "landlock":
			if lines[0] != "errno EACCES" {
				t.Errorf("the report says unix sockets are restricted, but connect gave %s", lines[0])
			}
		case strings.HasPrefix(r.Enforcement.UnixSockets, "not restricted"):
			if lines[0] != "ok" {
				t.Errorf("the report says unix sockets are not restricted, but connect gave %s", lines[0])
			}
			if r.Enforcement.LandlockABI >= 9 {
				t.Errorf("Landlock ABI %d handles unix sockets, but the report says %q", r.Enforcement.LandlockABI, r.Enforcement.UnixSockets)
			}
		default:
			t.Errorf("enforcement.unix_sockets = %q", r.Enforcement.UnixSockets)
		}
	})
}
