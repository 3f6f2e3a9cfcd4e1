package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// toolchainReport is the report's enforcement.toolchains.
type toolchainReport struct {
	Enforcement struct {
		Toolchains []struct {
			Kind     string   `json:"kind"`
			Prefixes []string `json:"prefixes"`
			Bin      []string `json:"bin"`
			Env      []string `json:"env"`
			From     string   `json:"from"`
		} `json:"toolchains"`
	} `json:"enforcement"`
}

func toolchainsOf(t *testing.T, raw []byte) toolchainReport {
	t.Helper()
	var r toolchainReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, raw)
	}
	return r
}

// standInHome makes a "home" outside the workdir, owned by u, holding a
// virtualenv whose bin/tjpython is an absolute symlink into a pyenv-like
// base prefix, a Node prefix that holds .ssh, and ~/.ssh/id_rsa. Every
// program is a copy of the helper.
func standInHome(t *testing.T, u *user) string {
	t.Helper()
	h := u.dir(t)
	base := filepath.Join(h, ".pyenv/versions/3.12.1")
	layoutFiles(t, u, h, map[string]string{
		".pyenv/versions/3.12.1/bin/tjpython3.12":     "helper",
		".pyenv/versions/3.12.1/lib/python3.12/os.py": "",
		"venv/pyvenv.cfg":        "home = " + base + "/bin\nversion = 3.12.1\n",
		"venv/bin/tjpython":      "-> " + base + "/bin/tjpython3.12",
		".ssh/id_rsa":            "secret",
		"bad/bin/tjnode":         "helper",
		"bad/bin/node":           "helper",
		"bad/lib/node_modules/x": "",
		"bad/.ssh/id_ed25519":    "secret",
	})
	return h
}

// --toolchain auto runs the caller's virtualenv (an absolute symlink into
// a pyenv-like base prefix): both are bound, its bin is first in PATH,
// VIRTUAL_ENV is set, the report lists it, and nothing else of the home
// is visible. Without the flag the same command is not found (127).
func TestToolchainAutoVenv(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		h := standInHome(t, u)
		w := u.workdir(t)
		venv, base := filepath.Join(h, "venv"), filepath.Join(h, ".pyenv/versions/3.12.1")
		env := []string{"HOME=" + h, "PATH=" + venv + "/bin:/usr/bin:/bin"}

		for _, argv0 := range []string{"tjpython", venv + "/bin/tjpython"} {
			o := u.jailRun(t, w, run{env: env}, argv0, "self")
			if o.code != 127 {
				t.Errorf("%s without --toolchain: want exit 127 (not found in the jail)\n%s", argv0, o)
			}
		}

		secret := filepath.Join(h, ".ssh/id_rsa")
		o := u.jailRun(t, w, run{args: []string{"--toolchain", "auto"}, env: env}, "tjpython", "env", ";", "read", secret, ";", "ls", h)
		lines := o.ok(t, 3)
		var got []string
		o.value(t, 0, &got)
		path, venvVar := "", ""
		for _, kv := range got {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
			if v, ok := strings.CutPrefix(kv, "VIRTUAL_ENV="); ok {
				venvVar = v
			}
		}
		if !strings.HasPrefix(path, venv+"/bin:") || venvVar != venv {
			t.Errorf("PATH %q VIRTUAL_ENV %q: want %s/bin first and VIRTUAL_ENV=%s\n%s", path, venvVar, venv, venv, o)
		}
		if lines[1] != "errno ENOENT" {
			t.Errorf("%s is visible in the jail: %s\n%s", secret, lines[1], o)
		}
		var names []string
		o.value(t, 2, &names)
		if !reflect.DeepEqual(names, []string{".pyenv", "venv"}) {
			t.Errorf("the home shows %q, want only the toolchains' way in (.pyenv, venv)", names)
		}
		tcs := toolchainsOf(t, o.reportRaw).Enforcement.Toolchains
		if len(tcs) != 1 || tcs[0].Kind != "venv" || tcs[0].From != "auto" ||
			!reflect.DeepEqual(tcs[0].Prefixes, []string{venv, base}) || !reflect.DeepEqual(tcs[0].Bin, []string{venv + "/bin"}) ||
			!reflect.DeepEqual(tcs[0].Env, []string{"VIRTUAL_ENV=" + venv}) {
			t.Errorf("enforcement.toolchains %+v\n%s", tcs, o)
		}

		// By its path: the same toolchain, and it is read-only.
		o = u.jailRun(t, w, run{args: []string{"--toolchain", "auto"}, env: env}, venv+"/bin/tjpython", "write", base+"/lib/python3.12/os.py", "x")
		if l := o.ok(t, 1); l[0] != "errno EROFS" && l[0] != "errno EACCES" {
			t.Errorf("write into the base prefix: %s, want EROFS or EACCES\n%s", l[0], o)
		}
	})
}

// A prefix that holds credentials is refused, found or named: exit 125,
// one line naming the prefix and the entry.
func TestToolchainRefusesCredentials(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		h := standInHome(t, u)
		w := u.workdir(t)
		bad := filepath.Join(h, "bad")
		env := []string{"HOME=" + h, "PATH=" + bad + "/bin:/usr/bin:/bin"}
		for _, flag := range []string{"auto", bad} {
			o := u.jailRun(t, w, run{args: []string{"--toolchain", flag}, env: env}, "tjnode", "self")
			oneLineError(t, o, "toolchain prefix "+bad+" holds "+bad+"/.ssh", "--toolchain PATH")
		}
		// The home itself is never a toolchain.
		o := u.jailRun(t, w, run{args: []string{"--toolchain", h}, env: env}, "tjnode", "self")
		oneLineError(t, o, "is the home directory "+h)
		// Auto with a program of no known layout says what to do.
		o = u.jailRun(t, w, run{args: []string{"--toolchain", "auto"}, env: env}, filepath.Join(h, ".ssh/id_rsa"), "self")
		oneLineError(t, o, "--toolchain")
	})
}

// A served request's toolchains are found in the client's PATH; one naming
// a directory the client cannot read is refused, naming it.
func TestToolchainServed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		h := standInHome(t, u)
		w := u.workdir(t)
		venv := filepath.Join(h, "venv")
		s := u.startServer(t, "")
		line := func(v map[string]any) []byte {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return append(b, '\n')
		}
		r, err := s.try(u, line(map[string]any{"argv": []string{"tjpython", "self"}, "workdir": w, "toolchains": []string{"auto"}, "path": venv + "/bin:/usr/bin"}))
		if err != nil {
			t.Fatalf("%v\n%s\nserver log:\n%s", err, r, s.log())
		}
		r.ok(t, 1)
		tcs := toolchainsOf(t, r.reportRaw).Enforcement.Toolchains
		if len(tcs) != 1 || tcs[0].Kind != "venv" || tcs[0].From != "auto" {
			t.Errorf("served enforcement.toolchains %+v\n%s", tcs, r)
		}

		// A directory the client may not search (mode 000), below which
		// a toolchain is named.
		shut, err := os.MkdirTemp(base, "shut-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(shut, 0o700); os.RemoveAll(shut) })
		if err := os.MkdirAll(filepath.Join(shut, "tc/bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shut, 0); err != nil {
			t.Fatal(err)
		}
		r, err = s.try(u, line(map[string]any{"argv": []string{"true"}, "workdir": w, "toolchains": []string{filepath.Join(shut, "tc")}}))
		if err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		if u.uid == 0 {
			// Root may read anything: its request is not refused for it.
			if r.errMsg != "" {
				t.Errorf("root's request refused: %s", r)
			}
			return
		}
		r.refused(t, shut)
	})
}

// layoutFiles makes files under h ("helper": a copy of the helper, "-> T"
// a symlink, "dir" a directory, else the text), all owned by u.
func layoutFiles(t *testing.T, u *user, h string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		p = filepath.Join(h, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case v == "helper":
			err = copyFile(helperBin, p)
		case v == "dir":
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "-> "):
			err = os.Symlink(strings.TrimPrefix(v, "-> "), p)
		default:
			err = os.WriteFile(p, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, h, u.dirUID, u.dirGID)
}

// --toolchain auto with the real binary on stand-ins of a pyenv shim
// (version from the workdir's .python-version), an nvm Node (npm a
// symlink into lib), a rustup proxy (toolchain from the workdir's
// rust-toolchain.toml; ~/.cargo/credentials.toml stays hidden) and a Go
// root with a module cache (a read-only file proxy).
func TestToolchainAutoLayouts(t *testing.T) {
	const triple = "x86_64-unknown-linux-gnu"
	eachUser(t, func(t *testing.T, u *user) {
		for _, c := range []struct {
			name     string
			files    map[string]string // under the home
			work     map[string]string // under the workdir
			path     string            // PATH, relative to the home
			argv0    string
			kind     string
			bin      string // first in PATH, relative to the home
			env      string // a variable set, "" for none; HOME stands for the home
			hidden   string // a file of the home the command must not see
			readable string // a file of a prefix the command reads, not writes
		}{
			{name: "pyenv shim", files: map[string]string{
				".pyenv/shims/tjpy": "helper", ".pyenv/versions/3.11.9/bin/tjpy": "helper",
				".pyenv/versions/3.11.9/lib/python3.11": "dir", ".pyenv/versions/3.12.1/bin/tjpy": "helper", ".pyenv/versions/3.12.1/lib/python3.12": "dir",
				".pyenv/version": "3.12.1\n"},
				work: map[string]string{".python-version": "3.11\n"}, path: ".pyenv/shims", argv0: "tjpy", kind: "pyenv", bin: ".pyenv/versions/3.11.9/bin"},
			{name: "nvm", files: map[string]string{
				".nvm/versions/node/v20.11.0/bin/node": "helper", ".nvm/versions/node/v20.11.0/bin/tjnpm": "-> ../lib/node_modules/npm/bin/npm-cli.js",
				".nvm/versions/node/v20.11.0/lib/node_modules/npm/bin/npm-cli.js": "helper", ".nvm/alias/default": "20\n"},
				path: ".nvm/versions/node/v20.11.0/bin", argv0: "tjnpm", kind: "node", bin: ".nvm/versions/node/v20.11.0/bin", hidden: ".nvm/alias/default"},
			{name: "rustup", files: map[string]string{
				".cargo/bin/rustup": "helper", ".cargo/bin/tjcargo": "-> rustup", ".cargo/credentials.toml": "[registry]\ntoken = \"secret\"\n",
				".rustup/settings.toml":                                "default_host_triple = \"" + triple + "\"\ndefault_toolchain = \"stable-" + triple + "\"\n",
				".rustup/toolchains/stable-" + triple + "/bin/tjcargo": "helper", ".rustup/toolchains/1.80.0-" + triple + "/bin/tjcargo": "helper"},
				work: map[string]string{"rust-toolchain.toml": "[toolchain]\nchannel = \"1.80.0\"\n"}, path: ".cargo/bin", argv0: "tjcargo", kind: "rustup",
				bin: ".rustup/toolchains/1.80.0-" + triple + "/bin", env: "RUSTUP_TOOLCHAIN=1.80.0-" + triple, hidden: ".cargo/credentials.toml"},
			{name: "go", files: map[string]string{
				"sdk/go1.23.0/bin/go": "helper", "sdk/go1.23.0/src/runtime": "dir", "go/pkg/mod/cache/download/example.com/m/@v/list": "v1.0.0\n",
				"go/pkg/mod/example.com/m@v1.0.0/m.go": "package m\n"},
				path: "sdk/go1.23.0/bin", argv0: "go", kind: "go", bin: "sdk/go1.23.0/bin",
				env: "GOPROXY=file://HOME/go/pkg/mod/cache/download,https://proxy.golang.org,direct", hidden: "go/pkg/mod/example.com/m@v1.0.0/m.go",
				readable: "go/pkg/mod/cache/download/example.com/m/@v/list"},
		} {
			t.Run(c.name, func(t *testing.T) {
				h, w := u.dir(t), u.workdir(t)
				layoutFiles(t, u, h, c.files)
				layoutFiles(t, u, w, c.work)
				env := []string{"HOME=" + h, "PATH=" + filepath.Join(h, c.path) + ":/usr/bin:/bin"}
				if o := u.jailRun(t, w, run{env: env}, c.argv0, "self"); o.code != 127 {
					t.Errorf("without --toolchain: want 127\n%s", o)
				}
				actions := []string{"env"}
				if c.hidden != "" {
					actions = append(actions, ";", "read", filepath.Join(h, c.hidden))
				}
				if c.readable != "" {
					actions = append(actions, ";", "read", filepath.Join(h, c.readable), ";", "write", filepath.Join(h, c.readable), "x")
				}
				o := u.jailRun(t, w, run{args: []string{"--toolchain", "auto"}, env: env}, append([]string{c.argv0}, actions...)...)
				lines := o.ok(t, strings.Count(strings.Join(actions, " "), ";")+1)
				var got []string
				o.value(t, 0, &got)
				bin := filepath.Join(h, c.bin)
				wantEnv := strings.ReplaceAll(c.env, "HOME", h)
				var path string
				hasEnv := wantEnv == ""
				for _, kv := range got {
					if v, ok := strings.CutPrefix(kv, "PATH="); ok {
						path = v
					}
					hasEnv = hasEnv || kv == wantEnv
				}
				if !strings.HasPrefix(path, bin+":") || !hasEnv {
					t.Errorf("PATH %q, want %s first; env has %q: %v\n%s", path, bin, wantEnv, hasEnv, o)
				}
				if c.hidden != "" && lines[1] != "errno ENOENT" {
					t.Errorf("%s is visible: %s\n%s", c.hidden, lines[1], o)
				}
				if c.readable != "" {
					if n := len(lines); failed(lines[n-2]) || (lines[n-1] != "errno EROFS" && lines[n-1] != "errno EACCES") {
						t.Errorf("%s: read %s, write %s: want readable, not writable\n%s", c.readable, lines[n-2], lines[n-1], o)
					}
				}
				tcs := toolchainsOf(t, o.reportRaw).Enforcement.Toolchains
				if len(tcs) != 1 || tcs[0].Kind != c.kind || tcs[0].From != "auto" || len(tcs[0].Bin) == 0 || tcs[0].Bin[0] != bin {
					t.Errorf("enforcement.toolchains %+v, want one %s with %s first\n%s", tcs, c.kind, bin, o)
				}
			})
		}
	})
}

// A virtualenv inside the workdir, over a base prefix outside it: the
// workdir shows the venv, so only the base is bound; the venv's bin is
// first in PATH and VIRTUAL_ENV is set all the same.
func TestToolchainAutoWorkdirVenv(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		h := standInHome(t, u)
		w := u.workdir(t)
		base := filepath.Join(h, ".pyenv/versions/3.12.1")
		layoutFiles(t, u, w, map[string]string{
			".venv/pyvenv.cfg":   "home = " + base + "/bin\n",
			".venv/bin/tjpython": "-> " + base + "/bin/tjpython3.12",
		})
		venv := filepath.Join(w, ".venv")
		env := []string{"HOME=" + h, "PATH=" + venv + "/bin:/usr/bin:/bin"}
		o := u.jailRun(t, w, run{args: []string{"--toolchain", "auto"}, env: env}, "tjpython", "env")
		o.ok(t, 1)
		var got []string
		o.value(t, 0, &got)
		want := map[string]bool{"VIRTUAL_ENV=" + venv: false}
		path := ""
		for _, kv := range got {
			if _, ok := want[kv]; ok {
				want[kv] = true
			}
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		if !want["VIRTUAL_ENV="+venv] || !strings.HasPrefix(path, venv+"/bin:") {
			t.Errorf("env %q: want VIRTUAL_ENV=%s and %s/bin first in PATH", got, venv, venv)
		}
		tcs := toolchainsOf(t, o.reportRaw).Enforcement.Toolchains
		if len(tcs) != 1 || tcs[0].Kind != "venv" || !reflect.DeepEqual(tcs[0].Prefixes, []string{base}) {
			t.Errorf("enforcement.toolchains %+v, want the venv with only its base bound\n%s", tcs, o)
		}
	})
}
