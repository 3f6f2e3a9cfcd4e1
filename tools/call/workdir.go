package call

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tooljail/tooljail/hostpath"
)

// CheckWorkdir refuses, before any call, a working directory that every
// call of a tool with a workdir would fail on, or that should not be one:
// by the rule a run's workdir is refused by (hostpath.Refuse: the root, a
// system, top-level or home directory), whether the tools bind it
// read-write or read-only; a read-only home would still show the model
// every file in it through the tools that read. It must exist and be a
// directory. A file whose every tool binds no workdir (a profile with
// workdir = false) takes any; a tool whose profile does not load is left
// to its own error.
func (c *Caller) CheckWorkdir() error {
	uses := false
	for _, t := range c.File.Tools {
		r, err := Resolve(c.File, c.Defaults, t)
		if err != nil {
			continue // the tool's own error, where it is called
		}
		uses = uses || !r.NoWorkdir
	}
	if !uses {
		return nil
	}
	o, err := hostpath.Open(c.Workdir, hostpath.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workdir %s: does not exist", c.Workdir)
	}
	if err != nil {
		return fmt.Errorf("workdir %s: %w", c.Workdir, err)
	}
	defer o.Close()
	if !o.IsDir() {
		return fmt.Errorf("workdir %s: not a directory", c.Workdir)
	}
	if err := hostpath.Refuse(o); err != nil {
		return fmt.Errorf("workdir %w", err)
	}
	return nil
}
