package hostprobe

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// argOverlayProbe is the re-execution of `tooljail check` that tries what
// a run with --changes needs: overlayfs mounted in a user namespace with
// its upper layer in the change store, and a directory replaced in it
// (which takes the user.overlay.opaque xattr).
const argOverlayProbe = "tooljail-probe-overlay"

// ChangesLayerName is check's name for the line of --changes.
const ChangesLayerName = "changes overlay"

// ChangesLayer is check's line for --changes: it tries an overlay in a
// fresh user namespace with its layers in a temporary directory of dir
// (the change store, or the directory it would be made in when it does
// not exist yet), removed afterwards. userns is check's line for user
// namespaces, which the overlay needs.
func ChangesLayer(dir string, userns Layer) Layer {
	l := Layer{Name: ChangesLayerName}
	if !userns.Enforced {
		l.Reason, l.Fix = "it needs a user namespace: "+userns.Reason, userns.Fix
		return l
	}
	if why := overlayWhy(kernelRelease()); why != "" {
		l.Reason, l.Fix = why, "use Linux 5.11 or later, or run with --changes off"
		return l
	}
	at := existingAncestor(dir)
	tmp, err := os.MkdirTemp(at, ".tooljail-probe-")
	if err != nil {
		l.Reason = fmt.Sprintf("cannot make a directory to try it in %s: %v", at, err)
		l.Fix = "give a writable change store (--changes-dir, TOOLJAIL_CHANGES_DIR)"
		return l
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{argOverlayProbe, tmp}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		l.Reason = fmt.Sprintf("an overlay in a user namespace with its upper layer on %s failed: %s", at, why)
		l.Fix = "keep the change store on ext4, xfs or btrfs (--changes-dir), use Linux 5.11 or later, or run with --changes off (review and apply-on-success then fail, record does not record)"
		return l
	}
	l.Enforced = true
	l.Detail = fmt.Sprintf("--changes record, review and apply-on-success: an overlay in the jail's user namespace, upper layer on %s", at)
	return l
}

// existingAncestor is dir, or its nearest ancestor that exists.
func existingAncestor(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if d == "/" || d == "." {
			return os.TempDir()
		}
	}
}

// overlayProbeChild runs in a fresh user and mount namespace: it mounts
// an overlay over a lower directory holding d/f, replaces d (rm -r, mkdir)
// and checks the upper layer marked it opaque. On failure it says what
// failed on stderr and exits 1.
func overlayProbeChild(tmp string) {
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %v", what, err)
		os.Exit(1)
	}
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		fail("make / private", err)
	}
	p := func(n string) string { return filepath.Join(tmp, n) }
	for _, d := range []string{"l", "l/d", "u", "w", "m"} {
		if err := os.Mkdir(p(d), 0o700); err != nil {
			fail("mkdir", err)
		}
	}
	if err := os.WriteFile(p("l/d/f"), []byte("x"), 0o600); err != nil {
		fail("write", err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", p("l"), p("u"), p("w"))
	if strings.ContainsAny(tmp, ",:\\") {
		fail("mount overlay", errors.New("the store's path holds a comma, colon or backslash, which this probe cannot pass to overlayfs"))
	}
	if err := unix.Mount("overlay", p("m"), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		fail("mount overlay", err)
	}
	if err := os.RemoveAll(p("m/d")); err != nil {
		fail("remove a lower directory through the overlay", err)
	}
	if err := os.Mkdir(p("m/d"), 0o700); err != nil {
		fail("make a directory again where one was removed (overlayfs marks it opaque with a user.* xattr)", err)
	}
	buf := make([]byte, 8)
	if _, err := unix.Lgetxattr(p("u/d"), "user.overlay.opaque", buf); err != nil {
		fail("the upper layer's opaque mark", err)
	}
	unix.Unmount(p("m"), 0)
	os.Exit(0)
}

// OverlayFailure says why this kernel cannot mount overlayfs in a user
// namespace, "" when it can; a run with changes records nothing where it
// cannot.
func OverlayFailure() string { return overlayWhy(kernelRelease()) }

// overlayWhy says why this kernel cannot mount overlayfs in a user
// namespace, "" when it can: that came with Linux 5.11. Whether the
// change store's and the bind's file systems take part is only known
// when the jail mounts it (and then fails the run with the reason).
func overlayWhy(release string) string {
	major, minor, ok := kernelVersion(release)
	if ok && (major < 5 || major == 5 && minor < 11) {
		return fmt.Sprintf("overlayfs in a user namespace needs Linux 5.11 or later, and this kernel is %s", release)
	}
	return ""
}

// kernelVersion reads "6.1.0-18-amd64" as 6, 1.
func kernelVersion(release string) (major, minor int, ok bool) {
	f := strings.FieldsFunc(release, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[1])
	return a, b, err1 == nil && err2 == nil
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
