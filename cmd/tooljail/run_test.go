package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/serve"
)

// A flag that takes one value may be given once; repeatable flags add up.
func TestScalarFlagsOnce(t *testing.T) {
	for flag, values := range map[string][2]string{
		"profile": {"1000", "2000"}, "workdir": {"1000", "2000"}, "host-user": {"1000", "2000"},
		"report": {"1000", "2000"}, "audit-log": {"1000", "2000"},
		"net": {"none", "host"}, "on-violation": {"deny", "kill"},
		"memory": {"1000", "2000"}, "cpus": {"1", "2"}, "pids": {"1000", "2000"}, "timeout": {"1s", "2s"},
		"cpu-time": {"1s", "2s"}, "nofile": {"1000", "2000"}, "fsize": {"1000", "2000"},
		"output-limit": {"1000", "2000"}, "max-violations": {"1000", "2000"},
		"server": {"/a", "/b"}, "net-connections": {"1", "2"}, "net-bytes": {"1M", "2M"},
		"session": {"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"},
		"exec-fd": {"3", "4"},
	} {
		var f runFlags
		fs := newRunFlagSet(&f)
		err := fs.Parse([]string{"--" + flag, values[0], "--" + flag, values[1], "--", "true"})
		if want := fmt.Sprintf("given twice (%q, then %q)", values[0], values[1]); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--%s twice: %v", flag, err)
		}
	}
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse([]string{"--ro", "/a", "--ro", "/b", "--env", "A=1", "--env", "B=2", "--memory", "1G", "--cpus", "2", "--", "true"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.ro, []string{"/a", "/b"}) || len(f.env) != 2 || !reflect.DeepEqual(f.limits, [][2]string{{"memory", "1G"}, {"cpus", "2"}}) {
		t.Errorf("repeatable flags: ro %v env %v limits %v", f.ro, f.env, f.limits)
	}
	if f.profile.set {
		t.Errorf("profile set without the flag: %+v", f.profile)
	}
}

// --allow-host adds to the profile's network.allow in the allow mode (the
// flag's or the profile's), and is an error in any other mode, naming it.
func TestAllowHostFlag(t *testing.T) {
	dir := t.TempDir()
	allowProfile := writeProfile(t, dir, "allow.toml", "extends = \"default\"\n[network]\nmode = \"allow\"\nallow = [\"pypi.org\"]\n")
	for _, c := range []struct {
		args      []string
		wantAllow []string
		wantErr   string
	}{
		{[]string{"--net", "allow", "--allow-host", "github.com", "--allow-host", "10.1.2.3:5432"}, []string{"github.com", "10.1.2.3:5432"}, ""},
		{[]string{"--net", "allow"}, nil, ""},
		{[]string{"--profile", allowProfile, "--allow-host", "*.pythonhosted.org:443"}, []string{"pypi.org", "*.pythonhosted.org:443"}, ""},
		{[]string{"--profile", allowProfile, "--net", "none"}, nil, ""}, // the list is the allow mode's only
		{[]string{"--allow-host", "github.com"}, nil, `--allow-host needs the network allow mode: add --net allow (the profile's network mode is "none")`},
		{[]string{"--net", "host", "--allow-host", "github.com"}, nil, "--allow-host needs the network allow mode"},
	} {
		_, spec, _, err := parseRun(append(append([]string{"--no-workdir"}, c.args...), "--", "true"), func() (string, error) { return dir, nil }, nil)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if !slices.Equal(spec.Allow, c.wantAllow) {
			t.Errorf("%q: allow %q, want %q", c.args, spec.Allow, c.wantAllow)
		}
		for _, o := range spec.Trusted {
			o.Close()
		}
	}
}

func TestHostUserFlag(t *testing.T) {
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse([]string{"--host-user", "4000:4001", "--no-workdir", "--", "true"}); err != nil {
		t.Fatal(err)
	}
	spec, err := f.spec(fs.Args(), "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.HostUser == nil || *spec.HostUser != (jail.HostID{UID: 4000, GID: 4001}) {
		t.Errorf("host user %+v, want 4000:4001", spec.HostUser)
	}
	// --host-user "" gives the choice back to the jail over a profile's.
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.toml")
	if err := os.WriteFile(prof, []byte("extends = \"default\"\nhost_user = \"5000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want *jail.HostID
	}{
		{[]string{"--profile", prof}, &jail.HostID{UID: 5000, GID: 5000}},
		{[]string{"--profile", prof, "--host-user", ""}, nil},
		{[]string{"--profile", prof, "--host-user", "6000"}, &jail.HostID{UID: 6000, GID: 6000}},
	} {
		var f runFlags
		fs := newRunFlagSet(&f)
		if err := fs.Parse(append(c.args, "--no-workdir", "--", "true")); err != nil {
			t.Fatal(err)
		}
		spec, err := f.spec(fs.Args(), "/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(spec.HostUser, c.want) {
			t.Errorf("%v: host user %+v, want %+v", c.args, spec.HostUser, c.want)
		}
		if len(spec.Trusted) != 1 || spec.Trusted[0].Path != prof {
			t.Errorf("%v: trusted %v, want the profile file", c.args, spec.Trusted)
		}
	}
}

func TestForwarded(t *testing.T) {
	cases := []struct {
		in         []os.Signal
		want       []os.Signal
		interrupts int
	}{
		{[]os.Signal{syscall.SIGTERM}, []os.Signal{syscall.SIGTERM}, 0},
		{[]os.Signal{syscall.SIGINT}, []os.Signal{syscall.SIGINT}, 1},
		{[]os.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGINT, syscall.SIGINT},
			[]os.Signal{syscall.SIGINT, syscall.SIGHUP, os.Kill, os.Kill}, 3},
		{[]os.Signal{syscall.SIGQUIT, syscall.SIGTERM}, []os.Signal{syscall.SIGQUIT, syscall.SIGTERM}, 0},
	}
	for _, c := range cases {
		var got []os.Signal
		n := 0
		for _, s := range c.in {
			var out os.Signal
			out, n = forwarded(s, n)
			got = append(got, out)
		}
		if !reflect.DeepEqual(got, c.want) || n != c.interrupts {
			t.Errorf("%v: forwarded %v (%d interrupts), want %v (%d)", c.in, got, n, c.want, c.interrupts)
		}
	}
}

// A signal tooljail was started with ignored is not relayed (it stays
// ignored, and the command inherits it so); every other one is.
func TestRelayedSignals(t *testing.T) {
	for _, c := range []struct {
		name    string
		ignored []os.Signal
		want    []os.Signal
	}{
		{"none ignored", nil, forwardedSignals},
		{"nohup", []os.Signal{syscall.SIGHUP}, []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM}},
		{"background job", []os.Signal{syscall.SIGINT, syscall.SIGQUIT}, []os.Signal{syscall.SIGTERM, syscall.SIGHUP,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM}},
		{"all", forwardedSignals, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := unignored(forwardedSignals, func(s os.Signal) bool { return slices.Contains(c.ignored, s) })
			if !slices.Equal(got, c.want) {
				t.Errorf("relayed %v, want %v", got, c.want)
			}
		})
	}
}

// The signals an agent runtime sends to a jailed command reach it (the
// Python client's Popen relies on it: send_signal, terminate); SIGKILL,
// which cannot be caught, is not among them.
func TestForwardedSignals(t *testing.T) {
	want := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM}
	got := map[os.Signal]bool{}
	for _, s := range forwardedSignals {
		got[s] = true
		if s == syscall.SIGKILL || s == syscall.SIGSTOP {
			t.Errorf("%v cannot be caught, so cannot be forwarded", s)
		}
	}
	for _, s := range want {
		if !got[s] {
			t.Errorf("%v is not forwarded", s)
		}
		if out, _ := forwarded(s, 0); out != s {
			t.Errorf("%v forwarded as %v", s, out)
		}
	}
}

// The forwarder sends the command what comes until the relay ends (a
// second SIGINT as a kill); a signal that comes after it takes its
// default action in tooljail, as if there were no relay, instead of going
// to a command that is gone.
func TestRelayForwardsUntilEnd(t *testing.T) {
	sent, raised := make(chan os.Signal, 4), make(chan os.Signal, 4)
	r := &signalRelay{sigs: make(chan os.Signal, 4), forwards: true, raise: func(s os.Signal) { raised <- s }}
	go r.forward(func(s os.Signal) error { sent <- s; return nil })
	next := func(c chan os.Signal, what string) os.Signal {
		t.Helper()
		select {
		case s := <-c:
			return s
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing %s", what)
			return nil
		}
	}
	r.sigs <- syscall.SIGINT
	r.sigs <- syscall.SIGINT
	if a, b := next(sent, "sent"), next(sent, "sent"); a != syscall.SIGINT || b != os.Kill {
		t.Errorf("sent %v, %v; want SIGINT, then a kill", a, b)
	}
	r.end()
	r.sigs <- syscall.SIGTERM
	if s := next(raised, "raised"); s != syscall.SIGTERM {
		t.Errorf("raised %v after the end, want SIGTERM", s)
	}
	select {
	case s := <-sent:
		t.Errorf("%v sent to the command after the end", s)
	default:
	}
}

func TestOutputs(t *testing.T) {
	cases := []struct {
		report, audit, env string
		wantReport         *jail.Output
		wantAudit          *jail.Output
	}{
		{"", "", "", nil, nil},
		{"-", "", "", nil, nil}, // stderr, no file
		{"r.json", "", "", &jail.Output{Path: "/w/d/r.json", Perm: 0o644}, nil},
		{"../r.json", "/var/log/tj.log", "", &jail.Output{Path: "/w/r.json", Perm: 0o644},
			&jail.Output{Path: "/var/log/tj.log", Append: true, Perm: 0o600}},
		{"/a/./b/", "", "logs/a.log", &jail.Output{Path: "/a/b", Perm: 0o644},
			&jail.Output{Path: "/w/d/logs/a.log", Append: true, Perm: 0o600}},
		{"", "flag.log", "/env.log", nil, &jail.Output{Path: "/w/d/flag.log", Append: true, Perm: 0o600}}, // the flag wins
	}
	for _, c := range cases {
		f := runFlags{report: scalar{value: c.report}, auditLog: scalar{value: c.audit}}
		o := f.outputs("/w/d", c.env)
		if !reflect.DeepEqual(o.report, c.wantReport) || !reflect.DeepEqual(o.audit, c.wantAudit) {
			t.Errorf("report %q audit %q env %q: %+v %+v, want %+v %+v", c.report, c.audit, c.env, o.report, o.audit, c.wantReport, c.wantAudit)
		}
		if want := len(o.list()); want != btoi(c.wantReport != nil)+btoi(c.wantAudit != nil) {
			t.Errorf("list %v", o.list())
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// After the run the report replaces what the file held and the audit log
// gets one line, both through the descriptors opened before the run, even
// when the paths have been replaced since.
func TestFinishWritesThroughDescriptors(t *testing.T) {
	dir := t.TempDir()
	reportPath, auditPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "a.log")
	if err := os.WriteFile(reportPath, bytes.Repeat([]byte("old report "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auditPath, []byte("{\"earlier\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rf, err := os.OpenFile(reportPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	af, err := os.OpenFile(auditPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	outs := runOutputs{report: &jail.Output{Path: reportPath, File: rf}, audit: &jail.Output{Path: auditPath, Append: true, File: af}}
	defer outs.close()
	// A path swapped after the open does not redirect the write.
	os.Rename(reportPath, reportPath+".kept")
	os.Symlink("/nonexistent/target", reportPath)

	f := runFlags{report: scalar{value: reportPath}, quiet: true}
	r := &jail.Result{Schema: jail.Schema, ID: "abc", Status: jail.StatusExited, ExitCode: 3, Command: []string{"true"}, Violations: []jail.Violation{}}
	var stdout, stderr bytes.Buffer
	if code := f.finish(r, nil, outs, &stdout, &stderr); code != 3 || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	b, err := os.ReadFile(reportPath + ".kept")
	if err != nil {
		t.Fatal(err)
	}
	var back jail.Result
	if err := json.Unmarshal(b, &back); err != nil || back.ID != "abc" {
		t.Errorf("report file is not the report alone: %v\n%s", err, b)
	}
	b, err = os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"id":"abc"`) || !strings.Contains(lines[1], `"exit_code":3`) {
		t.Errorf("audit log:\n%s", b)
	}
}

// An audit log not opened for appending is refused (a concurrent run's
// line could be overwritten), and said so.
func TestFinishAuditNeedsAppend(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.log")
	af, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	outs := runOutputs{audit: &jail.Output{Path: p, File: af}}
	defer outs.close()
	f := runFlags{quiet: true}
	r := &jail.Result{Status: jail.StatusExited, Violations: []jail.Violation{}}
	var stdout, stderr bytes.Buffer
	if code := f.finish(r, nil, outs, &stdout, &stderr); code != jail.ExitSetup || !strings.Contains(stderr.String(), "not opened for appending") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// Outputs a failed Start did not open are skipped: one error line.
func TestFinishSkipsUnopenedOutputs(t *testing.T) {
	dir := t.TempDir()
	outs := runOutputs{report: &jail.Output{Path: filepath.Join(dir, "r.json")}, audit: &jail.Output{Path: filepath.Join(dir, "a.log"), Append: true}}
	f := runFlags{report: scalar{value: outs.report.Path}}
	r := &jail.Result{Status: jail.StatusSetupError, ExitCode: jail.ExitSetup, Reason: "a reason\nover two lines", Violations: []jail.Violation{}}
	var stdout, stderr bytes.Buffer
	code := f.finish(r, &jail.SetupError{Code: jail.ExitSetup}, outs, &stdout, &stderr)
	if code != jail.ExitSetup || stderr.String() != "tooljail: a reason; over two lines\n" || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}

// A run whose jail was not all removed keeps the command's exit code and
// report, and says what was left on one warning line; quiet or not.
func TestFinishCleanupWarning(t *testing.T) {
	left := &jail.CleanupError{Err: errors.New("remove cgroup /sys/fs/cgroup/x: device or resource busy")}
	for _, quiet := range []bool{true, false} {
		f := runFlags{quiet: quiet, json: true}
		r := &jail.Result{Schema: jail.Schema, ID: "abc", Status: jail.StatusExited, ExitCode: 3, Command: []string{"true"}, Violations: []jail.Violation{}}
		var stdout, stderr bytes.Buffer
		code := f.finish(r, fmt.Errorf("wrapped: %w", left), runOutputs{}, &stdout, &stderr)
		want := "tooljail: warning: the run ended, but its jail was not all removed: remove cgroup /sys/fs/cgroup/x: device or resource busy\n"
		if code != 3 || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "tooljail:") != 1 {
			t.Errorf("quiet %v: exit %d, stderr %q; want 3 and %q alone", quiet, code, stderr.String(), want)
		}
		var back jail.Result
		if err := json.Unmarshal(stdout.Bytes(), &back); err != nil || back.ID != "abc" || back.ExitCode != 3 {
			t.Errorf("quiet %v: the report is not the run's: %v\n%s", quiet, err, stdout.String())
		}
	}
}

// A served run refuses, by name, each flag the server's profile decides;
// the flags it can honour become the request.
func TestServedFlags(t *testing.T) {
	getwd := func() (string, error) { return "/work/dir", nil }
	for _, c := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"--ro", "/a"}, "--ro cannot be used with a server"},
		{[]string{"--rw", "/a"}, "--rw cannot be used with a server"},
		{[]string{"--tmpfs", "/a"}, "--tmpfs cannot be used with a server"},
		{[]string{"--mask", "/a"}, "--mask cannot be used with a server"},
		{[]string{"--on-violation", "kill"}, "--on-violation cannot be used with a server"},
		{[]string{"--host-user", "1000"}, "--host-user cannot be used with a server"},
		{[]string{"--root", "/srv/rootfs"}, "--root cannot be used with a server (--server, TOOLJAIL_SERVER): the server's profile sets filesystem.root, and a client's own profile may not; serve a profile that sets it"},
		{[]string{"--allow-degraded", "cgroup"}, "--allow-degraded cannot be used with a server"},
		{[]string{"--audit-log", "/a.log"}, "--audit-log cannot be used with a server"},
		{[]string{"--workdir-ro"}, "--workdir-ro cannot be used with a server"},
		{[]string{"--net", "allow", "--allow-host", "pypi.org"}, "--allow-host cannot be used with a server"},
		{[]string{"--workdir", "/w", "--no-workdir"}, "contradict"},
		{[]string{"--report", "out/r.json"}, "inside the run's workdir"},
		{[]string{"--workdir", "/w", "--report", "/w/r.json"}, "inside the run's workdir"},
	} {
		args := append(append([]string{"--server", "/s"}, c.args...), "--", "true")
		sr, err := parseServed(args, getwd, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", args, err, c.want)
		}
		if sr != nil {
			t.Errorf("%q: a run despite the error", args)
		}
	}

	sr, err := parseServed([]string{"--server", "/s", "--profile", "strict", "--workdir", "sub", "--memory", "256M",
		"--timeout", "5s", "--net", "none", "--env", "A=1", "--env", "B=2", "--pass-env", "B", "--pass-env", "UNSET", "--env", "C", "--env", "UNSET2", "--pass-env", "D",
		"--report", "/elsewhere/r.json", "--json", "-q", "--", "cmd", "arg"}, getwd, []string{"B=from-caller", "C=3", "D=4"})
	if err != nil {
		t.Fatal(err)
	}
	want := serve.Request{
		Argv: []string{"cmd", "arg"}, Profile: "strict", Workdir: "/work/dir/sub", Network: "none",
		Limits: map[string]string{"memory": "256M", "timeout": "5s"},
		Env:    map[string]string{"A": "1", "B": "2", "C": "3", "D": "4"}, // --env wins over --pass-env
	}
	if !reflect.DeepEqual(sr.req, want) || sr.socket != "/s" || sr.report != "/elsewhere/r.json" || !sr.flags.json || !sr.flags.quiet {
		t.Errorf("request %+v (socket %q, report %q), want %+v", sr.req, sr.socket, sr.report, want)
	}
	// Defaults: the current directory is the workdir; --no-workdir: none.
	for _, c := range []struct {
		flags   []string
		workdir string
	}{{nil, "/work/dir"}, {[]string{"--no-workdir"}, ""}} {
		sr, err := parseServed(append(append([]string{"--server", "/s"}, c.flags...), "--", "true"), getwd, nil)
		if err != nil || sr.req.Workdir != c.workdir || sr.req.Env != nil || sr.req.Limits != nil {
			t.Errorf("%q: %+v %v, want workdir %q and nothing else", c.flags, sr, err, c.workdir)
		}
	}
}

// --toolchain goes to the server with the caller's PATH, which goes in
// any case: a served profile's "auto" looks the program up in it.
func TestServedToolchains(t *testing.T) {
	getwd := func() (string, error) { return "/work/dir", nil }
	sr, err := parseServed([]string{"--server", "/s", "--toolchain", "auto", "--toolchain", "/opt/go", "--", "go", "build"}, getwd, []string{"PATH=/a/bin:/usr/bin", "PATH=/b/bin"})
	if err != nil || !reflect.DeepEqual(sr.req.Toolchains, []string{"auto", "/opt/go"}) || sr.req.Path != "/b/bin" {
		t.Errorf("%+v %v", sr, err)
	}
	// Without --toolchain too: the served profile may have toolchains = ["auto"].
	sr, err = parseServed([]string{"--server", "/s", "--", "go"}, getwd, []string{"PATH=/a/bin"})
	if err != nil || sr.req.Toolchains != nil || sr.req.Path != "/a/bin" {
		t.Errorf("without --toolchain: %+v %v", sr.req, err)
	}
}

// --toolchain PATH: the prefix is bound read-only with exec, its bin
// first in PATH, and the report says it came from the flag.
func TestRunToolchainFlag(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	tc := filepath.Join(dir, "tc")
	if err := os.MkdirAll(filepath.Join(tc, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := mustParseRun(t, "--toolchain", tc)
	want := []jail.Toolchain{{Kind: "prefix", Prefixes: []string{tc}, Bin: []string{tc + "/bin"}, From: "flag"}}
	if !reflect.DeepEqual(spec.Toolchains, want) {
		t.Errorf("toolchains %+v, want %+v", spec.Toolchains, want)
	}
	found := false
	for _, m := range spec.Mounts {
		found = found || m.Source == tc && m.Dest == tc && m.Exec && !m.Writable
	}
	if !found {
		t.Errorf("no read-only exec bind of %s in %+v", tc, spec.Mounts)
	}
	if !slices.ContainsFunc(spec.Env, func(e string) bool { return strings.HasPrefix(e, "PATH="+tc+"/bin:") }) {
		t.Errorf("env %q: PATH does not start with %s/bin", spec.Env, tc)
	}
}

// --server wins over TOOLJAIL_SERVER; an empty TOOLJAIL_SERVER is none; a
// run for a server is never jailed here.
func TestServerOf(t *testing.T) {
	getwd := func() (string, error) { return "/w", nil }
	for _, c := range []struct {
		args    []string
		environ []string
		want    string
	}{
		{[]string{"--", "true"}, nil, ""},
		{[]string{"--", "true"}, []string{"TOOLJAIL_SERVER="}, ""},
		{[]string{"--", "true"}, []string{"TOOLJAIL_SERVER=/env"}, "/env"},
		{[]string{"--server", "/flag", "--", "true"}, []string{"TOOLJAIL_SERVER=/env"}, "/flag"},
	} {
		sr, err := parseServed(c.args, getwd, c.environ)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if sr != nil {
			got = sr.socket
		}
		if got != c.want {
			t.Errorf("%q %q: server %q, want %q", c.args, c.environ, got, c.want)
		}
		if c.want != "" {
			if _, _, _, err := parseRun(c.args, getwd, c.environ); err == nil {
				t.Errorf("%q %q: parseRun would jail a run meant for a server", c.args, c.environ)
			}
		}
	}
	// Flags that do not parse are parseRun's to report.
	if sr, err := parseServed([]string{"--server", "/s", "--bogus", "--", "true"}, getwd, nil); sr != nil || err != nil {
		t.Errorf("bad flags: %+v %v, want nil, nil", sr, err)
	}
}

// fakeServer answers one call on a socket in a temporary directory with
// the lines given, after recording the request.
func fakeServer(t *testing.T, lines ...string) (string, <-chan serve.Request) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reqs := make(chan serve.Request, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadBytes('\n')
		var q serve.Request
		json.Unmarshal(line, &q)
		reqs <- q
		for _, l := range lines {
			c.Write([]byte(l + "\n"))
		}
	}()
	return sock, reqs
}

// A served run writes what a run jailed here would: the streamed output,
// the report (--json, --report), the summary line, the report's exit code;
// a refused request is its one line and code.
func TestServedRun(t *testing.T) {
	report := func(status string, code int, extra string) string {
		return fmt.Sprintf(`{"schema":"tooljail.report/v1","status":%q,"exit_code":%d,"reason":"r","stdout":{"bytes":4,"truncated":false,"text":"out\n"},"stderr":{"bytes":0,"truncated":false,"text":""},"violations":[]%s}`, status, code, extra)
	}
	out64 := `{"stream":"stdout","data":"b3V0Cg=="}`
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	for _, c := range []struct {
		name       string
		flags      []string
		lines      []string
		code       int
		stdout     string
		stderr     string // a substring
		jsonStatus string // --json: the status printed
	}{
		{"exited", nil, []string{out64, report("exited", 3, "")}, 3, "out\n", "", ""},
		{"timeout summary", nil, []string{report("timeout", 124, "")}, 124, "", "tooljail: timeout: r", ""},
		{"quiet", []string{"-q"}, []string{report("timeout", 124, "")}, 124, "", "", ""},
		{"setup error", []string{"-q"}, []string{report("setup_error", 127, "")}, 127, "", "tooljail: r\n", ""},
		{"json", []string{"--json"}, []string{report("exited", 0, "")}, 0, "", "", "exited"},
		{"refused", nil, []string{`{"error":{"code":125,"message":"limits.memory: 2G is looser than the profile's 512M"}}`}, 125, "",
			"tooljail: limits.memory: 2G is looser than the profile's 512M\n", ""},
		{"no final line", nil, nil, 125, "", "the connection ended before the report", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, reqs := fakeServer(t, c.lines...)
			sr, err := parseServed(append(append([]string{"--server", sock, "--no-workdir"}, c.flags...), "--", "cmd"), func() (string, error) { return "/", nil }, nil)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := sr.run(stdin, &stdout, &stderr)
			q := <-reqs
			if !reflect.DeepEqual(q.Argv, []string{"cmd"}) || q.Stdin != nil || q.Stream != (c.jsonStatus == "") {
				t.Errorf("request %+v", q)
			}
			if code != c.code || !strings.Contains(stderr.String(), c.stderr) || (c.stderr == "" && stderr.Len() > 0) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), c.code, c.stderr)
			}
			if c.jsonStatus == "" {
				if stdout.String() != c.stdout {
					t.Errorf("stdout %q, want %q", stdout.String(), c.stdout)
				}
				return
			}
			var r struct {
				Status string `json:"status"`
				Stdout struct {
					Text *string `json:"text"`
				} `json:"stdout"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Status != c.jsonStatus || r.Stdout.Text == nil || *r.Stdout.Text != "out\n" {
				t.Errorf("--json printed %q (%v)", stdout.String(), err)
			}
		})
	}
	// No server there: one line that says how to start one.
	sock := filepath.Join(t.TempDir(), "nosock")
	sr, err := parseServed([]string{"--server", sock, "--no-workdir", "--", "cmd"}, func() (string, error) { return "/", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := sr.run(stdin, &stdout, &stderr); code != 125 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "tooljail serve --socket "+sock) {
		t.Errorf("no server: exit %d, stderr %q", code, stderr.String())
	}
}

// --profile with a server: a shipped name goes as "profile"; a file is
// read here (relative to the current directory, by the rules of a
// profile file, at most profiles.MaxSize). The request names it first (a
// server may serve that file under the same string); its text is what
// goes as "profile_toml" if the server serves no such profile, since the
// server reads no file of the client's.
func TestServedProfileFile(t *testing.T) {
	dir := t.TempDir()
	text := "extends = \"strict\"\n[env]\nset = { MINE = \"1\" }\n"
	if err := os.WriteFile(filepath.Join(dir, "mine.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), make([]byte, profiles.MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	getwd := func() (string, error) { return dir, nil }
	for _, c := range []struct {
		profile, workdir, wantName, wantText, wantErr string
	}{
		{"strict", "", "strict", "", ""},
		{"mine.toml", "/elsewhere", "mine.toml", text, ""},
		{"./mine.toml", "", "./mine.toml", text, ""},
		{filepath.Join(dir, "mine.toml"), "", filepath.Join(dir, "mine.toml"), text, ""},
		{"./missing.toml", "", "", "", filepath.Join(dir, "missing.toml")},
		{"big.toml", "", "", "", "larger than 1 MiB"},
		{"fifo.toml", "", "", "", "is a FIFO (named pipe), not a regular file"},
		{"./", "", "", "", "is a directory"},
		// A run jailed here binds its profile file read-only; a server
		// cannot, so one the command could rewrite is refused.
		{"mine.toml", ".", "", "", "--profile mine.toml: inside the run's workdir " + dir + ", where the command could rewrite it"},
		{"./mine.toml", dir, "", "", "inside the run's workdir"},
		{filepath.Join(dir, "mine.toml"), filepath.Dir(dir), "", "", "inside the run's workdir " + filepath.Dir(dir)},
	} {
		args := []string{"--server", "/s", "--profile", c.profile, "--no-workdir", "--", "true"}
		if c.workdir != "" {
			args[4], args[5] = "--workdir", c.workdir
			args = append(args[:6], "--", "true")
		}
		done := make(chan struct{})
		var sr *servedRun
		var err error
		go func() {
			defer close(done)
			sr, err = parseServed(args, getwd, nil)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("--profile %s: parseServed hangs", c.profile)
		}
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("--profile %s: %v, want one line with %q", c.profile, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", args, err)
		} else if sr.req.Profile != c.wantName || sr.req.ProfileTOML != "" || sr.profileText != c.wantText {
			t.Errorf("%q: profile %q, profile_toml %q, text kept %q", args, sr.req.Profile, sr.req.ProfileTOML, sr.profileText)
		}
	}
}

func TestProfileNotServed(t *testing.T) {
	for _, c := range []struct {
		msg, name string
		want      bool
	}{
		{`profile "./a.toml": not served here (served: default); ask for one of those`, "./a.toml", true},
		{`profile "./a.toml": not served here`, "./b.toml", false},
		{`profile "a b.toml": not served here`, "a b.toml", true},
		{`limits.memory: 2G is looser than the profile's 512M`, "./a.toml", false},
		{`the server already runs 64 calls, its --max-runs; profile "./a.toml": not served here`, "./a.toml", false},
	} {
		if got := profileNotServed(c.msg, c.name); got != c.want {
			t.Errorf("profileNotServed(%q, %q) = %v, want %v", c.msg, c.name, got, c.want)
		}
	}
}

// What the server says of a sent profile's text names the file it came
// from; its other refusals are shown as they are.
func TestServedProfileRefusal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.toml"), []byte("extends = \"default\"\n[limits]\nmemroy = \"1G\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	for _, c := range []struct {
		profile, message, want string
	}{
		{"./mine.toml", "profile_toml:3:1: limits.memroy: unknown key", "tooljail: ./mine.toml:3:1: limits.memroy: unknown key\n"},
		{"./mine.toml", "profile_toml: this server takes no profile from its clients", "tooljail: ./mine.toml: this server takes no profile from its clients\n"},
		{"./mine.toml", "limits.memory: 2G is looser than the profile's 512M", "tooljail: limits.memory: 2G is looser than the profile's 512M\n"},
		{"default", "profile_toml:1:1: not ours to rename", "tooljail: profile_toml:1:1: not ours to rename\n"},
	} {
		line, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 125, "message": c.message}})
		sock, reqs := fakeServer(t, string(line))
		sr, err := parseServed([]string{"--server", sock, "--no-workdir", "--profile", c.profile, "--", "cmd"}, func() (string, error) { return dir, nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := sr.run(stdin, &stdout, &stderr)
		<-reqs
		if code != 125 || stderr.String() != c.want {
			t.Errorf("%s, %q: exit %d, stderr %q; want 125, %q", c.profile, c.message, code, stderr.String(), c.want)
		}
	}
}

// A profile's [limits.max] caps the limit flags, in the words a server
// uses for a request's limits (serve.setLimit calls the same check).
func TestRunLimitCeiling(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "capped.toml")
	if err := os.WriteFile(file, []byte("extends = \"default\"\n[limits.max]\nmemory = \"1G\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	getwd := func() (string, error) { return dir, nil }
	for _, c := range []struct {
		memory, want string
	}{
		{"1G", ""},
		{"64M", ""},
		{"2G", `limits.memory: 2G is above the ceiling of profile ` + file + ` (limits.max.memory = "1G"); ask for at most 1G, or raise the ceiling in the profile`},
		{"unlimited", "limits.memory: unlimited is above the ceiling"},
	} {
		_, _, _, err := parseRun([]string{"--profile", file, "--no-workdir", "--memory", c.memory, "--", "true"}, getwd, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--memory %s: %v", c.memory, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("--memory %s: %v, want %q", c.memory, err, c.want)
		}
	}
	// Without a ceiling any value goes, as it always did.
	if _, _, _, err := parseRun([]string{"--no-workdir", "--memory", "64G", "--", "true"}, getwd, nil); err != nil {
		t.Fatal(err)
	}
}
