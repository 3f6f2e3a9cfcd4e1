package landlock

import (
	"fmt"
	"slices"
	"testing"
)

// TestParseRecord covers the record shapes Landlock writes (captured on
// Linux 6.18), including a hex-encoded path and an abstract socket name.
func TestParseRecord(t *testing.T) {
	cases := []struct {
		typ  uint16
		text string
		kind string
		path string
		acc  []string
	}{
		{auditAccess, `audit(1795272507.158:13): domain=15e59477a blockers=fs.read_file path="/etc/hostname" dev="vda" ino=611`, "fs", "/etc/hostname", []string{"read_file"}},
		{auditAccess, `audit(1.2:14): domain=1a blockers=fs.write_file,fs.truncate path=2F746D702F6120622F63 dev="vda" ino=1`, "fs", "/tmp/a b/c", []string{"write_file", "truncate"}},
		{auditAccess, `audit(1.2:15): domain=1a blockers=net.connect_tcp daddr=127.0.0.1 dest=22`, "net", "127.0.0.1:22", []string{"connect_tcp"}},
		{auditAccess, `audit(1.2:16): domain=1a blockers=scope.signal opid=1 ocomm="init"`, "scope", "pid 1 (init)", []string{"signal"}},
		{auditAccess, `audit(1.2:17): domain=1a blockers=scope.abstract_unix_socket path=00736F636B`, "scope", "@sock", []string{"abstract_unix_socket"}},
		{auditAccess, `audit(1.2:18): domain=1a blockers=ptrace opid=7 ocomm="x"`, "ptrace", "pid 7 (x)", []string{"ptrace"}},
	}
	for _, c := range cases {
		r, ok := parseRecord(c.typ, []byte(c.text))
		if !ok {
			t.Fatalf("parse %q failed", c.text)
		}
		kind, acc := blockers(r.fields["blockers"])
		if got := object(kind, acc, r.fields); kind != c.kind || got != c.path || !slices.Equal(acc, c.acc) {
			t.Errorf("%q: kind %q path %q access %v; want %q %q %v", c.text, kind, got, acc, c.kind, c.path, c.acc)
		}
	}
	r, ok := parseRecord(auditDomain, []byte(`audit(1795272506.650:12): domain=15e59477a status=allocated mode=enforcing pid=8865 uid=0 exe="/tmp/llwork/proto" comm="exe"`))
	if !ok || r.serial != 12 || r.int("pid") != 8865 || r.fields["status"] != "allocated" || r.fields["exe"] != "/tmp/llwork/proto" {
		t.Errorf("domain record: %+v", r)
	}
	if _, ok := parseRecord(auditAccess, []byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

// TestWatcherAggregatesAndBounds feeds records straight into the watcher:
// repeated denials are counted, not listed again, untracked domains are
// ignored, and the list is bounded.
func TestWatcherAggregatesAndBounds(t *testing.T) {
	w := &Watcher{pending: map[uint64]*event{}, domains: map[string]*domainInfo{}, agg: map[aggKey]*Denial{}, over: map[string]int{}}
	w.Track(100)
	feed := func(serial int, domain string, pid int, path string, alloc bool) {
		w.handle(auditAccess, fmt.Appendf(nil, `audit(1.1:%d): domain=%s blockers=fs.read_file path="%s" dev="vda" ino=1`, serial, domain, path))
		if alloc {
			w.handle(auditDomain, fmt.Appendf(nil, `audit(1.1:%d): domain=%s status=allocated mode=enforcing pid=%d uid=0 exe="/x" comm="x"`, serial, domain, pid))
		}
		w.handle(auditSyscall, fmt.Appendf(nil, `audit(1.1:%d): arch=c000003e syscall=257 success=no exit=-13 pid=%d exe="/usr/bin/cat"`, serial, pid+1))
		w.handle(auditEOE, fmt.Appendf(nil, `audit(1.1:%d): `, serial))
	}
	feed(1, "aa", 100, "/secret", true) // tracked: allocated by pid 100
	for i := range 5 {
		feed(2+i, "aa", 100, "/secret", false)
	}
	feed(10, "bb", 200, "/other", true) // someone else's sandbox
	for i := range MaxDenials + 10 {
		feed(100+i, "aa", 100, fmt.Sprintf("/f%d", i), false)
	}
	w.handle(auditDomain, []byte(`audit(1.1:999): domain=aa status=deallocated denials=300`))
	var stats WatchStats
	stats.KernelTotal = -1
	got := w.result(&stats)
	if len(got) != MaxDenials {
		t.Fatalf("%d denials listed, want the bound %d", len(got), MaxDenials)
	}
	if got[0].Path != "/secret" || got[0].Count != 6 || got[0].Pid != 101 || got[0].Exe != "/usr/bin/cat" {
		t.Errorf("first denial %+v, want /secret x6 by pid 101", got[0])
	}
	for _, d := range got {
		if d.Path == "/other" {
			t.Errorf("untracked domain listed: %+v", d)
		}
	}
	if stats.Unlisted != 11 || stats.KernelTotal != 300 {
		t.Errorf("stats %+v, want 11 unlisted and kernel total 300", stats)
	}
}
