package spec

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/network/allow"
)

// Validate checks what can be checked without touching the host.
func (s *Spec) Validate() error {
	for _, check := range []func() error{s.validateCommand, s.validateNet, s.validatePolicy, s.validateFiles, s.validateLimits} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateCommand checks the command, its working directory, home and
// host name.
func (s *Spec) validateCommand() error {
	if len(s.Args) == 0 {
		return fmt.Errorf("no command given")
	}
	if s.Args[0] == "" {
		return fmt.Errorf("empty command name: give the program to run, a path or a name looked up in PATH")
	}
	// The jail hands these to the kernel as C strings: a NUL would cut
	// them short, and the command run would not be the one reported.
	for _, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command argument %q contains a NUL byte", a)
		}
	}
	for _, v := range []struct{ what, value string }{{"working directory", s.Dir}, {"home", s.Home}, {"hostname", s.Hostname}} {
		if strings.ContainsRune(v.value, 0) {
			return fmt.Errorf("%s %q contains a NUL byte", v.what, v.value)
		}
	}
	if !filepath.IsAbs(s.Dir) {
		return fmt.Errorf("working directory %q: must be an absolute path inside the jail", s.Dir)
	}
	if s.Home != "" && !filepath.IsAbs(s.Home) {
		return fmt.Errorf("home %q: must be an absolute path", s.Home)
	}
	return nil
}

// validateNet checks the network mode and its allowlist.
func (s *Spec) validateNet() error {
	if !slices.Contains(NetModes, s.Net) {
		return fmt.Errorf("network mode %q: want %q, %q or %q", s.Net, NetNone, NetHost, NetAllow)
	}
	switch s.Net {
	case NetNone, NetHost:
		if len(s.Allow) > 0 {
			return fmt.Errorf("allowed hosts (%s) need network mode %q, not %q", strings.Join(s.Allow, ", "), NetAllow, s.Net)
		}
	case NetAllow:
		if _, err := allow.ParseList(s.Allow); err != nil {
			return fmt.Errorf("allowed hosts: %w", err)
		}
	}
	return nil
}

// validatePolicy checks the violation action, the degraded layers, the
// environment, the protected paths and the changes mode.
func (s *Spec) validatePolicy() error {
	if !slices.Contains(OnViolations, s.OnViolation) {
		return fmt.Errorf("on-violation %q: want %q or %q", s.OnViolation, ViolationDeny, ViolationKill)
	}
	for _, l := range s.AllowDegraded {
		if err := CheckLayer(l); err != nil {
			return fmt.Errorf("allow-degraded: %w", err)
		}
	}
	for _, e := range s.Env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return fmt.Errorf("environment entry %q: want KEY=VALUE", e)
		}
		if strings.ContainsRune(e, 0) {
			return fmt.Errorf("environment entry %q contains a NUL byte", e)
		}
	}
	for _, p := range s.Protect {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
			return fmt.Errorf("protected path %q: want a clean path relative to a bind, without \"..\"", p)
		}
	}
	if _, err := changes.ParseMode(string(s.Changes)); err != nil {
		return err
	}
	if s.ChangesDir != "" && !filepath.IsAbs(s.ChangesDir) {
		return fmt.Errorf("change store %q: want an absolute path", s.ChangesDir)
	}
	return nil
}

// validateFiles checks the mounts, the root directory and the host user.
func (s *Spec) validateFiles() error {
	for _, m := range s.Mounts {
		if err := m.validate(); err != nil {
			return err
		}
	}
	if err := s.validateRoot(); err != nil {
		return err
	}
	if h := s.HostUser; h != nil {
		if h.UID <= 0 || h.GID <= 0 || h.UID >= 1<<32-1 || h.GID >= 1<<32-1 {
			return fmt.Errorf("host user %d:%d: the jail never runs as the host's root (uid or gid 0); choose an unprivileged uid and gid", h.UID, h.GID)
		}
	}
	return nil
}

// validateLimits checks the limits are numbers a run can apply.
func (s *Spec) validateLimits() error {
	l := s.Limits
	if l.Memory < 0 || l.CPUs < 0 || l.Pids < 0 || l.Timeout < 0 || l.CPUTime < 0 || l.FSize < 0 || l.OutputLimit < 0 || l.MaxViolations < 0 || l.NetConns < 0 || l.NetBytes < 0 {
		return fmt.Errorf("limits must not be negative")
	}
	if math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return fmt.Errorf("cpus %v: want a number of CPUs", l.CPUs)
	}
	return nil
}

func (m Mount) validate() error {
	if strings.ContainsRune(m.Source, 0) || strings.ContainsRune(m.Dest, 0) {
		return fmt.Errorf("mount %q: a path contains a NUL byte", m.Dest)
	}
	if !filepath.IsAbs(m.Dest) || filepath.Clean(m.Dest) != m.Dest {
		return fmt.Errorf("mount destination %q: must be a clean absolute path", m.Dest)
	}
	if m.Dest == "/" {
		return fmt.Errorf("mount destination /: the jail's root is its own tmpfs; bind below it")
	}
	for _, reserved := range []string{"/proc", "/dev"} {
		if m.Dest == reserved || strings.HasPrefix(m.Dest, reserved+"/") {
			return fmt.Errorf("mount destination %s: %s is managed by the jail", m.Dest, reserved)
		}
	}
	switch m.Kind {
	case MountBind:
		if !filepath.IsAbs(m.Source) {
			return fmt.Errorf("bind source %q: must be an absolute host path", m.Source)
		}
		if m.Cache != "" && (!m.Writable || m.Optional || m.KeepSymlink) {
			return fmt.Errorf("cache %s at %s: a cache is a plain read-write bind (not optional, no symlink kept)", m.Cache, m.Dest)
		}
	case MountTmpfs:
		if m.Size < 0 {
			return fmt.Errorf("tmpfs %s: negative size", m.Dest)
		}
	case MountMask:
	default:
		return fmt.Errorf("mount %s: unknown kind %q", m.Dest, m.Kind)
	}
	return nil
}

// validateRoot checks Root and the binds taken from it.
func (s *Spec) validateRoot() error {
	if s.Root != "" && (!filepath.IsAbs(s.Root) || filepath.Clean(s.Root) != s.Root || strings.ContainsRune(s.Root, 0)) {
		return fmt.Errorf("root %q: want a clean absolute host path of a directory", s.Root)
	}
	for _, m := range s.Mounts {
		switch {
		case !m.InRoot:
		case s.Root == "":
			return fmt.Errorf("bind %s is to come from the root directory, and none is given", m.Source)
		case m.Kind != MountBind:
			return fmt.Errorf("mount %s: only a bind can come from the root directory", m.Dest)
		case m.Writable:
			return fmt.Errorf("bind %s from the root directory %s: read-only only; the root is shown read-only", m.Source, s.Root)
		}
	}
	return nil
}

// DegradedAllowed says whether the Spec lets a run go without layer
// (AllowDegraded; "cgroup" covers its three caps, "seccomp" its
// notification).
func (s *Spec) DegradedAllowed(layer string) bool {
	for _, l := range s.AllowDegraded {
		if l == layer {
			return true
		}
		if l == LayerCgroup && (layer == LayerMemory || layer == LayerCPU || layer == LayerPids) {
			return true
		}
		if l == LayerSeccomp && layer == LayerSeccompNotify {
			return true
		}
	}
	return false
}
