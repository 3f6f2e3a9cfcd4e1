package cgroup

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A figure file read again through its open descriptor gives what the
// file says now: a rewritten file's new text (shorter, none of the old
// left), and a seq_file's text made anew (/proc/self/status counts this
// thread's sleeps); after close, the file is opened again.
func TestFigureFilesReadAgain(t *testing.T) {
	var f figureFiles
	p := filepath.Join(t.TempDir(), "memory.events")
	os.WriteFile(p, []byte("oom 1\noom_kill 12\n"), 0o644)
	if b, err := f.read(p); err != nil || string(b) != "oom 1\noom_kill 12\n" {
		t.Fatalf("first read: %q %v", b, err)
	}
	os.WriteFile(p, []byte("oom 2\n"), 0o644) // same inode, truncated
	if b, err := f.read(p); err != nil || string(b) != "oom 2\n" {
		t.Errorf("read again: %q %v, want the new text", b, err)
	}
	if len(f.fds) != 1 {
		t.Errorf("%d descriptors held, want 1", len(f.fds))
	}
	switches := func() string {
		b, err := f.read("/proc/thread-self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "voluntary_ctxt_switches:") {
				return l
			}
		}
		t.Fatalf("no voluntary_ctxt_switches in %q", b)
		return ""
	}
	// This thread's status, and this thread that sleeps.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := switches()
	time.Sleep(20 * time.Millisecond)
	if after := switches(); after == before {
		t.Errorf("a seq file read again through its descriptor is stale: %q", after)
	}
	f.close()
	if f.fds != nil {
		t.Error("close left descriptors")
	}
	if _, err := f.read(p); err != nil {
		t.Errorf("read after close: %v", err)
	}
	f.close()
	if _, err := f.read(filepath.Join(t.TempDir(), "absent")); !os.IsNotExist(err) {
		t.Errorf("an absent file: %v, want not exist", err)
	}
}
