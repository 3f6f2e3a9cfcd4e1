package jail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// The allow mode's Spec: every pattern is checked (all bad ones named at
// once), a list needs the allow mode, and the limits may not be negative.
func TestValidateAllowMode(t *testing.T) {
	s := validSpec()
	s.Net, s.Allow = NetAllow, []string{"pypi.org", "*.pythonhosted.org:443", "10.0.0.0/8", "[2001:db8::1]:443"}
	if err := s.Validate(); err != nil {
		t.Fatalf("valid allow spec: %v", err)
	}
	s.Allow = nil
	if err := s.Validate(); err != nil {
		t.Errorf("allow mode without entries (allows nothing): %v", err)
	}
	for _, c := range []struct {
		net   NetMode
		allow []string
		conns int
		want  []string
	}{
		{NetAllow, []string{"pypi.org", "http://x.org", "10.0.0.0/40"}, 0, []string{`"http://x.org"`, `"10.0.0.0/40"`}},
		{NetAllow, []string{"*"}, 0, []string{`allow pattern "*"`}},
		{NetNone, []string{"pypi.org"}, 0, []string{`need network mode "allow", not "none"`}},
		{NetHost, []string{"pypi.org"}, 0, []string{`not "host"`}},
		{NetAllow, nil, -1, []string{"must not be negative"}},
	} {
		s := validSpec()
		s.Net, s.Allow, s.Limits.NetConns = c.net, c.allow, c.conns
		err := s.Validate()
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("net %s allow %q conns %d: %v, want %q", c.net, c.allow, c.conns, err, w)
			}
		}
	}
}

// In the allow mode the proxy variables are the jail's, whatever the
// Spec said under those names (in any case); other modes keep the Spec's.
func TestCommandEnv(t *testing.T) {
	s := validSpec()
	s.Env = []string{"A=1", "HTTP_PROXY=http://evil:1", "https_proxy=http://evil:2", "No_Proxy=*", "PATH=/bin"}
	if got := commandEnv(s); !slices.Equal(got, s.Env) {
		t.Errorf("mode none: %q, want the Spec's", got)
	}
	s.Net = NetAllow
	got := commandEnv(s)
	want := []string{"A=1", "PATH=/bin",
		"HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:1080", "all_proxy=socks5h://127.0.0.1:1080",
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"}
	if !slices.Equal(got, want) {
		t.Errorf("allow mode env\n got %q\nwant %q", got, want)
	}
}

// Landlock limits TCP connect to the listeners' ports from ABI 4 on, and
// the report says so; below it, or without Landlock, it says why not.
func TestAllowEnforcement(t *testing.T) {
	ll := &landlock.Policy{ConnectTCP: []uint16{5432}}
	e := allowEnforcement(ll, 4)
	if !ll.RestrictConnect || ll.RestrictTCP || !slices.Equal(ll.ConnectTCP, []uint16{5432, 53, 1080, 3128}) {
		t.Errorf("ABI 4 policy: %+v", ll)
	}
	if e.LandlockConnect != "tcp connect only to ports 53, 1080, 3128, 5432" || e.HTTPProxy != "127.0.0.1:3128" || e.SOCKS5Proxy != "127.0.0.1:1080" || e.DNS != "127.0.0.1:53" {
		t.Errorf("ABI 4 enforcement: %+v", e)
	}
	ll = &landlock.Policy{}
	if e := allowEnforcement(ll, 2); ll.RestrictConnect || !strings.Contains(e.LandlockConnect, "ABI 2 has no TCP rules") {
		t.Errorf("ABI 2: %+v, %+v", ll, e)
	}
	if e := allowEnforcement(nil, 7); !strings.HasPrefix(e.LandlockConnect, "not enforced: Landlock is off") {
		t.Errorf("no Landlock: %+v", e)
	}
}

// The test resolver's table: entries parse or fail naming themselves, and
// a lookup answers a family's addresses only (an IPv4-mapped one is IPv6
// to DNS but an IPv4 address to connect to, as the host resolver's).
func TestParseHosts(t *testing.T) {
	h, err := parseHosts(" meta.test=169.254.169.254 ; Dual.test=10.1.2.3,fd00::1;mapped.test=::ffff:10.1.2.3;")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ network, host, want string }{
		{"ip", "meta.test", "[169.254.169.254]"},
		{"ip6", "meta.test", "not found"},
		{"ip4", "dual.test", "[10.1.2.3]"},
		{"ip6", "DUAL.test", "[fd00::1]"},
		{"ip", "dual.test", "[10.1.2.3 fd00::1]"},
		{"ip4", "mapped.test", "[::ffff:10.1.2.3]"},
		{"ip6", "mapped.test", "not found"},
		{"ip", "other.test", "not found"},
	} {
		got, err := h.LookupNetIP(context.Background(), c.network, c.host)
		s := fmt.Sprint(got)
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			s = "not found"
		}
		if s != c.want {
			t.Errorf("%s %s: %s (%v), want %s", c.network, c.host, s, err, c.want)
		}
	}
	for _, bad := range []string{"meta.test", "=10.0.0.1", "a.test=", "a.test=10.0.0.300", "a.test=10.0.0.1,,"} {
		if _, err := parseHosts(bad); err == nil || !strings.Contains(err.Error(), "hosts entry") {
			t.Errorf("%q: %v, want an error naming the entry", bad, err)
		}
	}
}
