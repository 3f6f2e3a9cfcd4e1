package jail_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// mergeScript writes to stdout and stderr in turn, many times.
const mergeScript = `echo 1; echo 2 >&2; echo 3; i=0; while [ $i -lt 2000 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done`

func mergeWant() string {
	var b strings.Builder
	b.WriteString("1\n2\n3\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "o%d\ne%d\n", i, i)
	}
	return b.String()
}

// checkMerged runs cmd with MergeStderr, its output both relayed and
// captured, and checks that both have the writes in their order and that
// stderr says merged.
func checkMerged(t *testing.T, cmd *jail.Cmd) {
	t.Helper()
	var relayed bytes.Buffer
	cmd.MergeStderr = true
	cmd.Stdout = &relayed
	cmd.CaptureOutput = true
	res, err := cmd.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	want := mergeWant()
	if relayed.String() != want {
		t.Errorf("relayed output not in write order: %.120q...", relayed.String())
	}
	if res.Stdout.Text == nil || *res.Stdout.Text != want || res.Stdout.Bytes != int64(len(want)) {
		t.Errorf("captured stdout: %d bytes, not the writes in order", res.Stdout.Bytes)
	}
	if !reflect.DeepEqual(res.Stderr, jail.Stream{Merged: true}) {
		t.Errorf("stderr entry %+v, want merged and nothing counted", res.Stderr)
	}
}

// The command's fd 1 and fd 2 are one pipe, cold and in a warm jail.
func TestMergeStderr(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	spec := warmSpec(t, dir, nil, "/bin/sh", "-c", mergeScript)
	t.Run("cold", func(t *testing.T) {
		checkMerged(t, jail.Command(spec))
	})
	t.Run("warm", func(t *testing.T) {
		w := prepare(t, spec)
		cmd, err := w.Command(spec)
		if err != nil {
			t.Fatal(err)
		}
		checkMerged(t, cmd)
	})
	t.Run("fd 1 and 2 are one file", func(t *testing.T) {
		// The same pipe: the same inode behind both.
		s := warmSpec(t, dir, nil, "/bin/sh", "-c", `a=$(readlink /proc/$$/fd/1); b=$(readlink /proc/$$/fd/2); [ "$a" = "$b" ] && echo same`)
		cmd := jail.Command(s)
		cmd.MergeStderr, cmd.CaptureOutput = true, true
		res, err := cmd.Run()
		if err != nil || res.Stdout.Text == nil || *res.Stdout.Text != "same\n" {
			t.Errorf("fd 1 and 2 differ: %v %+v", err, res)
		}
	})
	t.Run("a Stderr of its own is refused", func(t *testing.T) {
		cmd := jail.Command(spec)
		cmd.MergeStderr = true
		cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		res, err := cmd.Run()
		if err == nil || res.Status != jail.StatusSetupError || !strings.Contains(err.Error(), "leave Stderr nil") {
			t.Errorf("want a setup error naming Stderr: %v %+v", err, res)
		}
	})
}
