package call

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/tools"
)

// run jails argv under t's policy and waits for it. The error is the
// run's setup error (the command never ran); the Result is never nil.
func (c *Caller) run(ctx context.Context, t *tools.Tool, argv []string, stdin []byte) (*jail.Result, error) {
	spec, p, err := c.spec(t, argv)
	if err != nil {
		return setupFailure(argv, err), err
	}
	defer p.Close()
	cmd := jail.CommandContext(ctx, spec)
	cmd.CaptureOutput = true
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.Run()
}

// spec builds the jail.Spec of one call: the tool's profile (or the
// default's), the default's limits and then the tool's over it, the
// default's network and read-only workdir for a tool that names no
// profile, and the operator's allowed degraded layers. The profile holds
// its files open until the run ends; the caller closes it.
func (c *Caller) spec(t *tools.Tool, argv []string) (*jail.Spec, *profiles.Profile, error) {
	pol := c.Defaults.For(t)
	p, err := profiles.Load(profileRef(pol.Profile, c.File.Name))
	if err != nil {
		return nil, nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	s, err := c.overlay(p, pol, t, argv)
	if err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return s, p, nil
}

func (c *Caller) overlay(p *profiles.Profile, pol tools.Policy, t *tools.Tool, argv []string) (*jail.Spec, error) {
	keys := make([]string, 0, len(pol.Limits))
	for k := range pol.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := p.SetLimit(k, pol.Limits[k]); err != nil {
			return nil, fmt.Errorf("limits: %w", err)
		}
	}
	if pol.Network != "" {
		mode := pol.Network
		p.Network.Mode = &mode
	}
	for _, l := range c.AllowDegraded {
		if err := p.AddAllowDegraded(l); err != nil {
			return nil, err
		}
	}
	s, err := p.Spec(profiles.Request{Args: argv, Cwd: c.Workdir, Environ: c.Environ})
	if err != nil {
		return nil, err
	}
	if pol.ReadOnlyWorkdir {
		readOnlyWorkdir(s)
	}
	s.Trusted = append(s.Trusted, c.Trusted...)
	if o := c.Log.Object(); o != nil {
		s.Trusted = append(s.Trusted, o)
	}
	return s, nil
}

// readOnlyWorkdir makes the bind of the working directory read-only: the
// server-wide default for a tool that names no profile.
func readOnlyWorkdir(s *jail.Spec) {
	for i, m := range s.Mounts {
		if m.Kind == jail.MountBind && m.Dest == s.Dir {
			s.Mounts[i].Writable = false
		}
	}
}

// setupFailure is the report of a call whose jail could not be built.
func setupFailure(argv []string, err error) *jail.Result {
	return &jail.Result{
		Schema: jail.Schema, Version: jail.Version, ID: newID(), Command: argv,
		StartedAt: time.Now().UTC(), Status: jail.StatusSetupError, ExitCode: jail.ExitSetup,
		Reason: err.Error(), Violations: []jail.Violation{},
	}
}
