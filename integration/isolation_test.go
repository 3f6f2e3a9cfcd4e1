package integration

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

type proc struct {
	Pid     int    `json:"pid"`
	State   string `json:"state"`
	Cmdline string `json:"cmdline"`
}

// The command is not PID 1, the jail's init is; no host process is visible,
// not even one started just before with a known command line.
func TestPIDNamespace(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		host := marker("hostproc")
		decoy := startHostDecoy(t, host)
		w := u.workdir(t)
		inside := marker("inside")
		o := u.jail(t, w, nil, "spawn", inside, ";", "ps", ";", "self")
		o.ok(t, 3)
		var child int
		o.value(t, 0, &child)
		var procs []proc
		o.value(t, 1, &procs)
		var self map[string]int
		o.value(t, 2, &self)
		seen := map[string]bool{}
		for _, p := range procs {
			switch {
			case p.Pid == 1 && strings.HasPrefix(p.Cmdline, "tooljail-init"):
				seen["init"] = true
			case p.Pid == self["pid"]:
				seen["self"] = true
			// By pid: on slow guests the child's argv may not show yet.
			case p.Pid == child && (p.Cmdline == "" || strings.Contains(p.Cmdline, inside)):
				seen["child"] = true
			default:
				t.Errorf("unexpected process in the jail: %+v", p)
			}
			if strings.Contains(p.Cmdline, host) || p.Pid == decoy || p.Pid == os.Getpid() {
				t.Errorf("host process visible in the jail: %+v", p)
			}
		}
		if !seen["init"] || !seen["self"] || !seen["child"] {
			t.Errorf("want the init as PID 1, the command and its child; saw %v in %+v", seen, procs)
		}
		if self["pid"] == 1 || self["ppid"] != 1 {
			t.Errorf("the command should be a child of the jail's PID 1: %v", self)
		}
	})
}

// startHostDecoy runs the helper on the host with mark in its argv until
// the test ends, and returns its pid.
func startHostDecoy(t *testing.T, mark string) int {
	t.Helper()
	p, err := os.StartProcess(helperBin, []string{"tjhelper", "hold", mark}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); p.Wait() })
	return p.Pid
}

func TestHostname(t *testing.T) {
	hostBefore, _ := os.Hostname()
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, nil, "hostname")
		o.ok(t, 1)
		var h string
		o.value(t, 0, &h)
		if h != "tooljail" || h == hostBefore {
			t.Errorf("hostname inside is %q, want tooljail (host: %q)", h, hostBefore)
		}
		if after, _ := os.Hostname(); after != hostBefore {
			t.Errorf("host name changed from %q to %q", hostBefore, after)
		}
	})
}

// Only lo, and it works; the host's loopback listener is out of reach.
func TestNetworkNone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	// Positive control: the listener answers on the host.
	if c, err := net.Dial("tcp", l.Addr().String()); err != nil {
		t.Fatalf("host listener does not answer on the host: %v", err)
	} else {
		c.Close()
		<-accepted
	}
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, nil, "netifs", ";", "loopback", ";", "connect", l.Addr().String())
		lines := o.ok(t, 3)
		var ifs []struct {
			Name string `json:"name"`
			Up   bool   `json:"up"`
		}
		o.value(t, 0, &ifs)
		if len(ifs) != 1 || ifs[0].Name != "lo" || !ifs[0].Up {
			t.Errorf("want only lo, up; got %+v", ifs)
		}
		if lines[1] != "ok" {
			t.Errorf("loopback inside the jail does not work: %s", lines[1])
		}
		if !failed(lines[2]) {
			t.Errorf("connect to the host's 127.0.0.1 listener from the jail: %s, want a failure", lines[2])
		}
		if !o.report.Enforcement.Namespaces["net"] {
			t.Errorf("report says no network namespace\n%s", o)
		}
	})
	t.Cleanup(func() {
		select {
		case <-accepted:
			t.Errorf("the host listener accepted a connection from a jail")
		default:
		}
	})
}

// Host files outside the binds are absent; the workdir is there.
func TestHostFilesAbsent(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		secret := filepath.Join(filepath.Dir(w), "secret-"+filepath.Base(w))
		if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(secret) })
		absent := []string{"/root", "/var", "/run", secret, filepath.Join(filepath.Dir(w), "tjhelper"), "/etc/shadow", "/etc/machine-id"}
		if ents, err := os.ReadDir("/home"); err == nil {
			for _, e := range ents {
				if e.Name() != "sandbox" {
					absent = append(absent, "/home/"+e.Name())
				}
			}
		}
		var args []string
		for _, p := range absent {
			args = append(args, "stat", p, ";")
		}
		// Positive controls: the workdir's helper, /usr, and the jail home.
		args = append(args, "stat", filepath.Join(w, "tjhelper"), ";", "stat", "/usr/bin", ";", "stat", "/home/sandbox")
		o := u.jail(t, w, nil, args...)
		lines := o.ok(t, len(absent)+3)
		for i, p := range absent {
			if _, err := os.Lstat(p); err != nil {
				continue // not on this host either
			}
			if lines[i] != "errno ENOENT" {
				t.Errorf("host path %s inside the jail: %s, want errno ENOENT", p, lines[i])
			}
		}
		for _, l := range lines[len(absent):] {
			if !strings.HasPrefix(l, "value ") {
				t.Errorf("positive control failed: %s\n%s", l, o)
			}
		}
	})
}

// --ro binds cannot be written, submounts below them included; the workdir
// can (positive control).
func TestReadOnlyBinds(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
	src, err := os.MkdirTemp(base, "robind-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(src, 0o755)
	t.Cleanup(func() { os.RemoveAll(src) })
	if err := os.WriteFile(filepath.Join(src, "file"), []byte("original"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(src, "file"), 0o666) // writable by anyone on the host: only the bind protects it
	sub := filepath.Join(src, "sub")
	os.Mkdir(sub, 0o777)
	submount := false
	if os.Geteuid() == 0 {
		if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
			t.Fatalf("mount a tmpfs below the read-only source: %v", err)
		}
		submount = true
		t.Cleanup(func() {
			if err := syscall.Unmount(sub, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", sub, err)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(sub, "file"), []byte("original"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(sub, "file"), 0o666)
	forUsers(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--ro", src + ":/data"},
			"read", "/data/file", ";", // 0: readable
			"write", "/data/file", "3", ";",
			"write", "/data/new", "3", ";",
			"read", "/data/sub/file", ";", // 3: the submount is there
			"write", "/data/sub/file", "3", ";",
			"write", "/data/sub/new", "3", ";",
			"remount-rw", "/data/sub", ";",
			"remount-rw", "/data", ";",
			"write", "/usr/tjtest", "3", ";",
			"write", "/etc/passwd", "3", ";",
			"mkdir", "/tjtest", ";",
			"write", filepath.Join(w, "out"), "3", ";", // 11: positive control
			"write", "/tmp/out", "3") // 12: positive control
		lines := o.ok(t, 13)
		if lines[0] != `value "original"` || lines[3] != `value "original"` {
			t.Errorf("read-only bind (and its submount) not readable: %q %q", lines[0], lines[3])
		}
		for i := 1; i <= 10; i++ {
			if i == 3 {
				continue
			}
			if !failed(lines[i]) {
				t.Errorf("action %d succeeded, want a failure: %s\n%s", i, lines[i], o)
			}
		}
		if lines[11] != "ok" || lines[12] != "ok" {
			t.Errorf("writes to the workdir and /tmp failed: %q %q", lines[11], lines[12])
		}
		for _, f := range []string{"file", "sub/file"} {
			if b, _ := os.ReadFile(filepath.Join(src, f)); string(b) != "original" {
				t.Errorf("host %s changed to %q", f, b)
			}
		}
		for _, f := range []string{"new", "sub/new"} {
			if _, err := os.Lstat(filepath.Join(src, f)); err == nil {
				t.Errorf("host file %s created through a read-only bind", f)
			}
		}
	})
	if !submount {
		t.Log("not root: the submount case was not tested")
	}
}

// Masked files read empty, masked directories list empty; their neighbours
// are intact (positive control).
func TestMasks(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		src := u.dir(t)
		os.Chmod(src, 0o755)
		os.WriteFile(filepath.Join(src, "secret.txt"), []byte("TOPSECRET"), 0o644)
		os.WriteFile(filepath.Join(src, "public.txt"), []byte("public"), 0o644)
		os.Mkdir(filepath.Join(src, "secretdir"), 0o755)
		os.WriteFile(filepath.Join(src, "secretdir", "key"), []byte("TOPSECRET"), 0o644)
		w := u.workdir(t)
		os.WriteFile(filepath.Join(w, "token"), []byte("TOPSECRET"), 0o644)
		o := u.jail(t, w, []string{"--ro", src + ":/data", "--mask", "/data/secret.txt", "--mask", "/data/secretdir", "--mask", filepath.Join(w, "token")},
			"read", "/data/secret.txt", ";",
			"ls", "/data/secretdir", ";",
			"read", "/data/secretdir/key", ";",
			"read", filepath.Join(w, "token"), ";",
			"write", filepath.Join(w, "token"), "3", ";",
			"read", "/data/public.txt")
		lines := o.ok(t, 6)
		if lines[0] != `value ""` {
			t.Errorf("masked file reads %s, want empty", lines[0])
		}
		if lines[1] != `value []` {
			t.Errorf("masked directory lists %s, want empty", lines[1])
		}
		if lines[2] != "errno ENOENT" {
			t.Errorf("file in a masked directory: %s, want errno ENOENT", lines[2])
		}
		if lines[3] != `value ""` || !failed(lines[4]) {
			t.Errorf("masked file in the rw workdir: read %s, write %s; want empty and a failure", lines[3], lines[4])
		}
		if lines[5] != `value "public"` {
			t.Errorf("unmasked neighbour reads %s", lines[5])
		}
		if b, _ := os.ReadFile(filepath.Join(w, "token")); string(b) != "TOPSECRET" {
			t.Errorf("host file behind a mask changed: %q", b)
		}
	})
}

// Nothing the jail mounted can be unmounted or remounted from inside, and no
// new mount can be made; the host mount table does not change.
func TestMountsLocked(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		before := hostMounts(t)
		w := u.workdir(t)
		o := u.jail(t, w, nil,
			"umount", "/usr", ";",
			"umount-detach", "/usr", ";",
			"umount-detach", w, ";",
			"umount-detach", "/proc", ";",
			"remount-rw", "/usr", ";",
			"remount-rw", "/", ";",
			"remount-ro", w, ";",
			"mkdir", "/tmp/x", ";",
			"mount-tmpfs", "/tmp/x", ";",
			"mount-tmpfs", w, ";",
			"write", "/usr/tjtest", "1", ";", // /usr still read-only
			"write", filepath.Join(w, "f"), "1") // the workdir still writable
		lines := o.ok(t, 12)
		for i, l := range lines[:10] {
			if i == 7 {
				if l != "ok" {
					t.Errorf("mkdir /tmp/x: %s", l)
				}
				continue
			}
			if !strings.HasPrefix(l, "errno E") {
				t.Errorf("mount operation %d succeeded or did not fail with an errno: %s\n%s", i, l, o)
			}
		}
		if !failed(lines[10]) || lines[11] != "ok" {
			t.Errorf("after the attempts: write /usr %s (want failure), write workdir %s (want ok)", lines[10], lines[11])
		}
		after := hostMounts(t)
		if strings.Join(before, "\n") != strings.Join(after, "\n") {
			t.Errorf("host mount table changed:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
	})
}

// hostMounts is the host's mount table (mount point and options), without
// the test's own directories (another test mounts a tmpfs there).
func hostMounts(t *testing.T) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var list []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || strings.HasPrefix(fields[4], base) {
			continue
		}
		list = append(list, fields[4]+" "+fields[5])
	}
	sort.Strings(list)
	return list
}

func TestNoCapabilities(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, nil, "caps", ";", "ids")
		o.ok(t, 2)
		var caps map[string]string
		o.value(t, 0, &caps)
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if caps[k] != "0000000000000000" {
				t.Errorf("%s = %q, want all zero", k, caps[k])
			}
		}
		if caps["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", caps["NoNewPrivs"])
		}
		var ids struct {
			UID, EUID, GID, EGID int
			Groups               []int
		}
		o.value(t, 1, &ids)
		if ids.UID != 1000 || ids.EUID != 1000 || ids.GID != 1000 || ids.EGID != 1000 {
			t.Errorf("identity %+v, want uid/gid 1000", ids)
		}
		for _, g := range ids.Groups {
			if g != 1000 {
				t.Errorf("supplementary group %d inside the jail (groups %v)", g, ids.Groups)
			}
		}
		if !o.report.Enforcement.NoNewPrivs {
			t.Errorf("report: no_new_privs false")
		}
	})
}

// Stage 2 blocks every signal while it works (it is forked from the Go
// init); the command must start with none blocked, as from a shell.
func TestCommandSignalMask(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jailRun(t, w, run{}, "/bin/sh", "-c", `while read k v; do case $k in SigBlk:) echo "$v";; esac; done < /proc/self/status`)
		if o.code != 0 || strings.TrimSpace(o.stdout) != "0000000000000000" {
			t.Errorf("the command's blocked signals: %q, want none\n%s", o.stdout, o)
		}
	})
}

// A descriptor the caller leaks into tooljail (no close-on-exec) does not
// reach the command.
func TestNoLeakedFDs(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		leak, err := os.Open(helperBin)
		if err != nil {
			t.Fatal(err)
		}
		defer leak.Close()
		o := u.jailRun(t, w, run{extraFiles: []*os.File{leak, leak}}, filepath.Join(w, "tjhelper"), "fds")
		o.ok(t, 1)
		var fds map[string]string
		o.value(t, 0, &fds)
		var names []string
		for k := range fds {
			names = append(names, k)
		}
		sort.Strings(names)
		if strings.Join(names, ",") != "0,1,2" {
			t.Errorf("descriptors inside the jail: %v, want only 0, 1, 2", fds)
		}
		for fd, target := range fds {
			if strings.Contains(target, "tjhelper") {
				t.Errorf("fd %s inside the jail points at the leaked file %s", fd, target)
			}
		}
		// Positive control: the same leak reaches a plain process.
		cmd := u.hostHelper(t, []*os.File{leak}, "fds")
		if !strings.Contains(cmd, `"3":"`+helperBin+`"`) {
			t.Errorf("positive control: fd 3 not inherited by a plain process: %s", cmd)
		}
	})
}

// hostHelper runs the helper on the host as u (no jail) with extra files.
func (u *user) hostHelper(t *testing.T, extra []*os.File, actions ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	files := append([]*os.File{nil, w, w}, extra...)
	p, err := os.StartProcess(helperBin, append([]string{"tjhelper"}, actions...), &os.ProcAttr{
		Files: files, Sys: &syscall.SysProcAttr{Credential: u.cred},
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<16)
	n, _ := r.Read(b)
	r.Close()
	p.Wait()
	return string(b[:n])
}

func TestEnvironment(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jailRun(t, w, run{
			args: []string{"--env", "ADDED=1", "--env", "LANG=C", "--pass-env", "PASSED", "--pass-env", "UNSET_IN_CALLER"},
			env:  []string{"TJ_SECRET_TOKEN=hunter2", "PASSED=yes", "AWS_SECRET_ACCESS_KEY=x", "LD_PRELOAD=/nonexistent.so"},
		}, filepath.Join(w, "tjhelper"), "env", ";", "write", "/home/sandbox/x", "1", ";", "stat", "/home/sandbox/x")
		lines := o.ok(t, 3)
		var env []string
		o.value(t, 0, &env)
		got := envMap(env)
		want := map[string]string{"ADDED": "1", "LANG": "C", "PASSED": "yes", "HOME": "/home/sandbox", "TERM": "dumb"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s=%q inside, want %q (env %v)", k, got[k], v, env)
			}
		}
		if got["PATH"] == "" || !strings.Contains(got["PATH"], "/usr/bin") {
			t.Errorf("PATH=%q", got["PATH"])
		}
		for k := range got {
			if _, ok := want[k]; !ok && k != "PATH" {
				t.Errorf("unexpected variable %s=%q inside the jail", k, got[k])
			}
		}
		if lines[1] != "ok" || !strings.Contains(lines[2], `"uid":1000`) {
			t.Errorf("HOME is not a private writable directory: %s %s", lines[1], lines[2])
		}
	})
}

// envMap is an environment ("K=V" entries) by name.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// Files the command writes to a read-write bind belong to the invoking user.
func TestRwBindOwnership(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		out := u.dir(t)
		o := u.jail(t, w, []string{"--rw", out + ":/out"},
			"write", filepath.Join(w, "inwork"), "10", ";",
			"mkdir", "/out/d", ";",
			"write", "/out/d/f", "10", ";",
			"stat", "/out/d/f")
		lines := o.ok(t, 4)
		if lines[0] != "ok" || lines[1] != "ok" || lines[2] != "ok" {
			t.Fatalf("writes failed\n%s", o)
		}
		if !strings.Contains(lines[3], `"uid":1000`) {
			t.Errorf("inside, the file should belong to uid 1000: %s", lines[3])
		}
		for _, p := range []string{filepath.Join(w, "inwork"), filepath.Join(out, "d"), filepath.Join(out, "d", "f")} {
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if int(st.Uid) != u.dirUID || int(st.Gid) != u.dirGID {
				t.Errorf("%s on the host is owned by %d:%d, want the bind's owner %d:%d", p, st.Uid, st.Gid, u.dirUID, u.dirGID)
			}
		}
	})
}

// A regular file or a directory given as stdin is relayed through a pipe,
// never handed over; there is no controlling terminal.
func TestStdinAndTTY(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		in := filepath.Join(u.dir(t), "input")
		content := strings.Repeat("stdin line\n", 1000)
		if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		type stdinInfo struct {
			FD0   string `json:"fd0"`
			Bytes int64  `json:"bytes"`
		}
		for _, c := range []struct {
			name  string
			path  string
			bytes int64
		}{{"file", in, int64(len(content))}, {"directory", filepath.Dir(in), 0}} {
			f, err := os.Open(c.path)
			if err != nil {
				t.Fatal(err)
			}
			o := u.jailRun(t, w, run{stdin: f}, filepath.Join(w, "tjhelper"), "stdin", ";", "tty", ";", "self")
			f.Close()
			o.ok(t, 3)
			var info stdinInfo
			o.value(t, 0, &info)
			if !strings.HasPrefix(info.FD0, "pipe:") || info.Bytes != c.bytes {
				t.Errorf("%s as stdin: inside fd 0 is %q with %d bytes, want a pipe with %d bytes", c.name, info.FD0, info.Bytes, c.bytes)
			}
			var tty map[string]string
			o.value(t, 1, &tty)
			if tty["open"] == "ok" || tty["tiocsti"] == "ok" {
				t.Errorf("terminal reachable: %v", tty)
			}
			var self map[string]int
			o.value(t, 2, &self)
			if self["sid"] != self["pid"] {
				t.Errorf("the command is not a session leader (new session): %v", self)
			}
		}
	})
}

// The jail's init is a fork of the supervisor, not a fresh program: it
// must keep none of the supervisor's other descriptors (only stdio, the
// supervisor socket, the jail's own tmpfs mounts it watches for filling
// up: /tmp, HOME, /dev/shm, and the command's mount namespace), and
// /proc/1/cmdline, which the jail can read, must
// not show the supervisor's arguments (host paths, flags, environment
// given with --env).
func TestInitHoldsNothingOfTheSupervisor(t *testing.T) {
	initWatched := map[string]bool{"/tmp": true, "/home/sandbox": true, "/dev/shm": true}
	// And the command's own mount namespace, held until its exit record
	// is sent (jail/internal/initc/init_internal.h's held_mntns): named here only when
	// it is that of the command, not the init's or the host's.
	const initFDs = "/dev/shm,/home/sandbox,/tmp,0,1,2,3,the command's mount namespace" // sorted
	eachUser(t, func(t *testing.T, u *user) {
		if _, err := os.Stat("/bin/sh"); err != nil {
			t.Skip("no /bin/sh here")
		}
		w := u.workdir(t)
		mark := marker("initstate")
		leak, err := os.Open(helperBin)
		if err != nil {
			t.Fatal(err)
		}
		defer leak.Close()
		// From the host, while the command sleeps: its parent is the init.
		type seen struct {
			comm, cmdline string
			fds           []string
			err           string
		}
		found := make(chan seen, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second * slow)
			for time.Now().Before(deadline) {
				for _, p := range hostProcs(mark) {
					pid := strings.SplitN(p, ":", 2)[0]
					if comm, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(comm)) != "sh" {
						continue
					}
					st, _ := os.ReadFile("/proc/" + pid + "/status")
					var ppid string
					for _, l := range strings.Split(string(st), "\n") {
						if v, ok := strings.CutPrefix(l, "PPid:"); ok {
							ppid = strings.TrimSpace(v)
						}
					}
					var s seen
					comm, _ := os.ReadFile("/proc/" + ppid + "/comm")
					cmdline, _ := os.ReadFile("/proc/" + ppid + "/cmdline")
					s.comm, s.cmdline = strings.TrimSpace(string(comm)), string(cmdline)
					// Right after the command's execve the init still
					// holds its stage 2 status pipe and the Landlock ruleset
					// for a moment: look again for up to a second while the
					// command sleeps (2 s), so a real leak still shows.
					for again := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
						ents, err := os.ReadDir("/proc/" + ppid + "/fd")
						s.err, s.fds = "", nil
						if err != nil {
							s.err = err.Error()
						}
						for _, e := range ents {
							n := e.Name()
							l, _ := os.Readlink("/proc/" + ppid + "/fd/" + n)
							if initWatched[l] {
								n = l // a watched mount: named by its path
							}
							if cmdNS, _ := os.Readlink("/proc/" + pid + "/ns/mnt"); strings.HasPrefix(l, "mnt:[") && l == cmdNS {
								n = "the command's mount namespace"
							}
							s.fds = append(s.fds, n)
						}
						sort.Strings(s.fds)
						if s.err != "" || strings.Join(s.fds, ",") == initFDs || time.Now().After(again) {
							break
						}
					}
					found <- s
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			found <- seen{err: "the command never showed up on the host"}
		}()
		o := u.jailRun(t, w, run{args: []string{"-q", "--env", "TJ_MARK=" + mark}, extraFiles: []*os.File{leak, leak}},
			"/bin/sh", "-c", "tr '\\0' '\\n' </proc/1/cmdline; sleep 2; true # "+mark)
		if o.code != 0 {
			t.Fatalf("want exit 0\n%s", o)
		}
		if strings.Contains(o.stdout, mark) || !strings.HasPrefix(o.stdout, "tooljail-init\n") {
			t.Errorf("/proc/1/cmdline in the jail: %q, want tooljail-init and none of the supervisor's arguments", o.stdout)
		}
		s := <-found
		sort.Strings(s.fds)
		if os.Geteuid() != 0 && strings.Contains(s.err, "permission denied") {
			// The init is not dumpable: only root may list its descriptors
			// (the root suite checks them for both users).
			t.Logf("the init's descriptors are not readable by this test: %s", s.err)
		} else if s.err != "" || s.comm != "tooljail-init" || strings.Join(s.fds, ",") != initFDs {
			t.Errorf("the init seen from the host: name %q, descriptors %v (%s), want tooljail-init with %s", s.comm, s.fds, s.err, initFDs)
		}
		if strings.Contains(s.cmdline, mark) {
			t.Errorf("the init's command line shows the supervisor's arguments: %q", s.cmdline)
		}
	})
}

// The init's memory is a copy of the supervisor's (its environment, and
// whatever the embedding program holds): nothing in the jail may read it.
// /proc/1/environ and /proc/1/mem stay closed to the command even with
// Landlock and seccomp switched off, where the command has the init's uid
// on the host: the command lives in a nested user namespace without the
// init's capabilities (the kernel's ptrace rule), and the init is not
// dumpable besides.
func TestInitMemoryUnreadable(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if _, err := os.Stat("/bin/sh"); err != nil {
			t.Skip("no /bin/sh here")
		}
		w := u.workdir(t)
		if u.uid == 0 {
			// Started by root with seccomp off, a root-owned workdir is
			// refused (it would need an idmapped bind): in a workdir of
			// another owner the jail runs as that owner.
			os.Chown(w, 4242, 4242)
		}
		secret := marker("secret")
		bare := filepath.Join(u.dir(t), "bare.toml")
		if err := os.WriteFile(bare, []byte("extends = \"default\"\n[landlock]\nenabled = false\n[seccomp]\nenabled = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `cat /proc/1/environ && echo environ-read || echo environ-denied; ` +
			`(exec 3</proc/1/mem) 2>/dev/null && echo mem-opened || echo mem-denied`
		for _, flags := range [][]string{{"-q"}, {"-q", "--profile", bare}} {
			o := u.jailRun(t, w, run{args: flags, env: []string{"TJ_SECRET=" + secret}}, "/bin/sh", "-c", script)
			if o.code != 0 {
				t.Fatalf("%v: want exit 0\n%s", flags, o)
			}
			if strings.Contains(o.stdout, secret) || !strings.Contains(o.stdout, "environ-denied") || !strings.Contains(o.stdout, "mem-denied") {
				t.Errorf("%v: the command read the init's memory: %q, want environ-denied and mem-denied", flags, o.stdout)
			}
		}
	})
}

// The jail's own processes, charged to the run's memory cap, take no
// transparent huge pages (PID 1 shows THP_enabled 0); the command gets
// the host's policy back (THP_enabled 1) before execve. Stage 2 shares the
// init's memory, so the init's own setting comes back only once the
// command has exec'd: the command waits for it (up to 5 s).
func TestHugePagesPolicy(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		for _, p := range []string{"/bin/sh", "/bin/cat", "/bin/grep", "/bin/sleep"} {
			if _, err := os.Stat(p); err != nil {
				t.Skipf("no %s here", p)
			}
		}
		w := u.workdir(t)
		o := u.jailRun(t, w, run{args: []string{"-q"}}, "/bin/sh", "-c",
			`cat /proc/self/status; i=0; while [ $i -lt 250 ] && ! grep -q '^THP_enabled:[[:space:]]*0' /proc/1/status; do sleep 0.02; i=$((i+1)); done; cat /proc/1/status`)
		if o.code != 0 {
			t.Fatalf("want exit 0\n%s", o)
		}
		var got []string
		for _, l := range strings.Split(o.stdout, "\n") {
			if strings.HasPrefix(l, "THP_enabled:") {
				got = append(got, strings.Join(strings.Fields(l), " "))
			}
		}
		if len(got) == 0 {
			t.Skip("this kernel's /proc/PID/status has no THP_enabled line")
		}
		if len(got) != 2 || got[0] != "THP_enabled: 1" || got[1] != "THP_enabled: 0" {
			t.Errorf("THP_enabled of the command, then of PID 1: %q, want 1 then 0", got)
		}
	})
}
