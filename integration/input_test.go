package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Bad input never starts a jail and never hangs: a profile (or a parent
// it extends) that is a FIFO, a device or over 1 MiB, an empty command
// name, a bad value followed by a good one. One line, exit 125.
func TestInputRejected(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		d := u.dir(t)
		fifo := filepath.Join(d, "fifo.toml")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		write := func(name, content string) string {
			p := filepath.Join(d, name)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		child := write("child.toml", "extends = \"fifo.toml\"\n")
		big := write("big.toml", "extends = \"default\"\n"+strings.Repeat("# padding\n", 110000))
		orphan := write("orphan.toml", "extends = \"missing.toml\"\n")
		cases := []struct {
			args []string
			want []string
		}{
			{[]string{"--profile", fifo}, []string{fifo + " is a FIFO (named pipe), not a regular file"}},
			{[]string{"--profile", child}, []string{fifo + " is a FIFO"}},
			{[]string{"--profile", "/dev/zero"}, []string{"/dev/zero is a character device"}},
			{[]string{"--profile", big}, []string{"larger than 1 MiB"}},
			{[]string{"--profile", orphan}, []string{filepath.Join(d, "missing.toml")}},
			{[]string{"--net=hots", "--net", "none"}, []string{`invalid value "hots" for flag -net`}},
			{[]string{"--memory", "1G", "--memory", "12XB"}, []string{`invalid size "12XB"`}},
			{[]string{"--max-violations", "-1"}, []string{`invalid count "-1"`}},
		}
		for _, c := range cases {
			args := append(append([]string{"run", "--no-workdir"}, c.args...), "--", "/bin/true")
			oneLineError(t, u.exec(t, run{args: args, dir: d}), c.want...)
		}
		for _, args := range [][]string{{"run", "--", ""}, {"run", "--no-workdir", "--", "", "x"}} {
			oneLineError(t, u.exec(t, run{args: args, dir: d}), "empty command name")
		}
	})
}

// A command that is not found inside the jail is 127, one found that
// cannot be executed 126; neither is tooljail's own failure.
func TestInputCommandNotFound(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, c := range []struct {
			command string
			code    int
		}{
			{"tooljail-no-such-command", 127},
			{"/no/such/path", 127},
			{"/etc/hostname", 126},
		} {
			o := u.jailRun(t, w, run{}, c.command)
			if o.code != c.code || o.report.ExitCode != c.code || o.report.Status != "setup_error" {
				t.Errorf("%s: want exit %d and status setup_error\n%s", c.command, c.code, o)
			}
		}
	})
}

// The default profile bounds each file the command writes to 1 GiB, and
// says so in the report; --fsize lifts or lowers it.
func TestInputDefaultLimits(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		o := u.jail(t, w, nil, "rlimits")
		o.ok(t, 1)
		if o.report.Limits.FSizeBytes != 1<<30 {
			t.Errorf("report fsize_bytes %d, want 1 GiB\n%s", o.report.Limits.FSizeBytes, o)
		}
		var rl map[string][2]string
		o.value(t, 0, &rl)
		if rl["FSIZE"][0] != "1073741824" {
			t.Errorf("the command's RLIMIT_FSIZE is %v, want 1 GiB\n%s", rl["FSIZE"], o)
		}
		var raw struct {
			Limits map[string]any `json:"limits"`
		}
		if err := json.Unmarshal(o.reportRaw, &raw); err != nil {
			t.Fatal(err)
		}
		// The report names max_violations once the jail reports it.
		if v, ok := raw.Limits["max_violations"]; ok && v != float64(10000) {
			t.Errorf("report max_violations %v, want 10000\n%s", v, o)
		}
		o = u.jail(t, w, []string{"--fsize", "0", "--max-violations", "0"}, "rlimits")
		o.ok(t, 1)
		o.value(t, 0, &rl)
		if o.report.Limits.FSizeBytes != 0 || rl["FSIZE"][0] == "1073741824" {
			t.Errorf("--fsize 0 did not lift the limit: %v\n%s", rl["FSIZE"], o)
		}
	})
}
