package landlock

import (
	"errors"
	"slices"
	"strings"
	"testing"

	gl "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// TestConfigPerABI checks the per-ABI config without a kernel: what each
// ABI handles, what is reported unavailable, the restrict_self flags, and
// that TCP is only handled when asked for.
func TestConfigPerABI(t *testing.T) {
	for abi := 1; abi <= BestABI; abi++ {
		cfg, en, flags := config(abi, true)
		wantFlags := uint32(0)
		if abi >= 7 {
			wantFlags = ll.FlagRestrictSelfLogSameExecOff | ll.FlagRestrictSelfLogNewExecOn
		}
		if flags != wantFlags || (flags != 0) != (len(en.Logging) == 2) {
			t.Errorf("ABI %d: restrict flags %#x, want %#x; logging %v", abi, flags, wantFlags, en.Logging)
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

// TestCompileRules checks the rights a rule compiles to for a directory, a
// file and a device node on a given ABI (the jail's init picks one of the
// three by what the path is), and the rules that cannot compile.
func TestCompileRules(t *testing.T) {
	rw7 := []string{"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym", "refer", "truncate"}
	dev := []string{"write_file", "read_file", "truncate", "ioctl_dev"}
	for _, c := range []struct {
		abi             int
		access          Access
		dir, file, devc []string
		dirOnly         bool
	}{
		{7, List, []string{"read_dir"}, nil, nil, true},
		{7, ReadExec, []string{"execute", "read_file", "read_dir"}, []string{"execute", "read_file"}, []string{"execute", "read_file"}, false},
		{7, Read, []string{"read_file", "read_dir"}, []string{"read_file"}, []string{"read_file"}, false},
		{7, ReadWrite, rw7, []string{"execute", "write_file", "read_file", "truncate"}, dev, false},
		{BestABI, ReadWrite, append(rw7[:15:15], "resolve_unix"), []string{"execute", "write_file", "read_file", "truncate"}, dev, false},
		{7, Device, dev, dev, dev, false},
		// Below ABI 5 ioctl_dev is not handled, below 3 truncate, below 2 refer.
		{4, Device, dev[:3], dev[:3], dev[:3], false},
		{2, ReadWrite, rw7[:14], []string{"execute", "write_file", "read_file"}, []string{"write_file", "read_file"}, false},
		{1, ReadWrite, rw7[:13], []string{"execute", "write_file", "read_file"}, []string{"write_file", "read_file"}, false},
	} {
		cfg, _, _ := config(c.abi, false)
		paths, _, err := compileRules(Policy{Rules: []Rule{{"/p", c.access}}}, cfg)
		if err != nil {
			t.Fatalf("ABI %d %s: %v", c.abi, c.access, err)
		}
		pp := paths[0]
		dir, file, devc := names(pp.Dir, fsRightNames), names(pp.File, fsRightNames), names(pp.Device, fsRightNames)
		if pp.Path != "/p" || pp.Access != c.access || pp.DirOnly != c.dirOnly || !slices.Equal(dir, c.dir) || !slices.Equal(file, c.file) || !slices.Equal(devc, c.devc) {
			t.Errorf("ABI %d %s: %s dir %v file %v dev %v dir-only %v;\nwant dir %v file %v dev %v dir-only %v",
				c.abi, c.access, pp.Path, dir, file, devc, pp.DirOnly, c.dir, c.file, c.devc, c.dirOnly)
		}
	}

	cfg, _, _ := config(7, false)
	for _, r := range []Rule{{"usr", Read}, {"/usr", "rwx"}} {
		if _, _, err := compileRules(Policy{Rules: []Rule{r}}, cfg); err == nil || !strings.Contains(err.Error(), r.Path) {
			t.Errorf("rule %+v: %v, want an error naming it", r, err)
		}
	}

	ports := Policy{RestrictTCP: true, BindTCP: []uint16{80, 80, 22}, ConnectTCP: []uint16{443}}
	for _, c := range []struct {
		abi         int
		restrictTCP bool
		want        []PortPlan
	}{
		{7, true, []PortPlan{{ll.AccessNetBindTCP, 22}, {ll.AccessNetBindTCP, 80}, {ll.AccessNetConnectTCP, 443}}},
		{7, false, nil}, // TCP not handled: no port rule
		{3, true, nil},  // no TCP rules below ABI 4 (the jail refuses the run)
	} {
		cfg, _, _ := config(c.abi, c.restrictTCP)
		_, got, err := compileRules(ports, cfg)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ABI %d restrict_tcp %v: ports %v, %v; want %v", c.abi, c.restrictTCP, got, err, c.want)
		}
	}
}

// TestRestrictConnectHandlesConnectOnly: RestrictConnect (the jail's
// allow mode) handles TCP connect and not bind, so the bind rules are
// dropped and binding stays free; RestrictTCP handles both, whatever
// RestrictConnect says; below ABI 4 neither is handled.
func TestRestrictConnectHandlesConnectOnly(t *testing.T) {
	connect := gl.AccessNetSet(ll.AccessNetConnectTCP)
	for _, c := range []struct {
		abi         int
		p           Policy
		wantHandled gl.AccessNetSet
		wantRights  []string
		wantPorts   []PortPlan
	}{
		{7, Policy{RestrictConnect: true, BindTCP: []uint16{80}, ConnectTCP: []uint16{3128, 53}}, connect, []string{"connect_tcp"},
			[]PortPlan{{ll.AccessNetConnectTCP, 53}, {ll.AccessNetConnectTCP, 3128}}},
		{7, Policy{RestrictConnect: true, RestrictTCP: true, BindTCP: []uint16{80}, ConnectTCP: []uint16{53}}, tcpRights, []string{"bind_tcp", "connect_tcp"},
			[]PortPlan{{ll.AccessNetBindTCP, 80}, {ll.AccessNetConnectTCP, 53}}},
		{3, Policy{RestrictConnect: true, ConnectTCP: []uint16{53}}, 0, nil, nil},
	} {
		cfg, en, _ := configNet(c.abi, c.p.handledTCP())
		if cfg.HandledAccessNet != c.wantHandled || !slices.Equal(en.NetRights, c.wantRights) {
			t.Errorf("ABI %d %+v: handled %v rights %v, want %v %v", c.abi, c.p, cfg.HandledAccessNet, en.NetRights, c.wantHandled, c.wantRights)
		}
		_, ports, err := compileRules(c.p, cfg)
		if err != nil || !slices.Equal(ports, c.wantPorts) {
			t.Errorf("ABI %d %+v: ports %v, %v; want %v", c.abi, c.p, ports, err, c.wantPorts)
		}
	}
}

// TestCompileABIDecisions plays kernels of several ABIs: below MinABI
// Compile fails closed (ErrBelowMinABI) naming both ABIs and the ways out;
// without Landlock and MinABI 0 it says so (ErrNotEnforced, ABI 0, nothing
// claimed) with the fix; at or above MinABI it compiles.
func TestCompileABIDecisions(t *testing.T) {
	saved := probe
	t.Cleanup(func() { probe = saved })
	erratum := Support{ABI: 5, KernelABI: 6, Reason: "kernel Landlock ABI 6 lacks the signal-scoping fix (erratum 2)", Fix: "update to a kernel with the Landlock erratum 2 fix"}
	for _, c := range []struct {
		name    string
		kernel  Support
		minABI  int
		wantErr error
		mention []string
	}{
		{"no landlock", unsupported(unix.EOPNOTSUPP), 0, ErrNotEnforced, []string{"not enabled at boot", "lsm="}},
		{"no landlock, min 1", unsupported(unix.EOPNOTSUPP), 1, ErrBelowMinABI, []string{"ABI 0", "requires ABI 1", "lsm=", "--allow-degraded landlock"}},
		{"below min", Support{ABI: 3, KernelABI: 3}, 4, ErrBelowMinABI, []string{"offers Landlock ABI 3", "requires ABI 4", "use a newer kernel with Landlock ABI 4", "lower min_abi", "--allow-degraded landlock"}},
		{"erratum downgrade below min", erratum, 6, ErrBelowMinABI, []string{"offers Landlock ABI 5", "requires ABI 6", "signal-scoping fix", "erratum 2 fix"}},
		{"erratum downgrade", erratum, 0, nil, nil},
		{"at min", Support{ABI: 7, KernelABI: 7}, 7, nil, nil},
	} {
		probe = func() Support { return c.kernel }
		plan, en, err := Compile(Policy{Rules: []Rule{{"/usr", ReadExec}}, MinABI: c.minABI})
		if c.wantErr == nil {
			if err != nil || en.ABI != c.kernel.ABI || len(plan.Paths) != 1 || plan.HandledFS == 0 {
				t.Errorf("%s: %+v, %+v, %v; want a plan for ABI %d", c.name, plan, en, err, c.kernel.ABI)
			}
			continue
		}
		if !errors.Is(err, c.wantErr) || en.ABI != c.kernel.ABI || len(en.FSRights) != 0 || len(plan.Paths) != 0 {
			t.Errorf("%s: %+v, %+v, %v; want %v and nothing claimed", c.name, plan, en, err, c.wantErr)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, m)
			}
		}
	}
	if s := unsupported(unix.ENOSYS); s.ABI != 0 || !strings.Contains(s.Fix, "CONFIG_SECURITY_LANDLOCK") {
		t.Errorf("ENOSYS support %+v", s)
	}
}

// TestEnforcedMatchesKernel: on this kernel, Compile's Enforced (whose
// ABI and rights the jail copies into the run report) names the running
// ABI and exactly the rights that ABI handles.
func TestEnforcedMatchesKernel(t *testing.T) {
	s := Probe()
	if s.ABI == 0 {
		t.Skipf("no Landlock here: %s", s.Reason)
	}
	_, en, err := Compile(Policy{Rules: []Rule{{"/usr", ReadExec}}, RestrictTCP: true})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
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

// jailPolicy is about the size of the default profile's policy (see
// jail/plan.go landlockPolicy).
func jailPolicy() Policy {
	rules := []Rule{{"/", List}, {"/proc", Read}, {"/etc", Read}}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		rules = append(rules, Rule{"/dev/" + n, Device})
	}
	rules = append(rules, Rule{"/dev/pts", Device}, Rule{"/dev/ptmx", Device}, Rule{"/dev/shm", ReadWrite})
	for _, p := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
		rules = append(rules, Rule{p, ReadExec})
	}
	for _, p := range []string{"/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/localtime", "/etc/ssl/certs"} {
		rules = append(rules, Rule{p, Read})
	}
	rules = append(rules, Rule{"/home/sandbox", ReadWrite}, Rule{"/tmp", ReadWrite}, Rule{"/work", ReadWrite})
	return Policy{Rules: rules, RestrictTCP: true, ConnectTCP: []uint16{3128}}
}

// BenchmarkCompile is what the supervisor spends on Landlock per run; the
// ruleset itself is built by the jail's init (restrict_bench_test.go
// measures whole runs).
func BenchmarkCompile(b *testing.B) {
	if Probe().ABI == 0 {
		b.Skip("no Landlock")
	}
	p := jailPolicy()
	for b.Loop() {
		if _, _, err := Compile(p); err != nil {
			b.Fatal(err)
		}
	}
}
