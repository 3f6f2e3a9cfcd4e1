package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// CleanupStale removes groups left by supervisors that died (a SIGKILLed
// supervisor cannot clean up): it kills what still runs in them and
// removes them. It looks only at this supervisor's base cgroup (one
// directory listing per hierarchy), and only at tooljail-<pid>-<start>-<ns>
// directories (v1: tooljail-<pid>-<start>-<ns>-run-<id>) whose owner,
// checked by pid and start time in this pid namespace, is gone; a live
// supervisor's groups are never touched. Groups
// this user may not remove are skipped silently.
func CleanupStale() error {
	h, err := detect()
	if err != nil {
		return nil // no cgroups, nothing to clean
	}
	live := map[string]bool{} // owner name -> alive, one /proc read per owner
	if h.layout == cgroups.Unified {
		return cleanupV2(h.v2Base, live)
	}
	return cleanupV1(h.v1Base, live)
}

// staleDir is a directory a dead supervisor left in a base: its owner
// directory (v2, and v1 before runs sat in the base), or one of its v1 run
// directories.
type staleDir struct {
	path  string
	owner string // the owner name
	run   bool   // path is a run directory itself
}

// staleDirs lists what dead supervisors left in base.
func staleDirs(base string, live map[string]bool) []staleDir {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	myNS, me := pidNS(), selfName()
	var dead []staleDir
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ownerPrefix) {
			continue
		}
		owner, run := e.Name(), false
		if o, _, ok := cutFlatRun(owner); ok {
			owner, run = o, true
		}
		pid, start, ns, ok := parseOwnerName(owner)
		if !ok || ns != myNS || owner == me {
			continue
		}
		a, known := live[owner]
		if !known {
			a = ownerAlive(pid, start)
			live[owner] = a
		}
		if !a {
			dead = append(dead, staleDir{path: filepath.Join(base, e.Name()), owner: owner, run: run})
		}
	}
	return dead
}

func subdirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var l []string
	for _, e := range ents {
		if e.IsDir() {
			l = append(l, e.Name())
		}
	}
	return l
}

func cleanupV2(base string, live map[string]bool) error {
	var errs []error
	for _, o := range staleDirs(base, live) {
		runs := []string{o.path}
		if !o.run {
			runs = nil
			for _, name := range subdirs(o.path) {
				runs = append(runs, filepath.Join(o.path, name))
			}
		}
		for _, d := range runs {
			if err := killV2(d); err != nil && !ignorable(err) {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, quiet(rmdirRetry(d)))
		}
		if !o.run {
			errs = append(errs, quiet(rmdirRetry(o.path)))
		}
	}
	return errors.Join(errs...)
}

func cleanupV1(bases map[string]string, live map[string]bool) error {
	// Gather each dead run's directories across hierarchies so the kill
	// can freeze them first.
	runs := map[string]map[string]string{} // owner/run -> hierarchy -> dir
	var owners []string                    // owner directories, removed last
	add := func(key, c, dir string) {
		if runs[key] == nil {
			runs[key] = map[string]string{}
		}
		runs[key][c] = dir
	}
	for c, base := range bases {
		for _, o := range staleDirs(base, live) {
			if o.run {
				add(filepath.Base(o.path), c, o.path)
				continue
			}
			for _, name := range subdirs(o.path) {
				add(o.owner+"/"+name, c, filepath.Join(o.path, name))
			}
			owners = append(owners, o.path)
		}
	}
	var errs []error
	for _, dirs := range runs {
		if _, err := killV1(dirs); err != nil && !ignorable(err) {
			errs = append(errs, err)
			continue
		}
		for _, d := range dirs {
			errs = append(errs, quiet(rmdirRetry(d)))
		}
	}
	for _, o := range owners {
		errs = append(errs, quiet(rmdirRetry(o)))
	}
	return errors.Join(errs...)
}

// ignorable are the errors of a group another cleaner removed first, or of
// one this user may not touch.
func ignorable(err error) bool {
	return isNotExist(err) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

func quiet(err error) error {
	if err == nil || ignorable(err) {
		return nil
	}
	return err
}
