package landlock

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// TestMinABIFailsClosed: a MinABI above the kernel's fails before anything
// is enforced, naming both ABIs and the way out.
func TestMinABIFailsClosed(t *testing.T) {
	s := Probe()
	p := Policy{Rules: system(), MinABI: s.ABI + 1}
	got := run(t, scenario{Policy: p, Ops: []op{{Do: "read", Path: "/etc/passwd"}}}, nil)
	for _, want := range []string{ErrBelowMinABI.Error(), fmt.Sprintf("ABI %d", s.ABI), fmt.Sprintf("requires ABI %d", s.ABI+1), "--allow-degraded landlock"} {
		if !strings.Contains(got.Err, want) {
			t.Errorf("error %q does not mention %q", got.Err, want)
		}
	}
	if got.Results[0] != "ok" {
		t.Errorf("process restricted after a refused Restrict: %s", got.Results[0])
	}
	// In-process as well: the check happens before any change, so it is
	// safe here, and errors.Is must work for the jail.
	if _, err := Restrict(p); !errors.Is(err, ErrBelowMinABI) {
		t.Errorf("Restrict: %v, want ErrBelowMinABI", err)
	}
}

// TestEnforcedMatchesKernel: Enforced names the running ABI and exactly the
// rights that ABI handles.
func TestEnforcedMatchesKernel(t *testing.T) {
	s := requireABI(t, 1)
	got := run(t, scenario{Policy: Policy{Rules: system(), RestrictTCP: true}}, nil)
	if got.Err != "" {
		t.Fatalf("Restrict: %s", got.Err)
	}
	en := got.Enforced
	if en.ABI != s.ABI {
		t.Errorf("ABI = %d, want %d", en.ABI, s.ABI)
	}
	// Rights per ABI from the kernel's documentation, not from our tables.
	fsCount := map[int]int{1: 13, 2: 14, 3: 15, 4: 15, 5: 16, 6: 16, 7: 16, 8: 16, 9: 17, 10: 17, 11: 17}[s.ABI]
	if len(en.FSRights) != fsCount || en.FSRights[0] != "execute" {
		t.Errorf("FSRights = %v, want the first %d rights", en.FSRights, fsCount)
	}
	if s.ABI >= 5 && !slices.Contains(en.FSRights, "ioctl_dev") {
		t.Errorf("FSRights lacks ioctl_dev on ABI %d", s.ABI)
	}
	wantNet := []string{"bind_tcp", "connect_tcp"}
	if s.ABI < 4 {
		wantNet = nil
	}
	if !slices.Equal(en.NetRights, wantNet) {
		t.Errorf("NetRights = %v, want %v", en.NetRights, wantNet)
	}
	wantScopes := []string{"abstract_unix_socket", "signal"}
	if s.ABI < 6 {
		wantScopes = nil
	}
	if !slices.Equal(en.Scopes, wantScopes) {
		t.Errorf("Scopes = %v, want %v", en.Scopes, wantScopes)
	}
	if (s.ABI >= 7) != (len(en.Logging) == 2) {
		t.Errorf("Logging = %v on ABI %d", en.Logging, s.ABI)
	}
	if s.ABI < BestABI && !slices.Contains(en.Unavailable, "resolve_unix") {
		t.Errorf("Unavailable = %v, want resolve_unix listed on ABI %d", en.Unavailable, s.ABI)
	}
	t.Logf("ABI %d: fs %v net %v scopes %v logging %v unavailable %v", en.ABI, en.FSRights, en.NetRights, en.Scopes, en.Logging, en.Unavailable)
}

// TestConfigPerABI checks the per-ABI config without a kernel: what each
// ABI handles, what is reported unavailable, and that TCP is only handled
// when asked for.
func TestConfigPerABI(t *testing.T) {
	for abi := 1; abi <= BestABI; abi++ {
		cfg, en, flags := config(abi, true)
		// RestrictThread passes these flags itself; Restrict has them in
		// the go-landlock config.
		wantFlags := uint32(0)
		if abi >= 7 {
			wantFlags = ll.FlagRestrictSelfLogSameExecOff | ll.FlagRestrictSelfLogNewExecOn
		}
		if flags != wantFlags || (flags != 0) != strings.Contains(cfg.String(), "flags") {
			t.Errorf("ABI %d: restrict flags %#x, want %#x; config %v", abi, flags, wantFlags, cfg)
		}
		if got := len(en.FSRights) + countUnavailableFS(en.Unavailable); got != 17 {
			t.Errorf("ABI %d: %d fs rights handled+unavailable, want 17", abi, got)
		}
		if (abi >= 4) != (cfg.HandledAccessNet == tcpRights) {
			t.Errorf("ABI %d: net %v", abi, cfg.HandledAccessNet)
		}
		if abi >= 6 != (len(en.Scopes) == 2) {
			t.Errorf("ABI %d: scopes %v", abi, en.Scopes)
		}
		if abi >= 2 != slices.Contains(en.FSRights, "refer") {
			t.Errorf("ABI %d: refer handled = %v", abi, !slices.Contains(en.FSRights, "refer"))
		}
		cfg, en, _ = config(abi, false)
		if cfg.HandledAccessNet != 0 || en.NetRights != nil || slices.Contains(en.Unavailable, "bind_tcp") {
			t.Errorf("ABI %d without RestrictTCP handles net: %v %v", abi, en.NetRights, en.Unavailable)
		}
	}
}

func countUnavailableFS(u []string) int {
	n := 0
	for _, r := range u {
		if slices.Contains(fsRightNames, r) {
			n++
		}
	}
	return n
}

// TestAccessRights checks which rights each Access grants on directories,
// files and device nodes.
func TestAccessRights(t *testing.T) {
	type tc struct {
		a                 Access
		dir, dev          bool
		want, mustNotHave []string
	}
	for _, c := range []tc{
		{ReadExec, true, false, []string{"execute", "read_file", "read_dir"}, nil},
		{ReadExec, false, false, []string{"execute", "read_file"}, nil},
		{Read, true, false, []string{"read_file", "read_dir"}, nil},
		{ReadWrite, true, false, []string{"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym", "refer", "truncate", "resolve_unix"}, nil},
		{ReadWrite, false, false, []string{"execute", "write_file", "read_file", "truncate"}, nil},
		{ReadWrite, false, true, []string{"write_file", "read_file", "truncate", "ioctl_dev"}, nil},
		{Device, false, true, []string{"write_file", "read_file", "truncate", "ioctl_dev"}, nil},
		{Device, true, false, []string{"write_file", "read_file", "truncate", "ioctl_dev"}, nil},
		{List, true, false, []string{"read_dir"}, nil},
	} {
		set, err := c.a.rights(c.dir, c.dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(uint64(set), fsRightNames); !slices.Equal(got, c.want) {
			t.Errorf("%s dir=%v dev=%v: %v, want %v", c.a, c.dir, c.dev, got, c.want)
		}
		if !c.dir && set&^fileRights != 0 {
			t.Errorf("%s on a file has directory rights %v", c.a, set&^fileRights)
		}
	}
}

// TestNoLandlock plays a kernel without Landlock: with MinABI 0 Restrict
// says so honestly (ErrNotEnforced, ABI 0, no rights claimed); with MinABI 1
// it fails closed. Both return before touching the process, so this runs
// in-process.
func TestNoLandlock(t *testing.T) {
	saved := probe
	t.Cleanup(func() { probe = saved })
	probe = func() Support { return unsupported(unix.EOPNOTSUPP) }

	en, err := Restrict(Policy{Rules: system()})
	if !errors.Is(err, ErrNotEnforced) || en.ABI != 0 || len(en.FSRights) != 0 {
		t.Errorf("MinABI 0: %+v, %v; want ErrNotEnforced and nothing claimed", en, err)
	}
	if !strings.Contains(err.Error(), "lsm=") {
		t.Errorf("error %q does not tell how to enable Landlock", err)
	}
	if _, err := Restrict(Policy{Rules: system(), MinABI: 1}); !errors.Is(err, ErrBelowMinABI) || !strings.Contains(err.Error(), "ABI 0") {
		t.Errorf("MinABI 1: %v, want ErrBelowMinABI naming ABI 0", err)
	}
	if s := unsupported(unix.ENOSYS); s.ABI != 0 || !strings.Contains(s.Fix, "CONFIG_SECURITY_LANDLOCK") {
		t.Errorf("ENOSYS support %+v", s)
	}
}

// TestWatchDenialsUnprivileged: a supervisor without CAP_AUDIT_READ gets
// ErrNotObservable with the reason.
func TestWatchDenialsUnprivileged(t *testing.T) {
	requireABI(t, 7)
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a uid 65534 child")
	}
	got := run(t, scenario{NoRestrict: true, Ops: []op{{Do: "watch"}}}, nobody)
	if !strings.Contains(got.Results[0], ErrNotObservable.Error()) || !strings.Contains(got.Results[0], "CAP_AUDIT_READ") {
		t.Errorf("WatchDenials as uid 65534: %q", got.Results[0])
	}
}
