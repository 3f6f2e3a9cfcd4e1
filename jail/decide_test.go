package jail

import (
	"testing"
)

// A kill that comes after the command's exit record is not why the run
// ended; one that comes before is.
func TestKillAfterExitRecord(t *testing.T) {
	c := &Cmd{}
	c.kill(StatusTimeout, "wall-clock limit")
	if c.killedFor != StatusTimeout {
		t.Fatalf("kill before the exit record: killedFor %q", c.killedFor)
	}
	c = &Cmd{exitRec: &record{ExitCode: 0}}
	c.kill(StatusTimeout, "wall-clock limit")
	c.kill(StatusSignaled, "cancelled")
	if c.killedFor != "" {
		t.Fatalf("kill after the exit record: killedFor %q, want none", c.killedFor)
	}
	// The monitor kills the caller of a denied call before the run: the
	// caller's death may come first, and the violation still counts.
	c = &Cmd{exitRec: &record{Signal: 9, ExitCode: 137}}
	c.kill(StatusViolation, "")
	if c.killedFor != StatusViolation {
		t.Fatalf("violation kill after the exit record: killedFor %q", c.killedFor)
	}
}
