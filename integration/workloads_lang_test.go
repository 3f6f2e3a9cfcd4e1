package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The python and go profiles run the caller's own toolchain, found by
// toolchains = ["auto"] from the caller's PATH: pytest in a virtualenv that
// lies outside the workdir, and go build of a module whose dependency comes
// from the caller's module cache, offline. The VM guests have neither
// Python nor Go: these skip there and say so.

// python: pytest runs in a virtualenv outside the workdir, activated the
// usual way (its bin first in PATH). The venv holds a module nothing else
// has, as `pip install` of a pure module would leave it; pytest itself is
// Debian's (python3-pytest), seen through --system-site-packages.
func TestWorkloadPython(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		py := hostTool(t, "/usr/bin/python3")
		out, err := exec.Command(py, "-c", "import pytest, venv, sys; print('python%d.%d' % sys.version_info[:2])").Output()
		if err != nil {
			t.Skipf("%s cannot import pytest and venv (Debian's python3-pytest and python3-venv): %v", py, err)
		}
		pyver := strings.TrimSpace(string(out))
		venv := filepath.Join(u.dir(t), "venv")
		if out, err := exec.Command(py, "-m", "venv", "--without-pip", "--system-site-packages", venv).CombinedOutput(); err != nil {
			t.Fatalf("python3 -m venv: %v\n%s", err, out)
		}
		site := filepath.Join(venv, "lib", pyver, "site-packages")
		if err := os.WriteFile(filepath.Join(site, "tjcalc.py"), []byte("def scale(a, b):\n    return a * b + 2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		chownTree(t, venv, u.dirUID, u.dirGID)

		w := u.workdir(t)
		writeOwned(t, u, filepath.Join(w, "test_calc.py"), `import os, sys
import tjcalc

def test_scale():
    assert tjcalc.scale(8, 5) == 42

def test_venv():
    assert sys.prefix == `+"\""+venv+"\""+`
    assert os.environ["VIRTUAL_ENV"] == sys.prefix
`)
		env := []string{"PATH=" + venv + "/bin:/usr/bin:/bin"}
		pytest := []string{"python", "-m", "pytest", "-q", "-p", "no:cacheprovider"}

		// The default profile shows no venv: the module is missing (or
		// python is, where the system has no "python").
		if o := u.jailRun(t, w, run{env: env}, pytest...); o.code == 0 {
			t.Errorf("pytest passed without the venv\n%s", o)
		}
		o := u.jailRun(t, w, run{args: []string{"--profile", "python"}, env: env}, pytest...)
		workloadOK(t, o)
		workloadFigures(t, "pytest in a virtualenv outside the workdir", o)
		if !regexp.MustCompile(`(?m)^2 passed`).MatchString(o.stdout) {
			t.Errorf("pytest did not report 2 passed\n%s", o)
		}
		tcs := toolchainsOf(t, o.reportRaw).Enforcement.Toolchains
		if len(tcs) != 1 || tcs[0].Kind != "venv" || tcs[0].From != "auto" || !reflect.DeepEqual(tcs[0].Prefixes, []string{venv}) {
			t.Errorf("enforcement.toolchains %+v: want the venv alone (its base, /usr, is shown already)\n%s", tcs, o)
		}
		// Read-only: the command cannot change the venv for the next run.
		o = u.jailRun(t, w, run{args: []string{"--profile", "python"}, env: env}, "python", "-c",
			"import tjcalc\ntry:\n    open(tjcalc.__file__, 'a').write('x')\nexcept OSError as e:\n    print(e.errno)")
		workloadOK(t, o)
		if o.stdout != "30\n" && o.stdout != "13\n" {
			t.Errorf("appending to the venv's module: %q, want errno 30 (EROFS) or 13 (EACCES)\n%s", o.stdout, o)
		}
	})
}

// go: go build of a module with one dependency (golang.org/x/sys, at the
// version this project requires), which the caller's module cache holds:
// the go profile finds GOROOT and shows the cache read-only as a file
// proxy; the network stays off (GOPROXY=off behind it), and the cache is
// not written.
func TestWorkloadGo(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("go is not installed on this machine")
		}
		ver, sum, goLine := projectRequire(t, "golang.org/x/sys")
		out, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
		if err != nil {
			t.Skipf("go env GOMODCACHE: %v", err)
		}
		hostDL := filepath.Join(strings.TrimSpace(string(out)), "cache/download/golang.org/x/sys/@v")
		// The caller's module cache: the one module, copied from the host's.
		mc := filepath.Join(u.dir(t), "modcache")
		dl := filepath.Join(mc, "cache/download/golang.org/x/sys/@v")
		if err := os.MkdirAll(dl, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".info", ".mod", ".zip", ".ziphash"} {
			if err := copyFile(filepath.Join(hostDL, ver+ext), filepath.Join(dl, ver+ext)); err != nil {
				t.Skipf("golang.org/x/sys %s is not in the host's module cache (go mod download): %v", ver, err)
			}
		}
		os.WriteFile(filepath.Join(dl, "list"), []byte(ver+"\n"), 0o644)
		chownTree(t, mc, u.dirUID, u.dirGID)
		before := treeNames(t, mc)

		w := u.workdir(t)
		writeOwned(t, u, filepath.Join(w, "go.mod"), "module example.com/tjgo\n\n"+goLine+"\n\nrequire golang.org/x/sys "+ver+"\n")
		writeOwned(t, u, filepath.Join(w, "go.sum"), sum)
		writeOwned(t, u, filepath.Join(w, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"golang.org/x/sys/cpu\"\n)\n\nfunc main() { fmt.Println(\"built\", cpu.CacheLinePad{} == cpu.CacheLinePad{}) }\n")
		env := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOMODCACHE=" + mc, "GOPROXY=off", "GOFLAGS=", "GOWORK=off"}
		// A build from a cold cache (the jail's HOME is new) is tens of
		// seconds of CPU under the profile's one CPU: beside a CPU hog and
		// the suite's other tests it took over the default minute.
		o := u.jailRun(t, w, run{args: []string{"--profile", "go"}, env: env, timeout: goBuildTimeout}, "go", "build", "-o", "tjgo", ".")
		workloadOK(t, o)
		workloadFigures(t, "go build of a module with a dependency from the module cache", o)
		var left struct {
			Killed *int `json:"killed_leftover_processes"`
		}
		if json.Unmarshal(o.reportRaw, &left); left.Killed == nil || *left.Killed != 0 {
			t.Errorf("killed_leftover_processes %v: the go command left a process behind (its telemetry sidecar?)\n%s", left.Killed, o)
		}
		tcs := toolchainsOf(t, o.reportRaw).Enforcement.Toolchains
		wantEnv := "GOPROXY=file://" + filepath.Join(mc, "cache/download") + ",off"
		if len(tcs) != 1 || tcs[0].Kind != "go" || !slices.Contains(tcs[0].Env, wantEnv) {
			t.Errorf("enforcement.toolchains %+v: want the Go root with %s\n%s", tcs, wantEnv, o)
		}
		o = u.jailRun(t, w, run{}, "./tjgo")
		workloadOK(t, o)
		if o.stdout != "built true\n" {
			t.Errorf("the built program printed %q\n%s", o.stdout, o)
		}
		if after := treeNames(t, mc); !reflect.DeepEqual(before, after) {
			t.Errorf("the caller's module cache changed: %q, was %q", after, before)
		}
	})
}

// projectRequire is this project's required version of module mod, its
// go.sum lines and the project's go line (a module needs at least its
// dependency's).
func projectRequire(t *testing.T, mod string) (ver, sum, goLine string) {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Skipf("this project's go.mod: %v", err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + `\s+(v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Skipf("go.mod requires no %s", mod)
	}
	ver = string(m[1])
	goLine = string(regexp.MustCompile(`(?m)^go \S+`).Find(b))
	f, err := os.Open("../go.sum")
	if err != nil {
		t.Skipf("this project's go.sum: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), mod+" "+ver+" ") || strings.HasPrefix(s.Text(), mod+" "+ver+"/go.mod ") {
			sum += s.Text() + "\n"
		}
	}
	return ver, sum, goLine
}

// treeNames lists every path below root.
func treeNames(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// goBuildTimeout bounds a jailed Go build or test from a cold build
// cache: a bound against hangs, not a measure of speed.
const goBuildTimeout = 5 * time.Minute

// The README's profile example works as written: its tools.toml, word for
// word, and its command line, on a small Go module with a test. One user:
// this checks the README, the go profile's own test covers both users.
func TestReadmeProfileExample(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed on this machine")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```toml\n(# tools.toml\n.*?)```").FindSubmatch(readme)
	line := regexp.MustCompile(`(?m)^\$ tooljail (run --profile \./tools\.toml -- .*)$`).FindSubmatch(readme)
	if block == nil || line == nil {
		t.Fatal("README.md has no tools.toml example and `$ tooljail run --profile ./tools.toml -- ...` line")
	}
	argv := strings.Fields(string(line[1]))
	u := users[0]
	w := u.workdir(t)
	writeOwned(t, u, filepath.Join(w, "tools.toml"), string(block[1]))
	writeOwned(t, u, filepath.Join(w, "go.mod"), "module example.com/readme\n\ngo 1.22\n")
	writeOwned(t, u, filepath.Join(w, "add.go"), "package readme\n\nfunc Add(a, b int) int { return a + b }\n")
	writeOwned(t, u, filepath.Join(w, "add_test.go"), "package readme\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n")
	rep := filepath.Join(u.dir(t), "report.json")
	args := []string{"run", "--report", rep}
	for _, d := range u.degraded {
		args = append(args, "--allow-degraded", d)
	}
	args = append(args, argv[1:]...)
	o := u.exec(t, run{args: args, dir: w, env: []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOFLAGS=", "GOWORK=off"}, timeout: goBuildTimeout})
	if o.code != 0 || !strings.Contains(o.stdout, "ok  \texample.com/readme") {
		t.Fatalf("the README's example: want exit 0 and the test passed\n%s", o)
	}
}
