package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
)

func TestToolchainFinder(t *testing.T) {
	if _, e := toolchainFinder("/usr/bin", nil); e == nil || !strings.Contains(e.Message, "identity is unknown") {
		t.Errorf("unknown peer: %v", e)
	}
	if _, e := toolchainFinder("/usr/bin", &report.Peer{UID: -1}); e == nil {
		t.Error("peer -1 accepted")
	}
	f, e := toolchainFinder("/x/bin", &report.Peer{UID: 0, GID: 0})
	if e != nil || f.Check != nil || f.Environ[0] != "PATH=/x/bin" {
		t.Errorf("root: %+v %v", f, e)
	}
	f, e = toolchainFinder("/x/bin", &report.Peer{UID: 65534, GID: 65534})
	if e != nil || f.Check == nil {
		t.Fatalf("nobody: %+v %v", f, e)
	}
	if os.Getuid() != 0 {
		t.Skip("the refusal below needs a directory only root can search")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	shut := filepath.Join(dir, "shut")
	os.MkdirAll(filepath.Join(shut, "tc"), 0o755)
	os.Chmod(shut, 0o700)
	if err := f.Check(filepath.Join(shut, "tc")); err == nil || !strings.Contains(err.Error(), "may not search "+shut) {
		t.Errorf("check: %v", err)
	}
}

// TestSpecToolchainsServed: a request's toolchains are the flag's, and a
// client that may not read a prefix is refused with its name.
func TestSpecToolchainsServed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the test makes a directory another uid cannot search")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent
	open := filepath.Join(dir, "open/tc")
	shut := filepath.Join(dir, "shut/tc")
	os.MkdirAll(filepath.Join(open, "bin"), 0o755)
	os.MkdirAll(shut, 0o755)
	os.Chmod(filepath.Dir(shut), 0o700)
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	nobody := &report.Peer{UID: 65534, GID: 65534}
	s, err := spec(p, &Request{Argv: []string{"true"}, Toolchains: []string{open}}, nobody)
	if err != nil || len(s.Toolchains) != 1 || s.Toolchains[0].From != profiles.FromFlag || s.Toolchains[0].Prefixes[0] != open {
		t.Fatalf("open: %+v %v", s, err)
	}
	if _, err := spec(p, &Request{Argv: []string{"true"}, Toolchains: []string{shut}}, nobody); err == nil || !strings.Contains(err.Error(), "may not search "+filepath.Dir(shut)) {
		t.Errorf("shut: %v", err)
	}
	if _, err := spec(p, &Request{Argv: []string{"true"}, Toolchains: []string{shut}}, &report.Peer{UID: 0}); err != nil {
		t.Errorf("root: %v", err)
	}
	// The served profile's toolchains need no request field, and are
	// checked against the client the same way.
	q := *p
	q.Filesystem.Toolchains = []string{open}
	s, err = spec(&q, &Request{Argv: []string{"true"}}, nobody)
	if err != nil || len(s.Toolchains) != 1 || s.Toolchains[0].From != profiles.FromProfile {
		t.Errorf("profile's: %+v %v", s, err)
	}
	q.Filesystem.Toolchains = []string{shut}
	if _, err := spec(&q, &Request{Argv: []string{"true"}}, nobody); err == nil || !strings.Contains(err.Error(), "may not search") {
		t.Errorf("profile's shut: %v", err)
	}
}
