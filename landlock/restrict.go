package landlock

import (
	"fmt"
	"path/filepath"
	"slices"

	gl "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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
	s, err := usable(p)
	if err != nil {
		return Enforced{ABI: s.ABI}, err
	}
	cfg, en, _ := config(s.ABI, p.RestrictTCP)
	rules, err := buildRules(p, cfg)
	if err != nil {
		return en, err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return en, fmt.Errorf("landlock restrict (ABI %d): %w", s.ABI, err)
	}
	return en, nil
}

// RestrictThread applies p like Restrict, but to the calling OS thread
// only, and sets no_new_privs on that thread. The caller must hold
// runtime.LockOSThread, and is meant to call execve next on the same
// thread: execve ends every other thread, and the new program inherits
// this thread's domain. Other threads of the process stay unrestricted
// until then, so no code but the caller's may run in them.
//
// Restrict reaches the other threads with psx below ABI 8: a signal to
// each and a listing of /proc/self/task, about a millisecond per call on a
// busy host.
//
// The errors are those of Restrict; on any other error than ErrNotEnforced
// and ErrBelowMinABI the thread may be partly restricted and must not exec.
func RestrictThread(p Policy) (Enforced, error) {
	rs, en, err := NewRuleset(p)
	if err != nil {
		return en, err
	}
	defer rs.Close()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return en, fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(rs.FD, rs.Flags); err != nil {
		return en, fmt.Errorf("landlock restrict (ABI %d): %w", en.ABI, err)
	}
	return en, nil
}

// Ruleset is p as a Landlock ruleset, not yet applied: a thread enters it
// with landlock_restrict_self(FD, Flags) once it has no_new_privs. The
// jail builds it in the init and its stage 2 applies it right before
// execve, in a forked child that must not run Go code. FD is close-on-exec.
type Ruleset struct {
	FD    int
	Flags uint32
}

// NewRuleset builds the ruleset for p and says what it enforces. The
// errors are those of Restrict; the calling process is never changed.
// The paths are opened, so resolved, in the caller's mount namespace.
func NewRuleset(p Policy) (Ruleset, Enforced, error) {
	s, err := usable(p)
	if err != nil {
		return Ruleset{FD: -1}, Enforced{ABI: s.ABI}, err
	}
	cfg, en, flags := config(s.ABI, p.RestrictTCP)
	rules, err := resolveRules(p, cfg)
	if err != nil {
		return Ruleset{FD: -1}, en, err
	}
	attr := ll.RulesetAttr{
		HandledAccessFS:  uint64(cfg.HandledAccessFS),
		HandledAccessNet: uint64(cfg.HandledAccessNet),
		Scoped:           uint64(cfg.Scoped),
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return Ruleset{FD: -1}, en, fmt.Errorf("landlock create ruleset (ABI %d): %w", s.ABI, err)
	}
	rs := Ruleset{FD: fd, Flags: flags}
	for _, r := range rules.paths {
		if err := addPathRule(fd, r); err != nil {
			rs.Close()
			return Ruleset{FD: -1}, en, err
		}
	}
	for _, pr := range rules.ports {
		if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: pr.access, Port: uint64(pr.port)}, 0); err != nil {
			rs.Close()
			return Ruleset{FD: -1}, en, fmt.Errorf("landlock rule for TCP port %d: %w", pr.port, err)
		}
	}
	return rs, en, nil
}

// Close releases the ruleset; domains made from it stay.
func (r Ruleset) Close() error {
	if r.FD < 0 {
		return nil
	}
	return unix.Close(r.FD)
}

func addPathRule(rulesetFD int, r pathRule) error {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule %s: open: %w", r.path, err)
	}
	defer unix.Close(fd)
	if err := ll.LandlockAddPathBeneathRule(rulesetFD, &ll.PathBeneathAttr{ParentFd: fd, AllowedAccess: uint64(r.set)}, 0); err != nil {
		return fmt.Errorf("landlock rule %s: %w", r.path, err)
	}
	return nil
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

// config returns the go-landlock config for abi, the matching Enforced and
// the landlock_restrict_self flags it carries. It never uses BestEffort:
// the config is exactly what this ABI handles, so go-landlock either
// enforces all of it or fails.
func config(abi int, restrictTCP bool) (gl.Config, Enforced, uint32) {
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
	var flags uint32
	if abi >= 7 {
		// The domain is entered by stage 2 right before it execs the
		// command: log what the command (and its children) are denied,
		// not stage 2.
		cfg = cfg.DisableLoggingForOriginatingProcess().EnableLoggingForSubprocesses()
		flags = ll.FlagRestrictSelfLogSameExecOff | ll.FlagRestrictSelfLogNewExecOn
		en.Logging = []string{"log_same_exec_off", "log_new_exec_on"}
	}
	return cfg, en, flags
}

// buildRules turns the policy into go-landlock rules for cfg.
func buildRules(p Policy, cfg gl.Config) ([]gl.Rule, error) {
	rr, err := resolveRules(p, cfg)
	if err != nil {
		return nil, err
	}
	rules := make([]gl.Rule, 0, len(rr.paths)+len(rr.ports))
	for _, r := range rr.paths {
		rules = append(rules, gl.PathAccess(r.set, r.path))
	}
	for _, pr := range rr.ports {
		if pr.access == ll.AccessNetBindTCP {
			rules = append(rules, gl.BindTCP(pr.port))
		} else {
			rules = append(rules, gl.ConnectTCP(pr.port))
		}
	}
	return rules, nil
}

// resolved are the rules of a policy as the kernel takes them.
type resolved struct {
	paths []pathRule
	ports []portRule
}

type pathRule struct {
	path string
	set  gl.AccessFSSet
}

type portRule struct {
	access uint64 // ll.AccessNetBindTCP or ll.AccessNetConnectTCP
	port   uint16
}

// Plan is a policy compiled for this kernel's ABI, for a caller that
// builds the ruleset itself where the rule paths resolve: the jail's init,
// which is C, opens the paths after pivot_root and picks each rule's rights
// by what the path turns out to be.
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
// the paths. The errors are those of Restrict.
func Compile(p Policy) (Plan, Enforced, error) {
	s, err := usable(p)
	if err != nil {
		return Plan{}, Enforced{ABI: s.ABI}, err
	}
	cfg, en, flags := config(s.ABI, p.RestrictTCP)
	paths, ports, err := compileRules(p, cfg)
	if err != nil {
		return Plan{}, en, err
	}
	return Plan{
		HandledFS:  uint64(cfg.HandledAccessFS),
		HandledNet: uint64(cfg.HandledAccessNet),
		Scoped:     uint64(cfg.Scoped),
		Flags:      flags,
		Paths:      paths,
		Ports:      ports,
	}, en, nil
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
	if cfg.HandledAccessNet != 0 {
		for _, port := range dedup(p.BindTCP) {
			ports = append(ports, PortPlan{ll.AccessNetBindTCP, port})
		}
		for _, port := range dedup(p.ConnectTCP) {
			ports = append(ports, PortPlan{ll.AccessNetConnectTCP, port})
		}
	}
	return paths, ports, nil
}

// Rights picks the rule's rights for a path of the given file type
// (st_mode & S_IFMT), or says why the rule cannot apply to it.
func (pp PathPlan) Rights(mode uint32) (uint64, error) {
	switch mode {
	case unix.S_IFDIR:
		return pp.Dir, nil
	case unix.S_IFCHR, unix.S_IFBLK:
		if pp.DirOnly {
			break
		}
		return pp.Device, nil
	default:
		if pp.DirOnly {
			break
		}
		return pp.File, nil
	}
	return 0, fmt.Errorf("access %q applies to directories only", pp.Access)
}

// resolveRules compiles the policy and resolves its paths in the caller's
// mount namespace.
func resolveRules(p Policy, cfg gl.Config) (resolved, error) {
	var rules resolved
	paths, ports, err := compileRules(p, cfg)
	if err != nil {
		return rules, err
	}
	for _, pp := range paths {
		var st unix.Stat_t
		if err := unix.Stat(pp.Path, &st); err != nil {
			return rules, fmt.Errorf("landlock rule %s (%s): stat: %w (the jail must only pass paths it mounted)", pp.Path, pp.Access, err)
		}
		set, err := pp.Rights(st.Mode & unix.S_IFMT)
		if err != nil {
			return rules, fmt.Errorf("landlock rule %s: %w", pp.Path, err)
		}
		if set == 0 {
			continue // nothing this ABI can grant, e.g. only ioctl_dev
		}
		rules.paths = append(rules.paths, pathRule{pp.Path, gl.AccessFSSet(set)})
	}
	for _, pr := range ports {
		rules.ports = append(rules.ports, portRule{pr.Access, pr.Port})
	}
	return rules, nil
}

func dedup(ports []uint16) []uint16 {
	out := slices.Clone(ports)
	slices.Sort(out)
	return slices.Compact(out)
}
