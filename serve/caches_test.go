package serve

import (
	"path/filepath"
	"testing"

	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
)

// A served profile's caches are the server user's: tooljail's own
// directory in the server's cache directory ($XDG_CACHE_HOME of its
// environment), whatever the request; a request has no field for them.
func TestServedCachesAreTheServers(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/srv/server-cache")
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.Filesystem.Caches = []string{"go-build"}
	s, err := spec(p, &Request{Argv: []string{"true"}, Workdir: t.TempDir()}, &report.Peer{UID: -1, GID: -1, PID: -1})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range s.Mounts {
		if m.Cache == "go-build" {
			found = true
			if want := filepath.Join("/srv/server-cache", profiles.CacheSubdir, "go-build"); m.Source != want || m.Dest != "/home/sandbox/.cache/go-build" || !m.Writable {
				t.Errorf("cache mount %+v, want %s read-write at /home/sandbox/.cache/go-build", m, want)
			}
		}
	}
	if !found {
		t.Errorf("no go-build cache in the served Spec: %+v", s.Mounts)
	}
	if _, err := decodeRequest([]byte(`{"argv":["true"],"caches":["go-build"]}`)); err == nil {
		t.Errorf("a request field caches was accepted")
	}
}
