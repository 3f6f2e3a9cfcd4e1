package resolver

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/tooljail/tooljail/network/allow"
	"golang.org/x/net/dns/dnsmessage"
)

func mustList(t *testing.T, patterns ...string) allow.List {
	t.Helper()
	l, err := allow.ParseList(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestNamePorts(t *testing.T) {
	p := newPolicy(mustList(t, "pypi.org", "*.pythonhosted.org:443", "db.example:5432",
		"10.0.0.0/8:5432", "api.example:8443", "api.example:443", "1.2.3.4", "[2606:4700::1]:853"))
	if want := []int{80, 443, 5432, 8443}; !reflect.DeepEqual(p.ports, want) {
		t.Fatalf("ports %v, want %v (names' ports only, each once)", p.ports, want)
	}
	for _, tc := range []struct {
		name string
		want []int
	}{
		{"pypi.org", []int{80, 443}},
		{"PyPI.org.", []int{80, 443}},
		{"files.pythonhosted.org", []int{443}},
		{"a.b.pythonhosted.org", []int{443}},
		{"pythonhosted.org", nil},
		{"db.example", []int{5432}},
		{"api.example", []int{443, 8443}},
		{"x.pypi.org", nil},
		{"evil.example", nil},
		// Addresses are allowed by IP patterns, never as a DNS name.
		{"1.2.3.4", nil},
		{"10.1.2.3", nil},
		{"", nil},
		{"under_score.pythonhosted.org", nil},
	} {
		if got := p.namePorts(tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("namePorts(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScreen(t *testing.T) {
	l := mustList(t, "web.example", "db.example:5432", "10.0.0.0/8:5432", "10.9.9.9", "169.254.0.0/16")
	for _, tc := range []struct {
		what          string
		in            []netip.Addr
		ports         []int
		pass, dropped []netip.Addr
		reason        string
	}{
		{
			what:    "public pass; private, metadata, mapped private and ULA are dropped; named IPs pass",
			in:      addrs("1.2.3.4", "10.1.1.1", "10.9.9.9", "169.254.169.254", "169.254.1.1", "::ffff:10.1.1.1", "2606:4700::1", "fd00::1"),
			ports:   []int{80, 443},
			pass:    addrs("1.2.3.4", "10.9.9.9", "169.254.1.1", "2606:4700::1"),
			dropped: addrs("10.1.1.1", "169.254.169.254", "::ffff:10.1.1.1", "fd00::1"),
			reason:  allow.ReasonPrivate,
		},
		{
			what:    "a range for 5432 opens the name allowed on 5432",
			in:      addrs("10.1.1.1", "127.0.0.1"),
			ports:   []int{5432},
			pass:    addrs("10.1.1.1"),
			dropped: addrs("127.0.0.1"),
			reason:  allow.ReasonLoopback,
		},
		{
			what:    "but not a name allowed on 80 and 443",
			in:      addrs("127.0.0.1", "10.1.1.1"),
			ports:   []int{80, 443},
			dropped: addrs("127.0.0.1", "10.1.1.1"),
			reason:  allow.ReasonLoopback,
		},
		{
			what:  "one passing port is enough",
			in:    addrs("10.1.1.1"),
			ports: []int{443, 5432},
			pass:  addrs("10.1.1.1"),
		},
		{
			what:    "no port: nothing passes",
			in:      addrs("1.2.3.4"),
			dropped: addrs("1.2.3.4"),
			reason:  allow.ReasonBadPort,
		},
		{what: "no addresses", ports: []int{80}},
	} {
		pass, dropped, reason := screen(tc.in, tc.ports, l)
		if !reflect.DeepEqual(pass, tc.pass) || !reflect.DeepEqual(dropped, tc.dropped) || reason != tc.reason {
			t.Errorf("%s:\ngot  pass %v dropped %v %q\nwant pass %v dropped %v %q", tc.what, pass, dropped, reason, tc.pass, tc.dropped, tc.reason)
		}
	}
}

func TestServFail(t *testing.T) {
	for _, edns := range []bool{false, true} {
		msg := rawQuery(0x1234, "a.example", dnsmessage.TypeA, edns)
		q, err := parseQuery(msg)
		if err != nil {
			t.Fatal(err)
		}
		r := parseReply(t, servFail(q))
		if r.id != 0x1234 || r.rcode != 2 || r.qname != "a.example" || r.qtype != dnsmessage.TypeA || len(r.addrs) != 0 || r.edns != edns {
			t.Errorf("edns=%v: %+v, want SERVFAIL echoing the question", edns, r)
		}
	}
}

func TestFoldName(t *testing.T) {
	for in, want := range map[string]string{
		"a.b.evil.example":    "*.evil.example",
		"evil.example":        "*.evil.example",
		"localhost":           "*.localhost",
		"":                    "*",
		`a\046b.evil.example`: "*.evil.example",
		`x.a\046b`:            `*.x.a\046b`,
	} {
		if got := foldName(in); got != want {
			t.Errorf("foldName(%q) = %q, want %q", in, got, want)
		}
	}
}
