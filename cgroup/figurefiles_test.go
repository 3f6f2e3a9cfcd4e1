package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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

// readAt0 and readFigureAt0 read a file whole whatever its size (sizes
// around the 4 KiB first buffer); readAt0 reads a seq_file of many
// records whole, though its reads come back short at record boundaries.
func TestReadAt0Sizes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4095, 4096, 4097, 8192, 100000} {
		want := strings.Repeat("x", n)
		p := filepath.Join(dir, fmt.Sprint(n))
		os.WriteFile(p, []byte(want), 0o644)
		if b, err := readFile(p); err != nil || string(b) != want {
			t.Errorf("%d bytes: read %d, %v", n, len(b), err)
		}
		var f figureFiles
		if b, err := f.read(p); err != nil || string(b) != want {
			t.Errorf("%d bytes as a figure file: read %d, %v", n, len(b), err)
		}
		f.close()
	}
	// A seq_file of many records (one per mapping), larger than the
	// buffer: a read of 4 KiB ends within a record and the next goes on.
	var addrs []string
	for i := 0; i < 300; i++ {
		prot := unix.PROT_READ
		if i%2 == 1 {
			prot |= unix.PROT_WRITE // unlike its neighbour: not merged
		}
		m, err := unix.Mmap(-1, 0, 4096, prot, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(m)
		addrs = append(addrs, fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&m[0]))))
	}
	b, err := readFile("/proc/self/maps")
	if err != nil || len(b) < 3*4096 || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("/proc/self/maps: %d bytes, %v", len(b), err)
	}
	for _, a := range addrs {
		if !strings.Contains(string(b), "\n"+a) && !strings.HasPrefix(string(b), a) {
			t.Errorf("/proc/self/maps as read lacks the mapping at %s", a)
		}
	}
}
