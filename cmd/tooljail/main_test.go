package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad input never starts a jail: one line on stderr, exit 125.
func TestBadInput(t *testing.T) {
	cases := map[string][]string{
		"unknown command":    {"frobnicate"},
		"unknown flag":       {"run", "--no-such-flag", "--", "true"},
		"bad size":           {"run", "--memory", "12XB", "--", "true"},
		"bad duration":       {"run", "--timeout", "5parsecs", "--", "true"},
		"bad cpus":           {"run", "--cpus", "-1", "--", "true"},
		"missing command":    {"run", "--memory", "1G"},
		"missing command2":   {"run", "--"},
		"bad net":            {"run", "--net", "bridge", "--", "true"},
		"bad on-violation":   {"run", "--on-violation", "log", "--", "true"},
		"bad layer":          {"run", "--allow-degraded", "apparmor", "--", "true"},
		"bad env":            {"run", "--env", "=NOEQUALS", "--", "true"},
		"missing profile":    {"run", "--profile", "/nonexistent/p.toml", "--", "true"},
		"unknown profile":    {"run", "--profile", "no-such-profile", "--", "true"},
		"workdir both":       {"run", "--workdir", "/tmp", "--no-workdir", "--", "true"},
		"workdir-ro, none":   {"run", "--workdir-ro", "--no-workdir", "--", "true"},
		"workdir root":       {"run", "--workdir", "/", "--", "true"},
		"host-user root":     {"run", "--host-user", "root", "--", "true"},
		"host-user 0":        {"run", "--host-user", "0:0", "--", "true"},
		"host-user gid 0":    {"run", "--host-user", "1000:0", "--", "true"},
		"host-user twice":    {"run", "--host-user", "1000", "--host-user", "1001", "--", "true"},
		"host-user bad":      {"run", "--host-user", "a b", "--", "true"},
		"memory twice":       {"run", "--memory", "1G", "--memory", "2G", "--", "true"},
		"net twice":          {"run", "--net", "none", "--net", "none", "--", "true"},
		"bad net, then good": {"run", "--net=hots", "--net", "none", "--", "true"},
		"empty command":      {"run", "--", ""},
		"bad max-violations": {"run", "--max-violations", "-1", "--", "true"},
		"profile twice":      {"run", "--profile", "default", "--profile", "strict", "--", "true"},
		"report twice":       {"run", "--report", "/tmp/a", "--report", "/tmp/b", "--", "true"},
		"profile show":       {"profile", "show"},
		"check args":         {"check", "extra"},
	}
	for name, args := range cases {
		var stdout, stderr bytes.Buffer
		code := dispatch(args, &stdout, &stderr)
		if code != 125 {
			t.Errorf("%s: exit %d, want 125 (stderr %q)", name, code, stderr.String())
		}
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "tooljail: ") {
			t.Errorf("%s: want one 'tooljail: ' line on stderr, got %q", name, stderr.String())
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"check", "--help"}, {"profile", "--help"}, {"version", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(args, &stdout, &stderr); code != 0 || stdout.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	dispatch([]string{"run", "--help"}, &stdout, &stderr)
	for _, flag := range []string{"-profile", "-ro", "-rw", "-tmpfs", "-mask", "-workdir", "-no-workdir", "-memory", "-cpus", "-pids",
		"-timeout", "-cpu-time", "-nofile", "-fsize", "-output-limit", "-max-violations", "-net", "-on-violation", "-env", "-pass-env",
		"-allow-degraded", "-report", "-json", "-audit-log", "-quiet", "-host-user"} {
		if !strings.Contains(stdout.String(), flag+" ") && !strings.Contains(stdout.String(), flag+"\n") {
			t.Errorf("run --help does not document %s", flag)
		}
	}
	for _, want := range []string{"-host-user USER", "never root", "UID:GID", "(default \"default\")"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run --help lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := dispatch([]string{"profile", "show", "default"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "host_user = ''") ||
		!strings.Contains(stdout.String(), "# host user a jail started by root runs as") {
		t.Errorf("profile show default does not describe host_user (exit %d):\n%s", code, stdout.String())
	}
}
