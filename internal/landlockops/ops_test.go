package landlockops

import (
	"path/filepath"
	"testing"
)

// Without a ruleset every operation reaches the kernel's plain answer:
// what the Landlock tests compare a restricted answer against.
func TestRunWithoutRuleset(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	for _, c := range []struct {
		op   Op
		want string
	}{
		{Op{Do: "read", Path: f}, "ENOENT"},
		{Op{Do: "create", Path: f}, "ok"},
		{Op{Do: "create", Path: f}, "EEXIST"},
		{Op{Do: "read", Path: f}, "empty"},
		{Op{Do: "write", Path: f}, "ok"},
		{Op{Do: "read", Path: f}, "ok"},
		{Op{Do: "truncate", Path: f}, "ok"},
		{Op{Do: "link", Path: f, To: f + "2"}, "ok"},
		{Op{Do: "rename", Path: f + "2", To: f + "3"}, "ok"},
		{Op{Do: "mkdir", Path: filepath.Join(dir, "d")}, "ok"},
		{Op{Do: "readdir", Path: dir}, "ok"},
		{Op{Do: "unlink", Path: f}, "ok"},
		{Op{Do: "exec", Path: filepath.Join(dir, "nothing")}, "ENOENT"},
		{Op{Do: "abstract", Path: "tooljail-landlockops-test-none"}, "ECONNREFUSED"},
		{Op{Do: "ptmx", Path: filepath.Join(dir, "none")}, "open ENOENT"},
		{Op{Do: "fly"}, "unknown op fly"},
	} {
		if got := Run(c.op); got != c.want {
			t.Errorf("Run(%+v) = %q, want %q", c.op, got, c.want)
		}
	}
}
