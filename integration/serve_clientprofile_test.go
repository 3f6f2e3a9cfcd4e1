package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `tooljail serve --allow-client-profiles`: a request may bring a
// profile of its own (profile_toml), a text that extends a shipped or
// served profile. Without the flag it is refused; with it, the run gets
// that profile and no other; a bind of it that shows the server's socket
// directory is refused, and so is an extends that names a file.
func TestServeClientProfile(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		plain := u.startServer(t, "")
		s := u.startServer(t, "", "--allow-client-profiles")
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")
		// The served profile, by the name the server serves it under: the
		// shipped default, or for a user who needs degraded layers, the
		// harness's file that allows them.
		base := "default"
		if s.profile != "" {
			base = s.profile
		}
		mine := fmt.Sprintf("extends = %q\n[limits]\npids = 17\nnofile = 77\n[limits.max]\npids = 20\n[env]\nset = { TJ_CLIENT_PROFILE = \"mine\" }\n", base)

		t.Run("refused-without-the-flag", func(t *testing.T) {
			mark := marker("clientprofile-refused")
			r := plain.callProfileTOML(t, req{Argv: []string{"/bin/echo", mark}, Workdir: w}, mine)
			r.refused(t, "profile_toml", "--allow-client-profiles")
			if b, _ := os.ReadFile(plain.audit); strings.Contains(string(b), mark) {
				t.Errorf("the refused request ran: %s", b)
			}
		})

		t.Run("enforced", func(t *testing.T) {
			r := s.callProfileTOML(t, req{Argv: []string{helper, "env", ";", "rlimits"}, Workdir: w}, mine)
			r.ok(t, 2)
			var env []string
			r.value(t, 0, &env)
			var rl map[string][2]string
			r.value(t, 1, &rl)
			if !contains(env, "TJ_CLIENT_PROFILE=mine") {
				t.Errorf("the client profile's env.set is not in the run's environment: %v", env)
			}
			if rl["NOFILE"] != [2]string{"77", "77"} {
				t.Errorf("RLIMIT_NOFILE %v, want the client profile's 77", rl["NOFILE"])
			}
			if r.report.Profile != "profile_toml" || r.report.Limits.Pids != 17 || r.report.Limits.NoFile != 77 {
				t.Errorf("report: profile %q, pids %d, nofile %d; want profile_toml, 17, 77", r.report.Profile, r.report.Limits.Pids, r.report.Limits.NoFile)
			}
			// The request's limits go up to the client profile's ceiling,
			// as the CLI's flags would.
			r = s.callProfileTOML(t, req{Argv: []string{helper, "exit", "0"}, Workdir: w, Limits: map[string]any{"pids": 20}}, mine)
			if r.report == nil || r.report.Limits.Pids != 20 {
				t.Errorf("pids 20, within the ceiling, was not taken\n%s", r)
			}
			r = s.callProfileTOML(t, req{Argv: []string{helper, "exit", "0"}, Workdir: w, Limits: map[string]any{"pids": 21}}, mine)
			r.refused(t, "limits.pids: 21 is above the ceiling of profile profile_toml")
			// Control: the same server without profile_toml runs its own.
			r = s.call(t, req{Argv: []string{helper, "env"}, Workdir: w})
			r.ok(t, 1)
			r.value(t, 0, &env)
			if contains(env, "TJ_CLIENT_PROFILE=mine") || r.report.Limits.Pids == 17 {
				t.Errorf("a client profile outlived its call: %v, pids %d", env, r.report.Limits.Pids)
			}
		})

		t.Run("pids", func(t *testing.T) {
			if u.cgroupDegraded() {
				t.Skip("no cgroup caps for this user here: the pids limit is not enforced")
			}
			r := s.callProfileTOML(t, req{Argv: []string{helper, "forkbomb"}, Workdir: w}, mine)
			r.ok(t, 1)
			var got struct {
				Started int    `json:"started"`
				Error   string `json:"error"`
			}
			r.value(t, 0, &got)
			if got.Started >= 17 || got.Error != "EAGAIN" {
				t.Errorf("fork bomb under the client profile's pids = 17 started %d children and stopped on %q; want fewer than 17 and EAGAIN", got.Started, got.Error)
			}
			requireGone(t, "tjhelper\x00_hold\x00forkbomb")
		})

		t.Run("socket-directory", func(t *testing.T) {
			for _, bind := range []string{
				fmt.Sprintf("ro = [%q]", s.dir),
				fmt.Sprintf("ro = [%q]", s.dir+":/srv/peek"),
				fmt.Sprintf("rw = [%q]", filepath.Dir(s.dir)),
			} {
				mark := marker("clientprofile-socket")
				text := fmt.Sprintf("extends = %q\n[filesystem]\n%s\n", base, bind)
				r := s.callProfileTOML(t, req{Argv: []string{"/bin/echo", mark}, Workdir: w}, text)
				r.refused(t, "would show the server's")
				if b, _ := os.ReadFile(s.audit); strings.Contains(string(b), mark) {
					t.Errorf("%s: the refused request ran: %s", bind, b)
				}
			}
		})

		t.Run("extends-a-file", func(t *testing.T) {
			d := u.dir(t)
			file := filepath.Join(d, "loose.toml")
			if err := os.WriteFile(file, []byte("extends = \"default\"\n[network]\nmode = \"host\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, ext := range []string{file, "./loose.toml", "../" + filepath.Base(d) + "/loose.toml"} {
				r := s.callProfileTOML(t, req{Argv: []string{helper, "exit", "0"}, Workdir: d}, fmt.Sprintf("extends = %q\n", ext))
				r.refused(t, "profile_toml:1:1: extends:", "is a file")
			}
		})

		t.Run("run-cli", func(t *testing.T) {
			d := u.dir(t)
			file := filepath.Join(d, "mine.toml")
			if err := os.WriteFile(file, []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(file, u.dirUID, u.dirGID); err != nil {
				t.Fatal(err)
			}
			o := u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "--profile", "./mine.toml", "--", helper, "env"}, dir: d})
			if o.code != 0 || !strings.Contains(o.stdout, "TJ_CLIENT_PROFILE=mine") {
				t.Errorf("run --server --profile FILE: want exit 0 and the file's env\n%s", o)
			}
			// A file the command could rewrite for the next run: refused,
			// since a server cannot bind it read-only as a run here does.
			oneLineError(t, u.exec(t, run{args: []string{"run", "--server", s.sock, "--profile", "./mine.toml", "--", helper, "env"}, dir: d}), "--profile ./mine.toml", "inside the run's workdir")
			// A server without the flag: one line, naming the file and the flag.
			o = u.exec(t, run{args: []string{"run", "--server", plain.sock, "--workdir", w, "--profile", "./mine.toml", "--", helper, "env"}, dir: d})
			oneLineError(t, o, "./mine.toml: ", "--allow-client-profiles")
			// The file's own error, at its line.
			if err := os.WriteFile(file, []byte("extends = \"default\"\n[limits]\nmemroy = \"1G\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "--profile", "./mine.toml", "--", helper, "env"}, dir: d})
			oneLineError(t, o, "./mine.toml:3:1: limits.memroy: unknown key")
		})

		// A file the server serves, named by the same string: the served
		// profile, with no --allow-client-profiles needed.
		t.Run("served-file", func(t *testing.T) {
			d := u.dir(t)
			file := filepath.Join(d, "served-file.toml")
			q := make([]string, len(u.degraded))
			for i, l := range u.degraded {
				q[i] = fmt.Sprintf("%q", l)
			}
			body := fmt.Sprintf("extends = \"default\"\nallow_degraded = [%s]\n[env]\nset = { TJ_SERVED_FILE = \"yes\" }\n", strings.Join(q, ", "))
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := u.startServer(t, "", "--profile", file)
			o := u.exec(t, run{args: []string{"run", "--server", fs.sock, "--workdir", w, "--profile", file, "--", helper, "env"}, dir: d})
			if o.code != 0 || !strings.Contains(o.stdout, "TJ_SERVED_FILE=yes") {
				t.Errorf("run --server --profile FILE that the server serves: want exit 0 and its env\n%s", o)
			}
			if a := fs.refusedLines(t); len(a) != 0 {
				t.Errorf("the served file was refused first: %+v", a)
			}
		})
	})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// callProfileTOML sends q with profile_toml set to text, as s's user.
func (s *server) callProfileTOML(t *testing.T, q req, text string) *reply {
	t.Helper()
	line, err := json.Marshal(struct {
		req
		ProfileTOML string `json:"profile_toml"`
	}{q, text})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.try(s.u, append(line, '\n'))
	if err != nil {
		t.Fatalf("%v\n%s\nserver log:\n%s", err, r, s.log())
	}
	return r
}
