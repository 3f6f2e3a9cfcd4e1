package changes

// TEMPORARY (branch cstore): stand-ins for scan.go, which helper
// "changes-scan" writes on branch cscan. Drop this file when cscan merges;
// the signatures below are the shared brief's, so nothing else changes.

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Change is one changed path with its host baseline (scan.go's type).
type Change struct {
	Entry
	Base Stamp `json:"base"` // the host path's stamp when the run ended
}

// Scan is scan.go's (branch cscan). Until it merges, Finish cannot scan.
func Scan(upper, lower *os.File, bind string, protect []string) ([]Change, error) {
	return nil, errors.New("changes.Scan: scan.go (branch cscan) is not merged yet")
}

// Summarize is scan.go's: the first MaxEntries entries and the totals.
func Summarize(all []Change) (entries []Entry, t Totals, truncated bool) {
	for _, c := range all {
		if len(entries) < MaxEntries {
			entries = append(entries, c.Entry)
		}
		t.Entries++
		switch c.Kind {
		case Created:
			t.Created++
		case Modified:
			t.Modified++
		case Deleted:
			t.Deleted++
		case TypeChanged:
			t.TypeChanged++
		case ModeChanged:
			t.ModeChanged++
		case Symlink:
			t.Symlink++
		}
		if c.Type == TypeFile && c.Kind != Deleted {
			t.Bytes += c.Size
		}
	}
	return entries, t, len(all) > MaxEntries
}

// WriteDiff is diff.go's (branch cscan): until it merges, one line per
// change, no content.
func WriteDiff(w io.Writer, c Change, old, new io.Reader) error {
	_, err := fmt.Fprintf(w, "%s %s\n", c.Kind, c.Path)
	return err
}
