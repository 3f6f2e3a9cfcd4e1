package main

import (
	"fmt"
	"slices"
	"strings"

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
