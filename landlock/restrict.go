package landlock

import (
	"fmt"
	"path/filepath"
	"slices"

	gl "github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Enforced is what Restrict really applied. It goes into the run report as
// enforcement.landlock_abi and the rights lists.
type Enforced struct {
	ABI int `json:"abi"`
	// FSRights, NetRights and Scopes are the rights the domain handles:
	// anything in them that no rule grants is denied.
	FSRights  []string `json:"fs_rights"`
	NetRights []string `json:"net_rights,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
	// Logging lists the audit flags set (ABI 7+).
	Logging []string `json:"logging,omitempty"`
	// Unavailable lists the rights and scopes the policy would use on the
	// newest ABI but this kernel cannot enforce (e.g. "signal" on ABI 5,
	// "bind_tcp" when RestrictTCP is asked on ABI 3).
	Unavailable []string `json:"unavailable,omitempty"`
}

// Restrict applies p to every thread of the calling process, and sets
// no_new_privs on all of them. Call it after all mount work (a restricted
// process cannot mount or pivot_root) and before loading seccomp.
//
// The domain handles every right of the kernel's ABI (capped at BestABI),
// TCP only when p.RestrictTCP, and IPC scoping on ABI 6+. Below ABI 8
// go-landlock reaches every thread with psx (a signal to each thread, so the
// threads end up in sibling domains; only the thread that calls execve
// matters afterwards); on ABI 8+ with one TSYNC call.
//
// Errors: ErrBelowMinABI when the kernel is below p.MinABI; ErrNotEnforced
// when it has no Landlock and p.MinABI is 0. In both cases the process is
// unchanged. Any other error may leave the process partly restricted (psx
// aborts the process if threads disagree), so the caller must not exec.
func Restrict(p Policy) (Enforced, error) {
	s := probe()
	if s.ABI < p.MinABI {
		msg := fmt.Sprintf("this kernel offers Landlock ABI %d, the profile requires ABI %d", s.ABI, p.MinABI)
		if s.Reason != "" {
			msg += " (" + s.Reason + ")"
		}
		fix := s.Fix
		if fix == "" {
			fix = fmt.Sprintf("use a newer kernel with Landlock ABI %d", p.MinABI)
		}
		return Enforced{ABI: s.ABI}, fmt.Errorf("%w: %s; fix: %s, lower min_abi, or run with --allow-degraded landlock", ErrBelowMinABI, msg, fix)
	}
	if s.ABI == 0 {
		return Enforced{}, fmt.Errorf("%w: %s; fix: %s", ErrNotEnforced, s.Reason, s.Fix)
	}

	cfg, en := config(s.ABI, p.RestrictTCP)
	rules, err := buildRules(p, cfg)
	if err != nil {
		return en, err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return en, fmt.Errorf("landlock restrict (ABI %d): %w", s.ABI, err)
	}
	return en, nil
}

// probe is Probe, replaced by tests that play a kernel without Landlock.
var probe = Probe

// config returns the go-landlock config for abi and the matching Enforced.
// It never uses BestEffort: the config is exactly what this ABI handles, so
// go-landlock either enforces all of it or fails.
func config(abi int, restrictTCP bool) (gl.Config, Enforced) {
	best := presets[BestABI]
	preset := presets[abi]
	cfg := gl.Config{HandledAccessFS: preset.HandledAccessFS, Scoped: preset.Scoped}
	want := gl.Config{HandledAccessFS: best.HandledAccessFS, Scoped: best.Scoped}
	if restrictTCP {
		cfg.HandledAccessNet = preset.HandledAccessNet & tcpRights
		want.HandledAccessNet = tcpRights
	}
	en := Enforced{
		ABI:       abi,
		FSRights:  names(uint64(cfg.HandledAccessFS), fsRightNames),
		NetRights: names(uint64(cfg.HandledAccessNet), netRightNames),
		Scopes:    names(uint64(cfg.Scoped), scopeNames),
	}
	en.Unavailable = append(en.Unavailable, names(uint64(want.HandledAccessFS&^cfg.HandledAccessFS), fsRightNames)...)
	en.Unavailable = append(en.Unavailable, names(uint64(want.HandledAccessNet&^cfg.HandledAccessNet), netRightNames)...)
	en.Unavailable = append(en.Unavailable, names(uint64(want.Scoped&^cfg.Scoped), scopeNames)...)
	if abi >= 7 {
		// The domain is created by stage 2 before it execs the command:
		// log what the command (and its children) are denied, not stage 2.
		cfg = cfg.DisableLoggingForOriginatingProcess().EnableLoggingForSubprocesses()
		en.Logging = []string{"log_same_exec_off", "log_new_exec_on"}
	}
	return cfg, en
}

// buildRules turns the policy into go-landlock rules for cfg.
func buildRules(p Policy, cfg gl.Config) ([]gl.Rule, error) {
	rules := make([]gl.Rule, 0, len(p.Rules)+len(p.BindTCP)+len(p.ConnectTCP))
	for _, r := range p.Rules {
		if !filepath.IsAbs(r.Path) {
			return nil, fmt.Errorf("landlock rule %q: path must be absolute", r.Path)
		}
		var st unix.Stat_t
		if err := unix.Stat(r.Path, &st); err != nil {
			return nil, fmt.Errorf("landlock rule %s (%s): stat: %w (the jail must only pass paths it mounted)", r.Path, r.Access, err)
		}
		mode := st.Mode & unix.S_IFMT
		set, err := r.Access.rights(mode == unix.S_IFDIR, mode == unix.S_IFCHR || mode == unix.S_IFBLK)
		if err != nil {
			return nil, fmt.Errorf("landlock rule %s: %w", r.Path, err)
		}
		set &= cfg.HandledAccessFS
		if set == 0 {
			continue // nothing this ABI can grant, e.g. only ioctl_dev
		}
		rules = append(rules, gl.PathAccess(set, r.Path))
	}
	if cfg.HandledAccessNet != 0 {
		for _, port := range dedup(p.BindTCP) {
			rules = append(rules, gl.BindTCP(port))
		}
		for _, port := range dedup(p.ConnectTCP) {
			rules = append(rules, gl.ConnectTCP(port))
		}
	}
	return rules, nil
}

func dedup(ports []uint16) []uint16 {
	out := slices.Clone(ports)
	slices.Sort(out)
	return slices.Compact(out)
}
