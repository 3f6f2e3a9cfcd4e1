package toolchain

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// pyenv is what a pyenv shim in root/shims would run: the versions pyenv
// picks (pyenvVersions), each its prefix with its bin first in PATH.
// "system" is the system's Python, which the jail shows or not by itself.
func pyenv(fsys FS, c *Caller, root string) ([]Toolchain, error) {
	names, from := pyenvVersions(fsys, c)
	out := []Toolchain{} // matched, even when nothing is to be shown

	for _, name := range names {
		if name == "system" {
			continue
		}
		dir, err := pyenvVersionDir(fsys, path.Join(root, "versions"), name)
		if err != nil {
			return nil, notFound("pyenv version", name, from, "install it with pyenv install "+name)
		}
		tcs, err := ofPrefix(fsys, c, dir)
		if err != nil {
			return nil, err
		}
		if tcs == nil {
			return nil, fmt.Errorf("pyenv version %s (%s, from %s) has no bin/python and lib/python3.*; %s", name, dir, from, nameIt)
		}
		for _, tc := range tcs {
			if tc.Kind == KindPython {
				tc.Kind = KindPyenv
			}
			out = append(out, tc)
		}
	}
	return out, nil
}

// pyenvVersions are the versions pyenv picks, in its order: PYENV_VERSION,
// else the first .python-version from the working directory up, else
// PYENV_ROOT/version, else "system"; and where they came from.
func pyenvVersions(fsys FS, c *Caller) ([]string, string) {
	if v := c.env("PYENV_VERSION"); v != "" {
		return strings.Split(v, ":"), "PYENV_VERSION"
	}
	for dir := c.Cwd; ; dir = path.Dir(dir) {
		f := path.Join(dir, ".python-version")
		if b, err := readFile(fsys, f); err == nil {
			if v := versionList(string(b)); len(v) > 0 {
				return v, f
			}
		}
		if dir == "/" || dir == "." || dir == "" {
			break
		}
	}
	if root := c.orHome("PYENV_ROOT", ".pyenv"); root != "" {
		f := path.Join(root, "version")
		if b, err := readFile(fsys, f); err == nil {
			if v := versionList(string(b)); len(v) > 0 {
				return v, f
			}
		}
	}
	return []string{"system"}, "the default"
}

// versionList reads a version file: names separated by white space,
// comments from '#'.
func versionList(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		out = append(out, strings.Fields(line)...)
	}
	return out
}

// pyenvVersionDir is the directory of version name under versions: the
// name itself, or as pyenv does for a prefix ("3.12"), the latest
// installed version that starts with it and a dot.
func pyenvVersionDir(fsys FS, versions, name string) (string, error) {
	if strings.Contains(name, "/") || name == ".." || name == "." {
		return "", fmt.Errorf("bad version name %q", name)
	}
	if d, err := realpath(fsys, path.Join(versions, name)); err == nil && exists(fsys, d, true) {
		return d, nil
	}
	vd, err := realpath(fsys, versions)
	if err != nil {
		return "", err
	}
	ents, err := fsys.ReadDir(vd)
	if err != nil {
		return "", err
	}
	best := ""
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name+".") && (best == "" || versionLess(best, e.Name())) {
			best = e.Name()
		}
	}
	if best == "" {
		return "", fmt.Errorf("version %s not installed", name)
	}
	return realpath(fsys, path.Join(vd, best))
}

// versionLess compares dotted versions number by number ("3.9" < "3.12").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.Atoi(as[i])
		y, erry := strconv.Atoi(bs[i])
		if errx != nil || erry != nil {
			if as[i] != bs[i] {
				return as[i] < bs[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// rustup is the toolchain a rustup proxy in cargo/bin would run
// (rustToolchain), its bin first in PATH, then cargo/bin (the proxies and
// what cargo install put there). Never the whole cargo home: it holds
// credentials.toml.
func rustup(fsys FS, c *Caller, cargo string) (Toolchain, error) {
	home := c.orHome("RUSTUP_HOME", ".rustup")
	if home == "" {
		return Toolchain{}, fmt.Errorf("rustup proxy in %s/bin: no RUSTUP_HOME and no HOME to find the toolchains in; %s", cargo, nameIt)
	}
	name, from := rustToolchain(fsys, c, home)
	if name == "" {
		return Toolchain{}, fmt.Errorf("rustup proxy in %s/bin: no toolchain chosen (RUSTUP_TOOLCHAIN, rust-toolchain.toml, rustup default); set one with rustup default, or %s", cargo, nameIt)
	}
	dir, err := rustToolchainDir(fsys, home, name)
	if err != nil {
		return Toolchain{}, notFound("rust toolchain", name, from, "install it with rustup toolchain install "+name)
	}
	bin := path.Join(cargo, "bin")
	return Toolchain{
		Kind:     KindRustup,
		Prefixes: []string{dir, bin},
		Bin:      []string{path.Join(dir, "bin"), bin},
		Env:      []string{"RUSTUP_HOME=" + home, "RUSTUP_TOOLCHAIN=" + path.Base(dir)},
	}, nil
}

// rustToolchain is the toolchain rustup picks, as rustup does:
// RUSTUP_TOOLCHAIN, else a directory override of settings.toml or a
// rust-toolchain.toml (or rust-toolchain) from the working directory up,
// else settings.toml's default_toolchain; and where it came from.
func rustToolchain(fsys FS, c *Caller, home string) (string, string) {
	if v := c.env("RUSTUP_TOOLCHAIN"); v != "" {
		return v, "RUSTUP_TOOLCHAIN"
	}
	var settings struct {
		Default   string            `toml:"default_toolchain"`
		Overrides map[string]string `toml:"overrides"`
	}
	sf := path.Join(home, "settings.toml")
	if b, err := readFile(fsys, sf); err == nil {
		toml.Unmarshal(b, &settings) // a broken file chooses nothing
	}
	for dir := c.Cwd; ; dir = path.Dir(dir) {
		if v := settings.Overrides[dir]; v != "" {
			return v, sf + " (override for " + dir + ")"
		}
		for _, f := range []string{"rust-toolchain.toml", "rust-toolchain"} {
			p := path.Join(dir, f)
			if b, err := readFile(fsys, p); err == nil {
				if v := toolchainFile(string(b)); v != "" {
					return v, p
				}
			}
		}
		if dir == "/" || dir == "." || dir == "" {
			break
		}
	}
	if settings.Default != "" {
		return settings.Default, sf
	}
	return "", ""
}

// toolchainFile is the channel a rust-toolchain(.toml) file names: the
// TOML form's [toolchain] channel, or the legacy file's one line.
func toolchainFile(text string) string {
	var f struct {
		Toolchain struct {
			Channel string `toml:"channel"`
			Path    string `toml:"path"`
		} `toml:"toolchain"`
	}
	if err := toml.Unmarshal([]byte(text), &f); err == nil && f.Toolchain.Channel != "" {
		return f.Toolchain.Channel
	}
	if line := strings.TrimSpace(text); line != "" && !strings.ContainsAny(line, "\n=[") {
		return line
	}
	return ""
}

// rustToolchainDir is the installed toolchain name stands for under
// home/toolchains: the name itself, or name plus the host triple
// ("stable" is installed as "stable-x86_64-unknown-linux-gnu"), the
// default_host_triple's if several.
func rustToolchainDir(fsys FS, home, name string) (string, error) {
	if strings.Contains(name, "/") || name == ".." || name == "." {
		return "", fmt.Errorf("bad toolchain name %q", name)
	}
	tcs := path.Join(home, "toolchains")
	if d, err := realpath(fsys, path.Join(tcs, name)); err == nil && exists(fsys, d, true) {
		return d, nil
	}
	var settings struct {
		Host string `toml:"default_host_triple"`
	}
	if b, err := readFile(fsys, path.Join(home, "settings.toml")); err == nil {
		toml.Unmarshal(b, &settings)
	}
	if settings.Host != "" {
		if d, err := realpath(fsys, path.Join(tcs, name+"-"+settings.Host)); err == nil && exists(fsys, d, true) {
			return d, nil
		}
	}
	td, err := realpath(fsys, tcs)
	if err != nil {
		return "", err
	}
	ents, err := fsys.ReadDir(td)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name+"-") {
			found = append(found, e.Name())
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("toolchain %s: %d installed match", name, len(found))
	}
	return realpath(fsys, path.Join(td, found[0]))
}
