package profiles

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/toolchain"
)

// ToolchainAuto is the toolchains entry that finds the program's own.
const ToolchainAuto = "auto"

// Where a toolchain was asked for, as the report says (jail.Toolchain.From).
const (
	FromAuto    = "auto"
	FromFlag    = "flag"
	FromProfile = "profile"
)

// Finder is the caller's view the toolchains of a run are found in.
type Finder struct {
	// FS is the host as the caller sees it; nil: the host.
	FS toolchain.FS
	// Environ holds the caller's PATH, HOME and the variables detection
	// reads (toolchain.Vars), "K=V"; never given to the command.
	Environ []string
	// Homes are the home directories no prefix may be or hold; nil: HOME
	// and those of /etc/passwd.
	Homes []string
	// Check, when set, is asked about each prefix before it is shown: a
	// server refuses one its client could not read (toolchain.PeerMayRead).
	Check func(prefix string) error
}

// checkToolchain checks one toolchains entry.
func checkToolchain(v string) error {
	if v == ToolchainAuto {
		return nil
	}
	if !filepath.IsAbs(v) || strings.ContainsRune(v, 0) {
		return fmt.Errorf("%q: want \"auto\" or an absolute host path", v)
	}
	return nil
}

// toolchains finds the toolchains the profile (filesystem.toolchains) and
// the request (Request.Toolchains) ask for, for the command args[0], with
// the mounts so far telling what the jail shows already and jailPath the
// PATH the command gets without them. It returns them
// for the report and the read-only binds (with execute) that show them.
// This is the one place a Spec reads host files by name: the layouts
// (pyvenv.cfg, .python-version, rust-toolchain.toml...) decide the
// prefixes; the jail then opens each prefix once, as any bind.
func toolchains(profile []string, jailPath string, r Request, cwd string, mounts []jail.Mount) ([]jail.Toolchain, []jail.Mount, error) {
	asks, err := toolchainAsks(profile, r.Toolchains)
	if err != nil || len(asks) == 0 {
		return nil, nil, err
	}
	f := r.Finder
	if f == nil {
		f = &Finder{Environ: r.Environ}
	}
	fsys := f.FS
	if fsys == nil {
		fsys = toolchain.Host()
	}
	c := callerOf(f, cwd, shownHost(mounts))
	c.JailPath = jailPath
	var out []jail.Toolchain
	seen := map[string]bool{}
	for _, a := range asks {
		tcs, from, err := findAsked(fsys, c, a, r.Args[0])
		if err != nil {
			return nil, nil, err
		}
		for _, tc := range tcs {
			key := toolchainKey(tc)
			if seen[key] {
				continue // "auto" in the profile and on the command line
			}
			seen[key] = true
			if err := checkPrefixes(f, tc.Prefixes); err != nil {
				return nil, nil, err
			}
			out = append(out, jail.Toolchain{Kind: tc.Kind, Prefixes: nonNil(tc.Prefixes), Bin: nonNil(tc.Bin), Env: tc.Env, From: from})
		}
	}
	return out, toolchainBinds(out), nil
}

// toolchainAsk is one toolchain asked for ("auto" or a host path) and who
// asked: FromProfile or FromFlag.
type toolchainAsk struct{ value, from string }

// toolchainAsks lists the profile's toolchains, then the request's, which
// are checked here: the profile's were when it was validated.
func toolchainAsks(profile, flags []string) ([]toolchainAsk, error) {
	var asks []toolchainAsk
	for _, v := range profile {
		asks = append(asks, toolchainAsk{v, FromProfile})
	}
	for _, v := range flags {
		if err := checkToolchain(v); err != nil {
			return nil, fmt.Errorf("--toolchain %w", err)
		}
		asks = append(asks, toolchainAsk{v, FromFlag})
	}
	return asks, nil
}

// findAsked finds what a is: the toolchains "auto" finds for the program
// (from FromAuto), or the one at a path, without the prefixes the jail
// shows already (below /usr), which need no bind.
func findAsked(fsys toolchain.FS, c toolchain.Caller, a toolchainAsk, prog string) ([]toolchain.Toolchain, string, error) {
	if a.value == ToolchainAuto {
		found, err := toolchain.Auto(fsys, c, prog)
		return found, FromAuto, err
	}
	tc, err := toolchain.Named(fsys, c, a.value)
	if err != nil {
		return nil, a.from, err
	}
	tc.Prefixes = slices.DeleteFunc(tc.Prefixes, c.Shown)
	return []toolchain.Toolchain{tc}, a.from, nil
}

// toolchainKey identifies a toolchain found twice.
func toolchainKey(tc toolchain.Toolchain) string {
	return tc.Kind + "\x00" + strings.Join(tc.Prefixes, "\x00") + "\x00" + strings.Join(tc.Bin, "\x00")
}

// checkPrefixes runs the Finder's check, if any, on each prefix to bind.
func checkPrefixes(f *Finder, prefixes []string) error {
	if f.Check == nil {
		return nil
	}
	for _, p := range prefixes {
		if err := f.Check(p); err != nil {
			return err
		}
	}
	return nil
}

// toolchainBinds binds every prefix read-only with execute, at its host
// path: the paths the toolchain's files name.
func toolchainBinds(tcs []jail.Toolchain) []jail.Mount {
	var binds []jail.Mount
	for _, tc := range tcs {
		for _, p := range tc.Prefixes {
			binds = append(binds, jail.Mount{Kind: jail.MountBind, Source: p, Dest: p, Exec: true})
		}
	}
	return binds
}

// callerOf is the toolchain.Caller of a Finder.
func callerOf(f *Finder, cwd string, shown func(string) bool) toolchain.Caller {
	env := map[string]string{}
	for _, kv := range f.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	c := toolchain.Caller{Cwd: cwd, Home: env["HOME"], Path: env["PATH"], Env: map[string]string{}, Homes: f.Homes, Shown: shown}
	for _, k := range toolchain.Vars {
		if v, ok := env[k]; ok {
			c.Env[k] = v
		}
	}
	if c.Homes == nil {
		c.Homes = append(hostpath.HomeDirs("/etc/passwd"), c.Home) // none: root's and HOME only
	}
	return c
}

// shownHost says whether the jail shows a host path at the same path: the
// deepest mount that holds it is a bind of a directory to itself (a tmpfs
// or another bind over it shows something else), and no mask hides it.
func shownHost(mounts []jail.Mount) func(string) bool {
	return func(p string) bool {
		var deepest *jail.Mount
		for i, m := range mounts {
			if !within(p, m.Dest) {
				continue
			}
			if m.Kind == jail.MountMask {
				return false
			}
			if deepest == nil || len(m.Dest) >= len(deepest.Dest) {
				deepest = &mounts[i]
			}
		}
		return deepest != nil && deepest.Kind == jail.MountBind && deepest.Source == deepest.Dest
	}
}

// withToolchains puts the toolchains' bin directories first in the PATH
// of env (sorted "K=V"), and sets the variables they need, except those
// the caller gave itself (vars).
func withToolchains(env []string, tcs []jail.Toolchain, vars []string) []string {
	if len(tcs) == 0 {
		return env
	}
	given := map[string]bool{}
	for _, kv := range vars {
		k, _, _ := strings.Cut(kv, "=")
		given[k] = true
	}
	set := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	var bins []string
	for _, tc := range tcs {
		for _, b := range tc.Bin {
			if !slices.Contains(bins, b) {
				bins = append(bins, b)
			}
		}
		for _, kv := range tc.Env {
			if k, v, _ := strings.Cut(kv, "="); !given[k] {
				set[k] = v
			}
		}
	}
	rest := slices.DeleteFunc(filepath.SplitList(set["PATH"]), func(e string) bool { return slices.Contains(bins, e) })
	set["PATH"] = strings.Join(append(bins, rest...), ":")
	out := make([]string, 0, len(set))
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
