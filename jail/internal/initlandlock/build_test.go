package initlandlock_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initlandlock"
	"github.com/tooljail/tooljail/landlock"
)

// TestBuild runs the init's tj_landlock in this process (building a
// ruleset restricts nothing): the failures it records, each with the step,
// the rule's index and path and the errno, and the rights it picks by file
// type where the kernel rejects the wrong pick (directory rights on a
// file). Each case leaves no ruleset and no rule path open but the
// returned ruleset.
func TestBuild(t *testing.T) {
	requireABI(t, 1)
	tr := newTree(t)
	link := filepath.Join(tr.base, "link")
	must(t, os.Symlink("ro", link))
	file := filepath.Join(tr.ro, "f")
	nope := filepath.Join(tr.base, "nope")
	rules := func(rs ...landlock.Rule) landlock.Policy {
		return landlock.Policy{Rules: append(system(), rs...)}
	}
	n := len(system()) // the index of the first rule after system()
	const readFile, readDir, writeFile = ll.AccessFSReadFile, ll.AccessFSReadDir, ll.AccessFSWriteFile
	for _, c := range []struct {
		name   string
		policy landlock.Policy
		plan   *landlock.Plan // instead of the compiled policy
		binds  []initlandlock.Bind
		want   *initlandlock.Failure // nil: a ruleset
	}{
		{name: "missing path", policy: rules(landlock.Rule{Path: tr.ro, Access: landlock.Read}, landlock.Rule{Path: nope, Access: landlock.Read}),
			want: &initlandlock.Failure{Step: "LL_OPEN", Op: "OPEN", Errno: unix.ENOENT, Index: n + 1, Path: nope}},
		{name: "list on a file", policy: rules(landlock.Rule{Path: file, Access: landlock.List}),
			want: &initlandlock.Failure{Step: "LL_DIRONLY", Index: n, Path: file}},
		{name: "list on a bind of a file", policy: rules(landlock.Rule{Path: "/jail/f", Access: landlock.List}),
			binds: []initlandlock.Bind{{Dest: "/jail/f", Source: file}},
			want:  &initlandlock.Failure{Step: "LL_DIRONLY", Index: n, Path: "/jail/f"}},
		{name: "list on a directory", policy: rules(landlock.Rule{Path: tr.ro, Access: landlock.List})},
		{name: "list on a bind of a directory", policy: rules(landlock.Rule{Path: "/jail/d", Access: landlock.List}),
			binds: []initlandlock.Bind{{Dest: "/jail/d", Source: tr.ro}}},
		{name: "unknown handled right", plan: &landlock.Plan{HandledFS: 1 << 62},
			want: &initlandlock.Failure{Step: "LL_CREATE", Errno: unix.EINVAL, Index: -1}},
		{name: "rule right not handled", plan: &landlock.Plan{HandledFS: readFile | readDir, Paths: []landlock.PathPlan{
			{Path: tr.rw, Dir: readDir}, {Path: tr.ro, Dir: readDir | writeFile},
		}}, want: &initlandlock.Failure{Step: "LL_RULE", Errno: unix.EINVAL, Index: 1, Path: tr.ro}},
		{name: "port right not handled", plan: &landlock.Plan{HandledFS: readFile, HandledNet: ll.AccessNetBindTCP, Ports: []landlock.PortPlan{
			{Access: ll.AccessNetBindTCP, Port: 80}, {Access: ll.AccessNetConnectTCP, Port: 443},
		}}, want: &initlandlock.Failure{Step: "LL_PORT", Errno: unix.EINVAL, Index: 1}},
		// Directory rights on a file are EINVAL: these build only if the
		// init takes the file's (or the device node's) rights.
		{name: "file rights on a file", plan: &landlock.Plan{HandledFS: readFile | readDir, Flags: ll.FlagRestrictSelfLogNewExecOn, Paths: []landlock.PathPlan{
			{Path: file, Dir: readDir, File: readFile, Device: readDir},
		}}},
		{name: "device rights on a device node", plan: &landlock.Plan{HandledFS: readFile | readDir, Paths: []landlock.PathPlan{
			{Path: "/dev/null", Dir: readDir, File: readDir, Device: readFile},
		}}},
		{name: "file rights on a bind of a file", plan: &landlock.Plan{HandledFS: readFile | readDir, Paths: []landlock.PathPlan{
			{Path: "/jail/f", Dir: readDir, File: readFile, Device: readDir},
		}}, binds: []initlandlock.Bind{{Dest: "/jail/f", Source: file}}},
		// Nothing to put a rule on: an optional bind whose source is
		// missing, a bind that recreates a symlink (its target has a rule
		// of its own); dir_only is not checked where there is no object.
		{name: "missing bind source", plan: &landlock.Plan{HandledFS: readFile | readDir, Paths: []landlock.PathPlan{
			{Path: "/jail/gone", Dir: readDir, DirOnly: true},
		}}, binds: []initlandlock.Bind{{Dest: "/jail/gone", Source: nope}}},
		{name: "symlink bind source", plan: &landlock.Plan{HandledFS: readFile | readDir, Paths: []landlock.PathPlan{
			{Path: "/jail/link", Dir: readDir, DirOnly: true},
		}}, binds: []initlandlock.Bind{{Dest: "/jail/link", Source: link}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rulesets0, paths0 := openObjects(t, tr.base)
			var rs initlandlock.Ruleset
			var err error
			if c.plan != nil {
				rs, err = initlandlock.BuildPlan(*c.plan, c.binds...)
			} else {
				rs, _, err = initlandlock.Build(c.policy, c.binds...)
			}
			rulesets, paths := openObjects(t, tr.base)
			rulesets, paths = rulesets-rulesets0, paths-paths0
			if rs.FD >= 0 {
				unix.Close(rs.FD)
			}
			if c.want == nil {
				if err != nil || rs.FD < 0 {
					t.Fatalf("fd %d, %v; want a ruleset", rs.FD, err)
				}
				if rs.Flags != flags(t, c.policy, c.plan) {
					t.Errorf("restrict_self flags %#x, want the plan's %#x", rs.Flags, flags(t, c.policy, c.plan))
				}
				if rulesets != 1 || paths != 0 {
					t.Errorf("%d more rulesets and %d more tree paths open; want only the returned ruleset", rulesets, paths)
				}
				return
			}
			var f *initlandlock.Failure
			if !errors.As(err, &f) || rs.FD != -1 {
				t.Fatalf("fd %d, %v; want the failure %+v", rs.FD, err, c.want)
			}
			if *f != *c.want {
				t.Errorf("failure %+v, want %+v", *f, *c.want)
			}
			if rulesets != 0 || paths != 0 {
				t.Errorf("%d more rulesets and %d more tree paths open after the failure", rulesets, paths)
			}
			if !strings.Contains(err.Error(), c.want.Step) {
				t.Errorf("error %q does not name the step", err)
			}
		})
	}
}

// flags are landlock_restrict_self's flags in the plan of the case.
func flags(t *testing.T, p landlock.Policy, lp *landlock.Plan) uint32 {
	t.Helper()
	if lp != nil {
		return lp.Flags
	}
	compiled, _, err := landlock.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return compiled.Flags
}

// openObjects counts this process's descriptors of Landlock rulesets and
// of paths below dir.
func openObjects(t *testing.T, dir string) (rulesets, paths int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		switch {
		case err != nil:
		case target == "anon_inode:[landlock-ruleset]":
			rulesets++
		case strings.HasPrefix(target, dir+"/"):
			paths++
		}
	}
	return rulesets, paths
}
