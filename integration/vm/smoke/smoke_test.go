// Package smoke proves the integration/vm guest provides what the integration suite
// needs: the expected kernel, a pure cgroup v2 hierarchy with its controllers, a
// delegated subtree the unprivileged user can nest cgroups in, user namespaces,
// seccomp user notification and Landlock. It only runs inside the VM (TJ_VM=1):
//
//	CGO_ENABLED=0 go test -c -o smoke.test ./integration/vm/smoke
//	integration/vm/run.sh 6.1 smoke.test -test.v
package smoke

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const cgroupRoot = "/sys/fs/cgroup"

// landlockABI maps a Debian kernel series to the Landlock ABI its upstream version has
// (Debian does not backport Landlock features).
var landlockABI = map[string]int{"6.1": 2, "6.12": 6}

func inVM(t *testing.T) {
	t.Helper()
	if os.Getenv("TJ_VM") != "1" {
		t.Skip("runs only inside the integration/vm guest (TJ_VM=1)")
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func write(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		t.Fatalf("write %q to %s: %v", value, path, err)
	}
}

func TestIdentity(t *testing.T) {
	inVM(t)
	want := map[string]int{"root": 0, "user": 65534}[os.Getenv("TJ_VM_USER")]
	if os.Getenv("TJ_VM_USER") == "" {
		t.Fatal("TJ_VM_USER is not set")
	}
	if uid, euid, gid := os.Getuid(), os.Geteuid(), os.Getgid(); uid != want || euid != want || gid != want {
		t.Fatalf("uid %d euid %d gid %d, want all %d for %s", uid, euid, gid, want, os.Getenv("TJ_VM_USER"))
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if want != 0 && len(groups) != 0 {
		t.Fatalf("unprivileged suite has supplementary groups %v", groups)
	}
	caps := readTrim(t, "/proc/self/status")
	for _, l := range strings.Split(caps, "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			eff := strings.TrimSpace(strings.TrimPrefix(l, "CapEff:"))
			if (eff == "0000000000000000") != (want != 0) {
				t.Fatalf("CapEff %s for uid %d", eff, want)
			}
		}
	}
}

func TestKernelSeries(t *testing.T) {
	inVM(t)
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	series := os.Getenv("TJ_VM_KERNEL_SERIES")
	t.Logf("kernel %s (series %s)", release, series)
	if !strings.HasPrefix(release, series+".") && !strings.HasPrefix(release, series+"-") {
		t.Fatalf("kernel %s is not series %q", release, series)
	}
}

func TestPureCgroup2(t *testing.T) {
	inVM(t)
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Fatalf("%s is fs type %#x, want cgroup2", cgroupRoot, st.Type)
	}
	mounts := readTrim(t, "/proc/self/mounts")
	for _, l := range strings.Split(mounts, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[2] == "cgroup" {
			t.Fatalf("cgroup v1 hierarchy mounted: %s", l)
		}
	}
	enabled := strings.Fields(readTrim(t, filepath.Join(cgroupRoot, "cgroup.subtree_control")))
	t.Logf("root cgroup.subtree_control: %v", enabled)
	for _, c := range []string{"cpu", "memory", "pids", "io"} {
		if !contains(enabled, c) {
			t.Errorf("controller %s not enabled at the root", c)
		}
	}
	self := readTrim(t, "/proc/self/cgroup")
	if want := "0::" + strings.TrimPrefix(os.Getenv("TJ_VM_CGROUP"), cgroupRoot) + "/test"; self != want {
		t.Fatalf("/proc/self/cgroup = %q, want %q", self, want)
	}
}

// TestDelegatedSubtree does what a test must do to give one tooljail run a cgroup of its
// own, as `systemd-run --scope -p Delegate=yes` would: create a cgroup under
// TJ_VM_CGROUP, set limits, start a child directly in it (CLONE_INTO_CGROUP), then kill
// and remove it. It also moves itself out of its leaf and back, which needs write access
// to cgroup.procs of the common ancestor, i.e. real delegation.
func TestDelegatedSubtree(t *testing.T) {
	inVM(t)
	base := os.Getenv("TJ_VM_CGROUP")
	if base == "" {
		t.Fatal("TJ_VM_CGROUP is not set")
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(base, f), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != os.Getuid() {
			t.Fatalf("%s is owned by uid %d, not by us (%d)", filepath.Join(base, f), st.Uid, os.Getuid())
		}
	}
	enabled := strings.Fields(readTrim(t, filepath.Join(base, "cgroup.subtree_control")))
	for _, c := range []string{"cpu", "memory", "pids"} {
		if !contains(enabled, c) {
			t.Fatalf("controller %s not enabled for children of %s (have %v)", c, base, enabled)
		}
	}
	if os.Getuid() != 0 {
		// The delegate must not be able to raise the limits set on its delegation.
		if err := os.WriteFile(filepath.Join(base, "memory.max"), []byte("max"), 0); err == nil {
			t.Fatalf("uid %d could write %s/memory.max", os.Getuid(), base)
		}
	}

	scope := filepath.Join(base, "smoke.scope")
	if err := os.Mkdir(scope, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, scope) })
	write(t, filepath.Join(scope, "memory.max"), "67108864")
	write(t, filepath.Join(scope, "memory.swap.max"), "0")
	write(t, filepath.Join(scope, "pids.max"), "16")
	write(t, filepath.Join(scope, "cpu.max"), "50000 100000")

	fd, err := unix.Open(scope, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("clone into %s: %v", scope, err)
	}
	if got, want := strings.TrimSpace(string(out)), "0::"+strings.TrimPrefix(scope, cgroupRoot); got != want {
		t.Fatalf("child cgroup %q, want %q", got, want)
	}
	// The pids cap is live: 20 concurrent sleeps cannot all start under pids.max 16.
	script := "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 2 & done; wait"
	cmd = exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Run(); err != nil {
		t.Logf("fork loop: %v", err)
	}
	events := readTrim(t, filepath.Join(scope, "pids.events"))
	t.Logf("pids.events: %s", events)
	if events == "max 0" {
		t.Fatalf("pids.max 16 never refused a fork: %s", events)
	}

	// Migration inside the delegation: out of test/ into a sibling and back.
	home := filepath.Join(base, "test")
	mover := filepath.Join(base, "smoke-mover")
	if err := os.Mkdir(mover, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mover)
	write(t, filepath.Join(mover, "cgroup.procs"), "0")
	got := readTrim(t, "/proc/self/cgroup")
	write(t, filepath.Join(home, "cgroup.procs"), "0")
	if want := "0::" + strings.TrimPrefix(mover, cgroupRoot); got != want {
		t.Fatalf("after moving: %q, want %q", got, want)
	}
}

func TestUserNamespaces(t *testing.T) {
	inVM(t)
	t.Logf("user.max_user_namespaces = %s", readTrim(t, "/proc/sys/user/max_user_namespaces"))
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil {
		t.Logf("kernel.unprivileged_userns_clone = %s", bytes.TrimSpace(b))
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command("/bin/cat", "/proc/self/uid_map")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("user namespace as uid %d: %v", uid, err)
	}
	if f := strings.Fields(string(out)); len(f) != 3 || f[0] != "0" || f[1] != strconv.Itoa(uid) {
		t.Fatalf("uid_map %q", out)
	}
}

func TestLandlock(t *testing.T) {
	inVM(t)
	const createRulesetVersion = 1 // LANDLOCK_CREATE_RULESET_VERSION
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		t.Fatalf("landlock_create_ruleset(VERSION): %v (lsm= on the kernel command line must list landlock)", errno)
	}
	t.Logf("Landlock ABI %d; LSMs %s", abi, readTrim(t, "/sys/kernel/security/lsm"))
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		t.Logf("kernel.yama.ptrace_scope = %s", bytes.TrimSpace(b))
	}
	if want, ok := landlockABI[os.Getenv("TJ_VM_KERNEL_SERIES")]; ok && int(abi) != want {
		t.Fatalf("Landlock ABI %d, want %d for series %s", abi, want, os.Getenv("TJ_VM_KERNEL_SERIES"))
	}
}

func TestSeccompUserNotif(t *testing.T) {
	inVM(t)
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		t.Fatalf("SECCOMP_RET_USER_NOTIF not available: %v", errno)
	}
}

func TestLoopbackOnly(t *testing.T) {
	inVM(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("loopback connect: %v", err)
	}
	c.Close()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			t.Errorf("unexpected interface %s: the guest should have no network", i.Name)
		}
	}
}

func TestWritableScratch(t *testing.T) {
	inVM(t)
	for _, dir := range []string{os.TempDir(), "/dev/shm", os.Getenv("HOME")} {
		f, err := os.CreateTemp(dir, "smoke")
		if err != nil {
			t.Errorf("%s not writable: %v", dir, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
}

func TestSuiteBinaries(t *testing.T) {
	inVM(t)
	found := 0
	for _, name := range []string{"TOOLJAIL", "TJHELPER"} {
		p := os.Getenv(name)
		if p == "" {
			t.Logf("%s not passed to the VM", name)
			continue
		}
		found++
		if err := unix.Access(p, unix.X_OK); err != nil {
			t.Errorf("%s=%s: %v", name, p, err)
		}
	}
	if _, err := os.Stat("/suite/files"); errors.Is(err, os.ErrNotExist) {
		t.Error("/suite/files missing")
	}
	t.Logf("%d binaries passed", found)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// removeCgroup kills what is left in dir (cgroup.kill, Linux 5.14+) and removes it once
// the kernel reports it unpopulated.
func removeCgroup(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Errorf("cgroup.kill %s: %v", dir, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err == nil && bytes.Contains(b, []byte("populated 0")) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still populated after cgroup.kill", dir)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}
