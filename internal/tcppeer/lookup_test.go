package tcppeer

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// TestLookupFakeProc reads a made-up proc tree: the client's socket is
// found in tcp6 (a v4-mapped entry) once tcp has no match, its holder
// among the processes (not a name that is no pid, not a process whose fd
// directory is gone), and the holder's effective gid.
func TestLookupFakeProc(t *testing.T) {
	proc := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		t.Helper()
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	// Only the server's end in tcp; the client's end in tcp6, v4-mapped.
	write("net/tcp", header+line("0100007F:1F90", "0100007F:B26E", "01", "0", "101"))
	write("net/tcp6", header+line("0000000000000000FFFF00000100007F:B26E", "0000000000000000FFFF00000100007F:1F90", "01", "1000", "302"))
	write("self/status", "Gid:\t1\t1\t1\t1\n")
	link("self/fd/3", "socket:[302]")
	write("7/status", "Gid:\t2\t2\t2\t2\n") // no fd directory
	link("8/fd/0", "/dev/null")
	link("8/fd/1", "socket:[101]")
	write("9/status", "Name:\tclient\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1001\t1000\t1001\n")
	link("9/fd/0", "/dev/null")
	link("9/fd/5", "socket:[302]")
	server, client := netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("127.0.0.1:45678")
	o, err := lookup(proc, server, client)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Owner{UID: 1000, GID: 1001, PID: 9}); o != want {
		t.Errorf("lookup = %+v, want %+v", o, want)
	}
	// No process shows the socket: the uid alone.
	if err := os.Remove(filepath.Join(proc, "9/fd/5")); err != nil {
		t.Fatal(err)
	}
	if o, err := lookup(proc, server, client); err != nil || o != (Owner{UID: 1000, GID: -1, PID: -1}) {
		t.Errorf("lookup with no holder = %+v, %v; want uid 1000, gid and pid -1", o, err)
	}
	// No socket: an error, and -1s.
	if o, err := lookup(proc, server, netip.MustParseAddrPort("127.0.0.1:45679")); err == nil || o != (Owner{-1, -1, -1}) {
		t.Errorf("lookup of no socket = %+v, %v; want -1s and an error", o, err)
	}
}
