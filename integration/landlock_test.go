package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock, seen from inside the jail: read-only paths stay read-only even
// for link and rename into the workdir, masks cannot be replaced, signals
// cannot leave the domain (ABI 6+), and the report says what the kernel
// enforced. A run with [landlock] enabled = false is the positive control
// for the checks only Landlock can make.

// failedWith reports whether line is an errno among names.
func failedWith(line string, names ...string) bool {
	for _, n := range names {
		if line == "errno "+n {
			return true
		}
	}
	return false
}

// noLandlockProfile writes a profile that turns Landlock off, for the
// positive controls.
func noLandlockProfile(t *testing.T, u *user) string {
	t.Helper()
	p := filepath.Join(u.dir(t), "nolandlock.toml")
	if err := os.WriteFile(p, []byte("extends = \"default\"\n[landlock]\nenabled = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// landlockABI is the ABI `tooljail check --json` reports for u ("ABI N"),
// 0 when Landlock is not enforced.
func landlockABI(t *testing.T, u *user) int {
	t.Helper()
	cmd := exec.Command(tooljailBin, "check", "--json")
	cmd.Dir = base
	cmd.Env = u.environ(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	out, _ := cmd.Output()
	var c struct {
		Layers []struct {
			Name     string `json:"name"`
			Enforced bool   `json:"enforced"`
			Detail   string `json:"detail"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("tooljail check --json: %v: %s", err, out)
	}
	for _, l := range c.Layers {
		if l.Name == "landlock" {
			if !l.Enforced {
				return 0
			}
			abi, err := strconv.Atoi(strings.TrimPrefix(l.Detail, "ABI "))
			if err != nil {
				t.Fatalf("tooljail check: landlock detail %q is not \"ABI N\"", l.Detail)
			}
			return abi
		}
	}
	t.Fatalf("tooljail check --json has no landlock layer: %s", out)
	return 0
}

// kernelLandlockABI asks the kernel directly.
func kernelLandlockABI() int {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(nil)), 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(r)
}

// requireLandlock skips unless Landlock is enforced for u, and returns its ABI.
func requireLandlock(t *testing.T, u *user) int {
	t.Helper()
	abi := landlockABI(t, u)
	if abi == 0 {
		t.Skipf("Landlock is not enforced here for %s (tooljail check)", u.name)
	}
	return abi
}

// Writing, truncating, hard-linking and renaming from a --ro path into the
// workdir all fail, and the host file is untouched; reading it and writing
// the workdir work (controls). Writing /proc/self/comm, which the mounts
// allow and only Landlock denies, fails; with Landlock off it works.
func TestLandlockReadOnlyPaths(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireLandlock(t, u)
		w := u.sysWorkdir(t)
		ro := u.dir(t)
		// Readable by others: a root-started jail runs as another user.
		os.Chmod(ro, 0o755)
		f := filepath.Join(ro, "f")
		if err := os.WriteFile(f, []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(f, u.uid, u.gid)
		calls := []string{
			"read:" + f,                       // 0 control
			"write:" + filepath.Join(w, "ok"), // 1 control
			"write:" + f,                      // 2
			"truncate:" + f,                   // 3
			"link:" + f + ":" + filepath.Join(w, "l"),                        // 4
			"rename:" + f + ":" + filepath.Join(w, "r"),                      // 5
			"write:" + filepath.Join(ro, "new"),                              // 6
			"unlink:" + f,                                                    // 7
			"write:/proc/self/comm",                                          // 8 Landlock only
			"link:" + filepath.Join(w, "ok") + ":" + filepath.Join(w, "ok2"), // 9 control: refer within the workdir
		}
		o, r := u.sys(t, w, []string{"--ro", ro}, calls...)
		l := o.lines()
		if o.code != 0 || r.Status != "exited" || len(l) != len(calls) {
			t.Fatalf("want exit 0 and %d lines\n%s", len(calls), o)
		}
		if l[0] != `data "original"` || l[1] != "ok" || l[9] != "ok" {
			t.Errorf("controls: read ro %q, write workdir %q, link within workdir %q; want data \"original\", ok, ok\n%s", l[0], l[1], l[9], o)
		}
		for i := 2; i <= 7; i++ {
			if !failedWith(l[i], "EROFS", "EACCES", "EPERM", "EXDEV") {
				t.Errorf("%s: %q, want it to fail (EROFS, EACCES, EPERM or EXDEV)", calls[i], l[i])
			}
		}
		if l[8] != "errno EACCES" {
			t.Errorf("write /proc/self/comm: %q, want errno EACCES from Landlock", l[8])
		}
		if b, err := os.ReadFile(f); err != nil || string(b) != "original" {
			t.Errorf("host file after the run: %q %v, want \"original\"", b, err)
		}
		for _, n := range []string{filepath.Join(w, "l"), filepath.Join(w, "r"), filepath.Join(ro, "new")} {
			if _, err := os.Lstat(n); err == nil {
				t.Errorf("%s exists after the run", n)
			}
		}
		// Positive control: without Landlock the mounts alone allow it.
		o, _ = u.sys(t, w, []string{"--profile", noLandlockProfile(t, u)}, "write:/proc/self/comm")
		if o.code != 0 || o.stdout != "ok\n" {
			t.Errorf("write /proc/self/comm without Landlock: want ok\n%s", o)
		}
	})
}

// A file masked inside the workdir reads as empty, and can be neither
// written, replaced by a rename, nor removed; its sibling is untouched.
func TestLandlockMaskedFile(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireLandlock(t, u)
		w := u.sysWorkdir(t)
		secret, other := filepath.Join(w, "secret"), filepath.Join(w, "other")
		for p, c := range map[string]string{secret: "hidden-content", other: "other-content"} {
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chown(p, u.dirUID, u.dirGID) // the command's own: link(2) needs that (protected_hardlinks)
		}
		calls := []string{
			"read:" + other,                       // 0 control
			"read:" + secret,                      // 1
			"write:" + secret,                     // 2
			"truncate:" + secret,                  // 3
			"rename:" + other + ":" + secret,      // 4
			"unlink:" + secret,                    // 5
			"link:" + other + ":" + secret + ".l", // 6 control: the directory is writable
			"read:" + secret,                      // 7
		}
		o, r := u.sys(t, w, []string{"--mask", secret}, calls...)
		l := o.lines()
		if o.code != 0 || r.Status != "exited" || len(l) != len(calls) {
			t.Fatalf("want exit 0 and %d lines\n%s", len(calls), o)
		}
		if l[0] != `data "other-content"` || l[6] != "ok" {
			t.Errorf("controls: read sibling %q, link in the workdir %q\n%s", l[0], l[6], o)
		}
		if l[1] != `data ""` || l[7] != `data ""` {
			t.Errorf("masked file reads %q then %q, want empty both times", l[1], l[7])
		}
		for i := 2; i <= 5; i++ {
			if !strings.HasPrefix(l[i], "errno ") {
				t.Errorf("%s: %q, want it to fail", calls[i], l[i])
			}
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != "hidden-content" {
			t.Errorf("host file after the run: %q %v", b, err)
		}
		if b, err := os.ReadFile(other); err != nil || string(b) != "other-content" {
			t.Errorf("sibling after the run: %q %v (the rename over the mask must fail)", b, err)
		}
	})
}

// landlockFSRights are the filesystem rights each ABI adds.
var landlockFSRights = []struct {
	abi    int
	rights []string
}{
	{1, []string{"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym"}},
	{2, []string{"refer"}},
	{3, []string{"truncate"}},
	{5, []string{"ioctl_dev"}},
	{9, []string{"resolve_unix"}},
}

// On ABI 6+ the command cannot signal the jail's init (same uid, outside
// the Landlock domain); it can signal itself. With Landlock off the same
// signal is allowed (positive control). The report's landlock_abi, rights
// and scopes are what this kernel has.
func TestLandlockSignalScopeAndReport(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		abi := requireLandlock(t, u)
		if k := kernelLandlockABI(); abi != k && !(k >= 6 && abi == 5) {
			t.Errorf("tooljail check says Landlock ABI %d, the kernel says %d", abi, k)
		}
		w := u.sysWorkdir(t)
		o, r := u.sys(t, w, nil, "kill:self:0", "kill:1:0")
		l := o.lines()
		if o.code != 0 || len(l) != 2 || l[0] != "ok" {
			t.Fatalf("want exit 0, kill(self, 0) ok\n%s", o)
		}
		if r.Enforcement.LandlockABI != abi {
			t.Errorf("enforcement.landlock_abi = %d, tooljail check says %d", r.Enforcement.LandlockABI, abi)
		}
		var want []string
		for _, s := range landlockFSRights {
			if s.abi <= abi {
				want = append(want, s.rights...)
			}
		}
		got := append([]string(nil), r.Enforcement.LandlockRights...)
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("enforcement.landlock_rights = %v, want for ABI %d: %v", r.Enforcement.LandlockRights, abi, want)
		}
		scopes := strings.Join(r.Enforcement.LandlockScopes, ",")
		if abi < 6 {
			if scopes != "" {
				t.Errorf("landlock_scopes %q on ABI %d", scopes, abi)
			}
			t.Skipf("Landlock ABI %d: no signal scoping to test", abi)
		}
		if !strings.Contains(scopes, "signal") || !strings.Contains(scopes, "abstract_unix_socket") {
			t.Errorf("landlock_scopes = %q, want signal and abstract_unix_socket on ABI %d", scopes, abi)
		}
		if l[1] != "errno EPERM" {
			t.Errorf("kill(1, 0) from the command: %q, want errno EPERM (init is outside the domain)", l[1])
		}
		o, _ = u.sys(t, w, []string{"--profile", noLandlockProfile(t, u)}, "kill:1:0")
		if o.code != 0 || o.stdout != "ok\n" {
			t.Errorf("kill(1, 0) without Landlock: want ok (same uid)\n%s", o)
		}
	})
}
