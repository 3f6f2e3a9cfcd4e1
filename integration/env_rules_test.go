package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What TestEnvCallerVariables and TestNoNamespacesEnvCallerVariables give
// tooljail and expect of it.
var (
	envJailPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	envSecrets  = []string{"sk-tj-direct", "sk-tj-lower", "sk-tj-token", "sk-tj-named"}
	// tooljail's own environment: --env NAME takes its value from here.
	envCaller = []string{"aws_secret_access_key=sk-tj-lower", "MY_TOKEN=sk-tj-token",
		"OPENAI_API_KEY=sk-tj-named", "NAMED_X=from-env"}
	envFlags = []string{
		"--env", "HOME=/root", "--env", "PWD=/root", "--env", "OLDPWD=/", "--env", "SHELL=/bin/zsh",
		"--env", "FAKE_API_KEY=sk-tj-direct", "--env", "X=1",
		"--env", "aws_secret_access_key", "--env", "MY_TOKEN", "--env", "OPENAI_API_KEY", "--env", "NAMED_X",
		"--env", "UNSET_IN_CALLER",
		"--env", "PATH=/opt/tj-nothere/bin:/usr/bin:relative::/usr/lib:/root/bin:/usr/lib",
	}
	envWantDropped = "FAKE_API_KEY:credential HOME:jail MY_TOKEN:credential OLDPWD:jail OPENAI_API_KEY:credential PWD:jail SHELL:jail aws_secret_access_key:credential"
)

// envDropped is the report's env_dropped as "NAME:reason ..."; raw, when
// given, must hold no secret value.
func envDropped(t *testing.T, r *report, raw []byte) string {
	t.Helper()
	var parts []string
	for _, d := range r.EnvDropped {
		parts = append(parts, d.Name+":"+d.Reason)
	}
	for _, s := range envSecrets {
		if strings.Contains(string(raw), s) {
			t.Errorf("a secret value in the report")
		}
	}
	return strings.Join(parts, " ")
}

// checkEnvRun checks one run given envFlags with envCaller.
func checkEnvRun(t *testing.T, how string, o *outcome, r *report, raw []byte) {
	t.Helper()
	if o.code != 0 {
		t.Fatalf("%s: exit %d, want 0 (dropping is not an error)\n%s", how, o.code, o)
	}
	var env []string
	o.value(t, 0, &env)
	got := envMap(env)
	for k, v := range got {
		for _, s := range envSecrets {
			if strings.Contains(v, s) {
				t.Errorf("%s: a caller's secret reached the jail in %s", how, k)
			}
		}
	}
	for k, v := range map[string]string{"X": "1", "NAMED_X": "from-env", "PATH": envJailPath + ":/usr/lib"} {
		if got[k] != v {
			t.Errorf("%s: %s=%q inside, want %q (env %v)", how, k, got[k], v, env)
		}
	}
	for k, bad := range map[string]string{"HOME": "/root", "PWD": "/root", "OLDPWD": "/", "SHELL": "/bin/zsh", "UNSET_IN_CALLER": ""} {
		if v, ok := got[k]; ok && v == bad {
			t.Errorf("%s: %s=%q inside: the caller's value went in", how, k, v)
		}
	}
	if d := envDropped(t, r, raw); d != envWantDropped {
		t.Errorf("%s: env_dropped %q, want %q", how, d, envWantDropped)
	}
	for _, s := range envSecrets {
		if strings.Contains(o.stderr, s) {
			t.Errorf("%s: a secret value on stderr", how)
		}
	}
	if n := strings.Count(o.stderr, "dropped 4 variable(s) that look like credentials"); n != 1 {
		t.Errorf("%s: the summary says it %d times, want once: %q", how, n, o.stderr)
	}
}

// The caller's variables (--env K=V, --env K, a served request's env) never
// fail for the jail's own names and never carry a credential in: both are
// dropped and named in the report, never their values; a caller's PATH
// adds only what the jail shows, after the jail's own.
func TestEnvCallerVariables(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")
		o := u.jailRun(t, w, run{args: envFlags, env: envCaller}, helper, "env")
		checkEnvRun(t, "jailed here", o, o.report, o.reportRaw)
		if got := o.report.Workdir; got != w {
			t.Errorf("workdir %q", got)
		}

		// --pass-env names a credential on purpose; deny = [] lifts the list.
		o = u.jailRun(t, w, run{args: append([]string{"--pass-env", "OPENAI_API_KEY"}, envFlags...), env: envCaller}, helper, "env")
		var env []string
		o.value(t, 0, &env)
		if !slices.Contains(env, "OPENAI_API_KEY=sk-tj-named") || strings.Contains(envDropped(t, o.report, nil), "OPENAI") {
			t.Errorf("--pass-env OPENAI_API_KEY: not passed\n%s", o)
		}
		prof := filepath.Join(u.dir(t), "nodeny.toml")
		if err := os.WriteFile(prof, []byte("extends = \"default\"\n[env]\ndeny = []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o = u.jailRun(t, w, run{args: []string{"--profile", prof, "--env", "MY_TOKEN", "--env", "HOME=/x"}, env: envCaller}, helper, "env")
		env = nil
		o.value(t, 0, &env)
		if !slices.Contains(env, "MY_TOKEN=sk-tj-token") || !slices.Contains(env, "HOME=/home/sandbox") ||
			envDropped(t, o.report, nil) != "HOME:jail" || strings.Contains(o.stderr, "credentials") {
			t.Errorf("deny = []: MY_TOKEN not given or HOME not the jail's\n%s", o)
		}

		// Served: run --server sends the values in the request and the
		// server's profile decides. Twice, with different drops, so that a
		// warm jail made for one call cannot report the other's.
		s := u.startServer(t, "")
		rep := filepath.Join(u.dir(t), "served.json")
		for i, fl := range [][]string{envFlags, {"--env", "HOME=/root", "--env", "X=1"}} {
			args := append([]string{"run", "--server", s.sock, "--workdir", w, "--report", rep}, fl...)
			o := u.exec(t, run{args: append(args, "--", helper, "env"), env: envCaller})
			raw, err := os.ReadFile(rep)
			var r report
			if err == nil {
				err = json.Unmarshal(raw, &r)
			}
			if err != nil {
				t.Fatalf("served report: %v\n%s", err, o)
			}
			if i == 0 {
				checkEnvRun(t, "served", o, &r, raw)
				continue
			}
			env = nil
			o.value(t, 0, &env)
			if d := envDropped(t, &r, raw); d != "HOME:jail" || !slices.Contains(env, "X=1") || strings.Contains(o.stderr, "credentials") {
				t.Errorf("second served call: env_dropped %q, env %v\n%s", d, env, o)
			}
		}
	})
}

// The same rules without namespaces, where PATH entries are the host's
// paths that Landlock lets the command see.
func TestNoNamespacesEnvCallerVariables(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		args := append([]string{"--allow-degraded", "namespaces"}, envFlags...)
		o := u.jailRun(t, w, run{args: args, env: envCaller, wrap: noNSWrap}, "./tjhelper", "env")
		if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container") {
			t.Skipf("the emulated container cannot start here: %s", o.stderr)
		}
		checkEnvRun(t, "without namespaces", o, o.report, o.reportRaw)
	})
}
