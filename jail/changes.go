package jail

import (
	"os"

	"github.com/tooljail/tooljail/changes"
)

// A run with changes (Spec.Changes) mounts an overlay over each writable
// bind it records; package changes makes the set, opens its layers and
// scans, keeps and applies it (changes.Run). This file gives it the run's
// store and its end.

// changesDir is the change store the run uses: Spec.ChangesDir, or the
// default of the supervisor's user (changes.DefaultDir).
func (c *Cmd) changesDir() (string, error) {
	if c.Spec.ChangesDir != "" {
		return c.Spec.ChangesDir, nil
	}
	return changes.DefaultDir(os.Geteuid(), os.Getenv("HOME"), os.Getenv("XDG_STATE_HOME"))
}

// finishChanges gives the run's change set its end: scanned and kept (and
// applied where the mode says so) once the jail's mount namespace, which
// holds the overlays, is gone; removed when the command never ran.
func (c *Cmd) finishChanges() {
	if c.chg == nil {
		return
	}
	if c.res.Status == StatusSetupError {
		c.chg.Abort()
		if c.chg.Mode().Overlay() {
			c.res.Changes = &changes.Report{Mode: c.chg.Mode(), Recorded: false, Reason: "the command never ran", State: changes.StateEmpty, Entries: []changes.Entry{}}
		}
		return
	}
	if c.early && c.chg.Active() {
		// The init exits right after its exit record; its end is the
		// end of the overlays' mount namespace.
		<-c.waitCh
		<-c.msgDone
		c.early = false
	}
	ok := c.res.Status == StatusExited && c.res.ExitCode == 0
	c.res.Changes = c.chg.Finish(changes.RunInfo{Argv: c.Spec.Args, Exit: c.res.ExitCode, Owner: c.Spec.ChangesOwner, Protect: c.Spec.Protect}, ok)
}
