// Package toolchain finds the caller's own toolchain for a jailed command:
// from the program name and the caller's view of the host (PATH, the
// working directory, HOME, a few variables), the smallest prefixes that
// hold the program and what it needs (a virtualenv and its base
// interpreter, a pyenv version, an nvm Node, a rustup toolchain, a Go
// root, a Java home...), the directories to put first in PATH and the
// variables to set. It decides only: it reads files, never runs a program
// of the host, and leaves binding the prefixes to the jail.
package toolchain

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Kinds of toolchain.
const (
	KindVenv   = "venv"   // a directory with pyvenv.cfg
	KindPython = "python" // D/bin/python3 with D/lib/python3.* (pyenv versions, uv pythons)
	KindConda  = "conda"  // a Python prefix with conda-meta (conda, mamba, micromamba)
	KindPyenv  = "pyenv"  // the version a pyenv shim would run
	KindNode   = "node"   // D/bin/node with D/lib/node_modules (nvm, fnm, a tarball)
	KindVolta  = "volta"  // a volta home: its shims and the tools it installed
	KindRustup = "rustup" // a rustup toolchain and CARGO_HOME/bin
	KindGo     = "go"     // a Go root, and the module cache as a read-only proxy
	KindJava   = "java"   // a Java home
	KindPrefix = "prefix" // a prefix named by hand of no known layout
)

// Vars are the caller's variables detection reads, besides PATH and HOME.
var Vars = []string{
	"PYENV_VERSION", "PYENV_ROOT", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_HOME",
	"GOPATH", "GOMODCACHE", "GOPROXY", "VOLTA_HOME", "NVM_DIR",
}

// DefaultGoProxy is the go command's own default GOPROXY.
const DefaultGoProxy = "https://proxy.golang.org,direct"

// Toolchain is what the jail shows of one toolchain.
type Toolchain struct {
	Kind string
	// Prefixes are host directories (resolved: no symlink in them) shown
	// read-only, with execute rights, at the same path.
	Prefixes []string
	// Bin are directories put first in the jail's PATH, in order.
	Bin []string
	// Env are variables the toolchain needs ("K=V").
	Env []string
}

// Caller is the caller's view of the host that detection starts from.
type Caller struct {
	Cwd  string // absolute
	Home string // the caller's home directory; "" for none
	Path string // the caller's PATH
	// Env holds the caller's values of Vars (others are ignored).
	Env map[string]string
	// Homes are the home directories no prefix may be or hold (the
	// caller's and the password database's: see hostpath.HomeDirs).
	Homes []string
	// Shown says whether the jail already shows a host path (a system
	// directory, a bind of the profile): such a path needs no prefix.
	Shown func(hostPath string) bool
	// JailPath is the PATH the command gets before any toolchain's: a
	// program the jail shows in one of its directories needs nothing.
	JailPath string
}

func (c *Caller) env(k string) string { return c.Env[k] }

func (c *Caller) shown(p string) bool { return c.Shown != nil && c.Shown(p) }

// orHome is the caller's variable k as a path, else HOME/rel ("" when
// neither is known).
func (c *Caller) orHome(k, rel string) string {
	if v := c.env(k); path.IsAbs(v) {
		return path.Clean(v)
	}
	if c.Home == "" || !path.IsAbs(c.Home) {
		return ""
	}
	return path.Join(c.Home, rel)
}

const nameIt = "name its prefix with --toolchain PATH, or bind it with --ro"

// Auto finds the toolchains argv0 needs: argv0 is resolved as the caller
// would run it (a name in the caller's PATH, a path relative to Cwd), its
// symlinks followed one by one, and each path on the way that the jail
// does not show is matched against the layouts this package knows. Every
// prefix found is checked with Refuse. No toolchain and no error: the jail
// shows the program already, or the caller has none by that name (the
// jail then looks it up itself).
func Auto(fsys FS, c Caller, argv0 string) ([]Toolchain, error) {
	found, ok := programPath(fsys, c, argv0)
	if !ok {
		return nil, nil
	}
	elems, err := elements(fsys, found)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a path that is not there: the jail says so (127)
	}
	if err != nil {
		return nil, fmt.Errorf("toolchain auto: %s: %w", argv0, err)
	}
	var out []Toolchain
	for i, e := range elems {
		if covered(out, e) {
			continue
		}
		if out, err = autoElement(fsys, &c, argv0, e, i == len(elems)-1, out); err != nil {
			return nil, err
		}
	}
	if strings.Contains(argv0, "/") && !c.shown(elems[0]) && !covered(out, elems[0]) {
		return nil, fmt.Errorf("toolchain auto: %s is outside what the jail shows and no prefix found holds it; run it by its name, or %s", elems[0], nameIt)
	}
	for i := range out {
		out[i].Prefixes = slices.DeleteFunc(out[i].Prefixes, c.shown)
	}
	return checked(fsys, c.Homes, out)
}

// programPath is the path the caller would run for argv0: relative to
// Cwd, or looked up in the caller's PATH. ok is false when the PATH has
// none: nothing of the caller's to show, the jail looks the name up in
// its own PATH, and says "not found" (127) as it would without auto when
// it has none either.
func programPath(fsys FS, c Caller, argv0 string) (found string, ok bool) {
	if !strings.Contains(argv0, "/") {
		p, err := lookPath(fsys, argv0, c.Path)
		return p, err == nil
	}
	if !path.IsAbs(argv0) {
		return path.Join(c.Cwd, argv0), true
	}
	return argv0, true
}

// autoElement adds to out the toolchains that e, one path on the way to
// the program (last: its end), needs.
func autoElement(fsys FS, c *Caller, argv0, e string, last bool, out []Toolchain) ([]Toolchain, error) {
	shown := c.shown(e)
	// The jail shows it, but a virtualenv in the workdir, or a Go root in
	// /usr/local, still needs its bin in PATH (and its variables, its base
	// interpreter): unless the jail's PATH has its directory, match it
	// too, for those.
	if shown && slices.Contains(filepath.SplitList(c.JailPath), path.Dir(e)) {
		return out, nil
	}
	tcs, err := match(fsys, c, e)
	if err != nil {
		return nil, fmt.Errorf("toolchain auto: %s: %w", argv0, err)
	}
	if tcs == nil && !shown {
		if !last {
			// A link on the way (~/.local/bin/python3 -> a uv Python):
			// the jail runs the name from the prefix the end of the
			// chain finds, first in PATH.
			return out, nil
		}
		return nil, fmt.Errorf("toolchain auto: %s runs %s, which is outside what the jail shows and of no layout tooljail knows (a virtualenv, pyenv, uv, conda, nvm, fnm, volta, rustup, a Go root, a Java home); %s", argv0, e, nameIt)
	}
	for _, tc := range tcs {
		// A shown path's toolchain without prefixes still brings its
		// PATH and variables.
		if !coveredAll(out, tc.Prefixes) || (shown && len(tc.Prefixes) == 0) {
			out = append(out, tc)
		}
	}
	return out, nil
}

// Named is the toolchain of a prefix named by hand: the directory itself
// (symlinks resolved), its bin first in PATH when it has one, and the
// variables of its layout when it has a known one (VIRTUAL_ENV, JAVA_HOME).
func Named(fsys FS, c Caller, prefix string) (Toolchain, error) {
	if !path.IsAbs(prefix) {
		return Toolchain{}, fmt.Errorf("toolchain %s: want \"auto\" or an absolute path", prefix)
	}
	d, err := realpath(fsys, prefix)
	if err != nil {
		return Toolchain{}, fmt.Errorf("toolchain %s: %w", prefix, err)
	}
	if fi, err := fsys.Lstat(d); err != nil || !fi.IsDir() {
		return Toolchain{}, fmt.Errorf("toolchain %s: not a directory; name the toolchain's prefix (the directory that holds its bin)", prefix)
	}
	tc := Toolchain{Kind: prefixKind(fsys, d), Prefixes: []string{d}}
	if tc.Kind == "" {
		tc.Kind = KindPrefix
	}
	if exists(fsys, path.Join(d, "bin"), true) {
		tc.Bin = []string{path.Join(d, "bin")}
	}
	switch tc.Kind {
	case KindVenv:
		tc.Env = []string{"VIRTUAL_ENV=" + d}
	case KindJava:
		tc.Env = []string{"JAVA_HOME=" + d}
	case KindConda:
		tc.Env = []string{"CONDA_PREFIX=" + d}
	}
	tcs, err := checked(fsys, c.Homes, []Toolchain{tc})
	if err != nil {
		return Toolchain{}, err
	}
	return tcs[0], nil
}

func checked(fsys FS, homes []string, tcs []Toolchain) ([]Toolchain, error) {
	for _, tc := range tcs {
		for _, p := range tc.Prefixes {
			if err := Refuse(fsys, homes, p); err != nil {
				return nil, err
			}
		}
	}
	return tcs, nil
}

func covered(tcs []Toolchain, p string) bool {
	for _, tc := range tcs {
		for _, d := range tc.Prefixes {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
	}
	return false
}

func coveredAll(tcs []Toolchain, ps []string) bool {
	for _, p := range ps {
		if !covered(tcs, p) {
			return false
		}
	}
	return true
}

// match finds the toolchains of one path the program goes through, by
// layout; nil when it is of none, empty when it is of one that needs
// nothing shown (a pyenv shim for the "system" version).
func match(fsys FS, c *Caller, e string) ([]Toolchain, error) {
	dir := path.Dir(e)
	switch path.Base(dir) {
	case "shims":
		root := path.Dir(dir)
		if exists(fsys, path.Join(root, "versions"), true) {
			return pyenv(fsys, c, root)
		}
	case "bin":
		d := path.Dir(dir)
		if d == "/" {
			return nil, nil
		}
		if d == c.orHome("CARGO_HOME", ".cargo") || exists(fsys, path.Join(dir, "rustup"), false) {
			tc, err := rustup(fsys, c, d)
			if err != nil {
				return nil, err
			}
			return []Toolchain{tc}, nil
		}
		if d == c.orHome("VOLTA_HOME", ".volta") || exists(fsys, path.Join(dir, "volta-shim"), false) {
			return []Toolchain{{Kind: KindVolta, Prefixes: []string{d}, Bin: []string{dir}, Env: []string{"VOLTA_HOME=" + d}}}, nil
		}
		return ofPrefix(fsys, c, d)
	}
	return nil, nil
}

// ofPrefix is the toolchain of a prefix D by the layout of D, nil for none.
func ofPrefix(fsys FS, c *Caller, d string) ([]Toolchain, error) {
	bin := path.Join(d, "bin")
	switch kind := prefixKind(fsys, d); kind {
	case KindVenv:
		return venv(fsys, c, d)
	case KindPython, KindNode:
		return []Toolchain{{Kind: kind, Prefixes: []string{d}, Bin: []string{bin}}}, nil
	case KindConda:
		return []Toolchain{{Kind: kind, Prefixes: []string{d}, Bin: []string{bin}, Env: []string{"CONDA_PREFIX=" + d}}}, nil
	case KindJava:
		return []Toolchain{{Kind: kind, Prefixes: []string{d}, Bin: []string{bin}, Env: []string{"JAVA_HOME=" + d}}}, nil
	case KindGo:
		return []Toolchain{goRoot(fsys, c, d)}, nil
	}
	return nil, nil
}

// prefixKind is the layout of the directory d, "" for none it knows.
func prefixKind(fsys FS, d string) string {
	has := func(rel string, dir bool) bool { return exists(fsys, path.Join(d, rel), dir) }
	switch {
	case has("pyvenv.cfg", false):
		return KindVenv
	case has("conda-meta", true):
		return KindConda
	case hasPythonLib(fsys, d):
		return KindPython
	case has("lib/node_modules", true) && (has("bin/node", false) || has("bin/npm", false)):
		return KindNode
	case has("bin/go", false) && (has("src/runtime", true) || goVersionFile(fsys, d)):
		return KindGo
	case has("bin/java", false) && (has("release", false) || has("lib/modules", false)):
		return KindJava
	}
	return ""
}

func hasPythonLib(fsys FS, d string) bool {
	lib, err := realpath(fsys, path.Join(d, "lib"))
	if err != nil {
		return false
	}
	ents, err := fsys.ReadDir(lib)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "python3") || strings.HasPrefix(e.Name(), "python2") {
			return true
		}
	}
	return false
}

func goVersionFile(fsys FS, d string) bool {
	b, err := readFile(fsys, path.Join(d, "VERSION"))
	return err == nil && strings.HasPrefix(string(b), "go")
}

// venv is a virtualenv d and the prefix of the interpreter its pyvenv.cfg
// names ("home = DIR", the base's bin), unless the jail shows that.
func venv(fsys FS, c *Caller, d string) ([]Toolchain, error) {
	tc := Toolchain{Kind: KindVenv, Prefixes: []string{d}, Bin: []string{path.Join(d, "bin")}, Env: []string{"VIRTUAL_ENV=" + d}}
	cfg, err := readFile(fsys, path.Join(d, "pyvenv.cfg"))
	if err != nil {
		return nil, fmt.Errorf("virtualenv %s: %w", d, err)
	}
	home := cfgValue(string(cfg), "home")
	if home == "" || !path.IsAbs(home) {
		return []Toolchain{tc}, nil
	}
	homeDir, err := realpath(fsys, home)
	if err != nil {
		return nil, fmt.Errorf("virtualenv %s: its pyvenv.cfg names home = %s: %w; recreate the virtualenv", d, home, err)
	}
	if c.shown(homeDir) {
		return []Toolchain{tc}, nil
	}
	base := homeDir
	if path.Base(base) == "bin" {
		base = path.Dir(base)
	}
	switch k := prefixKind(fsys, base); k {
	case KindPython, KindConda:
		tc.Prefixes = append(tc.Prefixes, base)
	default:
		return nil, fmt.Errorf("virtualenv %s: its base interpreter's prefix %s (pyvenv.cfg home = %s) is outside what the jail shows and has no lib/python3.*; %s", d, base, home, nameIt)
	}
	return []Toolchain{tc}, nil
}

// cfgValue is the value of key in "key = value" lines (pyvenv.cfg).
func cfgValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// goRoot is a Go root d and, when the caller has one, the module cache's
// download directory shown read-only as a file proxy tried first: the jail
// never writes the host's cache, and what it lacks comes from the caller's
// GOPROXY.
func goRoot(fsys FS, c *Caller, d string) Toolchain {
	tc := Toolchain{Kind: KindGo, Prefixes: []string{d}, Bin: []string{path.Join(d, "bin")}}
	mod := c.env("GOMODCACHE")
	if !path.IsAbs(mod) {
		mod = ""
		for _, gp := range strings.Split(c.env("GOPATH"), ":") {
			if path.IsAbs(gp) {
				mod = path.Join(gp, "pkg/mod")
				break
			}
		}
		if mod == "" && path.IsAbs(c.Home) {
			mod = path.Join(c.Home, "go/pkg/mod")
		}
	}
	if mod == "" {
		return tc
	}
	dl, err := realpath(fsys, path.Join(mod, "cache/download"))
	if err != nil {
		return tc
	}
	if fi, err := fsys.Lstat(dl); err != nil || !fi.IsDir() {
		return tc
	}
	proxy := c.env("GOPROXY")
	if proxy == "" {
		proxy = DefaultGoProxy
	}
	if !c.shown(dl) && !strings.HasPrefix(d, dl+"/") {
		tc.Prefixes = append(tc.Prefixes, dl)
	}
	tc.Env = []string{"GOPROXY=file://" + dl + "," + proxy}
	return tc
}

// notFound is an error that says a chosen version is not installed.
func notFound(what, name, from, fix string) error {
	return fmt.Errorf("%s %q (from %s) is not installed; %s, or %s", what, name, from, fix, nameIt)
}
