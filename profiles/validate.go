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
	fs := &p.Filesystem
	if fs.Root != nil {
		if err := checkRoot(*fs.Root); err != nil {
			return &KeyError{Key: "filesystem.root", Err: err}
		}
	}
	for _, s := range fs.System {
		if !filepath.IsAbs(s) {
			return keyErr("filesystem.system", "%q: want an absolute path such as /usr", s)
		}
	}
	for _, e := range fs.Etc {
		if err := checkEtcEntry(e); err != nil {
			return &KeyError{Key: "filesystem.etc", Err: err}
		}
	}
	for _, b := range fs.Ro {
		if _, _, err := splitBind(b); err != nil {
			return &KeyError{Key: "filesystem.ro", Err: err}
		}
	}
	for _, b := range fs.Rw {
		if _, _, err := splitBind(b); err != nil {
			return &KeyError{Key: "filesystem.rw", Err: err}
		}
	}
	for _, t := range fs.Tmpfs {
		if _, _, err := splitTmpfs(t); err != nil {
			return &KeyError{Key: "filesystem.tmpfs", Err: err}
		}
	}
	for _, c := range fs.Caches {
		if _, _, err := splitCache(c); err != nil {
			return &KeyError{Key: "filesystem.caches", Err: err}
		}
	}
	for _, m := range fs.Mask {
		if !filepath.IsAbs(m) {
			return keyErr("filesystem.mask", "%q: want an absolute path inside the jail", m)
		}
	}
	for _, v := range fs.Toolchains {
		if err := checkToolchain(v); err != nil {
			return &KeyError{Key: "filesystem.toolchains", Err: err}
		}
	}
	if fs.HomeSize != nil {
		if _, err := parseTmpfsSize(*fs.HomeSize); err != nil {
			return &KeyError{Key: "filesystem.home_size", Err: err}
		}
	}
	if fs.Protect != nil {
		for _, e := range *fs.Protect {
			if err := checkProtectEntry(e); err != nil {
				return &KeyError{Key: "filesystem.protect", Err: err}
			}
		}
	}
	if _, err := p.Limits.parse(); err != nil {
		return err
	}
	if err := p.checkLimitsMax(); err != nil {
		return err
	}
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
	for k, v := range p.Env.Set {
		if err := checkEnvName(k); err != nil {
			return &KeyError{Key: "env.set", Err: err}
		}
		if strings.ContainsRune(v, 0) {
			return keyErr("env.set", "%s: value contains a NUL byte", k)
		}
	}
	for _, k := range p.Env.Pass {
		if err := checkEnvName(k); err != nil {
			return &KeyError{Key: "env.pass", Err: err}
		}
	}
	if p.Env.Deny != nil {
		for _, pat := range *p.Env.Deny {
			if pat == "" || strings.ContainsAny(pat, "=\x00") {
				return keyErr("env.deny", "%q: want a variable name pattern such as \"*_TOKEN\" (no '=')", pat)
			}
		}
	}
	if v := p.Seccomp.OnViolation; v != nil && *v != string(jail.ViolationDeny) && *v != string(jail.ViolationKill) {
		return keyErr("seccomp.on_violation", "%q: want %q or %q", *v, jail.ViolationDeny, jail.ViolationKill)
	}
	for _, lists := range []struct {
		key   string
		names []string
	}{{"seccomp.allow", p.Seccomp.Allow}, {"seccomp.deny", p.Seccomp.Deny}} {
		for _, n := range lists.names {
			if n == "" || n == "@" || strings.ContainsAny(n, " \t\n,") {
				return keyErr(lists.key, "%q: want a syscall name such as \"ptrace\" or a group such as \"@mount\"", n)
			}
		}
	}
	if a := p.Landlock.MinABI; a != nil && *a < 0 {
		return keyErr("landlock.min_abi", "%d: must not be negative (0 accepts any ABI)", *a)
	}
	for _, ports := range []struct {
		key   string
		ports []uint16
	}{{"landlock.bind_tcp", p.Landlock.BindTCP}, {"landlock.connect_tcp", p.Landlock.ConnectTCP}} {
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
