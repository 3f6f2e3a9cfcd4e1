package jail

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/internal/nons"
	"github.com/tooljail/tooljail/landlock"
)

// Start's path for a run without namespaces (nons.go): the host side is
// opened in the supervisor's own mount namespace before the fork (there
// is no other), the private temporary directory is made, and the reaper
// (nonsreap.c) is forked where the init would be.

// killAllSignal asks the reaper to kill every process of the run
// (TJ_SIG_KILLALL); a SIGKILL would end the reaper alone.
const killAllSignal = initc.SigKillAll

func (c *Cmd) startNoNS() error {
	if err := c.openGroup(); err != nil {
		return err
	}
	if w, err := landlock.WatchDenials(); err != nil {
		c.res.Enforcement.LandlockDenials = err.Error()
	} else {
		c.watcher = w // cleanup stops it
		c.res.Enforcement.LandlockDenials = "reported"
	}
	stdio, err := c.childStdio()
	if err != nil {
		return err
	}
	defer stdio.close()
	hs := &nonsHost{}
	defer hs.close()
	// Without namespaces nothing is recorded (changes.Decide): the report
	// says so.
	c.chg = changes.Unrecorded(c.plan.changes)
	if err := hs.prepare(c); err != nil {
		return err
	}
	return c.launchNoNS(hs, stdio)
}

// nonsHost is what the supervisor opened on the host for a run without
// namespaces.
type nonsHost struct {
	hostSide
}

// prepare opens the outputs, the bind sources and the files tooljail
// trusts, decides the command's host identity, makes the private
// directory and compiles the seccomp filter.
func (h *nonsHost) prepare(c *Cmd) error {
	p, np := c.plan, c.plan.nons
	for _, o := range c.Outputs {
		if err := o.Open(); err != nil {
			return err
		}
	}
	root, err := openRoot("/")
	if err != nil {
		return err
	}
	defer root.Close()
	// The private directory is not a host path to open: it is made below.
	mounts := slices.Clone(p.host)
	mounts[np.tmp].Kind = hostside.Tmpfs
	if h.sources, err = hostside.Resolve(root, nil, mounts, np.spec.Dir); err != nil {
		return err
	}
	if err := h.identify(c, np.spec.Dir); err != nil {
		return err
	}
	if err := h.checkTrusted(c, np.spec); err != nil {
		return err
	}
	tmp, err := hostside.MakePrivateTmp(c.res.ID, h.id, h.root)
	if err != nil {
		return err
	}
	c.nonsTmp = tmp
	h.sources[np.tmp] = hostside.Source{Obj: tmp.TakeObject()} // the source closes it
	for _, o := range c.Outputs {
		if b := hostside.InsideWritable(o.Chain(), p.host, h.sources); b != "" {
			o.Refuse()
			return fmt.Errorf("%s lies inside %s, which this run may write: the command could replace it before tooljail writes it; write it elsewhere", o.Path, b)
		}
		if err := o.Create(); err != nil {
			return err
		}
	}
	var dir *os.File
	if h.cache != nil && hostside.InsideWritable(h.cache.Chain, p.host, h.sources) == "" {
		dir = h.cache.File
	}
	h.prog, err = p.compileSeccomp(np.spec, dir)
	return err
}

// identify picks the host identity the command runs as, and for a root
// caller checks what that identity may reach.
func (h *nonsHost) identify(c *Cmd, dir string) error {
	p := c.plan
	euid := os.Geteuid()
	h.root = euid == 0
	// Without namespaces, root switches to the jail's identity with CAP_SETUID
	// (stage 2), which even a container's root has: CAP_SYS_ADMIN is not needed.
	var err error
	h.id, h.explicit, err = hostside.HostUser(h.root, euid, os.Getegid(), c.Spec.HostUser, hostside.WorkdirOwner(p.host, h.sources, dir), DefaultHostUser)
	if err != nil {
		return err
	}
	if h.root {
		if err := nons.RootIdentity(h.id, h.explicit, p.host, h.sources, dir); err != nil {
			return err
		}
	}
	return nil
}

// checkTrusted refuses a run whose read-write binds hold a protected
// path (unless allowed degraded) or a file tooljail trusts: without a
// mount namespace nothing can be bound read-only over them.
func (h *nonsHost) checkTrusted(c *Cmd, spec *Spec) error {
	p := c.plan
	h.trusted = append([]*hostpath.Object(nil), c.Spec.Trusted...)
	if exe := hostside.Executable(); exe != nil {
		h.trusted = append(h.trusted, exe)
	}
	if p.needsDiskCache(spec) {
		if h.cache = hostside.CacheDir(); h.cache != nil {
			h.trusted = append(h.trusted, h.cache)
		}
	}
	// Landlock cannot take write access away below a directory it grants
	// it on, and there are no mounts: a protected path in a writable bind
	// fails the run.
	prot, dests, err := hostside.ProtectIn(spec.Protect, p.host, h.sources)
	for _, o := range prot {
		o.Close()
	}
	if err != nil {
		return err
	}
	if len(dests) > 0 {
		if !c.Spec.DegradedAllowed(LayerProtect) {
			return fmt.Errorf("%s is a protected path (filesystem.protect: it runs on the host later) inside a read-write bind; without a mount namespace it cannot be made read-only, and the command could change it: run in a directory without it, or allow it writable with --allow-degraded protect (or protect = [] in a profile)", dests[0])
		}
		h.protectDegraded = true
	}
	for _, o := range hostside.OverBinds(h.trusted, p.host, h.sources) {
		if o.ReadOnly {
			return fmt.Errorf("%s is a file tooljail trusts (a profile, this executable or its cache) inside a read-write bind; without a mount namespace it cannot be made read-only there, and the command could change it for the next run: move it out of the bind, or bind another directory", o.Dest)
		}
	}
	return nil
}

// launchNoNS forks the reaper, hands it the sources and the filter, and
// lets it go.
func (c *Cmd) launchNoNS(hs *nonsHost, stdio *childStdio) error {
	np := c.plan.nons
	lf, err := c.openLaunch(stdio)
	if err != nil {
		return err
	}
	defer lf.close()
	st2 := c.stage2Config()
	st2.Dir, st2.Env = nons.Paths(c.nonsTmp.Path(), c.Spec.Mounts, st2.Dir, st2.Env)
	var setid *HostID
	if hs.root {
		setid = &hs.id
	}
	ip, err := newNoNSInitPlan(np.spec, c.plan, lf.files, lf.cgroupFD, &st2, setid)
	if err != nil {
		return err
	}
	defer ip.free()
	c.initPlan = ip
	if err := c.startInit(ip); err != nil {
		return err
	}
	c.proc.KillSig = killAllSignal
	lf.syncR.Close()
	c.res.Enforcement.HostUID, c.res.Enforcement.HostGID = &hs.id.UID, &hs.id.GID
	if hs.protectDegraded {
		c.res.Enforcement.Degraded = append(c.res.Enforcement.Degraded, LayerProtect)
	}
	fdList, err := ip.fillLate(hs.sources, nil, nil, hs.prog, nil)
	if err != nil {
		return err
	}
	if err := initlink.SendFDs(c.sock, fdList); err != nil {
		return err
	}
	if _, err := lf.syncW.Write([]byte{0}); err != nil {
		return fmt.Errorf("start the run's reaper: %w", err)
	}
	c.supervise()
	return nil
}

// newNoNSInitPlan compiles the reaper's plan: no namespaces, no mounts;
// the Landlock rules on the sources, stage 2 as the init's, with setid
// (for a root supervisor) the identity it becomes.
func newNoNSInitPlan(s *Spec, p *plan, files initFiles, cgroupFD int, st2 *stage2Config, setid *HostID) (*initPlan, error) {
	// The sources are indexed as the plan's mounts; none is mounted.
	ip := &initPlan{mounts: p.mounts}
	if len(ip.mounts) > initc.MaxSources {
		return nil, fmt.Errorf("%d binds: a run takes at most %d", len(ip.mounts), initc.MaxSources)
	}
	if p.landlock == nil {
		return nil, errors.New("without namespaces: no Landlock policy") // planNoNS makes one
	}
	if err := ip.compileLandlock(p); err != nil {
		return nil, err
	}
	cplan := &initc.Plan{
		NoNS:     true,
		CgroupFD: cgroupFD,
		Files:    files.c(),
		Mounts:   cMounts(ip.mounts),
		Landlock: ip.ll,
		Seccomp:  s.Seccomp != nil,
	}
	var err error
	if ip.stage2, cplan.Stage2, err = prepareStage2(st2); err != nil {
		return nil, err
	}
	if setid != nil {
		cplan.Stage2.SetID = true
		cplan.Stage2.UID, cplan.Stage2.GID = uint32(setid.UID), uint32(setid.GID)
	}
	ip.stage2.abi = ip.enforced.ABI
	if ip.cp, err = initc.Compile(cplan); err != nil {
		return nil, err
	}
	return ip, nil
}
