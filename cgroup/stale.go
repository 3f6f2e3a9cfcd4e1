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
// directories whose owner, checked by pid and start time in this pid
// namespace, is gone; a live supervisor's groups are never touched. Groups
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

// staleOwners lists the owner directories of dead supervisors in base.
func staleOwners(base string, live map[string]bool) []string {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	myNS := pidNS()
	var dead []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ownerPrefix) || e.Name() == selfName() {
			continue
		}
		pid, start, ns, ok := parseOwnerName(e.Name())
		if !ok || ns != myNS {
			continue
		}
		a, known := live[e.Name()]
		if !known {
			a = ownerAlive(pid, start)
			live[e.Name()] = a
		}
		if a {
			continue
		}
		dead = append(dead, filepath.Join(base, e.Name()))
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
	for _, o := range staleOwners(base, live) {
		for _, name := range subdirs(o) {
			d := filepath.Join(o, name)
			if err := killV2(d); err != nil && !ignorable(err) {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, quiet(rmdirRetry(d)))
		}
		errs = append(errs, quiet(rmdirRetry(o)))
	}
	return errors.Join(errs...)
}

func cleanupV1(bases map[string]string, live map[string]bool) error {
	// Group each dead owner's runs across hierarchies so the kill can
	// freeze them first.
	owners := map[string]map[string]string{} // owner name -> hierarchy -> dir
	for c, base := range bases {
		for _, o := range staleOwners(base, live) {
			n := filepath.Base(o)
			if owners[n] == nil {
				owners[n] = map[string]string{}
			}
			owners[n][c] = o
		}
	}
	var errs []error
	for _, hier := range owners {
		runs := map[string]map[string]string{}
		for c, o := range hier {
			for _, name := range subdirs(o) {
				if runs[name] == nil {
					runs[name] = map[string]string{}
				}
				runs[name][c] = filepath.Join(o, name)
			}
		}
		for _, dirs := range runs {
			if _, err := killV1(dirs); err != nil && !ignorable(err) {
				errs = append(errs, err)
				continue
			}
			for _, d := range dirs {
				errs = append(errs, quiet(rmdirRetry(d)))
			}
		}
		for _, o := range hier {
			errs = append(errs, quiet(rmdirRetry(o)))
		}
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
