package call

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
)

// run jails argv under t's policy and waits for it. The error is the
// run's setup error (the command never ran); the Result is never nil.
func (c *Caller) run(ctx context.Context, t *tools.Tool, argv []string, timeout time.Duration, stdin []byte, client report.Peer) (*jail.Result, error) {
	spec, p, err := c.spec(t, argv, timeout)
	if err != nil {
		return setupFailure(argv, err), err
	}
	defer p.Close()
	if spec.Changes.Overlay() && c.ChangeStore != nil {
		if spec.ChangesDir, spec.ChangesOwner, err = c.ChangeStore(client); err != nil {
			err = fmt.Errorf("tool %s: %w", t.Name, err)
			return setupFailure(argv, err), err
		}
	}
	cmd := jail.CommandContext(ctx, spec)
	cmd.CaptureOutput = true
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	res, err := cmd.Run()
	return res, keepAnswer(t.Name, err, c.Warn)
}

// keepAnswer is the error of a call's run: a *jail.CleanupError is not
// one (the call ran, its Result is final and is the call's answer), and
// goes to warn, when set, with the tool's name. What the jail left is
// removed by the next run in this cgroup.
func keepAnswer(tool string, err error, warn func(error)) error {
	if ce := (*jail.CleanupError)(nil); errors.As(err, &ce) {
		if warn != nil {
			warn(fmt.Errorf("tool %s: %w", tool, ce))
		}
		return nil
	}
	return err
}

// spec builds the jail.Spec of one call: the tool's profile (or the
// default's), the default's limits and then the tool's over it, the
// default's network and read-only workdir for a tool that names no
// profile, the operator's allowed degraded layers, and the timeout the
// call asked for (0: none; admit held it to the tool's). The profile
// holds its files open until the run ends; the caller closes it.
func (c *Caller) spec(t *tools.Tool, argv []string, timeout time.Duration) (*jail.Spec, *profiles.Profile, error) {
	pol := c.Defaults.For(t)
	p, err := profiles.Load(profileRef(pol.Profile, t.File))
	if err != nil {
		return nil, nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	if timeout > 0 {
		pol.Limits["timeout"] = timeout.String()
	}
	s, err := c.overlay(p, pol, t, argv)
	if err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return s, p, nil
}

func (c *Caller) overlay(p *profiles.Profile, pol tools.Policy, t *tools.Tool, argv []string) (*jail.Spec, error) {
	if err := setLimits(p, pol.Limits); err != nil {
		return nil, err
	}
	if pol.Network != "" {
		mode := pol.Network
		p.Network.Mode = &mode
	}
	if pol.Changes != "" {
		// The tool's changes key, over its profile's filesystem.changes.
		mode := pol.Changes
		p.Filesystem.Changes = &mode
	}
	for _, l := range c.AllowDegraded {
		if err := p.AddAllowDegraded(l); err != nil {
			return nil, err
		}
	}
	if pol.ReadOnlyWorkdir {
		// The server-wide default for a tool that names no profile: the
		// jail decides on the read-only workdir as on a profile's (run
		// as its owner, idmapped when root owns it, refused where a
		// read-write one is).
		yes := true
		p.Filesystem.WorkdirReadOnly = &yes
	}
	s, err := p.Spec(profiles.Request{Args: argv, Cwd: c.Workdir, Environ: c.Environ})
	if err != nil {
		return nil, err
	}
	s.Trusted = append(s.Trusted, c.Trusted...)
	if o := c.Log.Object(); o != nil {
		s.Trusted = append(s.Trusted, o)
	}
	if c.CheckSpec != nil {
		if err := c.CheckSpec(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// setupFailure is the report of a call whose jail could not be built.
func setupFailure(argv []string, err error) *jail.Result {
	return &jail.Result{
		Schema: jail.Schema, Version: jail.Version, ID: newID(), Command: argv,
		StartedAt: time.Now().UTC(), Status: jail.StatusSetupError, ExitCode: jail.ExitSetup,
		Reason: err.Error(), Violations: []jail.Violation{},
	}
}

// Resolved is what a tool runs under, as `tooljail tools check` shows it.
type Resolved struct {
	Profile         string            // the profile's name or file, as loaded
	ReadOnlyWorkdir bool              // the workdir is read-only: the default's, or the profile's workdir_readonly
	NoWorkdir       bool              // the profile binds no workdir
	Network         string            // the network mode the run gets
	Limits          map[string]string // every [limits] key: the profile's, the default's and the tool's over it
	Rate            tools.Rate
	// Changes is the change mode the tool's runs get: its own, else its
	// profile's ("" or "off": none).
	Changes string
}

// Resolve loads t's profile and lays its limits over it, as a call does,
// without running anything: a profile that does not load or a limit it
// refuses is an error here, before any call.
func Resolve(f *tools.File, d tools.Defaults, t *tools.Tool) (Resolved, error) {
	pol := d.For(t)
	ref := profileRef(pol.Profile, t.File)
	p, err := profiles.Load(ref)
	if err != nil {
		return Resolved{}, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	defer p.Close()
	if err := setLimits(p, pol.Limits); err != nil {
		return Resolved{}, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	ro := pol.ReadOnlyWorkdir || (p.Filesystem.WorkdirReadOnly != nil && *p.Filesystem.WorkdirReadOnly)
	r := Resolved{Profile: ref, ReadOnlyWorkdir: ro, Limits: map[string]string(p.Limits), Rate: pol.Rate}
	r.NoWorkdir = p.Filesystem.Workdir != nil && !*p.Filesystem.Workdir
	r.Network = pol.Network
	if r.Network == "" && p.Network.Mode != nil {
		r.Network = *p.Network.Mode
	}
	r.Changes = pol.Changes
	if r.Changes == "" && p.Filesystem.Changes != nil {
		r.Changes = *p.Filesystem.Changes
	}
	if err := checkChanges(r, pol.ReadOnlyWorkdir); err != nil {
		return Resolved{}, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return r, nil
}

// checkChanges refuses a change mode that could record nothing: the
// overlay goes over a run's read-write workdir, and a tool whose workdir
// is read-only or absent has none.
// byDefault says the read-only workdir is the server-wide default's.
func checkChanges(r Resolved, byDefault bool) error {
	if !changes.Mode(r.Changes).Overlay() {
		return nil
	}
	switch {
	case r.NoWorkdir:
		return fmt.Errorf("changes = %q: the profile %s binds no workdir, so there is nothing to record; drop changes or name a profile with a read-write workdir", r.Changes, r.Profile)
	case r.ReadOnlyWorkdir:
		why := "its profile " + r.Profile + " sets filesystem.workdir_readonly"
		if byDefault {
			why = "the server-wide default for a tool that names no profile"
		}
		return fmt.Errorf("changes = %q: the tool's workdir is read-only (%s), so there is nothing to record; drop changes or name a profile whose workdir is read-write", r.Changes, why)
	}
	return nil
}

// setLimits lays limits over p's, in key order (so that an error is
// always the same one).
func setLimits(p *profiles.Profile, limits map[string]string) error {
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := p.SetLimit(k, limits[k]); err != nil {
			return fmt.Errorf("limits: %w", err)
		}
	}
	return nil
}
