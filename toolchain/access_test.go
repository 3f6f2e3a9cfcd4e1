package toolchain

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fsMode(perm uint32) fs.FileMode { return fs.FileMode(perm) }

// TestPeerMayRead runs the check on a real tree: a directory on the way
// that the peer may not search is named.
func TestPeerMayRead(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	for _, d := range []string{"open/tc", "shut/tc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "shut"), 0o700); err != nil {
		t.Fatal(err)
	}
	fsys := Under(root)
	other := Peer{UID: uint32(os.Getuid()) + 4242, GIDs: []uint32{4242}}
	if err := PeerMayRead(fsys, other, "/open/tc"); err != nil {
		t.Errorf("open: %v", err)
	}
	err := PeerMayRead(fsys, other, "/shut/tc")
	if err == nil || !strings.Contains(err.Error(), "may not search /shut ") {
		t.Errorf("shut: %v", err)
	}
	if err := PeerMayRead(fsys, Peer{UID: 0}, "/shut/tc"); err != nil {
		t.Errorf("root: %v", err)
	}
}
