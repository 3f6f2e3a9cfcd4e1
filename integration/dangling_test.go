package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command that is a symlink to a place the jail does not show (a
// virtualenv's python into the caller's pyenv, a tool into /opt), or a
// script whose #! interpreter lies there, is exit 127 with a message that
// names the target and what would show it, by path and by a lookup in
// PATH; where the jail shows the target (--toolchain, as the message
// says) the command runs.
func TestDanglingCommandNamed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		outside := u.dir(t) // a directory the jail does not show
		// readable by the jail's user (root runs it as another uid)
		if err := os.Chmod(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(outside, "bin", "tool")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, target, "#!/bin/sh\necho hi\n", 0o755)
		if err := os.MkdirAll(filepath.Join(w, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, l := range [][2]string{
			{target, "tool"},
			{target, "bin/tool"},
			// named as its target: a busybox applet picks itself by name
			{"/bin/true", "true"},
		} {
			if err := os.Symlink(l[0], filepath.Join(w, l[1])); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(w, "run.sh"), "#!"+target+"\n", 0o755)
		for _, p := range []string{filepath.Join(w, "bin"), filepath.Join(w, "run.sh")} {
			if err := os.Lchown(p, u.dirUID, u.dirGID); err != nil {
				t.Fatal(err)
			}
		}
		show := "show it with --toolchain auto, or --toolchain " + outside + " (filesystem.toolchains)"
		for _, c := range []struct {
			name  string
			flags []string
			cmd   string
			want  string
		}{
			{"symlink by path", nil, "./tool", filepath.Join(w, "tool") + " is a symlink to " + target + ", which the jail does not show: " + show},
			{"symlink in PATH", []string{"--env", "PATH=" + filepath.Join(w, "bin") + ":/usr/bin:/bin"}, "tool", filepath.Join(w, "bin/tool") + " is a symlink to " + target + ", which the jail does not show: " + show},
			{"script's interpreter", nil, "./run.sh", filepath.Join(w, "run.sh") + " starts with #!" + target + ", which the jail does not show: " + show},
		} {
			o := u.jailRun(t, w, run{args: c.flags}, c.cmd)
			if o.code != 127 || !strings.Contains(o.stderr, c.want) || !strings.Contains(o.report.Reason, c.want) {
				t.Errorf("%s: want exit 127 and %q in stderr and the reason\n%s", c.name, c.want, o)
			}
		}
		if o := u.jailRun(t, w, run{}, "./true"); o.code != 0 {
			t.Errorf("a symlink to what the jail shows does not run\n%s", o)
		}
		// The fix the message names works: the prefix shown read-only
		// with execute rights, the command runs.
		if o := u.jailRun(t, w, run{args: []string{"--toolchain", outside}}, "./tool"); o.code != 0 || strings.TrimSpace(o.stdout) != "hi" {
			t.Errorf("with --toolchain %s the target does not run\n%s", outside, o)
		}
	})
}
