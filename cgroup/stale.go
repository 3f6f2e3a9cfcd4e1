package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

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
	_, h, err := detect()
	if err != nil {
		return nil // no cgroups, nothing to clean
	}
	live := map[string]bool{} // owner name -> alive, one /proc read per owner
	return h.cleanupStale(live)
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
