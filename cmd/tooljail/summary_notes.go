package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
)

// The summary's notes on what a user can act on beyond denials and
// limits (summary in run.go adds them): upstream failures of the allow
// mode, tmpfs mounts that filled up, background processes killed at the
// command's end.

// upstreamNote names the allow mode's connections and lookups that were
// allowed but failed upstream, as the refusals are named: otherwise a
// client shows only its own words for them (pip's "502 Bad Gateway").
func upstreamNote(r *jail.Result) string {
	n := 0
	var hosts []string
	for _, e := range r.Network {
		if !e.UpstreamFailed() {
			continue
		}
		n += e.Count
		h := fmt.Sprintf("%s (%s)", netHost(e.Host, e.Port), e.Decision)
		if len(hosts) < 5 && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d upstream failure(s), allowed but not reached: %s", n, strings.Join(hosts, ", "))
}

// fullMountNotes says which of the jail's tmpfs mounts filled up, and how
// to give each more room.
func fullMountNotes(r *jail.Result) []string {
	var notes []string
	for _, m := range r.FullMounts {
		what := fmt.Sprintf("%s (%s tmpfs)", m.Path, units.FormatSize(m.SizeBytes))
		switch {
		case m.Full == "inodes":
			notes = append(notes, what+" ran out of inodes (too many files)")
		case m.RaiseWith == "":
			notes = append(notes, what+" filled up (its size is fixed)")
		default:
			notes = append(notes, fmt.Sprintf("%s filled up: raise it with %s", what, m.RaiseWith))
		}
	}
	return notes
}

// leftoverNote says how many processes the command left running, which
// the end of the run killed.
func leftoverNote(r *jail.Result) string {
	n := r.KilledLeftoverProcesses
	switch {
	case n == nil || *n <= 0:
		return ""
	case *n == 1:
		return "killed 1 background process still running when the command exited"
	}
	return fmt.Sprintf("killed %d background processes still running when the command exited", *n)
}

// changesNote says what became of the run's changes (--changes): the id
// to review and what to do with it, what was applied, or why nothing was
// recorded.
func changesNote(r *jail.Result) string {
	c := r.Changes
	if c == nil {
		return ""
	}
	if c.State == changes.StateFailed {
		return "changes: " + c.Error
	}
	if !c.Recorded {
		return c.Reason
	}
	t := c.Totals
	counts := fmt.Sprintf("%d (%d created, %d modified, %d deleted", t.Entries, t.Created, t.Modified, t.Deleted)
	if n := t.TypeChanged + t.ModeChanged + t.Symlink; n > 0 {
		counts += fmt.Sprintf(", %d other", n)
	}
	counts += ")"
	switch c.State {
	case changes.StateKept:
		return fmt.Sprintf("changes kept for review: %s, id %s: tooljail changes diff|apply|discard %s", counts, c.ID, c.ID)
	case changes.StateConflict:
		return fmt.Sprintf("changes NOT applied: %d path(s) changed on the host meanwhile (%s); kept as %s: tooljail changes diff|apply --force|discard %s", len(c.Conflicts), conflictPaths(c.Conflicts), c.ID, c.ID)
	case changes.StateApplied:
		return "changes applied: " + counts
	case changes.StateFailed:
		return "changes: " + c.Error
	}
	if c.Error != "" {
		return "changes: " + c.Error
	}
	return ""
}

func conflictPaths(cs []changes.Conflict) string {
	var out []string
	for i, c := range cs {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(cs)-3))
			break
		}
		out = append(out, quotePath(c.Path))
	}
	return strings.Join(out, ", ")
}
