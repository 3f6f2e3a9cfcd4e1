package hostpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// statNoFollowOracle is what loadRules did before plainDirs: open the
// path with RESOLVE_NO_SYMLINKS, one openat2 per path.
func statNoFollowOracle(p string) (ID, bool) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return ID{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ID{}, false
	}
	return idOf(&st), true
}

// plainDirs and addPlainWithParents must find what the kernel's
// RESOLVE_NO_SYMLINKS and ".." find: the lists on this host, and homes
// through symlinks (a component, the last one, a loop), files, missing
// directories, trailing slashes and unclean names.
func TestPlainDirsAsOpenat2(t *testing.T) {
	dirs := plainDirs{}
	for _, p := range append(append([]string{"/"}, SystemDirs...), TopLevelDirs...) {
		want, wantOK := statNoFollowOracle(p)
		got, ok := dirs.lookup(p)
		if ok != wantOK || got != want {
			t.Errorf("%s: lookup %v %v, openat2 %v %v", p, got, ok, want, wantOK)
		}
	}
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"real/a/b", "real/c", "other/x"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "real/file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link": "real", "real/lastlink": "a", "loop": "loop", "real/a/up": "../../other"} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	homes := []string{
		"/root", "/var/www", "/nonexistent", "/usr/sbin", "/bin", "/var/spool/news",
		d + "/real/a/b", d + "/real/c/", d + "/link/a", d + "/real/lastlink", d + "/loop", d + "/loop/x",
		d + "/real/file", d + "/missing/x", d + "/real/a/up", d + "/real/a/up/x",
		d + "/real/../other/x", d + "//real/c", d + "/real/./a",
	}
	for _, h := range homes {
		want := map[ID]string{}
		addWithParents(want, h, false)
		got := map[ID]string{}
		addPlainWithParents(got, plainDirs{}, h)
		if len(got) != len(want) {
			t.Errorf("home %s: %d directories protected, the openat2 walk %d", h, len(got), len(want))
		}
		for id := range want {
			if _, ok := got[id]; !ok {
				t.Errorf("home %s: %s (the openat2 walk's) is not protected", h, want[id])
			}
		}
	}
	// Together, as loadRules adds them: what one home added stops the next one's walk.
	want, got, shared := map[ID]string{}, map[ID]string{}, plainDirs{}
	for _, h := range homes {
		addWithParents(want, h, false)
		addPlainWithParents(got, shared, h)
	}
	if len(got) != len(want) {
		t.Errorf("all homes: %d directories, the openat2 walk %d", len(got), len(want))
	}
	for id, name := range got {
		if strings.Contains(name, "//") || (name != "/" && strings.HasSuffix(name, "/")) {
			t.Errorf("%v named %q", id, name)
		}
	}
}

// BenchmarkLoadRules is what every CLI run pays once to build the rules
// from this host's directories and /etc/passwd.
func BenchmarkLoadRules(b *testing.B) {
	for i := 0; i < b.N; i++ {
		loadRules(os.Getenv("HOME"), "/etc/passwd")
	}
}
