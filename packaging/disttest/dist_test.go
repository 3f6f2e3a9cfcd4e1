package disttest

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// checkVersion runs `bin version` and wants this checkout's VERSION and
// commit, and the target.
func checkVersion(t *testing.T, bin, goarch string) {
	t.Helper()
	out, errOut, code := runOut(t, "/", nil, bin, "version")
	if code != 0 {
		t.Fatalf("%s version: exit %d: %s", bin, code, errOut)
	}
	prefix := "tooljail " + version(t) + " (commit " + headCommit(t)
	if !strings.HasPrefix(out, prefix) || !strings.HasSuffix(out, ", linux/"+goarch+")\n") || !strings.Contains(out, ", libseccomp 2.") {
		t.Errorf("%s version printed %q, want %q... libseccomp 2.x, linux/%s", bin, out, prefix, goarch)
	}
}

// asUser runs bin as root or, through setpriv, as uid 65534.
func asUser(uid int, bin string, args ...string) (string, []string) {
	if uid == 0 {
		return bin, args
	}
	return "setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)
}

// jailedIDs runs `bin run -- id -u` as root and as uid 65534, each in a
// workdir of its own, and wants the jail's user, 1000. A cgroup layer this
// user cannot have here (cgroup v1 has no delegation to uid 65534) is
// allowed degraded, as `tooljail check --json` reports it; every other layer
// must be enforced.
func jailedIDs(t *testing.T, bin string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("runs as root and as uid 65534 (setpriv): run as root")
	}
	for _, uid := range []int{0, 65534} {
		home := sharedTempDir(t)
		work := filepath.Join(home, "project")
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{home, work} {
			if err := os.Chown(d, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		env := []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		name, args := asUser(uid, bin, "check", "--json")
		out, errOut, code := runOut(t, work, env, name, args...)
		var check struct {
			Layers []struct {
				Name     string
				Enforced bool
			}
		}
		if err := json.Unmarshal([]byte(out), &check); err != nil || len(check.Layers) == 0 {
			t.Fatalf("uid %d: %s check --json: exit %d, %v: %s%s", uid, bin, code, err, out, errOut)
		}
		runArgs := []string{"run"}
		for _, l := range check.Layers {
			if strings.HasPrefix(l.Name, "cgroup") && !l.Enforced {
				runArgs = append(runArgs, "--allow-degraded", "cgroup")
				break
			}
		}
		name, args = asUser(uid, bin, append(runArgs, "--", "id", "-u")...)
		out, errOut, code = runOut(t, work, env, name, args...)
		if code != 0 || out != "1000\n" {
			t.Errorf("uid %d: %s %q: exit %d, stdout %q, stderr %q; want 1000", uid, bin, args, code, out, errOut)
		}
	}
}

// checkRuns runs `bin check` and wants its table of layers and exit 0 (all
// enforced) or 1 (the default profile cannot be enforced here).
func checkRuns(t *testing.T, bin string) string {
	t.Helper()
	out, errOut, code := runOut(t, "/", nil, bin, "check")
	if (code != 0 && code != 1) || !strings.Contains(out, "user namespaces") || !strings.Contains(out, "seccomp") {
		t.Errorf("%s check: exit %d: %s%s", bin, code, out, errOut)
	}
	return out
}

// roff checks a man page is roff with a title line, and, when groff is
// installed, that groff renders it without a warning.
func roff(t *testing.T, page string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\.TH `).Match(b) {
		t.Errorf("%s: no .TH line: not a man page", page)
	}
	if _, err := exec.LookPath("groff"); err != nil {
		return
	}
	_, errOut, code := runOut(t, "/", nil, "groff", "-man", "-Tutf8", "-ww", "-z", page)
	if code != 0 || errOut != "" {
		t.Errorf("groff -man %s: exit %d: %s", page, code, errOut)
	}
}

func TestTarballAmd64(t *testing.T) {
	dist := distDir(t)
	top := "tooljail-" + version(t) + "-linux-amd64"
	dir := sharedTempDir(t)
	hs := untar(t, filepath.Join(dist, top+".tar.gz"), dir)
	for _, h := range hs {
		if !strings.HasPrefix(h.Name, top+"/") {
			t.Errorf("entry %q is not under %s/", h.Name, top)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("entry %q: owner %d:%d (%q:%q), want 0:0 with no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
	}
	root := filepath.Join(dir, top)
	for _, f := range []string{"bin/tooljail", "README.md", "LICENSE", "examples/tools.toml"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the tarball has no %s: %v", f, err)
		}
	}
	bin := filepath.Join(root, "bin", "tooljail")
	checkVersion(t, bin, "amd64")
	checkRuns(t, bin)

	pages := manPages(t)
	for _, p := range pages {
		roff(t, filepath.Join(root, "share", "man", "man"+p[len(p)-1:], p))
	}
	bash := filepath.Join(root, "share", "bash-completion", "completions", "tooljail")
	for _, f := range []string{bash, filepath.Join(root, "share", "zsh", "site-functions", "_tooljail"), filepath.Join(root, "share", "fish", "vendor_completions.d", "tooljail.fish")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the tarball has no completion: %v", err)
		}
	}
	out, errOut, code := runOut(t, "/", nil, "bash", "-c", `source "$1" && complete -p tooljail`, "bash", bash)
	if code != 0 || !strings.Contains(out, "tooljail") {
		t.Errorf("sourcing the bash completion: exit %d: %s%s", code, out, errOut)
	}
	jailedIDs(t, bin)
}

func TestTarballArm64(t *testing.T) {
	dist := distDir(t)
	top := "tooljail-" + version(t) + "-linux-arm64"
	dir := sharedTempDir(t)
	untar(t, filepath.Join(dist, top+".tar.gz"), dir)
	bin := filepath.Join(dir, top, "bin", "tooljail")
	isAarch64(t, bin)
	// It runs here under qemu-user (binfmt_misc), which has no seccomp and
	// cannot make namespaces: version and check work, and run refuses,
	// naming what it cannot enforce, with exit 125.
	checkVersion(t, bin, "arm64")
	if out := checkRuns(t, bin); !strings.Contains(out, "NOT ENFORCED") {
		t.Logf("check under qemu-user enforces everything?\n%s", out)
	}
	work := sharedTempDir(t)
	out, errOut, code := runOut(t, work, nil, bin, "run", "--", "/bin/true")
	if code != 125 || !regexp.MustCompile(`cannot enforce on this host: (landlock|seccomp|user namespaces)`).MatchString(errOut) {
		t.Errorf("arm64 run under qemu-user: exit %d, stdout %q, stderr %q; want 125 naming the layer it cannot enforce", code, out, errOut)
	}
}

// isAarch64 wants bin to be a static aarch64 ELF executable.
func isAarch64(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("%s: machine %v, want EM_AARCH64", bin, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", bin)
		}
	}
}

// debList is `dpkg-deb -c`'s file paths, sorted.
func debList(t *testing.T, deb string) []string {
	t.Helper()
	out, errOut, code := runOut(t, "/", nil, "dpkg-deb", "-c", deb)
	if code != 0 {
		t.Fatalf("dpkg-deb -c %s: exit %d: %s", deb, code, errOut)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c line %q", line)
		}
		if f[1] != "root/root" {
			t.Errorf("%s: %s is owned by %s, want root/root", deb, f[len(f)-1], f[1])
		}
		paths = append(paths, f[len(f)-1])
	}
	sort.Strings(paths)
	return paths
}

// wantDebPaths checks the files every .deb installs.
func wantDebPaths(t *testing.T, deb string, paths []string) {
	t.Helper()
	want := []string{"./usr/bin/tooljail", "./usr/share/doc/tooljail/copyright"}
	pages := manPages(t)
	for _, p := range pages {
		want = append(want, "./usr/share/man/man"+p[len(p)-1:]+"/"+p+".gz")
	}
	want = append(want, "./usr/share/bash-completion/completions/tooljail", "./usr/share/zsh/vendor-completions/_tooljail", "./usr/share/fish/vendor_completions.d/tooljail.fish")
	have := map[string]bool{}
	for _, p := range paths {
		have[p] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("%s does not install %s", deb, w)
		}
	}
	fields, errOut, code := runOut(t, "/", nil, "dpkg-deb", "-f", deb, "Package", "Version", "Depends", "Pre-Depends")
	if code != 0 || !strings.Contains(fields, "Package: tooljail\n") || !strings.Contains(fields, "Version: "+version(t)+"\n") || strings.Contains(fields, "Depends") {
		t.Errorf("dpkg-deb -f %s: exit %d: %s%s; want tooljail %s with no dependencies", deb, code, fields, errOut, version(t))
	}
}

func TestDebAmd64(t *testing.T) {
	dist := distDir(t)
	deb := filepath.Join(dist, "tooljail_"+version(t)+"_amd64.deb")
	wantDebPaths(t, deb, debList(t, deb))
	if os.Getuid() != 0 {
		t.Skip("installs with dpkg --root: run as root")
	}
	// A throwaway root with its own dpkg database: the host's is untouched.
	root := sharedTempDir(t)
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dpkg := func(args ...string) string {
		out, errOut, code := runOut(t, "/", nil, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless"}, args...)...)
		if code != 0 {
			t.Fatalf("dpkg %q: exit %d: %s%s", args, code, out, errOut)
		}
		return out
	}
	dpkg("-i", deb)
	dpkg("--verify", "tooljail") // every installed file as the md5sums say
	if status := dpkg("-s", "tooljail"); !strings.Contains(status, "Status: install ok installed") {
		t.Errorf("dpkg -s tooljail:\n%s", status)
	}
	bin := filepath.Join(root, "usr", "bin", "tooljail")
	checkVersion(t, bin, "amd64")
	if _, errOut, code := runOut(t, "/", nil, bin, "check"); code != 0 {
		t.Errorf("the installed tooljail check: exit %d (every layer should be enforced here as root): %s", code, errOut)
	}
	jailedIDs(t, bin)
	dpkg("-r", "tooljail")
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("dpkg -r left %s: %v", bin, err)
	}
}

func TestDebArm64(t *testing.T) {
	dist := distDir(t)
	deb := filepath.Join(dist, "tooljail_"+version(t)+"_arm64.deb")
	wantDebPaths(t, deb, debList(t, deb))
	if arch, _, _ := runOut(t, "/", nil, "dpkg-deb", "-f", deb, "Architecture"); arch != "arm64\n" {
		t.Errorf("%s: Architecture %q, want arm64", deb, arch)
	}
	dir := sharedTempDir(t)
	if out, errOut, code := runOut(t, "/", nil, "dpkg-deb", "-x", deb, dir); code != 0 {
		t.Fatalf("dpkg-deb -x: exit %d: %s%s", code, out, errOut)
	}
	bin := filepath.Join(dir, "usr", "bin", "tooljail")
	isAarch64(t, bin)
	checkVersion(t, bin, "arm64")
}

func TestSHA256SUMS(t *testing.T) {
	dist := distDir(t)
	out, errOut, code := runOut(t, dist, nil, "sha256sum", "--strict", "-c", "SHA256SUMS")
	if code != 0 {
		t.Fatalf("sha256sum -c SHA256SUMS: exit %d: %s%s", code, out, errOut)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, glob := range []string{"*.tar.gz", "*.deb", "*.whl", "*.tgz"} {
		arts, _ := filepath.Glob(filepath.Join(dist, glob))
		for _, a := range arts {
			if !strings.Contains(string(sums), "  "+filepath.Base(a)+"\n") {
				t.Errorf("SHA256SUMS does not list %s", filepath.Base(a))
			}
		}
	}
	for _, want := range []string{"tooljail-" + version(t) + "-linux-amd64.tar.gz", "tooljail-" + version(t) + "-linux-arm64.tar.gz", "tooljail_" + version(t) + "_amd64.deb", "tooljail_" + version(t) + "_arm64.deb"} {
		if !strings.Contains(string(sums), "  "+want+"\n") {
			t.Errorf("SHA256SUMS does not list %s", want)
		}
	}
}
