package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// Every flag that takes a value and is not repeatable is refused twice,
// even with the same value: TestScalarFlagsOnce lists them, this test
// makes sure no new flag escapes that list.
func TestEveryScalarFlagOnce(t *testing.T) {
	valid := map[string]string{
		"profile": "default", "workdir": "/w", "host-user": "1000", "report": "r.json", "audit-log": "a.log",
		"net": "none", "on-violation": "deny", "memory": "1G", "cpus": "1", "pids": "10", "timeout": "1s",
		"cpu-time": "1s", "nofile": "10", "fsize": "1M", "output-limit": "1M", "max-violations": "10", "server": "/s",
		"net-connections": "16", "net-bytes": "1G", "root": "/srv/rootfs",
		"changes": "review", "changes-dir": "/var/tmp/changes", "session": "0123456789abcdef0123456789abcdef",
		"exec-fd": "3",
	}
	for _, r := range runFlagTable(&runFlags{}) {
		if r.value == "" || r.repeat {
			continue
		}
		v, ok := valid[r.name]
		if !ok {
			t.Errorf("--%s: not in this test's list of scalar flags; add it (and to TestScalarFlagsOnce)", r.name)
			continue
		}
		fs := newRunFlagSet(&runFlags{})
		if err := fs.Parse([]string{"--" + r.name, v, "--" + r.name, v, "--", "true"}); err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("--%s %s twice: %v", r.name, v, err)
		}
	}
	// Only a flag with a value can add up.
	for _, r := range runFlagTable(&runFlags{}) {
		if r.repeat && r.value == "" {
			t.Errorf("--%s: repeatable but takes no value", r.name)
		}
	}
}

// A bad value is an error when it is parsed: a later flag cannot hide it
// (it would be a second value anyway), and the message is about the value.
func TestFlagValuesCheckedWhenParsed(t *testing.T) {
	cases := []struct {
		args []string
		want string // in the error
	}{
		{[]string{"--net=hots", "--net", "none"}, `invalid value "hots" for flag -net: want "none", "host" or "allow"`},
		{[]string{"--allow-host", "*.com.:99999"}, `invalid value "*.com.:99999" for flag -allow-host: allow pattern`},
		{[]string{"--allow-host", "http://pypi.org"}, `allow pattern "http://pypi.org"`},
		{[]string{"--net-connections", "0"}, "from 1 to 65535"},
		{[]string{"--toolchain", "rel/dir"}, `invalid value "rel/dir" for flag -toolchain: want "auto" or an absolute host path`},
		{[]string{"--net-connections", "unlimited"}, "from 1 to 65535"},
		{[]string{"--net-bytes", "1XB"}, `invalid size "1XB"`},
		{[]string{"--net", "none", "--net=hots"}, `"hots"`},
		{[]string{"--on-violation", "log", "--on-violation", "deny"}, `invalid value "log" for flag -on-violation`},
		{[]string{"--memory", "12XB", "--memory", "1G"}, `invalid size "12XB"`},
		{[]string{"--memory", "1G", "--memory", "12XB"}, `invalid size "12XB"`},
		{[]string{"--cpus", "NaN", "--cpus", "1"}, `invalid CPU count "NaN"`},
		{[]string{"--pids", "-1", "--pids", "10"}, `invalid count "-1"`},
		{[]string{"--timeout", "10", "--timeout", "10s"}, `invalid duration "10"`},
		{[]string{"--cpu-time", "500ms", "--cpu-time", "1s"}, "whole seconds"},
		{[]string{"--nofile", "1k", "--nofile", "1024"}, `invalid count "1k"`},
		{[]string{"--fsize", "1.5G", "--fsize", "1G"}, "fractions are not accepted"},
		{[]string{"--output-limit", "1KB", "--output-limit", "1K"}, `unknown suffix "KB"`},
		{[]string{"--max-violations", "many", "--max-violations", "10"}, `invalid count "many"`},
		{[]string{"--max-violations", "99999999999"}, "too large"},
		{[]string{"--exec-fd", "2"}, "a descriptor number of 3 or more"},
		{[]string{"--exec-fd", "three"}, "a descriptor number of 3 or more"},
		{[]string{"--host-user", "root", "--host-user", "1000"}, "root"},
		{[]string{"--root", ""}, "empty: give the directory of an unpacked root file system"},
		{[]string{"--tmpfs", "/x:1XB"}, `invalid size "1XB"`},
		{[]string{"--tmpfs", "rel:1M"}, "absolute DEST"},
		{[]string{"--ro", "data:mnt"}, `DEST "mnt" must be an absolute path`},
		{[]string{"--rw", ":/x"}, "want PATH or PATH:DEST"},
		{[]string{"--mask", "etc/passwd"}, "absolute path"},
		{[]string{"--env", "=x"}, "want NAME=VALUE, or NAME"},
		{[]string{"--env", "A=\x00"}, "NUL"},
		{[]string{"--pass-env", "HOME"}, "HOME cannot be set"},
		{[]string{"--pass-env", "HOME"}, "HOME cannot be set"},
		{[]string{"--pass-env", "A=B"}, "not a valid environment variable name"},
		{[]string{"--allow-degraded", "cgroup,apparmor"}, `unknown layer "apparmor"`},
		{[]string{"--profile", ""}, "empty; give a shipped profile name or a file path"},
		{[]string{"--workdir", ""}, "empty; give a directory, or --no-workdir"},
		{[]string{"--report", ""}, "empty; give a file path, or - for stderr"},
		{[]string{"--audit-log", ""}, "empty; give a file path"},
	}
	for _, c := range cases {
		fs := newRunFlagSet(&runFlags{})
		err := fs.Parse(append(c.args, "--", "true"))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "given twice") {
			t.Errorf("%q: error %v, want one about the value, with %q", c.args, err, c.want)
		}
	}
	// Good values parse, and the repeatable ones add up.
	var f runFlags
	fs := newRunFlagSet(&f)
	if err := fs.Parse([]string{"--net", "host", "--on-violation", "kill", "--max-violations", "unlimited", "--tmpfs", "/a:1M", "--tmpfs", "/b",
		"--allow-degraded", "cgroup,landlock", "--allow-degraded", "seccomp", "--host-user", "", "--", "true"}); err != nil {
		t.Fatal(err)
	}
	if f.net.value != "host" || f.onViolation.value != "kill" || len(f.tmpfs) != 2 || len(f.allowDegraded) != 2 || !f.hostUser.set {
		t.Errorf("parsed %+v", f)
	}
}

func mustParseRun(t *testing.T, args ...string) *jail.Spec {
	t.Helper()
	_, spec, _, err := parseRun(append(args, "--", "true"), func() (string, error) { return t.TempDir(), nil }, nil)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	for _, o := range spec.Trusted {
		t.Cleanup(func() { o.Close() })
	}
	return spec
}

func writeProfile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --max-violations and limits.max_violations: the default profile's
// 10000, a profile's own value along extends, the flag over both.
func TestMaxViolations(t *testing.T) {
	dir := t.TempDir()
	base := writeProfile(t, dir, "base.toml", "extends = \"default\"\n[limits]\nmax_violations = 7\n")
	child := writeProfile(t, dir, "child.toml", "extends = \"base.toml\"\n[limits]\nmemory = \"1G\"\n")
	lifted := writeProfile(t, dir, "lifted.toml", "extends = \"child.toml\"\n[limits]\nmax_violations = \"unlimited\"\n")
	cases := []struct {
		args []string
		want int
	}{
		{nil, 10000},
		{[]string{"--profile", "strict"}, 10000},
		{[]string{"--max-violations", "5"}, 5},
		{[]string{"--max-violations", "0"}, 0},
		{[]string{"--max-violations", "unlimited"}, 0},
		{[]string{"--profile", base}, 7},
		{[]string{"--profile", child}, 7},
		{[]string{"--profile", lifted}, 0},
		{[]string{"--profile", child, "--max-violations", "3"}, 3},
		{[]string{"--profile", lifted, "--max-violations", "2147483647"}, 1<<31 - 1},
	}
	for _, c := range cases {
		spec := mustParseRun(t, append(c.args, "--no-workdir")...)
		if spec.Limits.MaxViolations != c.want {
			t.Errorf("%q: max violations %d, want %d", c.args, spec.Limits.MaxViolations, c.want)
		}
	}
}

// The default profile bounds each file the command writes to 1 GiB.
func TestDefaultFileSizeLimit(t *testing.T) {
	if got := mustParseRun(t, "--no-workdir").Limits.FSize; got != 1<<30 {
		t.Errorf("default fsize %d, want 1 GiB", got)
	}
	if got := mustParseRun(t, "--no-workdir", "--fsize", "0").Limits.FSize; got != 0 {
		t.Errorf("--fsize 0: %d, want unlimited", got)
	}
	if got := mustParseRun(t, "--no-workdir", "--profile", "strict").Limits.FSize; got != 64<<20 {
		t.Errorf("strict fsize %d, want 64 MiB", got)
	}
}

// The command name may not be empty; what follows it may.
func TestEmptyCommandName(t *testing.T) {
	getwd := func() (string, error) { return "/w", nil }
	for _, args := range [][]string{{"--", ""}, {""}, {"--", "", "x"}} {
		if _, _, _, err := parseRun(args, getwd, nil); err == nil || !strings.Contains(err.Error(), "empty command name") {
			t.Errorf("%q: %v", args, err)
		}
	}
	_, spec, _, err := parseRun([]string{"--no-workdir", "--", "sh", "-c", ""}, getwd, nil)
	if err != nil || len(spec.Args) != 3 || spec.Args[2] != "" {
		t.Errorf("empty argument: %v %q", err, spec.Args)
	}
}

// Profile files that are not small regular files are refused at once, in
// one line: a FIFO would otherwise block the open or the read for ever.
func TestProfileFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := writeProfile(t, dir, "big.toml", "extends = \"default\"\n"+strings.Repeat("# padding\n", 110000))
	extendsFifo := writeProfile(t, dir, "extends-fifo.toml", "extends = \"fifo.toml\"\n")
	extendsMissing := writeProfile(t, dir, "extends-missing.toml", "extends = \"missing.toml\"\n")
	twoKeys := writeProfile(t, dir, "two-keys.toml", "extends = \"default\"\nfoo = 1\n[limits]\nmemroy = \"1G\"\n")
	newline := filepath.Join(dir, "a\nb.toml")
	cases := []struct {
		profile string
		want    string
	}{
		{fifo, "is a FIFO (named pipe), not a regular file"},
		{extendsFifo, "is a FIFO (named pipe), not a regular file"},
		{"/dev/zero", "is a character device, not a regular file"},
		{dir, "is a directory, not a regular file"},
		{big, "larger than 1 MiB"},
		{extendsMissing, "missing.toml"},
		{twoKeys, "did you mean limits.memory?"},
		{newline, `a\nb.toml`},
	}
	for _, c := range cases {
		done := make(chan struct{})
		var stdout, stderr bytes.Buffer
		var code int
		go func() {
			defer close(done)
			code = dispatch([]string{"run", "--profile", c.profile, "--", "true"}, &stdout, &stderr)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("--profile %s: tooljail hangs", c.profile)
		}
		out := stderr.String()
		if code != jail.ExitSetup || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "tooljail: ") || !strings.Contains(out, c.want) {
			t.Errorf("--profile %q: exit %d, stderr %q; want 125 and one line with %q", c.profile, code, out, c.want)
		}
	}
}
