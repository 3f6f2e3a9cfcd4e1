package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkReport verifies the fields every report of an ended run has.
func checkReport(t *testing.T, r *report, raw []byte, u *user, before, after time.Time) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, k := range []string{"schema", "version", "id", "command", "workdir", "profile", "started_at", "status", "exit_code",
		"wall_time_ms", "stdout", "stderr", "violations", "limits", "enforcement"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report has no %q", k)
		}
	}
	if r.Schema != "tooljail.report/v1" {
		t.Errorf("schema %q", r.Schema)
	}
	if r.Version == "" {
		t.Errorf("empty version")
	}
	if !regexp.MustCompile(`^[0-9a-f]{8,}$`).MatchString(r.ID) {
		t.Errorf("id %q is not a hex run id", r.ID)
	}
	if r.Profile != "default" {
		t.Errorf("profile %q", r.Profile)
	}
	started, err := time.Parse(time.RFC3339Nano, r.StartedAt)
	if err != nil {
		t.Errorf("started_at %q is not RFC 3339: %v", r.StartedAt, err)
	} else if started.Before(before.Add(-time.Second)) || started.After(after) {
		t.Errorf("started_at %s is outside the run (%s .. %s)", started, before, after)
	}
	if r.WallTimeMs == nil || *r.WallTimeMs < 0 || *r.WallTimeMs > after.Sub(before).Milliseconds()+1 {
		t.Errorf("wall_time_ms %v, the run took %s", r.WallTimeMs, after.Sub(before))
	}
	e := r.Enforcement
	for _, ns := range []string{"user", "mount", "pid", "net", "ipc", "uts", "cgroup"} {
		if !e.Namespaces[ns] {
			t.Errorf("enforcement.namespaces.%s is not true: %v", ns, e.Namespaces)
		}
	}
	if !e.NoNewPrivs {
		t.Errorf("enforcement.no_new_privs false")
	}
	if e.Degraded == nil {
		t.Errorf("enforcement.degraded missing (want a list, empty when nothing is degraded)")
	}
	// Degraded lists exactly the layers allowed degraded that check says
	// are not enforced here (the suite allows only those).
	want := map[string]bool{}
	for _, d := range u.degraded {
		switch d {
		case "cgroup":
			want["memory"], want["cpu"], want["pids"] = true, true, true
		default:
			want[d] = true
		}
	}
	for _, d := range e.Degraded {
		if !want[d] {
			t.Errorf("enforcement.degraded lists %q, which this host enforces for %s (check says so)", d, u.name)
		}
	}
	if u.cgroupDegraded() {
		if e.Cgroup != "none" && len(e.Caps) > 0 {
			for c, on := range e.Caps {
				if on {
					t.Errorf("cap %s reported enforced although check says it cannot be", c)
				}
			}
		}
	} else if e.Cgroup == "none" || !e.Caps["memory"] || !e.Caps["cpu"] || !e.Caps["pids"] {
		t.Errorf("cgroup caps not enforced although check says they can be: cgroup %q caps %v", e.Cgroup, e.Caps)
	}
	if e.LandlockABI <= 0 && !want["landlock"] {
		t.Errorf("landlock_abi %d", e.LandlockABI)
	}
	if r.Limits.MemoryBytes != 1<<30 || r.Limits.Pids != 256 || r.Limits.CPUs != 1 || r.Limits.TimeoutMs != 600000 ||
		r.Limits.NoFile != 1024 || r.Limits.OutputLimitBytes != 16<<20 {
		t.Errorf("limits of the default profile: %+v", r.Limits)
	}
}

func TestReportFields(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		before := time.Now()
		o := u.jail(t, w, nil, "output", "123", ";", "stderr", "45", ";", "exit", "7")
		after := time.Now()
		if o.code != 7 || o.noReport {
			t.Fatalf("want exit 7 and a report\n%s", o)
		}
		r := o.report
		checkReport(t, r, o.reportRaw, u, before, after)
		if r.Status != "exited" || r.ExitCode != 7 || r.Signal != "" {
			t.Errorf("status %s exit_code %d signal %q", r.Status, r.ExitCode, r.Signal)
		}
		if r.Stdout.Bytes != 123 || r.Stderr.Bytes != 45 || r.Stdout.Truncated || r.Stdout.Text != nil {
			t.Errorf("streams %+v %+v", r.Stdout, r.Stderr)
		}
		if r.Workdir != w || len(r.Command) != 9 || r.Command[0] != filepath.Join(w, "tjhelper") {
			t.Errorf("workdir %q command %q", r.Workdir, r.Command)
		}
		if len(r.Violations) != 0 {
			t.Errorf("violations %v", r.Violations)
		}

		// --report -: the report on stderr, the output untouched.
		o2 := u.exec(t, run{dir: w, args: append(append([]string{"run", "--workdir", w, "--report", "-"}, degradedFlags(u)...),
			"--", filepath.Join(w, "tjhelper"), "output", "5", ";", "kill-self", "TERM")})
		var r2 report
		if o2.code != 143 || o2.stdout != "abcde" {
			t.Fatalf("--report -: want exit 143 and the output\n%s", o2)
		}
		if err := json.Unmarshal([]byte(o2.stderr), &r2); err != nil {
			t.Fatalf("--report -: stderr is not the report: %v\n%s", err, o2)
		}
		if r2.Status != "signaled" || r2.Signal != "SIGTERM" || r2.ExitCode != 143 || r2.ID == r.ID {
			t.Errorf("--report -: %+v", r2)
		}

		// --json: only the report on stdout, with the text.
		before = time.Now()
		o3 := u.exec(t, run{dir: w, args: append(append([]string{"run", "--workdir", w, "--json"}, degradedFlags(u)...),
			"--", filepath.Join(w, "tjhelper"), "hostname", ";", "stderr", "3")})
		after = time.Now()
		var r3 report
		if err := json.Unmarshal([]byte(o3.stdout), &r3); err != nil || o3.code != 0 {
			t.Fatalf("--json: stdout is not the report: %v\n%s", err, o3)
		}
		checkReport(t, &r3, []byte(o3.stdout), u, before, after)
		if r3.Stdout.Text == nil || *r3.Stdout.Text != "value \"tooljail\"\n" || r3.Stderr.Text == nil || *r3.Stderr.Text != "abc" {
			t.Errorf("--json texts: %v %v", r3.Stdout.Text, r3.Stderr.Text)
		}
		if o3.stderr != "" {
			t.Errorf("--json: the command's stderr leaked to tooljail's: %q", o3.stderr)
		}
	})
}

func degradedFlags(u *user) []string {
	var f []string
	for _, d := range u.degraded {
		f = append(f, "--allow-degraded", d)
	}
	return f
}

// 16 concurrent runs append 16 whole JSON lines to one audit log.
func TestAuditLogConcurrent(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		log := filepath.Join(u.dir(t), "audit.log")
		const n = 16
		var wg sync.WaitGroup
		var mu sync.Mutex
		invocations := 0
		codes := make([]int, n)
		args := append(append([]string{"run", "--workdir", w, "--audit-log", log}, degradedFlags(u)...),
			"--", filepath.Join(w, "tjhelper"), "output", "10", ";", "exit", "5")
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				o := u.exec(t, run{dir: w, args: args})
				mu.Lock()
				invocations++
				mu.Unlock()
				codes[i] = o.code
			}(i)
		}
		wg.Wait()
		for i, c := range codes {
			if c != 5 {
				t.Errorf("run %d exited %d", i, c)
			}
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != invocations || !strings.HasSuffix(string(b), "\n") {
			t.Fatalf("audit log has %d lines, want %d (one per run):\n%s", len(lines), invocations, b)
		}
		ids := map[string]bool{}
		exited := 0
		for _, l := range lines {
			var a struct {
				Time       string   `json:"time"`
				ID         string   `json:"id"`
				UID        *int     `json:"uid"`
				Command    []string `json:"command"`
				Workdir    string   `json:"workdir"`
				Profile    string   `json:"profile"`
				Status     string   `json:"status"`
				ExitCode   *int     `json:"exit_code"`
				DurationMs *int64   `json:"duration_ms"`
			}
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Errorf("audit line is not JSON: %v: %q", err, l)
				continue
			}
			if _, err := time.Parse(time.RFC3339Nano, a.Time); err != nil {
				t.Errorf("audit time %q: %v", a.Time, err)
			}
			if a.UID == nil || *a.UID != u.uid || a.Workdir != w || a.Profile != "default" || a.ExitCode == nil ||
				a.DurationMs == nil || len(a.Command) == 0 || a.Command[0] != filepath.Join(w, "tjhelper") {
				t.Errorf("audit line fields: %s", l)
			}
			if a.Status == "exited" && *a.ExitCode == 5 {
				exited++
			}
			ids[a.ID] = true
		}
		if len(ids) != len(lines) || exited != n {
			t.Errorf("%d distinct run ids in %d lines, %d exited with 5 (want %d)", len(ids), len(lines), exited, n)
		}

		// TOOLJAIL_AUDIT_LOG works as well.
		log2 := filepath.Join(u.dir(t), "env-audit.log")
		u.jailRun(t, w, run{env: []string{"TOOLJAIL_AUDIT_LOG=" + log2}}, filepath.Join(w, "tjhelper"), "exit", "0")
		if b, err := os.ReadFile(log2); err != nil || strings.Count(string(b), "\n") != 1 {
			t.Errorf("TOOLJAIL_AUDIT_LOG: %v %q", err, b)
		}
	})
}

// Every bad input is one line on stderr and exit 125, and creates nothing.
func TestBadInput(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		scratch := u.dir(t)
		helper := filepath.Join(w, "tjhelper")
		malformed := filepath.Join(scratch, "bad.toml")
		os.WriteFile(malformed, []byte("description = \"x\"\n\n[limits]\nmemory = \"1G\"\nnot_a_key = 3\n"), 0o644)
		unreadable := filepath.Join(scratch, "unreadable.toml")
		os.WriteFile(unreadable, []byte("description = \"x\"\n"), 0o000)
		if u.uid == 0 {
			unreadable = scratch // root reads any file; a directory cannot be read as a profile
		}
		// A source with symlinks that leave the jail root: one absolute to
		// a host directory, one relative climbing above it.
		target := u.dir(t)
		src := u.dir(t)
		os.Chmod(src, 0o755)
		os.Symlink(target, filepath.Join(src, "abs"))
		os.Symlink(strings.Repeat("../", 12)+strings.TrimPrefix(target, "/"), filepath.Join(src, "rel"))
		missing := filepath.Join(scratch, "missing-source")
		home := u.dir(t)

		cases := []struct {
			name  string
			args  []string
			env   []string
			wants []string
		}{
			{"unknown-flag", []string{"run", "--frobnicate", "--", helper}, nil, []string{"frobnicate"}},
			{"bad-size", []string{"run", "--memory", "12XB", "--", helper}, nil, []string{"12XB"}},
			{"bad-duration", []string{"run", "--timeout", "5 parsecs", "--", helper}, nil, []string{"timeout"}},
			{"bad-cpus", []string{"run", "--cpus", "lots", "--", helper}, nil, []string{"cpus"}},
			{"missing-command", []string{"run", "--"}, nil, []string{"command"}},
			{"missing-command-no-dashes", []string{"run"}, nil, []string{"command"}},
			{"unknown-subcommand", []string{"frobnicate"}, nil, nil},
			{"missing-profile", []string{"run", "--profile", filepath.Join(scratch, "nope.toml"), "--", helper}, nil, []string{"nope.toml"}},
			{"unknown-profile-name", []string{"run", "--profile", "no-such-profile", "--", helper}, nil, []string{"no-such-profile"}},
			{"unreadable-profile", []string{"run", "--profile", unreadable, "--", helper}, nil, []string{filepath.Base(unreadable)}},
			{"malformed-profile", []string{"run", "--profile", malformed, "--", helper}, nil, []string{malformed + ":5", "not_a_key"}},
			{"unknown-degraded-layer", []string{"run", "--allow-degraded", "everything", "--", helper}, nil, []string{"everything"}},
			{"missing-ro-source", []string{"run", "--ro", missing + ":/data", "--", helper, "exit", "0"}, nil, []string{missing}},
			{"missing-rw-source", []string{"run", "--rw", missing + ":/data", "--", helper, "exit", "0"}, nil, []string{missing}},
			{"dest-through-abs-symlink", []string{"run", "--ro", src + ":/data", "--tmpfs", "/data/abs/escaped", "--", helper, "exit", "0"}, nil, []string{"/data/abs/escaped"}},
			{"dest-through-rel-symlink", []string{"run", "--ro", src + ":/data", "--rw", scratch + ":/data/rel/escaped", "--", helper, "exit", "0"}, nil, []string{"/data/rel/escaped"}},
			{"dest-into-host-bind", []string{"run", "--ro", src + ":/data", "--tmpfs", "/data/newdir", "--", helper, "exit", "0"}, nil, []string{"/data/newdir"}},
			{"workdir-root", []string{"run", "--workdir", "/", "--", helper, "exit", "0"}, nil, []string{"--workdir"}},
			{"workdir-home", []string{"run", "--workdir", home, "--", helper, "exit", "0"}, []string{"HOME=" + home}, []string{"home", "--workdir"}},
			{"cwd-home", []string{"run", "--", helper, "exit", "0"}, []string{"HOME=" + home}, []string{"home", "--workdir"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				args := c.args
				if args[0] == "run" {
					// The run would be enforceable but for the bad input.
					args = append([]string{"run"}, append(degradedFlags(u), args[1:]...)...)
				}
				dir := w
				if c.name == "cwd-home" {
					dir = home
				}
				o := u.exec(t, run{args: args, env: c.env, dir: dir})
				oneLineError(t, o, c.wants...)
			})
		}
		// Nothing was created on the host.
		for _, p := range []string{missing, filepath.Join(target, "escaped"), filepath.Join(src, "newdir"), filepath.Join(src, "abs", "escaped")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("a refused run created %s on the host", p)
			}
		}
		if ents, _ := os.ReadDir(target); len(ents) != 0 {
			t.Errorf("a refused run created files in %s: %v", target, ents)
		}
		if ents, _ := os.ReadDir(home); len(ents) != 0 {
			t.Errorf("a refused run created files in the home %s: %v", home, ents)
		}
		// Positive control: the same bind without the escaping destination runs.
		o := u.jail(t, w, []string{"--ro", src + ":/data"}, "ls", "/data")
		o.ok(t, 1)
		var names []string
		o.value(t, 0, &names)
		sort.Strings(names)
		if strings.Join(names, ",") != "abs,rel" {
			t.Errorf("positive control: /data lists %v", names)
		}
	})
}

// Without --allow-degraded cgroup, a user who cannot set the cgroup caps
// gets exit 125 and a reason naming the layer and the fix.
func TestCgroupFailsClosed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if !u.cgroupDegraded() {
			t.Skipf("%s can set the cgroup caps here (tooljail check); nothing to fail closed", u.name)
		}
		w := u.workdir(t)
		var flags []string
		for _, d := range u.degraded {
			if d != "cgroup" {
				flags = append(flags, "--allow-degraded", d)
			}
		}
		args := append(append([]string{"run", "--workdir", w}, flags...), "--", filepath.Join(w, "tjhelper"), "exit", "0")
		o := u.exec(t, run{dir: w, args: args})
		oneLineError(t, o, "memory", "--allow-degraded")
		if !strings.Contains(o.stderr, "cgroup") {
			t.Errorf("the reason does not name the cgroup layer: %s", o.stderr)
		}
		// Positive control: with the flag the run goes on.
		o = u.jail(t, w, nil, "exit", "0")
		if o.code != 0 {
			t.Errorf("with --allow-degraded cgroup the run fails\n%s", o)
		}
	})
}

// Concurrent jails must not fail their set-up: many parallel runs at once.
// (It caught openat2 returning EAGAIN under concurrent mounts.)
func TestConcurrentSetup(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		const n = 24
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []string
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := append(append([]string{"run", "--workdir", w}, degradedFlags(u)...), "--", filepath.Join(w, "tjhelper"), "exit", "0")
				o := u.exec(t, run{dir: w, args: args})
				if o.code != 0 {
					mu.Lock()
					failed = append(failed, o.String())
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d of %d concurrent runs failed:\n%s", len(failed), n, strings.Join(failed, "\n"))
		}
	})
}
