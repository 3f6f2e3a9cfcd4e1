package changes

// Summarize turns a run's changes (every bind's, in the order given: the
// binds' order, each sorted) into the report's entries, at most
// MaxEntries of them (truncated says some were left out), and the totals
// of all of them. Bytes counts the regular files apply writes: created,
// modified or made from another type, neither protected, skipped nor a
// hard link to another entry.
func Summarize(all []Change) (entries []Entry, t Totals, truncated bool) {
	entries = make([]Entry, 0, min(len(all), MaxEntries))
	for _, c := range all {
		if len(entries) < MaxEntries {
			entries = append(entries, c.Entry)
		} else {
			truncated = true
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
		if writesBytes(c.Entry) {
			t.Bytes += c.Size
		}
	}
	return entries, t, truncated
}

// writesBytes says whether apply writes e's content.
func writesBytes(e Entry) bool {
	if e.Type != TypeFile || e.Protected || e.Skipped != "" || e.Link != "" {
		return false
	}
	return e.Kind == Created || e.Kind == Modified || e.Kind == TypeChanged
}
