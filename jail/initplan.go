package jail

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/landlock"
)

// The init is C (package initc), forked by the supervisor without an exec.
// This file decides what its plan holds; initc compiles it into C memory
// before the fork. The init and stage 2 report failures as records that
// failure.go turns into the run's error, and the command's end as a
// record too.

// devNodes are the device nodes bound from the host's /dev, the one list:
// the init gets them in its plan, Landlock's rules name them
// (landlockPolicy).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// initPlan is the init's plan, and what the supervisor needs to turn the
// records of the init and stage 2 into errors.
type initPlan struct {
	cp       *initc.Compiled
	mounts   []Mount // in the order of the plan's mounts
	over     []hostside.Over
	ll       *landlock.Plan
	enforced *landlock.Enforced // what Landlock enforces, for the report
	stage2   *stage2
}

// free releases the compiled plan; the init has its own copy once forked,
// and its own mapping of the late part.
func (ip *initPlan) free() {
	if ip.cp != nil {
		ip.cp.Free()
		ip.cp = nil
	}
}

// initFiles are the descriptors the init takes as 0 to 4.
type initFiles struct {
	stdin, stdout, stderr, sock, sync int
}

func (f initFiles) c() initc.Files {
	return initc.Files{Stdin: f.stdin, Stdout: f.stdout, Stderr: f.stderr, Sock: f.sock, Sync: f.sync}
}

// newInitPlan compiles the run into the init's plan. Errors are setup
// errors (exit 125).
func newInitPlan(s *Spec, p *plan, files initFiles, cgroupFD int, st2 *stage2Config) (*initPlan, error) {
	// planMounts sorted them, and the sources the supervisor opened are
	// indexed in that order: one slice, not a second sort. initc.Compile
	// refuses more than it can take.
	ip := &initPlan{mounts: p.mounts}
	base, err := pickBaseDir()
	if err != nil {
		return nil, err
	}
	cplan := &initc.Plan{
		CgroupFD: cgroupFD,
		Files:    files.c(),
		Base:     base,
		Mounts:   cMounts(ip.mounts),
		DevNodes: devPaths(),
		Seccomp:  s.Seccomp != nil,
	}
	setClone(cplan, s.Net, p.root, st2.Session)
	cplan.Hostname, cplan.Etc = etcFiles(s)
	if err := ip.compileLandlock(p); err != nil {
		return nil, err
	}
	cplan.Landlock = ip.ll
	if ip.stage2, cplan.Stage2, err = prepareStage2(st2); err != nil {
		return nil, err
	}
	if ip.enforced != nil {
		ip.stage2.abi = ip.enforced.ABI
	}
	if ip.cp, err = initc.Compile(cplan); err != nil {
		return nil, err
	}
	return ip, nil
}

// setClone sets how the init is cloned (its namespaces) and what it may
// do as root.
func setClone(c *initc.Plan, net NetMode, root bool, session bool) {
	flags := unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
	if net != NetHost {
		flags |= unix.CLONE_NEWNET
		c.NetNone = true
	}
	if net == NetAllow {
		c.NetAllow = true
		c.NetPorts = [3]int{ProxyHTTPPort, ProxySOCKS5Port, DNSPort}
	}
	c.CloneFlags = uintptr(flags)
	// Real root may drop its supplementary groups; an unprivileged user
	// namespace denies setgroups.
	c.DropGroups = root
	c.Session = session
}

// cMounts is the plan's mounts as the init takes them.
func cMounts(ms []Mount) []initc.Mount {
	out := make([]initc.Mount, len(ms))
	for i, m := range ms {
		out[i] = initc.Mount{Kind: mountKinds[m.Kind].init, Writable: m.Writable, Size: m.Size, Source: m.Source, Dest: m.Dest}
	}
	return out
}

// devPaths are devNodes' paths in the jail.
func devPaths() []string {
	nodes := make([]string, len(devNodes))
	for i, n := range devNodes {
		nodes[i] = "/dev/" + n
	}
	return nodes
}

// etcFiles are the host name and the /etc files the jail writes for
// itself.
func etcFiles(s *Spec) (string, [initc.EtcFiles]initc.EtcFile) {
	hostname := s.Hostname
	if hostname == "" {
		hostname = "tooljail"
	}
	home := s.Home
	if home == "" {
		home = "/"
	}
	etc := [initc.EtcFiles]initc.EtcFile{
		{Name: "passwd", Data: fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			JailUser, JailUID, JailGID, JailUser, home)},
		{Name: "group", Data: fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", JailUser, JailGID)},
		{Name: "hostname", Data: hostname + "\n"},
		{Name: "hosts", Data: fmt.Sprintf("127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", hostname)},
		{}, // resolv.conf, in the allow mode
	}
	if s.Net == NetAllow {
		etc[4] = initc.EtcFile{Name: "resolv.conf", Data: allowResolvConf}
	}
	return hostname, etc
}

// compileLandlock compiles the plan's Landlock policy, when it has one.
func (ip *initPlan) compileLandlock(p *plan) error {
	if p.landlock != nil {
		lp, en, err := landlock.Compile(*p.landlock)
		if err != nil {
			return err // each of Compile's errors begins with "landlock"
		}
		ip.ll, ip.enforced = &lp, &en
	}
	return nil
}

// forkInit forks the init with the plan; the calling thread must be
// locked (the init's parent death signal is tied to it).
func (ip *initPlan) forkInit() (*initlink.Proc, error) {
	pid, pidfd, err := ip.cp.Fork()
	if err != nil {
		return nil, err
	}
	return initlink.NewProc(pid, pidfd), nil
}

// pickBaseDir finds a directory to mount the temporary root on. It is only
// covered inside the jail's private mount namespace.
func pickBaseDir() (string, error) {
	for _, d := range []string{"/tmp", "/mnt", "/run", "/var/tmp"} {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("no directory to build the jail on: the host has none of /tmp, /mnt, /run, /var/tmp")
}

// sortMounts orders mounts so that a mount never hides one made before it:
// by depth of the destination (stable, so equal depths keep their order),
// masks after everything else.
func sortMounts(ms []Mount) []Mount {
	out := append([]Mount(nil), ms...)
	depth := func(p string) int { return strings.Count(p, "/") }
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := out[i].Kind == MountMask, out[j].Kind == MountMask
		if mi != mj {
			return !mi
		}
		return depth(out[i].Dest) < depth(out[j].Dest)
	})
	return out
}
