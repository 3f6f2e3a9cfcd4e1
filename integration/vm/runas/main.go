// Command runas is the guest-side launcher of integration/vm: it moves itself into a
// cgroup, drops to a uid/gid with no supplementary groups, and executes a program. busybox
// has no setpriv --reuid and su mangles the environment, so the VM's /init uses this.
//
//	runas -cgroup /sys/fs/cgroup/suite-user -uid 65534 -gid 65534 -- PROG ARGS...
//
// The environment is passed through unchanged.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func main() {
	cgroup := flag.String("cgroup", "", "cgroup v2 directory to move into before dropping privileges")
	uid := flag.Int("uid", -1, "user id to switch to (-1: keep)")
	gid := flag.Int("gid", -1, "group id to switch to (-1: keep; needs -uid)")
	dir := flag.String("dir", "", "working directory")
	flag.Parse()
	if flag.NArg() == 0 {
		fail("usage: runas [-cgroup DIR] [-uid N -gid N] [-dir DIR] -- PROG [ARGS...]")
	}
	if (*uid < 0) != (*gid < 0) {
		fail("-uid and -gid go together")
	}
	if *cgroup != "" {
		// Writing 0 moves the writing process; done as root so the suite starts inside
		// its cgroup from its first instruction, as a systemd scope would.
		procs := filepath.Join(*cgroup, "cgroup.procs")
		if err := os.WriteFile(procs, []byte("0"), 0); err != nil {
			fail(fmt.Sprintf("move into cgroup: %v", err))
		}
	}
	if *dir != "" {
		if err := os.Chdir(*dir); err != nil {
			fail(err.Error())
		}
	}
	if *uid >= 0 {
		// Order matters: groups and gid while still root, uid last. Go applies these to
		// every thread of the process (since Go 1.16).
		if err := syscall.Setgroups(nil); err != nil {
			fail(fmt.Sprintf("setgroups: %v", err))
		}
		if err := syscall.Setresgid(*gid, *gid, *gid); err != nil {
			fail(fmt.Sprintf("setresgid %d: %v", *gid, err))
		}
		if err := syscall.Setresuid(*uid, *uid, *uid); err != nil {
			fail(fmt.Sprintf("setresuid %d: %v", *uid, err))
		}
	}
	prog, err := exec.LookPath(flag.Arg(0))
	if err != nil {
		fail(err.Error())
	}
	err = syscall.Exec(prog, flag.Args(), os.Environ())
	fail(fmt.Sprintf("exec %s: %v", prog, err))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "runas: "+msg)
	os.Exit(126)
}
