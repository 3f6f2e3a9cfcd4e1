package integration

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// templateKernel says whether this kernel lets a root supervisor build
// root templates (Linux 6.15: mounts moved into a detached tree, and the
// tree cloned).
func templateKernel(t *testing.T) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	v := strings.SplitN(unix.ByteSliceToString(u.Release[:]), ".", 3)
	major, _ := strconv.Atoi(v[0])
	minor := 0
	if len(v) > 1 {
		minor, _ = strconv.Atoi(strings.TrimLeftFunc(v[1], func(r rune) bool { return r < '0' || r > '9' }))
	}
	return major > 6 || major == 6 && minor >= 15
}

// A root server's jails of one shape get a root template's clone from
// the third it starts on (their root's first mount is then the template's
// /usr, where a root the init builds has its /proc first): the process's
// first start and the shape's first build their root. The first call
// runs cold while the pool builds its two warm jails beside it, in any
// order, so at most two of the runs build their root: the two of those
// three that started first. An unprivileged server never makes one. Either way
// nothing the jail mounted can be unmounted or remounted from inside,
// nothing can be written on its root or in its /etc, the workdir is
// writable, and the host's mount table does not change.
func TestServedMountsLocked(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		before := hostMounts(t)
		s := u.startServer(t, "")
		w := u.workdir(t)
		wantTemplate := u.uid == 0 && templateKernel(t)
		fresh := 0
		for run := 0; run < 5; run++ {
			r := s.call(t, req{Workdir: w, Argv: []string{filepath.Join(w, "tjhelper"),
				"umount", "/usr", ";",
				"umount-detach", "/usr", ";",
				"umount-detach", "/etc/ld.so.cache", ";",
				"umount-detach", "/proc", ";",
				"remount-rw", "/usr", ";",
				"remount-rw", "/", ";",
				"remount-rw", "/etc/ld.so.cache", ";",
				"mount-tmpfs", "/etc", ";",
				"write", "/tjtest", "1", ";",
				"write", "/etc/passwd", "1", ";",
				"write", "/etc/ld.so.cache", "1", ";",
				"mkdir", "/etc/tjdir", ";",
				"write", filepath.Join(w, "f"), "1", ";",
				"read", "/proc/self/mountinfo"}})
			lines := r.ok(t, 14)
			for i, l := range lines[:8] {
				if !strings.HasPrefix(l, "errno E") {
					t.Errorf("run %d: mount operation %d succeeded or did not fail with an errno: %s", run, i, l)
				}
			}
			for i, l := range lines[8:12] {
				if !failed(l) {
					t.Errorf("run %d: write %d on the jail's root: %s, want a failure", run, i, l)
				}
			}
			if lines[12] != "ok" {
				t.Errorf("run %d: write in the workdir: %s", run, lines[12])
			}
			var info string
			r.value(t, 13, &info)
			first := firstBelowRoot(info)
			if first == "/proc" {
				if fresh++; wantTemplate && fresh > 2 {
					t.Errorf("run %d of a root server: the root's first mount is /proc: no template, and not one of the first two jails started", run)
				}
			} else if !wantTemplate {
				t.Errorf("run %d: the root's first mount is %s, want /proc (a root the init builds)", run, first)
			}
		}
		s.stop(t)
		after := hostMounts(t)
		if strings.Join(before, "\n") != strings.Join(after, "\n") {
			t.Errorf("host mount table changed:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
	})
}

// firstBelowRoot is the mount point of the first mount on the jail's
// root in a mountinfo.
func firstBelowRoot(info string) string {
	root := ""
	for _, l := range strings.Split(info, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		switch {
		case f[4] == "/":
			root = f[0]
		case root != "" && f[1] == root:
			return f[4]
		}
	}
	return ""
}
