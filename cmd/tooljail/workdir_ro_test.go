package main

import (
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// --workdir-ro binds the workdir read-only, as the readonly profile does;
// without it the workdir stays read-write.
func TestWorkdirReadOnlyFlag(t *testing.T) {
	for _, c := range []struct {
		args     []string
		writable bool
	}{
		{nil, true},
		{[]string{"--workdir-ro"}, false},
		{[]string{"--profile", "readonly"}, false},
		{[]string{"--profile", "build", "--workdir-ro"}, false},
		{[]string{"--profile", "strict", "--workdir-ro", "--memory", "64M"}, false},
	} {
		spec := mustParseRun(t, c.args...)
		var found *jail.Mount
		for i, m := range spec.Mounts {
			if m.Kind == jail.MountBind && m.Dest == spec.Dir {
				found = &spec.Mounts[i]
			}
		}
		if found == nil || found.Writable != c.writable {
			t.Errorf("%q: workdir mount %+v, want writable %v", c.args, found, c.writable)
		}
	}
}
