package changes

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGCIfDue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, Options{Expiry: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := filepath.Join(dir, "0123456789abcdef0123456789abcdef")
	if err := os.Mkdir(old, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// The first call collects (no stamp yet): a set directory without
	// set.json younger than an hour stays (a run may be recording it).
	if _, err := s.GCIfDue(now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, gcStamp)); err != nil {
		t.Fatalf("no stamp after a collection: %v", err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a young set without its record was removed: %v", err)
	}
	// Within the hour nothing runs, even though the orphan is due.
	if rm, err := s.GCIfDue(now.Add(2 * time.Hour).Add(-gcEvery - time.Minute)); err != nil || rm != nil {
		t.Fatalf("GCIfDue within the hour: %v %v", rm, err)
	}
	// Later it runs, and removes the orphan.
	rm, err := s.GCIfDue(now.Add(2 * time.Hour))
	if err != nil || len(rm) != 1 {
		t.Fatalf("GCIfDue after the hour removed %v (%v), want the orphan", rm, err)
	}
}
