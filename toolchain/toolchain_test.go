package toolchain

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tree builds a stand-in host under a temporary root: each key is a host
// path; a value "-> T" makes a symlink to T, "dir" a directory, anything
// else a file with that text (executable under a bin or shims directory).
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(v, "-> "):
			if err := os.Symlink(strings.TrimPrefix(v, "-> "), full); err != nil {
				t.Fatal(err)
			}
		case v == "dir":
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			mode := os.FileMode(0o644)
			if d := filepath.Base(filepath.Dir(p)); d == "bin" || d == "shims" {
				mode = 0o755
			}
			if err := os.WriteFile(full, []byte(v), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// system is what the default profile shows of a host.
func system(p string) bool {
	for _, d := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

const home = "/home/u"

func caller(cwd, pathList string, env map[string]string) Caller {
	return Caller{Cwd: cwd, Home: home, Path: pathList, Env: env, Homes: []string{home, "/root", "/home/other"}, Shown: system, JailPath: "/usr/local/bin:/usr/bin:/bin"}
}

// Layouts each test tree may hold.
var (
	pyenvBase = map[string]string{
		"/home/u/.pyenv/versions/3.12.1/bin/python3.12": "elf",
		"/home/u/.pyenv/versions/3.12.1/bin/python3":    "-> python3.12",
		"/home/u/.pyenv/versions/3.12.1/lib/python3.12": "dir",
		"/home/u/.pyenv/versions/3.11.9/bin/python3.11": "elf",
		"/home/u/.pyenv/versions/3.11.9/bin/python3":    "-> python3.11",
		"/home/u/.pyenv/versions/3.11.9/lib/python3.11": "dir",
		"/home/u/.pyenv/shims/python3":                  "#!/usr/bin/env bash\nexec pyenv exec python3",
		"/home/u/.pyenv/version":                        "3.11.9\n",
		"/home/u/.ssh/id_rsa":                           "secret",
		"/usr/bin/python3":                              "elf",
		"/usr/lib/python3.11":                           "dir",
	}
	venvOverPyenv = map[string]string{
		"/home/u/proj/.venv/pyvenv.cfg":        "home = /home/u/.pyenv/versions/3.12.1/bin\nversion = 3.12.1\n",
		"/home/u/proj/.venv/bin/python":        "-> python3.12",
		"/home/u/proj/.venv/bin/python3":       "-> python3.12",
		"/home/u/proj/.venv/bin/python3.12":    "-> /home/u/.pyenv/versions/3.12.1/bin/python3.12",
		"/home/u/proj/.venv/bin/pytest":        "#!/home/u/proj/.venv/bin/python\n",
		"/home/u/proj/.venv/lib/python3.12":    "dir",
		"/home/u/proj/.python-version":         "3.12\n",
		"/home/u/proj/sub/rust-toolchain.toml": "[toolchain]\nchannel = \"1.80.0\"\n",
	}
)

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestAuto(t *testing.T) {
	venv := Toolchain{Kind: KindVenv, Prefixes: []string{"/home/u/proj/.venv", "/home/u/.pyenv/versions/3.12.1"}, Bin: []string{"/home/u/proj/.venv/bin"}, Env: []string{"VIRTUAL_ENV=/home/u/proj/.venv"}}
	rust := map[string]string{
		"/home/u/.cargo/bin/rustup":                                            "elf",
		"/home/u/.cargo/bin/cargo":                                             "-> rustup",
		"/home/u/.cargo/credentials.toml":                                      "token",
		"/home/u/.rustup/settings.toml":                                        "default_host_triple = \"x86_64-unknown-linux-gnu\"\ndefault_toolchain = \"stable-x86_64-unknown-linux-gnu\"\n",
		"/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo": "elf",
		"/home/u/.rustup/toolchains/1.80.0-x86_64-unknown-linux-gnu/bin/cargo": "elf",
	}
	rustTC := func(name string) Toolchain {
		d := "/home/u/.rustup/toolchains/" + name
		return Toolchain{Kind: KindRustup, Prefixes: []string{d, "/home/u/.cargo/bin"}, Bin: []string{d + "/bin", "/home/u/.cargo/bin"},
			Env: []string{"RUSTUP_HOME=/home/u/.rustup", "RUSTUP_TOOLCHAIN=" + name}}
	}
	nvm := map[string]string{
		"/home/u/.nvm/versions/node/v20.11.0/bin/node":                            "elf",
		"/home/u/.nvm/versions/node/v20.11.0/bin/npm":                             "-> ../lib/node_modules/npm/bin/npm-cli.js",
		"/home/u/.nvm/versions/node/v20.11.0/lib/node_modules/npm/bin/npm-cli.js": "#!/usr/bin/env node",
	}
	fnm := map[string]string{
		"/home/u/.local/share/fnm/node-versions/v22.1.0/installation/bin/node":         "elf",
		"/home/u/.local/share/fnm/node-versions/v22.1.0/installation/lib/node_modules": "dir",
		"/home/u/.local/state/fnm_multishells/1_2/bin":                                 "-> /home/u/.local/share/fnm/node-versions/v22.1.0/installation/bin",
	}
	volta := map[string]string{
		"/home/u/.volta/bin/volta-shim":                   "elf",
		"/home/u/.volta/bin/node":                         "-> volta-shim",
		"/home/u/.volta/tools/image/node/20.0.0/bin/node": "elf",
	}
	conda := map[string]string{
		"/home/u/miniforge3/envs/ml/bin/python3.11":     "elf",
		"/home/u/miniforge3/envs/ml/bin/python":         "-> python3.11",
		"/home/u/miniforge3/envs/ml/lib/python3.11":     "dir",
		"/home/u/miniforge3/envs/ml/conda-meta/history": "",
	}
	uv := map[string]string{
		"/home/u/.local/share/uv/python/cpython-3.13.0-linux-x86_64-gnu/bin/python3.13": "elf",
		"/home/u/.local/share/uv/python/cpython-3.13.0-linux-x86_64-gnu/lib/python3.13": "dir",
		"/home/u/.local/bin/python3.13": "-> /home/u/.local/share/uv/python/cpython-3.13.0-linux-x86_64-gnu/bin/python3.13",
	}
	golang := map[string]string{
		"/home/u/sdk/go1.23.0/bin/go":                                 "elf",
		"/home/u/sdk/go1.23.0/src/runtime":                            "dir",
		"/home/u/go/pkg/mod/cache/download/golang.org/x/text/@v/list": "v0.1.0\n",
		"/home/u/go/bin/go":                                           "-> /home/u/sdk/go1.23.0/bin/go",
	}
	java := map[string]string{
		"/home/u/.sdkman/candidates/java/21.0.2-tem/bin/java": "elf",
		"/home/u/.sdkman/candidates/java/21.0.2-tem/release":  "JAVA_VERSION=\"21.0.2\"",
		"/home/u/.sdkman/candidates/java/current":             "-> 21.0.2-tem",
	}
	goTC := Toolchain{Kind: KindGo, Prefixes: []string{"/home/u/sdk/go1.23.0", "/home/u/go/pkg/mod/cache/download"}, Bin: []string{"/home/u/sdk/go1.23.0/bin"},
		Env: []string{"GOPROXY=file:///home/u/go/pkg/mod/cache/download," + DefaultGoProxy}}
	for _, c := range []struct {
		name  string
		files map[string]string
		cwd   string
		path  string
		env   map[string]string
		argv0 string
		shown string // a directory the jail shows besides the system's
		want  []Toolchain
		err   string
	}{
		{name: "venv in the workdir: its bin and VIRTUAL_ENV, its base bound", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj", path: "/home/u/proj/.venv/bin", argv0: "python3",
			shown: "/home/u/proj", want: []Toolchain{{Kind: KindVenv, Prefixes: []string{"/home/u/.pyenv/versions/3.12.1"}, Bin: venv.Bin, Env: venv.Env}}},
		{name: "system python needs nothing", files: pyenvBase, cwd: "/home/u", path: "/usr/bin", argv0: "python3"},
		{name: "venv over a pyenv base, by name", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj", path: "/home/u/proj/.venv/bin:/usr/bin", argv0: "python3", want: []Toolchain{venv}},
		{name: "venv script with a shebang", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj", path: "/home/u/proj/.venv/bin:/usr/bin", argv0: "pytest", want: []Toolchain{venv}},
		{name: "venv by relative path", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj", path: "/usr/bin", argv0: ".venv/bin/python", want: []Toolchain{venv}},
		{name: "venv with copies names its base by home", files: merge(pyenvBase, venvOverPyenv, map[string]string{"/home/u/proj/.venv/bin/python3.12": "elf copy"}), cwd: "/home/u/proj", path: "/home/u/proj/.venv/bin", argv0: "python3", want: []Toolchain{venv}},
		{name: "pyenv shim with .python-version prefix", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj/sub", path: "/home/u/.pyenv/shims:/usr/bin", argv0: "python3",
			want: []Toolchain{{Kind: KindPyenv, Prefixes: []string{"/home/u/.pyenv/versions/3.12.1"}, Bin: []string{"/home/u/.pyenv/versions/3.12.1/bin"}}}},
		{name: "pyenv shim with the global version file", files: pyenvBase, cwd: "/home/u", path: "/home/u/.pyenv/shims:/usr/bin", argv0: "python3",
			want: []Toolchain{{Kind: KindPyenv, Prefixes: []string{"/home/u/.pyenv/versions/3.11.9"}, Bin: []string{"/home/u/.pyenv/versions/3.11.9/bin"}}}},
		{name: "pyenv shim with PYENV_VERSION over the files", files: merge(pyenvBase, venvOverPyenv), cwd: "/home/u/proj", path: "/home/u/.pyenv/shims", env: map[string]string{"PYENV_VERSION": "3.11.9"}, argv0: "python3",
			want: []Toolchain{{Kind: KindPyenv, Prefixes: []string{"/home/u/.pyenv/versions/3.11.9"}, Bin: []string{"/home/u/.pyenv/versions/3.11.9/bin"}}}},
		{name: "pyenv system", files: pyenvBase, cwd: "/home/u", path: "/home/u/.pyenv/shims", env: map[string]string{"PYENV_VERSION": "system"}, argv0: "python3"},
		{name: "pyenv version not installed", files: pyenvBase, cwd: "/home/u", path: "/home/u/.pyenv/shims", env: map[string]string{"PYENV_VERSION": "3.9"}, argv0: "python3",
			err: `pyenv version "3.9" (from PYENV_VERSION) is not installed`},
		{name: "nvm node", files: nvm, cwd: "/home/u", path: "/home/u/.nvm/versions/node/v20.11.0/bin:/usr/bin", argv0: "node",
			want: []Toolchain{{Kind: KindNode, Prefixes: []string{"/home/u/.nvm/versions/node/v20.11.0"}, Bin: []string{"/home/u/.nvm/versions/node/v20.11.0/bin"}}}},
		{name: "nvm npm is a script in lib", files: nvm, cwd: "/home/u", path: "/home/u/.nvm/versions/node/v20.11.0/bin", argv0: "npm",
			want: []Toolchain{{Kind: KindNode, Prefixes: []string{"/home/u/.nvm/versions/node/v20.11.0"}, Bin: []string{"/home/u/.nvm/versions/node/v20.11.0/bin"}}}},
		{name: "fnm through its multishell link", files: fnm, cwd: "/home/u", path: "/home/u/.local/state/fnm_multishells/1_2/bin", argv0: "node",
			want: []Toolchain{{Kind: KindNode, Prefixes: []string{"/home/u/.local/share/fnm/node-versions/v22.1.0/installation"}, Bin: []string{"/home/u/.local/share/fnm/node-versions/v22.1.0/installation/bin"}}}},
		{name: "volta home", files: volta, cwd: "/home/u", path: "/home/u/.volta/bin", argv0: "node",
			want: []Toolchain{{Kind: KindVolta, Prefixes: []string{"/home/u/.volta"}, Bin: []string{"/home/u/.volta/bin"}, Env: []string{"VOLTA_HOME=/home/u/.volta"}}}},
		{name: "rustup default toolchain", files: rust, cwd: "/home/u", path: "/home/u/.cargo/bin", argv0: "cargo", want: []Toolchain{rustTC("stable-x86_64-unknown-linux-gnu")}},
		{name: "rustup rust-toolchain.toml up from cwd", files: merge(rust, venvOverPyenv), cwd: "/home/u/proj/sub", path: "/home/u/.cargo/bin", argv0: "cargo", want: []Toolchain{rustTC("1.80.0-x86_64-unknown-linux-gnu")}},
		{name: "rustup RUSTUP_TOOLCHAIN first", files: merge(rust, venvOverPyenv), cwd: "/home/u/proj/sub", path: "/home/u/.cargo/bin", env: map[string]string{"RUSTUP_TOOLCHAIN": "stable"}, argv0: "cargo", want: []Toolchain{rustTC("stable-x86_64-unknown-linux-gnu")}},
		{name: "rustup toolchain not installed", files: rust, cwd: "/home/u", path: "/home/u/.cargo/bin", env: map[string]string{"RUSTUP_TOOLCHAIN": "nightly"}, argv0: "cargo", err: `rust toolchain "nightly" (from RUSTUP_TOOLCHAIN) is not installed`},
		{name: "conda env", files: conda, cwd: "/home/u", path: "/home/u/miniforge3/envs/ml/bin", argv0: "python",
			want: []Toolchain{{Kind: KindConda, Prefixes: []string{"/home/u/miniforge3/envs/ml"}, Bin: []string{"/home/u/miniforge3/envs/ml/bin"}, Env: []string{"CONDA_PREFIX=/home/u/miniforge3/envs/ml"}}}},
		{name: "uv python through ~/.local/bin", files: uv, cwd: "/home/u", path: "/home/u/.local/bin", argv0: "python3.13",
			want: []Toolchain{{Kind: KindPython, Prefixes: []string{"/home/u/.local/share/uv/python/cpython-3.13.0-linux-x86_64-gnu"}, Bin: []string{"/home/u/.local/share/uv/python/cpython-3.13.0-linux-x86_64-gnu/bin"}}}},
		{name: "uv python through ~/.local/bin by path is not shown", files: uv, cwd: "/home/u", path: "", argv0: "/home/u/.local/bin/python3.13",
			err: "/home/u/.local/bin/python3.13 is outside what the jail shows and no prefix found holds it"},
		{name: "go root with the module cache", files: golang, cwd: "/home/u", path: "/home/u/go/bin", argv0: "go", want: []Toolchain{goTC}},
		{name: "go root keeps the caller's GOPROXY after the cache", files: golang, cwd: "/home/u", path: "/home/u/sdk/go1.23.0/bin", env: map[string]string{"GOPROXY": "https://goproxy.example"}, argv0: "go",
			want: []Toolchain{{Kind: KindGo, Prefixes: goTC.Prefixes, Bin: goTC.Bin, Env: []string{"GOPROXY=file:///home/u/go/pkg/mod/cache/download,https://goproxy.example"}}}},
		{name: "go root the jail shows, off its PATH: its bin, no prefix", files: merge(golang, map[string]string{"/usr/local/go/bin/go": "elf", "/usr/local/go/src/runtime": "dir"}), cwd: "/home/u", path: "/usr/local/go/bin:/usr/bin", argv0: "go",
			want: []Toolchain{{Kind: KindGo, Prefixes: []string{"/home/u/go/pkg/mod/cache/download"}, Bin: []string{"/usr/local/go/bin"}, Env: goTC.Env}}},
		{name: "a go root the jail shows, run by its path: its bin first, nothing bound", files: map[string]string{"/usr/bin/go": "-> ../local/go/bin/go", "/usr/local/go/bin/go": "elf", "/usr/local/go/src/runtime": "dir"}, cwd: "/home/u", path: "/usr/bin", argv0: "/usr/local/go/bin/go",
			want: []Toolchain{{Kind: KindGo, Prefixes: []string{}, Bin: []string{"/usr/local/go/bin"}}}},
		{name: "java home through a current link", files: java, cwd: "/home/u", path: "/home/u/.sdkman/candidates/java/current/bin", argv0: "java",
			want: []Toolchain{{Kind: KindJava, Prefixes: []string{"/home/u/.sdkman/candidates/java/21.0.2-tem"}, Bin: []string{"/home/u/.sdkman/candidates/java/21.0.2-tem/bin"}, Env: []string{"JAVA_HOME=/home/u/.sdkman/candidates/java/21.0.2-tem"}}}},
		{name: "unknown layout", files: map[string]string{"/home/u/tools/bin/thing": "elf"}, cwd: "/home/u", path: "/home/u/tools/bin", argv0: "thing", err: "of no layout tooljail knows"},
		// Nothing to show: the jail looks the name up itself (127).
		{name: "not in PATH", files: pyenvBase, cwd: "/home/u", path: "/usr/bin", argv0: "nope"},
		{name: "no such path", files: pyenvBase, cwd: "/home/u", path: "/usr/bin", argv0: "./nope"},
		{name: "a prefix holding .ssh is refused", files: map[string]string{"/home/u/work/bin/node": "elf", "/home/u/work/lib/node_modules": "dir", "/home/u/work/.ssh/id_rsa": "k"}, cwd: "/home/u", path: "/home/u/work/bin", argv0: "node",
			err: "toolchain prefix /home/u/work holds /home/u/work/.ssh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files)
			cl := caller(c.cwd, c.path, c.env)
			if c.shown != "" {
				cl.Shown = func(p string) bool { return system(p) || p == c.shown || strings.HasPrefix(p, c.shown+"/") }
			}
			got, err := Auto(Under(root), cl, c.argv0)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q (got %+v)", err, c.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	root := tree(t, merge(pyenvBase, venvOverPyenv, map[string]string{"/home/u/opt/tool/x": "", "/home/u/.venvlink": "-> proj/.venv"}))
	c := caller("/home/u", "", nil)
	for _, tc := range []struct {
		prefix string
		want   Toolchain
		err    string
	}{
		{prefix: "/home/u/.venvlink", want: Toolchain{Kind: KindVenv, Prefixes: []string{"/home/u/proj/.venv"}, Bin: []string{"/home/u/proj/.venv/bin"}, Env: []string{"VIRTUAL_ENV=/home/u/proj/.venv"}}},
		{prefix: "/home/u/.pyenv/versions/3.11.9", want: Toolchain{Kind: KindPython, Prefixes: []string{"/home/u/.pyenv/versions/3.11.9"}, Bin: []string{"/home/u/.pyenv/versions/3.11.9/bin"}}},
		{prefix: "/home/u/opt/tool", want: Toolchain{Kind: KindPrefix, Prefixes: []string{"/home/u/opt/tool"}}},
		{prefix: "/home/u", err: "is the home directory /home/u"},
		{prefix: "/home/u/.ssh", err: "lies in /home/u/.ssh"},
		{prefix: "relative", err: "want \"auto\" or an absolute path"},
		{prefix: "/home/u/nothing", err: "no such file"},
		{prefix: "/home/u/opt/tool/x", err: "not a directory"},
	} {
		got, err := Named(Under(root), c, tc.prefix)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.prefix, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tc.prefix, got, err, tc.want)
		}
	}
}
