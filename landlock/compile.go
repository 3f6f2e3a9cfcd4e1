package landlock

import (
	"fmt"
	"path/filepath"
	"slices"

	gl "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Enforced is what a compiled policy enforces on this kernel. It goes into
// the run report as enforcement.landlock_abi and the rights lists.
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

// Plan is a policy compiled for this kernel's ABI. The jail's init, which
// is C, builds the ruleset from it where the rule paths resolve (after
// pivot_root): it opens each path and takes the Dir, File or Device rights
// of its PathPlan by what the path turns out to be. Its stage 2 enters the
// ruleset with Flags right before it execs the command.
type Plan struct {
	HandledFS  uint64
	HandledNet uint64
	Scoped     uint64
	// Flags are landlock_restrict_self's.
	Flags uint32
	Paths []PathPlan
	Ports []PortPlan
}

// PathPlan is one path rule with the rights it grants for each kind of
// file, already limited to what the ABI handles (0: nothing to add).
type PathPlan struct {
	Path   string
	Access Access
	Dir    uint64
	File   uint64
	Device uint64 // character or block device
	// DirOnly: Path must be a directory (access "list").
	DirOnly bool
}

// PortPlan is one TCP port rule.
type PortPlan struct {
	Access uint64 // landlock's bind_tcp or connect_tcp right
	Port   uint16
}

// Compile checks p against this kernel and compiles it, without touching
// the paths or the calling process.
//
// The domain handles every right of the kernel's ABI (capped at BestABI),
// TCP only when p.RestrictTCP, and IPC scoping on ABI 6+.
//
// Errors: ErrBelowMinABI when the kernel is below p.MinABI; ErrNotEnforced
// when it has no Landlock and p.MinABI is 0 (the Enforced then says ABI 0);
// otherwise an error naming the rule that cannot be compiled.
func Compile(p Policy) (Plan, Enforced, error) {
	s, err := usable(p)
	if err != nil {
		return Plan{}, Enforced{ABI: s.ABI}, err
	}
	handled, en, flags := configNet(s.ABI, p.handledTCP())
	paths, ports, err := compileRules(p, handled)
	if err != nil {
		return Plan{}, en, err
	}
	return Plan{
		HandledFS:  uint64(handled.HandledAccessFS),
		HandledNet: uint64(handled.HandledAccessNet),
		Scoped:     uint64(handled.Scoped),
		Flags:      flags,
		Paths:      paths,
		Ports:      ports,
	}, en, nil
}

// usable checks that p can be enforced on this kernel and returns what
// the kernel supports.
func usable(p Policy) (Support, error) {
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
		return s, fmt.Errorf("%w: %s; fix: %s, lower min_abi, or run with --allow-degraded landlock", ErrBelowMinABI, msg, fix)
	}
	if s.ABI == 0 {
		return s, fmt.Errorf("%w: %s; fix: %s", ErrNotEnforced, s.Reason, s.Fix)
	}
	return s, nil
}

// probe is Probe, replaced by tests that play a kernel without Landlock.
var probe = Probe

// config returns what a domain handles on abi (go-landlock's preset for
// it, with TCP only when restrictTCP), the matching Enforced and the
// landlock_restrict_self flags. Only the handled sets of the returned
// config are used.
func config(abi int, restrictTCP bool) (gl.Config, Enforced, uint32) {
	var tcp gl.AccessNetSet
	if restrictTCP {
		tcp = tcpRights
	}
	return configNet(abi, tcp)
}

// handledTCP is the TCP rights p asks the domain to handle.
func (p Policy) handledTCP() gl.AccessNetSet {
	switch {
	case p.RestrictTCP:
		return tcpRights
	case p.RestrictConnect:
		return gl.AccessNetSet(ll.AccessNetConnectTCP)
	}
	return 0
}

// configNet is config with the TCP rights to handle.
func configNet(abi int, tcp gl.AccessNetSet) (gl.Config, Enforced, uint32) {
	best := presets[BestABI]
	preset := presets[abi]
	cfg := gl.Config{HandledAccessFS: preset.HandledAccessFS, Scoped: preset.Scoped}
	want := gl.Config{HandledAccessFS: best.HandledAccessFS, Scoped: best.Scoped}
	if tcp != 0 {
		cfg.HandledAccessNet = preset.HandledAccessNet & tcp
		want.HandledAccessNet = tcp
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
	var flags uint32
	if abi >= 7 {
		// The domain is entered by stage 2 right before it execs the
		// command: log what the command (and its children) are denied,
		// not stage 2.
		flags = ll.FlagRestrictSelfLogSameExecOff | ll.FlagRestrictSelfLogNewExecOn
		en.Logging = []string{"log_same_exec_off", "log_new_exec_on"}
	}
	return cfg, en, flags
}

// compileRules turns the policy's rules into the rights cfg handles, per
// kind of path and per port.
func compileRules(p Policy, cfg gl.Config) ([]PathPlan, []PortPlan, error) {
	var paths []PathPlan
	for _, r := range p.Rules {
		if !filepath.IsAbs(r.Path) {
			return nil, nil, fmt.Errorf("landlock rule %q: path must be absolute", r.Path)
		}
		pp := PathPlan{Path: r.Path, Access: r.Access}
		dir, err := r.Access.rights(true, false)
		if err != nil {
			return nil, nil, fmt.Errorf("landlock rule %s: %w", r.Path, err)
		}
		pp.Dir = uint64(dir & cfg.HandledAccessFS)
		if file, err := r.Access.rights(false, false); err == nil {
			dev, _ := r.Access.rights(false, true)
			pp.File, pp.Device = uint64(file&cfg.HandledAccessFS), uint64(dev&cfg.HandledAccessFS)
		} else {
			pp.DirOnly = true
		}
		paths = append(paths, pp)
	}
	var ports []PortPlan
	if cfg.HandledAccessNet&gl.AccessNetSet(ll.AccessNetBindTCP) != 0 {
		for _, port := range dedup(p.BindTCP) {
			ports = append(ports, PortPlan{ll.AccessNetBindTCP, port})
		}
	}
	if cfg.HandledAccessNet&gl.AccessNetSet(ll.AccessNetConnectTCP) != 0 {
		for _, port := range dedup(p.ConnectTCP) {
			ports = append(ports, PortPlan{ll.AccessNetConnectTCP, port})
		}
	}
	return paths, ports, nil
}

func dedup(ports []uint16) []uint16 {
	out := slices.Clone(ports)
	slices.Sort(out)
	return slices.Compact(out)
}
