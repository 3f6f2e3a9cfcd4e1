package mcpserver

import (
	"fmt"
	"strings"

	"github.com/tooljail/tooljail/changes"
)

// maxChangeLines bounds the entries the text of a change set lists; the
// structured content has them all (up to changes.MaxEntries).
const maxChangeLines = 50

// changesText says in words what a call's run changed, for a model to
// show the user: the set's id and state, its totals, an entry a line, and
// how to apply or discard a kept set. "" when there is nothing to say.
func changesText(c *changes.Report) string {
	if c == nil || c.Mode == changes.Off || c.Mode == "" {
		return ""
	}
	if !c.Recorded {
		reason := c.Reason
		if reason == "" {
			reason = "this host cannot record changes"
		}
		return fmt.Sprintf("tooljail: changes (%s) were not recorded: %s", c.Mode, reason)
	}
	var b strings.Builder
	switch {
	case c.State == changes.StateEmpty || c.Totals.Entries == 0:
		return "tooljail: the command changed nothing in its workdir"
	case c.State == changes.StateApplied:
		b.WriteString("tooljail: changes applied to the workdir")
	case c.ID != "" && c.State == changes.StateConflict:
		fmt.Fprintf(&b, "tooljail: changes kept as change set %s: applying them found paths changed on the host since the run, so nothing was applied", c.ID)
	case c.ID != "" && c.State == changes.StateFailed:
		fmt.Fprintf(&b, "tooljail: changes kept as change set %s: applying them failed (%s)", c.ID, c.Error)
	case c.ID != "":
		fmt.Fprintf(&b, "tooljail: changes kept for review as change set %s, not applied to the workdir", c.ID)
	default:
		fmt.Fprintf(&b, "tooljail: changes (%s)", c.State)
	}
	fmt.Fprintf(&b, " (%s):\n", totalsText(c.Totals))
	for i, e := range c.Entries {
		if i == maxChangeLines {
			fmt.Fprintf(&b, "  ... %d more\n", c.Totals.Entries-maxChangeLines)
			break
		}
		fmt.Fprintf(&b, "  %s %s%s\n", kindWord(e.Kind), quotePath(e.Path), entryNote(e))
	}
	if c.Truncated && len(c.Entries) <= maxChangeLines {
		fmt.Fprintf(&b, "  ... %d more\n", c.Totals.Entries-len(c.Entries))
	}
	for _, cf := range c.Conflicts {
		fmt.Fprintf(&b, "  conflict: %s: %s\n", quotePath(cf.Path), cf.Why)
	}
	if c.ID != "" && c.State != changes.StateApplied {
		fmt.Fprintf(&b, "apply: tooljail changes apply %s   discard: tooljail changes discard %s", c.ID, c.ID)
	}
	return strings.TrimRight(b.String(), "\n")
}

func totalsText(t changes.Totals) string {
	var parts []string
	for _, p := range []struct {
		n    int
		word string
	}{{t.Created, "created"}, {t.Modified, "modified"}, {t.Deleted, "deleted"}, {t.TypeChanged, "type changed"}, {t.ModeChanged, "mode changed"}, {t.Symlink, "symlink"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d entries", t.Entries)
	}
	return strings.Join(parts, ", ")
}

func kindWord(kind string) string {
	if kind == changes.TypeChanged {
		return "type changed"
	}
	if kind == changes.ModeChanged {
		return "mode changed"
	}
	return kind
}

// entryNote is what a line adds to an entry: a symlink's target, a hard
// link, why apply will not write it.
func entryNote(e changes.Entry) string {
	var notes []string
	if e.Target != "" {
		notes = append(notes, "-> "+quotePath(e.Target))
	}
	if e.Link != "" {
		notes = append(notes, "same file as "+quotePath(e.Link))
	}
	if e.Protected {
		notes = append(notes, "protected: never applied")
	}
	if e.Skipped != "" {
		notes = append(notes, "not applied: "+e.Skipped)
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// quotePath quotes a path only when it holds what would break the line (a
// newline, a control character, a leading or trailing space).
func quotePath(p string) string {
	if strings.TrimSpace(p) != p || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Sprintf("%q", p)
	}
	return p
}
