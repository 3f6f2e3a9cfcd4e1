package profiles

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/seccomp"
)

// JailHome is the jail user's private home directory.
const JailHome = "/home/sandbox"

// JailHostname is the hostname inside the jail.
const JailHostname = "tooljail"

// Request is what one run adds to a profile.
type Request struct {
	Args []string // the command
	// Cwd is the caller's current directory as the kernel has it
	// (unix.Getwd: no symlinks, unlike $PWD); "" asks the kernel.
	Cwd     string
	Workdir string   // --workdir, relative to Cwd; "" = Cwd
	Environ []string // caller's environment, for env.pass
	// CacheDir is the caller's cache directory ($XDG_CACHE_HOME or
	// ~/.cache: os.UserCacheDir), below which tooljail keeps the caches
	// of filesystem.caches; only a named cache without HOSTPATH needs it.
	CacheDir string
	// Vars are the caller's variables ("K=V"; the last of a name wins):
	// --env, a served request's env, a client's env=. Those the jail
	// owns and those env.deny matches are dropped and reported, a PATH
	// adds what the jail shows of it (see environment).
	Vars []string
	// Toolchains are toolchains asked for on top of the profile's
	// filesystem.toolchains: "auto" or an absolute host path (--toolchain,
	// a served request's toolchains).
	Toolchains []string
	// Finder is the caller's view toolchains are found in; nil: the
	// host, with the caller's PATH, HOME and variables from Environ.
	Finder *Finder
}

// Spec turns the profile and the request into the jail.Spec the jail applies
// verbatim. It checks every value (including those the CLI overlaid) and
// looks up a host_user name; it reads no other host path but the files
// that find the toolchains it is asked for (toolchains). The jail opens
// each one once and decides on what it opened: whether a bind source
// exists, whether the workdir or a read-write bind may be bound read-write
// (hostpath.Refuse), whether a symlink in it may be followed.
func (p *Profile) Spec(r Request) (*jail.Spec, error) {
	if err := p.checkResolved(); err != nil {
		return nil, err
	}
	cwd, err := requestCwd(r.Cwd)
	if err != nil {
		return nil, err
	}
	limits, err := p.Limits.parse()
	if err != nil {
		return nil, err
	}
	hostUser, err := ParseHostUser(*p.HostUser)
	if err != nil {
		return nil, fmt.Errorf("profile %s: host_user: %w", p.Name, err)
	}
	s := p.baseSpec(r.Args, limits, hostUser)
	s.Root = rootDir(cwd, *p.Filesystem.Root)
	if err := p.addMounts(s, r, cwd); err != nil {
		return nil, err
	}
	if err := checkVars(r.Vars); err != nil {
		return nil, err
	}
	s.Env, s.EnvDropped = environment(p.Env, r.Environ, r.Vars, s.Mounts)
	s.Env = withToolchains(s.Env, s.Toolchains, r.Vars)
	s.Seccomp = p.Seccomp.policy()
	s.Landlock = p.Landlock.spec()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	return s, nil
}

// CallSpec is the Spec of one more command in a jail that Spec built
// from p (a session's, base): base with r's command, the environment
// Spec gives r's variables against base's mounts and toolchains, and
// p's timeout and output limit. The jail's part (mounts, toolchains, the
// whole profile's checks) was decided for base and is not built again,
// which was a third of a session call's work in the server; p's limits
// are checked again, as a call may set them (under [limits.max]).
func (p *Profile) CallSpec(base *jail.Spec, r Request) (*jail.Spec, error) {
	if err := p.validateLimits(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	limits, err := p.Limits.parse()
	if err != nil {
		return nil, err
	}
	if err := checkVars(r.Vars); err != nil {
		return nil, err
	}
	s := *base
	s.Args = r.Args
	s.Env, s.EnvDropped = environment(p.Env, r.Environ, r.Vars, base.Mounts)
	s.Env = withToolchains(s.Env, base.Toolchains, r.Vars)
	s.Limits.Timeout, s.Limits.OutputLimit = limits.Timeout, limits.OutputLimit
	return &s, nil
}

// checkResolved refuses a profile Spec cannot use: one with a bad value
// (the CLI's overlay is checked here) or one not built by Load, which
// leaves a key unset.
func (p *Profile) checkResolved() error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if missing := unsetKeys(reflect.ValueOf(p).Elem(), ""); len(missing) > 0 {
		return fmt.Errorf("profile %s: not resolved, missing: %s (build profiles with Load)", p.Name, strings.Join(missing, ", "))
	}
	return nil
}

// requestCwd is the request's directory, or the kernel's when the
// request has none, cleaned; relative binds and the workdir hang off it.
func requestCwd(cwd string) (string, error) {
	if cwd == "" {
		wd, err := unix.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		cwd = wd
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("current directory %q: must be absolute", cwd)
	}
	return filepath.Clean(cwd), nil
}

// baseSpec is the part of the jail.Spec copied from the profile as is,
// with copies of its lists so that the Spec shares no memory with it.
func (p *Profile) baseSpec(args []string, limits jail.Limits, hostUser *jail.HostID) *jail.Spec {
	s := &jail.Spec{
		Args:          args,
		Hostname:      JailHostname,
		Home:          JailHome,
		Net:           jail.NetMode(*p.Network.Mode),
		Changes:       changes.Mode(orEmpty(p.Filesystem.Changes)),
		Allow:         allowList(p.Network),
		Limits:        limits,
		OnViolation:   jail.OnViolation(*p.Seccomp.OnViolation),
		AllowDegraded: append([]string(nil), p.AllowDegraded...),
		Profile:       p.Name,
		HostUser:      hostUser,
		Trusted:       append([]*hostpath.Object(nil), p.files...),
		RaiseMemory:   RaiseMemory,
	}
	if p.Filesystem.Protect != nil {
		s.Protect = append([]string(nil), *p.Filesystem.Protect...)
	}
	return s
}

// addMounts fills the Spec's mounts in the order the jail stacks them,
// its start directory, and the toolchains, whose binds depend on what
// the other mounts show.
func (p *Profile) addMounts(s *jail.Spec, r Request, cwd string) error {
	fs := &p.Filesystem
	s.Mounts = systemMounts(fs, s.Root != "")
	tmpfs, hasTmp := tmpfsMounts(fs, s.Limits.Memory)
	s.Mounts = append(s.Mounts, tmpfs...)
	work := ""
	if *fs.Workdir {
		dir, err := workdir(cwd, r.Workdir)
		if err != nil {
			return err
		}
		s.Mounts = append(s.Mounts, jail.Mount{Kind: jail.MountBind, Source: dir, Dest: dir, Writable: !*fs.WorkdirReadOnly})
		work = dir
	}
	s.Dir = startDir(work, hasTmp)
	s.Mounts = append(s.Mounts, bindMounts(fs.Ro, fs.Rw, cwd)...)
	caches, err := cacheMounts(fs.Caches, r.CacheDir, cwd)
	if err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	s.Mounts = append(s.Mounts, caches...)
	masks := maskMounts(fs.Mask)
	// What the jail shows so far, masks included, decides what a
	// toolchain needs bound.
	tcs, tcBinds, err := toolchains(fs.Toolchains, p.Env.Set["PATH"], r, cwd, append(slices.Clip(s.Mounts), masks...))
	if err != nil {
		return err
	}
	s.Toolchains = tcs
	s.Mounts = append(dropShadowed(append(s.Mounts, tcBinds...)), masks...)
	return nil
}

// systemMounts binds filesystem.system and filesystem.etc at their host
// paths, each optional: a profile serves hosts that lack some of them.
func systemMounts(fs *Filesystem, inRoot bool) []jail.Mount {
	var mounts []jail.Mount
	for _, dir := range fs.System {
		dir = filepath.Clean(dir)
		mounts = append(mounts, jail.Mount{Kind: jail.MountBind, Source: dir, Dest: dir, Exec: true, Optional: true, KeepSymlink: true, InRoot: inRoot})
	}
	for _, e := range fs.Etc {
		path := filepath.Join("/etc", e)
		mounts = append(mounts, jail.Mount{Kind: jail.MountBind, Source: path, Dest: path, Optional: true, InRoot: inRoot})
	}
	return mounts
}

// tmpfsMounts is the home and filesystem.tmpfs, sized against the memory
// limit; hasTmp says whether one is /tmp, the start directory without a
// workdir.
func tmpfsMounts(fs *Filesystem, memory int64) (mounts []jail.Mount, hasTmp bool) {
	homeSize, _ := parseTmpfsSize(*fs.HomeSize) // checked by Validate
	mounts = append(mounts, tmpfsMount(JailHome, homeSize, memory, RaiseHome))
	for _, t := range fs.Tmpfs {
		dest, size, _ := splitTmpfs(t) // checked by Validate
		dest = filepath.Clean(dest)
		hasTmp = hasTmp || dest == "/tmp"
		mounts = append(mounts, tmpfsMount(dest, size, memory, raiseTmpfs(dest)))
	}
	return mounts, hasTmp
}

// startDir is where the command starts: the workdir when one is bound
// (""), else /tmp when the jail has one, else the home.
func startDir(workdir string, hasTmp bool) string {
	switch {
	case workdir != "":
		return workdir
	case hasTmp:
		return "/tmp"
	default:
		return JailHome
	}
}

// bindMounts binds filesystem.ro read-only and filesystem.rw read-write,
// a relative source taken from cwd and the destination, when not given,
// the source: paths the caller knows mean the same inside.
func bindMounts(ro, rw []string, cwd string) []jail.Mount {
	var mounts []jail.Mount
	for _, list := range []struct {
		entries  []string
		writable bool
	}{{ro, false}, {rw, true}} {
		for _, b := range list.entries {
			src, dest, _ := splitBind(b) // checked by Validate
			if !filepath.IsAbs(src) {
				src = filepath.Join(cwd, src)
			}
			src = filepath.Clean(src)
			if dest == "" {
				dest = src
			}
			mounts = append(mounts, jail.Mount{Kind: jail.MountBind, Source: src, Dest: filepath.Clean(dest), Writable: list.writable})
		}
	}
	return mounts
}

// maskMounts hides each filesystem.mask path; they go last, over
// whatever bind shows the path.
func maskMounts(paths []string) []jail.Mount {
	var masks []jail.Mount
	for _, m := range paths {
		masks = append(masks, jail.Mount{Kind: jail.MountMask, Dest: filepath.Clean(m)})
	}
	return masks
}

// checkVars refuses a caller's variable no process environment can carry;
// which ones the jail keeps is environment's to decide.
func checkVars(vars []string) error {
	for _, kv := range vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("env %q: want KEY=VALUE", kv)
		}
		if err := checkVarName(k); err != nil {
			return fmt.Errorf("env: %w", err)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %s: value contains a NUL byte", k)
		}
	}
	return nil
}

// policy is the jail's seccomp policy: nil when seccomp is off.
func (sc *Seccomp) policy() *seccomp.Policy {
	if !*sc.Enabled {
		return nil
	}
	return &seccomp.Policy{
		Allow: append([]string(nil), sc.Allow...),
		Deny:  append([]string(nil), sc.Deny...),
	}
}

// spec is the jail's Landlock spec: nil when Landlock is off.
func (l *Landlock) spec() *jail.LandlockSpec {
	if !*l.Enabled {
		return nil
	}
	return &jail.LandlockSpec{
		MinABI:      *l.MinABI,
		RestrictTCP: *l.RestrictTCP,
		BindTCP:     append([]uint16(nil), l.BindTCP...),
		ConnectTCP:  append([]uint16(nil), l.ConnectTCP...),
	}
}

// allowList is the jail's Allow: the profile's entries in the allow mode,
// none in the others (which ignore them).
func allowList(n Network) []string {
	if *n.Mode != string(jail.NetAllow) {
		return nil
	}
	return append([]string(nil), n.Allow...)
}

// AddAllowHost adds one network.allow entry (--allow-host), checked.
func (p *Profile) AddAllowHost(pattern string) error {
	if _, err := allow.Parse(pattern); err != nil {
		return err
	}
	p.Network.Allow = append(p.Network.Allow, pattern)
	return nil
}

// dropShadowed keeps only the last of several mounts at one destination
// (a --tmpfs /tmp:1G replaces the profile's /tmp), so that the jail and its
// Landlock rules see one mount per path.
func dropShadowed(mounts []jail.Mount) []jail.Mount {
	last := map[string]int{}
	for i, m := range mounts {
		last[m.Dest] = i
	}
	out := mounts[:0]
	for i, m := range mounts {
		if last[m.Dest] == i {
			out = append(out, m)
		}
	}
	return out
}

// workdir is the directory bound read-write and started in: --workdir
// (relative to cwd) or cwd, cleaned but not resolved. The jail opens it
// once and refuses it on what it opened (a system, top-level or home
// directory): a check of the name here would say nothing about what the
// jail mounts. It is the bind's destination too, so that paths the caller
// knows mean the same inside the jail.
func workdir(cwd, flag string) (string, error) {
	dir := cwd
	if flag != "" {
		dir = filepath.Join(cwd, flag)
		if filepath.IsAbs(flag) {
			dir = filepath.Clean(flag)
		}
	}
	// Not a refusal by name: the jail's own root is a tmpfs it builds,
	// so nothing can be bound at /.
	if dir == "/" {
		return "", errors.New("workdir /: the host's root cannot be the workdir; run from a project directory, pass --workdir DIR, or --no-workdir")
	}
	return dir, nil
}

// SetLimit sets one [limits] key (see limitKeys: "memory", "timeout", ...)
// after checking the value. The error names the key and quotes the value.
func (p *Profile) SetLimit(key, value string) error {
	k := lookupLimit(key)
	if k == nil {
		return fmt.Errorf("unknown limit %q (known: %s)", key, limitNames())
	}
	if err := k.check(value); err != nil {
		return err
	}
	if p.Limits == nil {
		p.Limits = Limits{}
	}
	p.Limits[key] = value
	return nil
}

// AddEnv adds or replaces one env.set entry from "KEY=VALUE".
func (p *Profile) AddEnv(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("env %q: want KEY=VALUE", kv)
	}
	if err := checkEnvName(k); err != nil {
		return fmt.Errorf("env: %w", err)
	}
	if strings.ContainsRune(v, 0) {
		return fmt.Errorf("env %s: value contains a NUL byte", k)
	}
	if p.Env.Set == nil {
		p.Env.Set = map[string]string{}
	}
	p.Env.Set[k] = v
	return nil
}

// AddAllowDegraded adds layers from a comma-separated list
// ("landlock,cgroup"), checking each name.
func (p *Profile) AddAllowDegraded(list string) error {
	for _, l := range strings.Split(list, ",") {
		l = strings.TrimSpace(l)
		if err := jail.CheckLayer(l); err != nil {
			return fmt.Errorf("allow-degraded: %w", err)
		}
		p.AllowDegraded = append(p.AllowDegraded, l)
	}
	return nil
}

// orEmpty is *p, or "" for nil.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
