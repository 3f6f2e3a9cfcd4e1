package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// `tooljail serve`, black-box: a real server started as each suite user,
// driven over its socket with the raw protocol (serve_harness_test.go).
// A served run keeps every promise of `tooljail run`; the server refuses
// what it must; it cleans up after its runs, its clients and itself.

// hostUIDOf is the host uid a served run's command runs as (the report's
// enforcement.host_uid).
func hostUIDOf(t *testing.T, r *reply) int {
	t.Helper()
	var v struct {
		Enforcement struct {
			HostUID *int `json:"host_uid"`
		} `json:"enforcement"`
	}
	if err := json.Unmarshal(r.reportRaw, &v); err != nil || v.Enforcement.HostUID == nil {
		t.Fatalf("no enforcement.host_uid in the report (%v)\n%s", err, r)
	}
	return *v.Enforcement.HostUID
}

// What a served run sees and can do: the host's private directories are
// absent, / is read-only and the workdir writable, only lo, uid 1000
// inside (and never root on the host), a denied call named in the
// violations, stdin and env as sent (never the server's environment), and
// stdout/stderr streamed while the command runs.
func TestServeContainment(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")

		t.Run("filesystem", func(t *testing.T) {
			absent := []string{"/root", "/var", "/run", "/etc/shadow"}
			if ents, err := os.ReadDir("/home"); err == nil {
				for _, e := range ents {
					if e.Name() != "sandbox" {
						absent = append(absent, "/home/"+e.Name())
					}
				}
			}
			argv := []string{helper}
			for _, p := range absent {
				argv = append(argv, "stat", p, ";")
			}
			argv = append(argv, "write", filepath.Join(w, "written"), "3", ";", "write", "/written", "3", ";",
				"mountro", "/", ";", "stat", "/usr/bin")
			r := s.call(t, req{Argv: argv, Workdir: w})
			lines := r.ok(t, len(absent)+4)
			for i, p := range absent {
				if _, err := os.Lstat(p); err == nil && lines[i] != "errno ENOENT" {
					t.Errorf("host path %s inside a served run: %s, want errno ENOENT", p, lines[i])
				}
			}
			rest := lines[len(absent):]
			if rest[0] != "ok" {
				t.Errorf("writing in the workdir: %s, want ok", rest[0])
			}
			if fi, err := os.Stat(filepath.Join(w, "written")); err != nil || fi.Size() != 3 {
				t.Errorf("the file written in the workdir is not on the host: %v", err)
			}
			if !failed(rest[1]) {
				t.Errorf("writing /written: %s, want a failure (/ is read-only)", rest[1])
			}
			if rest[2] != `value "ro"` {
				t.Errorf("the mount of / is %s, want read-only", rest[2])
			}
			if !strings.HasPrefix(rest[3], "value ") {
				t.Errorf("positive control: stat /usr/bin: %s", rest[3])
			}
			if r.report.Workdir != w {
				t.Errorf("report workdir %q, want %q", r.report.Workdir, w)
			}
		})

		t.Run("network", func(t *testing.T) {
			r := s.call(t, req{Argv: []string{helper, "netifs", ";", "loopback"}, Workdir: w})
			lines := r.ok(t, 2)
			var ifs []struct {
				Name string `json:"name"`
				Up   bool   `json:"up"`
			}
			r.value(t, 0, &ifs)
			if len(ifs) != 1 || ifs[0].Name != "lo" || !ifs[0].Up {
				t.Errorf("interfaces %+v, want only lo, up", ifs)
			}
			if lines[1] != "ok" {
				t.Errorf("loopback inside a served run: %s", lines[1])
			}
			if !r.report.Enforcement.Namespaces["net"] {
				t.Errorf("the report says no network namespace\n%s", r)
			}
		})

		t.Run("uid", func(t *testing.T) {
			r := s.call(t, req{Argv: []string{helper, "ids"}, Workdir: w})
			r.ok(t, 1)
			var ids struct{ UID, EUID, GID, EGID int }
			r.value(t, 0, &ids)
			if ids.UID != 1000 || ids.EUID != 1000 || ids.GID != 1000 || ids.EGID != 1000 {
				t.Errorf("identity inside %+v, want uid/gid 1000", ids)
			}
			want := u.uid
			if u.uid == 0 {
				want = 524287 // the workdir is root's: the jail chooses a uid that owns nothing
				if u.dirUID != 0 {
					want = u.dirUID
				}
			}
			if got := hostUIDOf(t, r); got != want {
				t.Errorf("enforcement.host_uid = %d, want %d", got, want)
			}
		})

		t.Run("violation", func(t *testing.T) {
			if !u.check.enforced("seccomp") {
				t.Skipf("seccomp is not enforced for %s here", u.name)
			}
			r := s.call(t, req{Argv: []string{helper, "prlimit", "1", "CPU", "1", "1", ";", "exit", "3"}, Workdir: w})
			if r.report == nil || r.report.Status != "exited" || r.report.ExitCode != 3 {
				t.Fatalf("want status exited, exit 3\n%s", r)
			}
			if l := r.outLines(); len(l) != 1 || l[0] != "errno EPERM" {
				t.Errorf("prlimit(1, RLIMIT_CPU): %q, want errno EPERM", l)
			}
			if !u.check.enforced("seccomp-notify") {
				return
			}
			var pr ptReport
			if err := json.Unmarshal(r.reportRaw, &pr); err != nil {
				t.Fatal(err)
			}
			if v := pr.find("prlimit64"); v == nil || v.Kind != "syscall" || v.Action != "denied" || v.Count != 1 {
				t.Errorf("violations %+v, want prlimit64 denied once", pr.Violations)
			}
		})

		t.Run("stdin-env", func(t *testing.T) {
			in := strings.Repeat("line of stdin\n", 5000)
			r := s.call(t, req{Argv: []string{"/bin/cat"}, Stdin: b64(in)})
			if r.report == nil || r.report.ExitCode != 0 || r.stdout() != in {
				t.Fatalf("stdin did not come back through cat: %d bytes of %d\n%s", len(r.stdout()), len(in), trunc(r.String()))
			}
			r = s.call(t, req{Argv: []string{helper, "stdin", ";", "env"}, Workdir: w, Env: map[string]string{"TJ_SENT": "yes"}})
			r.ok(t, 2)
			var st struct {
				Fd0   string `json:"fd0"`
				Bytes int    `json:"bytes"`
			}
			r.value(t, 0, &st)
			if st.Fd0 != "/dev/null" || st.Bytes != 0 {
				t.Errorf("without stdin in the request: %+v, want /dev/null and 0 bytes", st)
			}
			var env []string
			r.value(t, 1, &env)
			joined := "\n" + strings.Join(env, "\n") + "\n"
			if !strings.Contains(joined, "\nTJ_SENT=yes\n") {
				t.Errorf("the request's env is missing: %q", env)
			}
			if strings.Contains(joined, "TJ_SERVE_SECRET") {
				t.Errorf("the server's own environment reached the run: %q", env)
			}
		})

		t.Run("stream", func(t *testing.T) {
			r := s.call(t, req{Argv: []string{"/bin/sh", "-c", "echo one; echo two >&2; sleep 1; echo three"}, Stream: true})
			if r.report == nil || r.report.ExitCode != 0 {
				t.Fatalf("want a report, exit 0\n%s", r)
			}
			got := map[string]string{}
			for _, sl := range r.streams {
				got[sl.Stream] += string(sl.Data)
			}
			if got["stdout"] != "one\nthree\n" || got["stderr"] != "two\n" {
				t.Errorf("streamed stdout %q, stderr %q; want %q and %q", got["stdout"], got["stderr"], "one\nthree\n", "two\n")
			}
			// Sent once: the report counts what the stream carried.
			if r.report.Stdout.Text != nil || r.report.Stderr.Text != nil || r.report.Stdout.Bytes != 10 || r.report.Stderr.Bytes != 4 {
				t.Errorf("a streamed run's report holds the output, or miscounts it\n%s", r)
			}
			// The first chunk comes while the command sleeps, not with the report.
			if gap := r.final.Sub(r.firstStream); gap < 500*time.Millisecond {
				t.Errorf("the first chunk came %s before the report: not streamed while the command ran", gap)
			}
		})
	})
}

// A served run leaves nothing: its background process is gone once the
// report is in, and the next call sees neither its /tmp files nor its
// processes.
func TestServeFreshJail(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		sleepArgs, mark := sleepMark()
		file := "/tmp/" + marker("tmpfile")
		r := s.call(t, req{Argv: []string{"/bin/sh", "-c", fmt.Sprintf("sleep %s & echo x > %s; cat %s", sleepArgs, file, file)}, Workdir: w})
		if r.report == nil || r.report.ExitCode != 0 || r.stdout() != "x\n" {
			t.Fatalf("want exit 0 and the file read back (positive control)\n%s", r)
		}
		hostUID := hostUIDOf(t, r)
		requireGone(t, mark)
		if left := procsOf(hostUID, mark); len(left) > 0 {
			t.Errorf("processes of the jail's host uid %d left: %v", hostUID, left)
		}
		r = s.call(t, req{Argv: []string{filepath.Join(w, "tjhelper"), "stat", file, ";", "ps"}, Workdir: w})
		lines := r.ok(t, 2)
		if lines[0] != "errno ENOENT" {
			t.Errorf("the second call sees the first's %s: %s", file, lines[0])
		}
		var procs []proc
		r.value(t, 1, &procs)
		for _, p := range procs {
			if strings.Contains(p.Cmdline, "sleep") {
				t.Errorf("the second call sees the first's process: %+v", p)
			}
		}
	})
}

func TestServeTimeout(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		orphan := marker("sorphan")
		tmo := 2 * time.Second * slow
		start := time.Now()
		r := s.call(t, req{Argv: []string{filepath.Join(w, "tjhelper"), "spawn", orphan, ";", "sleep", "60s"}, Workdir: w,
			Limits: map[string]any{"timeout": tmo.String()}})
		took := time.Since(start)
		if r.report == nil || r.report.Status != "timeout" || r.report.ExitCode != 124 {
			t.Fatalf("want status timeout, exit_code 124\n%s", r)
		}
		if took < tmo || took > 8*tmo {
			t.Errorf("the run took %s with a %s timeout", took, tmo)
		}
		if r.report.Limits.TimeoutMs != tmo.Milliseconds() {
			t.Errorf("limits.timeout_ms %d, want %d", r.report.Limits.TimeoutMs, tmo.Milliseconds())
		}
		requireGone(t, orphan)
	})
}

func TestServeMemoryCap(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		u.needCgroup(t)
		s := u.startServer(t, "")
		w := u.workdir(t)
		r := s.call(t, req{Argv: []string{filepath.Join(w, "tjhelper"), "alloc", "1073741824"}, Workdir: w,
			Limits: map[string]any{"memory": "64M"}})
		if r.report == nil || r.report.Status != "memory_limit" || r.report.ExitCode != 137 {
			t.Fatalf("want status memory_limit, exit_code 137\n%s", r)
		}
		if r.report.Limits.MemoryBytes != 64*mib {
			t.Errorf("limits.memory_bytes %d, want %d", r.report.Limits.MemoryBytes, 64*mib)
		}
	})
}

// Requests the server must refuse with one error line, code 125, before
// any run; a tighter limit is taken (positive control).
func TestServeRefusals(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		dir := u.serverDir(t)
		capped := u.cappedProfile(t, dir)
		s := u.startServer(t, dir, "--profile", capped)
		mark := marker("refused")
		argv := []string{"/bin/echo", mark}
		for _, c := range []struct {
			name string
			line string
			want []string
		}{
			{"memory over the ceiling", `{"argv":["/bin/echo","` + mark + `"],"limits":{"memory":"2G"}}`, []string{"limits.memory: 2G is above the ceiling", `(limits.max.memory = "1G")`}},
			{"unlimited timeout", `{"argv":["/bin/echo","` + mark + `"],"limits":{"timeout":"0"}}`, []string{"limits.timeout: 0 is above the ceiling"}},
			{"pids over the ceiling", `{"argv":["/bin/echo","` + mark + `"],"limits":{"pids":100000}}`, []string{"pids"}},
			{"unknown profile", `{"argv":["/bin/echo","` + mark + `"],"profile":"nosuch-profile"}`, []string{"nosuch-profile"}},
			{"unknown network", `{"argv":["/bin/echo","` + mark + `"],"network":"everywhere"}`, []string{"network"}},
			{"garbage", "this is not JSON", nil},
			{"empty argv", `{"argv":[]}`, []string{"argv"}},
			{"no argv", `{"id":"x"}`, []string{"argv"}},
			{"relative workdir", `{"argv":["/bin/echo","` + mark + `"],"workdir":"rel/dir"}`, []string{"workdir"}},
		} {
			t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
				r, err := s.try(u, []byte(c.line+"\n"))
				if err != nil {
					t.Fatalf("%v\n%s", err, r)
				}
				r.refused(t, c.want...)
			})
		}
		// Nothing of the refused requests ran.
		if b, _ := os.ReadFile(s.audit); strings.Contains(string(b), mark) {
			t.Errorf("a refused request ran: %s", b)
		}
		r := s.call(t, req{Argv: argv, Limits: map[string]any{"memory": "256M", "timeout": "20s", "pids": 64, "cpu_time": "30s"}, Network: "none"})
		if r.report == nil || r.report.ExitCode != 0 || r.stdout() != mark+"\n" {
			t.Fatalf("a tighter request was not run\n%s", r)
		}
		l := r.report.Limits
		if l.MemoryBytes != 256*mib || l.TimeoutMs != 20000 || l.Pids != 64 || l.CPUTimeMs != 30000 {
			t.Errorf("limits %+v, want memory 256M, timeout 20s, pids 64, cpu_time 30s", l)
		}
		// Looser than the profile, within its ceiling, and another network
		// mode: what `tooljail run` takes for the same profile.
		r = s.call(t, req{Argv: argv, Limits: map[string]any{"memory": "1G", "timeout": "1h", "pids": 1000}, Network: "host"})
		if r.report == nil || r.report.ExitCode != 0 || r.report.Limits.MemoryBytes != 1024*mib || r.report.Limits.Pids != 1000 {
			t.Fatalf("a looser request within the ceiling was not run as asked\n%s", r)
		}
		// The CLI refuses the same limit of the same profile in the same words.
		o := u.exec(t, run{args: append([]string{"run", "--profile", capped, "--no-workdir", "--memory", "2G"}, "--", "/bin/true")})
		want := fmt.Sprintf("limits.memory: 2G is above the ceiling of profile %s (limits.max.memory = \"1G\"); ask for at most 1G, or raise the ceiling in the profile", capped)
		oneLineError(t, o, want)
		rs, err := s.try(u, []byte(`{"argv":["/bin/true"],"limits":{"memory":"2G"}}`+"\n"))
		if err != nil || rs.errMsg != want {
			t.Errorf("the server's words %q (%v), want the CLI's %q", rs.errMsg, err, want)
		}
	})
}

// cappedProfile writes dir/capped.toml, owned by u: the default profile
// (with the layers u cannot have degraded) under a ceiling of memory 1G,
// timeout 1h, pids 1000.
func (u *user) cappedProfile(t *testing.T, dir string) string {
	t.Helper()
	q := make([]string, len(u.degraded))
	for i, d := range u.degraded {
		q[i] = fmt.Sprintf("%q", d)
	}
	p := filepath.Join(dir, "capped.toml")
	body := fmt.Sprintf("extends = \"default\"\nallow_degraded = [%s]\n[limits.max]\nmemory = \"1G\"\ntimeout = \"1h\"\npids = 1000\n", strings.Join(q, ", "))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	return p
}

// Only the server's user reaches its socket: uid 65534 connecting to
// root's server, and another unprivileged uid connecting to uid 65534's,
// get EACCES (the socket is 0600 in a 0700 directory). Root passes any
// file permission, so root is not refused by uid 65534's server: that
// direction does not apply.
func TestServeOtherUIDRefused(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if len(users) < 2 {
		t.Skip("needs root and uid 65534")
	}
	root, nobody := users[0], users[1]
	other := &user{name: "uid4243", uid: 4243, gid: 4243, cred: &syscall.Credential{Uid: 4243, Gid: 4243, Groups: []uint32{}}}
	t.Parallel()
	for _, c := range []struct{ server, client *user }{{root, nobody}, {nobody, other}} {
		t.Run(c.server.name+"-server", func(t *testing.T) {
			t.Parallel()
			s := c.server.startServer(t, "")
			if fi, err := os.Lstat(s.sock); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the socket: %v %v, want mode 0600", fi, err)
			}
			conn, err := dialAs(c.client, s.sock)
			if conn != nil {
				conn.Close()
			}
			if !errors.Is(err, unix.EACCES) {
				t.Errorf("a client of another uid connecting: %v, want EACCES", err)
			}
			// Positive control: the server's own user is served.
			if r := s.call(t, req{Argv: []string{"/bin/true"}}); r.report == nil || r.report.ExitCode != 0 {
				t.Errorf("the server's own user is not served\n%s", r)
			}
		})
	}
}

// 50 clients at once: each gets its own report; one sending garbage gets
// an error line; one that disconnects mid-run has its run cancelled (the
// audit log says so) and nothing of it left.
func TestServeConcurrent(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		sleepArgs, gone := sleepMark()
		const n = 50
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				switch i {
				case 0:
					r, err := s.try(u, []byte("{\"argv\": [garbage\n"))
					if err != nil {
						t.Errorf("garbage client: %v", err)
						return
					}
					if r.errCode != 125 || r.report != nil || len(r.lines) != 1 {
						t.Errorf("garbage client: want one error line, code 125\n%s", r)
					}
				case 1:
					c, err := dialAs(u, s.sock)
					if err != nil {
						t.Errorf("disconnecting client: %v", err)
						return
					}
					line, _ := json.Marshal(req{Argv: []string{"/bin/sh", "-c", "echo started; exec sleep " + sleepArgs}, Stream: true})
					c.Write(append(line, '\n'))
					buf := make([]byte, 1)
					c.SetReadDeadline(time.Now().Add(time.Minute * slow))
					if _, err := c.Read(buf); err != nil {
						t.Errorf("disconnecting client: no stream line: %v", err)
					}
					c.Close()
				default:
					mark := fmt.Sprintf("%s-%d", marker("conc"), i)
					q := req{Argv: []string{"/bin/echo", mark}}
					if i%2 == 0 {
						q.Workdir = w
					}
					r, err := s.try(u, mustJSON(t, q))
					if err != nil {
						t.Errorf("client %d: %v\n%s", i, err, r)
						return
					}
					if r.report == nil || r.report.ExitCode != 0 || r.stdout() != mark+"\n" {
						t.Errorf("client %d: want its own output %q\n%s", i, mark, r)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		a := s.auditFor(t, gone)
		if a.Status != "cancelled" {
			t.Errorf("the disconnected client's run: audit status %q, want cancelled", a.Status)
		}
		requireGone(t, gone)
	})
}

// SIGTERM drains: the running call ends with its report, new connections
// fail (or are refused with an error line), the socket file goes, exit 0.
func TestServeSigterm(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		p := s.start(t, req{Argv: []string{"/bin/sh", "-c", "echo started; sleep 2; echo done"}})
		s.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		if r, err := s.try(u, mustJSON(t, req{Argv: []string{"/bin/true"}})); err == nil && r.errMsg == "" {
			t.Errorf("a new call while draining was served\n%s", r)
		} else if err == nil {
			r.refused(t)
		}
		r, err := p.finish()
		if err != nil {
			t.Fatalf("the running call: %v\n%s\nserver log:\n%s", err, r, s.log())
		}
		if r.report == nil || r.report.Status != "exited" || r.stdout() != "started\ndone\n" {
			t.Errorf("the running call did not finish with its report\n%s", r)
		}
		s.requireExit(t, 0)
		if _, err := os.Lstat(s.sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket %s is still there after SIGTERM (%v)", s.sock, err)
		}
	})
}

// SIGKILL of the server: its runs die with it; the next server on the same
// socket replaces the stale socket file and removes the dead server's
// cgroups; it serves.
func TestServeSigkill(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		dir := u.serverDir(t)
		s := u.startServer(t, dir)
		sleepArgs, mark := sleepMark()
		p := s.start(t, req{Argv: []string{"/bin/sh", "-c", "echo started; exec sleep " + sleepArgs}})
		s.cmd.Process.Kill()
		<-s.exited
		if r, err := p.finish(); err == nil {
			t.Errorf("the call of a killed server got a final line\n%s", r)
		}
		requireGone(t, mark)
		if fi, err := os.Lstat(s.sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("no stale socket file after SIGKILL (%v): nothing for the next server to replace", err)
		}
		next := u.startServer(t, dir)
		r := next.call(t, req{Argv: []string{"/bin/echo", "again"}})
		if r.report == nil || r.stdout() != "again\n" {
			t.Fatalf("the next server does not serve\n%s", r)
		}
		if s.killedInOwnCgroup(t) {
			return
		}
		// The suite's leftover check on the dead server: nothing of it is
		// left once the next one has served a call.
		s.rc.check(t, s.cmd.Process.Pid)
	})
}

// `tooljail run --server` (and TOOLJAIL_SERVER): the run goes to the
// server, with the exit codes and outputs of a run jailed here; flags the
// server's profile decides are refused by name.
func TestServeRunCLI(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")
		out := u.dir(t)
		rep := filepath.Join(out, "report.json")
		in := filepath.Join(out, "stdin")
		if err := os.WriteFile(in, []byte("to the command\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(in, u.dirUID, u.dirGID); err != nil {
			t.Fatal(err)
		}

		// The command's exit code, its output streamed, the report written.
		o := u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "--report", rep, "--", helper, "ids", ";", "stderr", "3", ";", "exit", "3"}})
		var r report
		b, err := os.ReadFile(rep)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if o.code != 3 || err != nil || r.Status != "exited" || r.ExitCode != 3 || r.Workdir != w {
			t.Fatalf("want exit 3 and a report (%v)\n%s\nreport: %s", err, o, b)
		}
		if !strings.Contains(o.stdout, `"uid":1000`) || o.stderr != "abc" {
			t.Errorf("stdout %q, stderr %q: want the command's own", o.stdout, o.stderr)
		}
		if r.Stdout.Text != nil || r.Stdout.Bytes != int64(len(o.stdout)) {
			t.Errorf("report stdout %+v, want counts only (%d bytes)", r.Stdout, len(o.stdout))
		}

		// --json through TOOLJAIL_SERVER, stdin sent.
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		o = u.exec(t, run{args: []string{"run", "--no-workdir", "--json", "--", "/bin/cat"}, env: []string{"TOOLJAIL_SERVER=" + s.sock}, stdin: f})
		r = report{}
		if err := json.Unmarshal([]byte(o.stdout), &r); o.code != 0 || err != nil || r.Stdout.Text == nil || *r.Stdout.Text != "to the command\n" {
			t.Errorf("--json with stdin: %v\n%s", err, o)
		}

		// A limit hit: the exit code and the summary line.
		o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--no-workdir", "--timeout", "1s", "--", "/bin/sleep", "30"}})
		if o.code != 124 || !strings.Contains(o.stderr, "tooljail: timeout") {
			t.Errorf("want exit 124 and the summary line\n%s", o)
		}

		// A looser limit goes, as it would without a server.
		o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--no-workdir", "--json", "--memory", "2G", "--", "/bin/true"}})
		if o.code != 0 || !strings.Contains(o.stdout, `"memory_bytes": 2147483648`) {
			t.Errorf("--memory 2G through the server: want exit 0 and the limit in the report\n%s", o)
		}
		// Refused: a flag the server decides, no server.
		oneLineError(t, u.exec(t, run{args: []string{"run", "--server", s.sock, "--ro", "/etc", "--", "/bin/true"}}), "--ro")
		oneLineError(t, u.exec(t, run{args: []string{"run", "--server", filepath.Join(out, "nosock"), "--no-workdir", "--", "/bin/true"}}), "nosock", "tooljail serve")
	})
}

// refusedAudit is the part of a refused request's audit line the tests
// read.
type refusedAudit struct {
	Status    string `json:"status"`
	ExitCode  int    `json:"exit_code"`
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
	Peer      *struct {
		UID, GID, PID int
	} `json:"peer"`
}

// refusedLines are the audit lines of refused requests in s's audit log.
func (s *server) refusedLines(t *testing.T) []refusedAudit {
	t.Helper()
	b, err := os.ReadFile(s.audit)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []refusedAudit
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(l, `"status":"refused"`) {
			continue
		}
		var a refusedAudit
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

// check fails unless a is a refused request's line for a client of u with
// the request id id ("" for none).
func (a refusedAudit) check(t *testing.T, u *user, id string) {
	t.Helper()
	if a.Status != "refused" || a.ExitCode != 125 || a.Peer == nil || a.Peer.UID != u.uid || a.Peer.GID != u.gid || a.Peer.PID <= 0 || a.RequestID != id {
		t.Errorf("refused audit line %+v (peer %+v): want status refused, exit_code 125, peer uid %d gid %d, request_id %q", a, a.Peer, u.uid, u.gid, id)
	}
}

// peerPID is the pid of the process at the other end of c (SO_PEERCRED):
// for a connection to a server, the server.
func peerPID(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	pid := -1
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// --max-runs: with that many runs going, the next request is refused at
// once with an error line naming the flag, and audited as refused with the
// client's identity; once a run ends, calls are served again.
func TestServeMaxRuns(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "", "--max-runs", "2", "--queue-timeout", "0")
		var marks []string
		var going []*pending
		for range 2 {
			args, mark := sleepMark()
			marks = append(marks, mark)
			going = append(going, s.start(t, req{Argv: []string{"/bin/sh", "-c", "echo started; exec sleep " + args}}))
		}
		r, err := s.try(u, mustJSON(t, req{ID: "third", Argv: []string{"/bin/true"}}))
		if err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		r.refused(t, "--max-runs", "retry")
		refused := s.refusedLines(t)
		if len(refused) != 1 {
			t.Fatalf("%d refused audit lines, want 1", len(refused))
		}
		refused[0].check(t, u, "third")
		// One client goes: its run is cancelled, and its slot freed.
		going[0].c.Close()
		if a := s.auditFor(t, marks[0]); a.Status != "cancelled" {
			t.Errorf("the run of the client that went: %s, want cancelled", a.Status)
		}
		deadline := time.Now().Add(15 * time.Second * slow)
		for {
			r, err := s.try(u, mustJSON(t, req{Argv: []string{"/bin/echo", "again"}}))
			if err != nil {
				t.Fatalf("%v\n%s", err, r)
			}
			if r.report != nil && r.stdout() == "again\n" {
				break
			}
			// The slot is freed just after the audit line: a call may
			// still come too early.
			if !strings.Contains(r.errMsg, "--max-runs") || time.Now().After(deadline) {
				t.Fatalf("a call after a run ended\n%s", r)
			}
			time.Sleep(20 * time.Millisecond)
		}
		going[1].c.Close()
		s.auditFor(t, marks[1])
		requireGone(t, marks...)
	})
}

// Connections that say nothing: 100 of them do not stop a call; each is
// refused after 10 s with an error line and an audit line. With
// --max-runs 1, a fifth connection waiting for its request line is
// refused at once.
func TestServeIdleConnections(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		var idle []net.Conn
		for range 100 {
			c, err := dialAs(u, s.sock)
			if err != nil {
				t.Fatalf("connection %d: %v", len(idle), err)
			}
			defer c.Close()
			idle = append(idle, c)
		}
		if r := s.call(t, req{Argv: []string{"/bin/echo", "through"}}); r.stdout() != "through\n" {
			t.Errorf("a call with 100 idle connections open\n%s", r)
		}
		for i, c := range idle {
			c.SetReadDeadline(time.Now().Add(time.Minute * slow))
			r, err := readReply(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("idle connection %d: %v\n%s", i, err, r)
			}
			r.refused(t, "no request within 10s")
		}
		refused := s.refusedLines(t)
		if len(refused) != len(idle) {
			t.Errorf("%d refused audit lines, want %d", len(refused), len(idle))
		}
		for _, a := range refused {
			a.check(t, u, "")
		}

		one := u.startServer(t, "", "--max-runs", "1")
		// A call first: the server has long seen the end of startServer's
		// own probe connection.
		one.call(t, req{Argv: []string{"/bin/true"}})
		for range 4 {
			c, err := dialAs(u, one.sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		c, err := dialAs(u, one.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Minute * slow))
		r, err := readReply(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a fifth waiting connection: %v\n%s", err, r)
		}
		r.refused(t, "--max-runs", "waiting")
		if refused := one.refusedLines(t); len(refused) != 1 {
			t.Errorf("%d refused audit lines, want 1", len(refused))
		} else {
			refused[0].check(t, u, "")
		}
	})
}

// Every refused request is one audit line, status refused, with the
// client's uid, gid and pid, and its id when it had a valid one; an id
// over 256 bytes is refused by name, one of 256 taken.
func TestServeRefusalsAudited(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		long := strings.Repeat("x", 257)
		for i, c := range []struct {
			line, want, id string
		}{
			{"this is not JSON", "malformed", ""},
			{`{"id":"p","argv":["/bin/true"],"profile":"nosuch-profile"}`, "nosuch-profile", "p"},
			{`{"id":"l","argv":["/bin/true"],"limits":{"memory":"lots"}}`, "limits.memory", "l"},
			{`{"id":"` + long + `","argv":["/bin/true"]}`, "id: 257 bytes", ""},
		} {
			r, err := s.try(u, []byte(c.line+"\n"))
			if err != nil {
				t.Fatalf("%v\n%s", err, r)
			}
			r.refused(t, c.want)
			refused := s.refusedLines(t)
			if len(refused) != i+1 {
				t.Fatalf("after %.30q: %d refused audit lines, want %d", c.line, len(refused), i+1)
			}
			refused[i].check(t, u, c.id)
			if !strings.Contains(refused[i].Reason, c.want) {
				t.Errorf("after %.30q: audit reason %q, want it to say %q", c.line, refused[i].Reason, c.want)
			}
		}
		id := strings.Repeat("y", 256)
		if r := s.call(t, req{ID: id, Argv: []string{"/bin/true"}}); r.report == nil || r.report.ExitCode != 0 {
			t.Errorf("a 256-byte id\n%s", r)
		}
	})
}

// Two servers started at once on the same stale socket, 20 times: exactly
// one serves, the other exits 125 with one line naming the live one's pid
// and the lock file. The last one drains and removes socket and lock.
func TestServeLockRace(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		dir := u.serverDir(t)
		first := u.startServer(t, dir)
		first.cmd.Process.Kill()
		<-first.exited
		first.killedInOwnCgroup(t)
		var winner *server
		for round := range 20 {
			if fi, err := os.Lstat(filepath.Join(dir, "sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
				t.Fatalf("round %d: no stale socket (%v)", round, err)
			}
			pair := []*server{u.launchServer(t, dir), u.launchServer(t, dir)}
			var loser *server
			select {
			case <-pair[0].exited:
				loser, winner = pair[0], pair[1]
			case <-pair[1].exited:
				loser, winner = pair[1], pair[0]
			case <-time.After(30 * time.Second * slow):
				t.Fatalf("round %d: both servers still run after %s\n%s\n%s", round, 30*time.Second*slow, pair[0].log(), pair[1].log())
			}
			want := fmt.Sprintf("tooljail: a server is already listening on %s (pid %d holds %s.lock); stop it first", winner.sock, winner.cmd.Process.Pid, winner.sock)
			if code := loser.cmd.ProcessState.ExitCode(); code != 125 || !strings.HasPrefix(loser.log(), want) || strings.Count(loser.log(), "\n") != 1 {
				t.Fatalf("round %d: the loser exited %d: %q; want 125 and one line %q", round, code, loser.log(), want)
			}
			winner.waitReady(t)
			c, err := dialAs(u, winner.sock)
			if err != nil {
				t.Fatal(err)
			}
			if pid := peerPID(t, c); pid != winner.cmd.Process.Pid {
				t.Errorf("round %d: the socket is served by pid %d, not the winner %d", round, pid, winner.cmd.Process.Pid)
			}
			c.Close()
			if round < 19 {
				// Killed, it leaves a stale socket and lock file.
				winner.cmd.Process.Kill()
				<-winner.exited
				winner.killedInOwnCgroup(t)
			}
		}
		if r := winner.call(t, req{Argv: []string{"/bin/echo", "last"}}); r.stdout() != "last\n" {
			t.Errorf("the last winner does not serve\n%s", r)
		}
		winner.stop(t)
		if _, err := os.Lstat(winner.sock + ".lock"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the lock file after the drain: %v", err)
		}
	})
}

// Warm jails: after a call, the server builds jails of its shape ahead of
// the next call (parked inits, children of the server); the next call of
// that shape runs in one of them (its command is a child of a parked
// init), and its jail is gone after it, never used again.
func TestServeWarmJail(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		if r := s.call(t, req{Argv: []string{"/bin/true"}, Workdir: w}); r.report == nil || r.report.ExitCode != 0 {
			t.Fatalf("the first call\n%s", r)
		}
		// A call takes a parked jail when one is ready. The test sees the
		// inits as soon as they are cloned, before their jails are built
		// and parked: under emulation and load a call can come first and
		// run cold. Then it is ended and the next call tried, three in all.
		var p *pending
		var pid, mark string
		var ppid int
		var parked []int
		for attempt := 1; ; attempt++ {
			parked = nil
			deadline := time.Now().Add(20 * time.Second * slow)
			for len(parked) < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				parked = childrenNamed(s.cmd.Process.Pid, "tooljail-init")
			}
			if len(parked) < 2 {
				t.Fatalf("%d warm jails after a call, want 2 (--warm default)\nserver log:\n%s", len(parked), s.log())
			}
			var sleepArgs string
			sleepArgs, mark = sleepMark()
			p = s.start(t, req{Argv: []string{"/bin/sh", "-c", "echo started; exec sleep " + sleepArgs}, Workdir: w})
			cmds := settledProcs(mark)
			if len(cmds) != 1 {
				t.Fatalf("want the one marked command running, got %q", cmds)
			}
			pid, _, _ = strings.Cut(cmds[0], ":")
			ppid, _ = strconv.Atoi(parentOf(pid))
			if slices.Contains(parked, ppid) {
				break
			}
			if attempt == 3 {
				t.Fatalf("the command %s of each of 3 calls is a child of %d, not of a warm jail's init %v", pid, ppid, parked)
			}
			if n, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
			p.finish()
			requireGone(t, mark)
		}
		// End it: kill the command from the host (the jail is not this
		// test's to enter); its report says so, and the init is gone.
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
		if r, err := p.finish(); err != nil || r.report == nil || r.report.Signal != "SIGKILL" {
			t.Errorf("the killed call: %v\n%s", err, r)
		}
		requireGone(t, mark)
		if _, err := os.Stat("/proc/" + strconv.Itoa(ppid)); err == nil {
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", ppid)); !strings.Contains(string(st), ") Z") {
				t.Errorf("the used warm jail's init %d is still there after its call", ppid)
			}
		}
	})
}

// childrenNamed lists the pids of ppid's children whose comm is name.
func childrenNamed(ppid int, name string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.HasSuffix(s[:i], "("+name) {
			continue
		}
		var state string
		var parent int
		if _, err := fmt.Sscan(s[i+2:], &state, &parent); err == nil && parent == ppid && state != "Z" {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}
