package profiles

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/network/allow"
)

// KeyError is a bad value under one profile key.
type KeyError struct {
	Key string // dotted key, "limits.memory"
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

func keyErr(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Validate checks every value that is set, without touching the host. It
// returns the first problem as a *KeyError. Load validates each file; Spec
// validates again after the CLI's overlay.
func (p *Profile) Validate() error {
	// In the order of the keys in a profile file, so that the first
	// problem reported is the first one a reader meets.
	for _, check := range []func() error{
		p.validateTop,
		p.Filesystem.validate,
		p.validateLimits,
		p.validateModes,
		p.Env.validate,
		p.Seccomp.validate,
		p.Landlock.validate,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateTop checks the keys above the first table.
func (p *Profile) validateTop() error {
	for _, l := range p.AllowDegraded {
		if err := jail.CheckLayer(l); err != nil {
			return &KeyError{Key: "allow_degraded", Err: err}
		}
	}
	if p.HostUser != nil {
		if err := checkHostUser(*p.HostUser); err != nil {
			return &KeyError{Key: "host_user", Err: err}
		}
	}
	return nil
}

// validate checks [filesystem] but its changes key, which validateModes
// checks with network.mode.
func (fs *Filesystem) validate() error {
	for _, l := range []struct {
		key     string
		entries []string
		check   func(string) error
	}{
		{"filesystem.root", optional(fs.Root), checkRoot},
		{"filesystem.system", fs.System, checkSystemDir},
		{"filesystem.etc", fs.Etc, checkEtcEntry},
		{"filesystem.ro", fs.Ro, checkBind},
		{"filesystem.rw", fs.Rw, checkBind},
		{"filesystem.tmpfs", fs.Tmpfs, checkTmpfs},
		{"filesystem.caches", fs.Caches, checkCache},
		{"filesystem.mask", fs.Mask, checkMask},
		{"filesystem.toolchains", fs.Toolchains, checkToolchain},
		{"filesystem.home_size", optional(fs.HomeSize), checkHomeSize},
		{"filesystem.protect", orNone(fs.Protect), checkProtectEntry},
	} {
		if err := checkEach(l.key, l.entries, l.check); err != nil {
			return err
		}
	}
	return nil
}

// optional is a key that may be unset as a list of zero or one value.
func optional(v *string) []string {
	if v == nil {
		return nil
	}
	return []string{*v}
}

// orNone is a list key that may be unset (nil) as its entries.
func orNone(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

// checkEach checks every entry of one list key; the first error is that
// key's *KeyError.
func checkEach(key string, entries []string, check func(string) error) error {
	for _, e := range entries {
		if err := check(e); err != nil {
			return &KeyError{Key: key, Err: err}
		}
	}
	return nil
}

// checkSystemDir accepts an absolute host path, bound at the same place.
func checkSystemDir(s string) error {
	if !filepath.IsAbs(s) {
		return fmt.Errorf("%q: want an absolute path such as /usr", s)
	}
	return nil
}

// checkMask accepts an absolute path inside the jail.
func checkMask(m string) error {
	if !filepath.IsAbs(m) {
		return fmt.Errorf("%q: want an absolute path inside the jail", m)
	}
	return nil
}

// checkBind is splitBind's verdict alone.
func checkBind(b string) error {
	_, _, err := splitBind(b)
	return err
}

// checkTmpfs is splitTmpfs's verdict alone.
func checkTmpfs(t string) error {
	_, _, err := splitTmpfs(t)
	return err
}

// checkHomeSize is parseTmpfsSize's verdict alone.
func checkHomeSize(s string) error {
	_, err := parseTmpfsSize(s)
	return err
}

// checkCache is splitCache's verdict alone.
func checkCache(c string) error {
	_, _, err := splitCache(c)
	return err
}

// validateLimits checks [limits] and [limits_max]; their errors name
// their keys already.
func (p *Profile) validateLimits() error {
	if _, err := p.Limits.parse(); err != nil {
		return err
	}
	return p.checkLimitsMax()
}

// validateModes checks filesystem.changes, network.mode and network.allow.
func (p *Profile) validateModes() error {
	if m := p.Filesystem.Changes; m != nil {
		if _, err := changes.ParseMode(*m); err != nil {
			return fmt.Errorf("filesystem.changes: %w", err)
		}
	}
	if m := p.Network.Mode; m != nil && *m != string(jail.NetNone) && *m != string(jail.NetHost) && *m != string(jail.NetAllow) {
		return keyErr("network.mode", "%q: want %q, %q or %q", *m, jail.NetNone, jail.NetHost, jail.NetAllow)
	}
	if _, err := allow.ParseList(p.Network.Allow); err != nil {
		return &KeyError{Key: "network.allow", Err: err}
	}
	return nil
}

// validate checks [env].
func (e *Env) validate() error {
	for k, v := range e.Set {
		if err := checkEnvName(k); err != nil {
			return &KeyError{Key: "env.set", Err: err}
		}
		if strings.ContainsRune(v, 0) {
			return keyErr("env.set", "%s: value contains a NUL byte", k)
		}
	}
	if err := checkEach("env.pass", e.Pass, checkEnvName); err != nil {
		return err
	}
	return checkEach("env.deny", orNone(e.Deny), checkDenyPattern)
}

// checkDenyPattern accepts a variable name pattern of env.deny.
func checkDenyPattern(pat string) error {
	if pat == "" || strings.ContainsAny(pat, "=\x00") {
		return fmt.Errorf("%q: want a variable name pattern such as \"*_TOKEN\" (no '=')", pat)
	}
	return nil
}

// validate checks [seccomp].
func (s *Seccomp) validate() error {
	if v := s.OnViolation; v != nil && *v != string(jail.ViolationDeny) && *v != string(jail.ViolationKill) {
		return keyErr("seccomp.on_violation", "%q: want %q or %q", *v, jail.ViolationDeny, jail.ViolationKill)
	}
	if err := checkEach("seccomp.allow", s.Allow, checkSyscallName); err != nil {
		return err
	}
	return checkEach("seccomp.deny", s.Deny, checkSyscallName)
}

// checkSyscallName accepts a syscall or "@group" name as a seccomp list
// entry; whether it is known is the seccomp package's to say.
func checkSyscallName(n string) error {
	if n == "" || n == "@" || strings.ContainsAny(n, " \t\n,") {
		return fmt.Errorf("%q: want a syscall name such as \"ptrace\" or a group such as \"@mount\"", n)
	}
	return nil
}

// validate checks [landlock].
func (l *Landlock) validate() error {
	if a := l.MinABI; a != nil && *a < 0 {
		return keyErr("landlock.min_abi", "%d: must not be negative (0 accepts any ABI)", *a)
	}
	for _, ports := range []struct {
		key   string
		ports []uint16
	}{{"landlock.bind_tcp", l.BindTCP}, {"landlock.connect_tcp", l.ConnectTCP}} {
		for _, port := range ports.ports {
			if port == 0 {
				return keyErr(ports.key, "port 0: want a TCP port between 1 and 65535")
			}
		}
	}
	return nil
}

// checkEtcEntry accepts a relative path below /etc: "ssl/certs".
func checkEtcEntry(e string) error {
	if e == "" || filepath.IsAbs(e) || filepath.Clean(e) != e || e == "." || e == ".." || strings.HasPrefix(e, "../") {
		return fmt.Errorf("%q: want an entry of /etc as a clean relative path, e.g. \"ssl/certs\" or \"localtime\"", e)
	}
	return nil
}

// checkProtectEntry accepts a clean relative path, ".git/hooks" or
// ".envrc": it names a place in every read-write bind, never one outside.
func checkProtectEntry(e string) error {
	if e == "" || filepath.IsAbs(e) || filepath.Clean(e) != e || e == "." || e == ".." || strings.HasPrefix(e, "../") {
		return fmt.Errorf("%q: want a clean path relative to a read-write bind's root, e.g. \".git/hooks\" or \".envrc\"", e)
	}
	return nil
}

// splitBind splits "PATH[:DEST]" at the first ':' (so PATH cannot contain
// ':'; DEST can). DEST, when given, must be absolute.
func splitBind(s string) (path, dest string, err error) {
	path, dest, hasDest := strings.Cut(s, ":")
	if path == "" {
		return "", "", fmt.Errorf("%q: want PATH or PATH:DEST", s)
	}
	if hasDest && !filepath.IsAbs(dest) {
		return "", "", fmt.Errorf("%q: DEST %q must be an absolute path inside the jail", s, dest)
	}
	return path, dest, nil
}

// checkVarName refuses what cannot be a variable's name in any route.
func checkVarName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("%q: not a valid environment variable name", k)
	}
	return nil
}

// checkEnvName accepts what a process environment can carry as a name.
// HOME is refused: the jail always sets it to its private home.
func checkEnvName(k string) error {
	if err := checkVarName(k); err != nil {
		return err
	}
	if k == "HOME" {
		return fmt.Errorf("HOME cannot be set or passed: the jail sets it to its private home")
	}
	return nil
}
