package jail

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The command's output pipes are grown to outputPipeSize (one pipe for
// both with MergeStderr), and the relays end when the jail's ends close.
func TestChildStdioPipes(t *testing.T) {
	for _, merge := range []bool{false, true} {
		c := &Cmd{Spec: &Spec{}, MergeStderr: merge}
		s, err := c.childStdio()
		if err != nil {
			t.Fatal(err)
		}
		if (s.out[0] == s.out[1]) != merge || (c.relays[1] == nil) != merge {
			t.Errorf("merge %v: stdout and stderr one pipe: %v", merge, s.out[0] == s.out[1])
		}
		for i, f := range s.out {
			size, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
			if err != nil || size != outputPipeSize {
				t.Errorf("merge %v: pipe %d holds %d bytes (%v), want %d", merge, i+1, size, err, outputPipeSize)
			}
		}
		s.close()
		for _, r := range c.relays {
			if r != nil {
				r.Result() // returns once the relay has ended
			}
		}
	}
}
