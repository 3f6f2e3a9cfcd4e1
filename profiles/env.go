package profiles

import (
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tooljail/tooljail/jail"
)

// jailOwned are the variables the jail decides: a caller's value (most
// often os.environ passed along whole) would describe the host, not the
// jail, so it is dropped rather than refused.
var jailOwned = []string{"HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD"}

// Reasons a caller's variable is dropped, as the report has them.
const (
	DropJail       = "jail"
	DropCredential = "credential"
)

// callerVarDrop says why a caller's variable named name is dropped, or ""
// when it is kept. PATH is never dropped here: see callerPath.
func callerVarDrop(name string, pass, deny []string) string {
	if slices.Contains(jailOwned, name) {
		return DropJail
	}
	if slices.Contains(pass, name) {
		return ""
	}
	for _, pat := range deny {
		if globFold(pat, name) {
			return DropCredential
		}
	}
	return ""
}

// globFold matches name against pat, where "*" stands for any run of
// characters and every other character for itself, ignoring ASCII case.
// (path.Match would give '[', '\\' and '/' meanings a variable name does
// not have.)
func globFold(pat, name string) bool {
	pat, name = strings.ToUpper(pat), strings.ToUpper(name)
	parts := strings.Split(pat, "*")
	if len(parts) == 1 {
		return pat == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name = name[i+len(mid):]
	}
	return strings.HasSuffix(name, last)
}

// callerPath is the jail's PATH with the caller's entries appended: each
// absolute entry the jail shows (shown), in the caller's order, once, and
// none already in the jail's own.
func callerPath(jailPath, caller string, shown func(string) bool) string {
	have := filepath.SplitList(jailPath)
	out := jailPath
	for _, e := range filepath.SplitList(caller) {
		if !filepath.IsAbs(e) {
			continue // "" and relative entries name the caller's directory
		}
		e = filepath.Clean(e)
		if slices.Contains(have, e) || !shown(e) {
			continue
		}
		have = append(have, e)
		if out == "" {
			out = e
		} else {
			out += ":" + e
		}
	}
	return out
}

// shownBy says whether the jail shows dir through mounts: a directory at or
// under a bind's destination, or a tmpfs itself, and not hidden by a mask.
// What the host has there is not looked at: an entry that does not exist
// finds nothing, in the jail as it would on the host.
func shownBy(mounts []jail.Mount) func(string) bool {
	return func(dir string) bool {
		shown := false
		for _, m := range mounts {
			switch m.Kind {
			case jail.MountBind:
				shown = shown || within(dir, m.Dest)
			case jail.MountTmpfs:
				shown = shown || dir == m.Dest
			case jail.MountMask:
				if within(dir, m.Dest) {
					return false
				}
			}
		}
		return shown
	}
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// environment builds the command's environment: env.set, then the pass
// names set in the caller's environment (environ), then the caller's
// variables (vars, "K=V"; the last of a name wins) less those the jail
// owns and those env.deny matches, then HOME. A caller's PATH adds what
// the jail shows of it after the jail's own (callerPath). The result is
// sorted by name; dropped lists the names dropped and why, by name.
func environment(e Env, environ, vars []string, mounts []jail.Mount) (env []string, dropped []jail.EnvDrop) {
	set := map[string]string{}
	for k, v := range e.Set {
		set[k] = v
	}
	caller := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			caller[k] = v // last wins, as in os.Environ's consumers
		}
	}
	for _, k := range e.Pass {
		if v, ok := caller[k]; ok {
			set[k] = v
		}
	}
	var deny []string
	if e.Deny != nil {
		deny = *e.Deny
	}
	why := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" {
			set[k] = callerPath(set[k], v, shownBy(mounts))
			continue
		}
		if r := callerVarDrop(k, e.Pass, deny); r != "" {
			why[k] = r
			continue
		}
		set[k] = v
	}
	set["HOME"] = JailHome
	env = make([]string, 0, len(set))
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	for k, r := range why {
		dropped = append(dropped, jail.EnvDrop{Name: k, Reason: r})
	}
	sort.Slice(dropped, func(i, j int) bool { return dropped[i].Name < dropped[j].Name })
	return env, dropped
}

// CheckVarFlag checks one --env value: "NAME=VALUE", or "NAME" for the
// value of NAME in the caller's environment.
func CheckVarFlag(v string) error {
	k, val, _ := strings.Cut(v, "=")
	if k == "" || strings.ContainsRune(k, 0) {
		return errors.New("want NAME=VALUE, or NAME for its value in this environment")
	}
	if strings.ContainsRune(val, 0) {
		return errors.New("value contains a NUL byte")
	}
	return nil
}

// CallerVars turns --env values into the caller's variables ("K=V"):
// "NAME=VALUE" as it is, "NAME" with its value in environ (the last one),
// nothing when environ does not set it. Values given by name never
// appear in argv, where other users of the host could read them.
func CallerVars(flags, environ []string) []string {
	var out []string
	for _, v := range flags {
		if strings.Contains(v, "=") {
			out = append(out, v)
			continue
		}
		for i := len(environ) - 1; i >= 0; i-- {
			if val, ok := strings.CutPrefix(environ[i], v+"="); ok {
				out = append(out, v+"="+val)
				break
			}
		}
	}
	return out
}
