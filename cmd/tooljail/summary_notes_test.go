package main

import (
	"testing"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail"
)

// The summary names what a user can act on: upstream failures of the
// allow mode (not refusals), tmpfs mounts that filled up with how to raise
// each, background processes killed at the command's end; and nothing for
// a run that had none of them.
func TestSummaryNotes(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	tmpRaise := "--tmpfs /tmp:SIZE, or tmpfs in the profile's [filesystem]"
	for _, c := range []struct {
		name string
		r    jail.Result
		want string
	}{
		{"nothing", jail.Result{Status: jail.StatusExited, KilledLeftoverProcesses: n(0)}, ""},
		{"not counted", jail.Result{Status: jail.StatusExited}, ""},
		{"one leftover", jail.Result{Status: jail.StatusExited, KilledLeftoverProcesses: n(1)},
			"killed 1 background process still running when the command exited"},
		{"two leftovers", jail.Result{Status: jail.StatusExited, KilledLeftoverProcesses: n(2)},
			"killed 2 background processes still running when the command exited"},
		{"tmp full", jail.Result{Status: jail.StatusExited, FullMounts: []jail.FullMount{{Path: "/tmp", SizeBytes: 64 << 20, Full: "space", RaiseWith: tmpRaise}}},
			"/tmp (64 MiB tmpfs) filled up: raise it with " + tmpRaise},
		// /tmp sized by the memory limit: --memory raises it too
		{"memory-sized tmp full", jail.Result{Status: jail.StatusExited, FullMounts: []jail.FullMount{{Path: "/tmp", SizeBytes: 1 << 30, Full: "space",
			RaiseWith: "--memory SIZE or limits.memory (/tmp is as large as the memory limit), or " + tmpRaise}}},
			"/tmp (1 GiB tmpfs) filled up: raise it with --memory SIZE or limits.memory (/tmp is as large as the memory limit), or " + tmpRaise},
		{"memory kill", jail.Result{Status: jail.StatusMemoryLimit,
			Reason: "memory limit 1 GiB reached (peak 1 GiB; files in tmpfs count: /tmp 900 MiB); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
			"memory_limit: memory limit 1 GiB reached (peak 1 GiB; files in tmpfs count: /tmp 900 MiB); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"shm full and tmp out of inodes", jail.Result{Status: jail.StatusExited, FullMounts: []jail.FullMount{
			{Path: "/dev/shm", SizeBytes: 64 << 20, Full: "space"},
			{Path: "/tmp", SizeBytes: 1 << 30, Full: "inodes", RaiseWith: tmpRaise},
		}}, "/dev/shm (64 MiB tmpfs) filled up (its size is fixed); /tmp (1 GiB tmpfs) ran out of inodes (too many files)"},
		{"upstream failures", jail.Result{Status: jail.StatusExited, Network: []jail.NetworkEntry{
			{Proto: "connect", Host: "pypi.org", Port: 443, Decision: "dns failed", Count: 2},
			{Proto: "http", Host: "example.com", Port: 80, Decision: "allowed", Count: 1},
			{Proto: "connect", Host: "10.0.0.1", Port: 443, Decision: "private address", Count: 1},
			{Proto: "socks5", Host: "pypi.org", Port: 443, Decision: "dns failed", Count: 1},
			{Proto: "http", Host: "up.example", Port: 8080, Decision: "connect failed", Count: 1},
			{Proto: "dns", Host: "gone.example", Decision: "lookup failed", Count: 1},
		}, Violations: []jail.Violation{{Kind: "network", Host: "10.0.0.1", Port: 443, Reason: "private address", Count: 1, Action: "denied"}}},
			"1 network refusal(s): 10.0.0.1:443 (private address); " +
				"5 upstream failure(s), allowed but not reached: pypi.org:443 (dns failed), up.example:8080 (connect failed), gone.example (lookup failed)"},
		{"changes off", jail.Result{Status: jail.StatusExited}, ""},
		{"changes kept", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Review, Recorded: true, ID: "ab12", State: changes.StateKept,
			Totals: changes.Totals{Entries: 4, Created: 1, Modified: 1, Deleted: 1, ModeChanged: 1}}},
			"changes kept for review: 4 (1 created, 1 modified, 1 deleted, 1 other), id ab12: tooljail changes diff|apply|discard ab12"},
		{"changes empty", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Review, Recorded: true, State: changes.StateEmpty}}, ""},
		{"changes applied", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Record, Recorded: true, State: changes.StateApplied,
			Totals: changes.Totals{Entries: 2, Created: 2}}}, "changes applied: 2 (2 created, 0 modified, 0 deleted)"},
		{"changes conflict", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Record, Recorded: true, ID: "cd34", State: changes.StateConflict,
			Conflicts: []changes.Conflict{{Path: "a b"}, {Path: "c"}}}},
			`changes NOT applied: 2 path(s) changed on the host meanwhile ("a b", c); kept as cd34: tooljail changes diff|apply --force|discard cd34`},
		{"changes failed", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Review, State: changes.StateFailed, Error: "recording the changes failed: x"}},
			"changes: recording the changes failed: x"},
		{"changes not recorded", jail.Result{Status: jail.StatusExited, Changes: &changes.Report{Mode: changes.Record, Reason: "changes were not recorded: old kernel"}},
			"changes were not recorded: old kernel"},
		{"all at once", jail.Result{Status: jail.StatusExited, KilledLeftoverProcesses: n(3),
			FullMounts: []jail.FullMount{{Path: "/home/sandbox", SizeBytes: 64 << 20, Full: "space", RaiseWith: "home_size in the profile's [filesystem]"}},
			Network:    []jail.NetworkEntry{{Proto: "connect", Host: "h", Port: 443, Decision: "connect failed", Count: 1}}},
			"1 upstream failure(s), allowed but not reached: h:443 (connect failed); " +
				"/home/sandbox (64 MiB tmpfs) filled up: raise it with home_size in the profile's [filesystem]; " +
				"killed 3 background processes still running when the command exited"},
	} {
		if got := summary(&c.r); got != c.want {
			t.Errorf("%s: summary\n%q, want\n%q", c.name, got, c.want)
		}
	}
}
