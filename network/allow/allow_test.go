package allow

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	tests := []struct {
		in    string
		want  string
		kind  Kind
		ports []int
	}{
		{"pypi.org", "pypi.org", KindName, []int{80, 443}},
		{"PyPI.Org.", "pypi.org", KindName, []int{80, 443}},
		{"pypi.org:443", "pypi.org:443", KindName, []int{443}},
		{"pypi.org:0443", "pypi.org:443", KindName, []int{443}},
		{"pypi.org:1", "pypi.org:1", KindName, []int{1}},
		{"pypi.org:65535", "pypi.org:65535", KindName, []int{65535}},
		// A single label is a name (an internal registry on a search
		// domain); the address it resolves to is checked as any other.
		{"registry", "registry", KindName, []int{80, 443}},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", KindName, []int{80, 443}},
		{"a-b.c1.example", "a-b.c1.example", KindName, []int{80, 443}},
		{"1password.com", "1password.com", KindName, []int{80, 443}},
		{label63 + ".com", label63 + ".com", KindName, []int{80, 443}},
		{name253, name253, KindName, []int{80, 443}},
		{name253 + ".", name253, KindName, []int{80, 443}},
		{"*.pythonhosted.org", "*.pythonhosted.org", KindWildcard, []int{80, 443}},
		{"*.PythonHosted.org.:443", "*.pythonhosted.org:443", KindWildcard, []int{443}},
		{"*.a.b.example.com", "*.a.b.example.com", KindWildcard, []int{80, 443}},
		{"*.co.uk", "*.co.uk", KindWildcard, []int{80, 443}},
		{"10.1.2.3", "10.1.2.3", KindAddr, []int{80, 443}},
		{"10.1.2.3:5432", "10.1.2.3:5432", KindAddr, []int{5432}},
		{"0.0.0.0", "0.0.0.0", KindAddr, []int{80, 443}},
		{"10.0.0.0/8", "10.0.0.0/8", KindPrefix, []int{80, 443}},
		{"10.9.8.7/8", "10.0.0.0/8", KindPrefix, []int{80, 443}},
		{"10.0.0.0/8:443", "10.0.0.0/8:443", KindPrefix, []int{443}},
		{"10.1.2.3/32", "10.1.2.3/32", KindPrefix, []int{80, 443}},
		{"0.0.0.0/0", "0.0.0.0/0", KindPrefix, []int{80, 443}},
		{"2001:db8::1", "2001:db8::1", KindAddr, []int{80, 443}},
		{"2001:DB8:0::1", "2001:db8::1", KindAddr, []int{80, 443}},
		{"[2001:db8::1]", "2001:db8::1", KindAddr, []int{80, 443}},
		{"[2001:db8::1]:443", "[2001:db8::1]:443", KindAddr, []int{443}},
		// Without brackets the last group is part of the address, never a
		// port.
		{"2001:db8::1:443", "2001:db8::1:443", KindAddr, []int{80, 443}},
		{"2001:db8::1/32", "2001:db8::/32", KindPrefix, []int{80, 443}},
		{"[2001:db8::/32]:8443", "[2001:db8::/32]:8443", KindPrefix, []int{8443}},
		{"::/0", "::/0", KindPrefix, []int{80, 443}},
		// Mapped IPv4 is the IPv4 destination and is written as such.
		{"::ffff:10.1.2.3", "10.1.2.3", KindAddr, []int{80, 443}},
		{"[::ffff:10.1.2.3]:5432", "10.1.2.3:5432", KindAddr, []int{5432}},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", KindPrefix, []int{80, 443}},
		{"::ffff:0:0/96", "0.0.0.0/0", KindPrefix, []int{80, 443}},
		{"::fffe:0:0/95", "::fffe:0:0/95", KindPrefix, []int{80, 443}},
	}
	for _, tc := range tests {
		p, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if p.String() != tc.want || p.Kind() != tc.kind || !reflect.DeepEqual(p.Ports(), tc.ports) {
			t.Errorf("Parse(%q) = %q kind %d ports %v; want %q kind %d ports %v",
				tc.in, p.String(), p.Kind(), p.Ports(), tc.want, tc.kind, tc.ports)
		}
		q, err := Parse(p.String())
		if err != nil || q != p {
			t.Errorf("Parse(%q) re-parsed from %q = %v, %v; want the same pattern", tc.in, p.String(), q, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	label64 := strings.Repeat("a", 64)
	label63 := strings.Repeat("a", 63)
	name254 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 62)}, ".")
	tests := []struct{ in, want string }{
		{"", "empty; expected a host name"},
		{"*", "lone \"*\""},
		{"*:443", "lone \"*\""},
		{"*.com", "top-level domain \"com\""},
		{"*.com.", "top-level domain \"com\""},
		{"*.", "has no host name"},
		{"*.*.example.com", "not the whole first label"},
		{"a.*.example.com", "not the whole first label"},
		{"*example.com", "not the whole first label"},
		{"foo*.example.com", "not the whole first label"},
		{"example.*", "not the whole first label"},
		{"*." + name254[2:], "longer than 251 bytes"},
		{"pypi.org:", "empty port"},
		{"pypi.org:0", "port 0; a port is from 1 to 65535"},
		{"pypi.org:65536", "port 65536"},
		{"pypi.org:99999999999999999999", "port 99999999999999999999"},
		{"pypi.org:-1", "\"-1\", which is not a number"},
		{"pypi.org:+443", "\"+443\", which is not a number"},
		{"pypi.org:http", "\"http\", which is not a number"},
		{":443", "has no host name"},
		{"pypi.org:443:1", "not a valid IPv6 address"},
		{"bücher.de", "non-ASCII character 'ü'; write an internationalised name in its ASCII form (xn--...)"},
		{"\u212aeepass.info", "non-ASCII character"},
		{"a\xff.com", "byte 0xff"},
		{"-a.com", "\"-a\", which starts or ends with a hyphen"},
		{"a-.com", "\"a-\", which starts or ends with a hyphen"},
		{"a..com", "empty label"},
		{".a.com", "empty label"},
		{"a.com..", "empty label"},
		{label64 + ".com", "label of 64 bytes"},
		{name254, "longer than 253 bytes"},
		{"a_b.com", "contains '_'"},
		{" pypi.org", "contains ' '"},
		{"pypi.org\x00", "contains '\\x00'"},
		{"example.123", "all-numeric label"},
		{"https://pypi.org", "is a URL"},
		{"pypi.org/simple", "contains a path"},
		{strings.Repeat("a", 300), "longer than 259 bytes"},
		{"256.1.1.1", "not a valid IPv4 address"},
		{"010.0.0.1", "not a valid IPv4 address"},
		{"1.2.3", "not a valid IPv4 address"},
		{"10.1.2.3.", "not a valid IPv4 address"},
		{"10.0.0.0/33", "not a valid CIDR range"},
		{"10.0.0.0/8/8", "not a valid CIDR range"},
		{"10.0.0.0/", "not a valid CIDR range"},
		{"2001:zz::1", "not a valid IPv6 address"},
		{"2001:db8::/129", "not a valid CIDR range"},
		{"2001:db8::/32:443", "port after an IPv6 range without brackets"},
		{"fe80::1%eth0", "zone"},
		{"[fe80::1%eth0]:443", "zone"},
		{"fe80::1%eth0/64", "zone"},
		{"[10.1.2.3]:443", "IPv4 address in brackets"},
		{"[10.0.0.0/8]:443", "IPv4 range in brackets"},
		{"[2001:db8::1", "without \"]\""},
		{"[2001:db8::1]x", "has \"x\" after \"]\""},
		{"[2001:db8::1]:", "empty port"},
		{"[2001:db8::1]:0", "port 0"},
		{"[]:443", "not a valid IPv6 address"},
		{"[pypi.org]:443", "not a valid IPv6 address"},
	}
	for _, tc := range tests {
		p, err := Parse(tc.in)
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, %v; want a *PatternError", tc.in, p, err)
			continue
		}
		if pe.Pattern != tc.in || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "allow pattern ") {
			t.Errorf("Parse(%q): %v; want it to name the pattern and say %q", tc.in, err, tc.want)
		}
		if p != (Pattern{}) {
			t.Errorf("Parse(%q) returned %v with its error; want the zero Pattern", tc.in, p)
		}
	}
}

func TestPatternErrorKeepsLongPatternsShort(t *testing.T) {
	_, err := Parse(strings.Repeat("x", 400))
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error for a 400-byte pattern: %v; want one short line", err)
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList([]string{"pypi.org", "*.pythonhosted.org:443", "10.1.2.3:5432"})
	if err != nil || len(l) != 3 || l[1].String() != "*.pythonhosted.org:443" {
		t.Fatalf("ParseList = %v, %v", l, err)
	}
	if l, err := ParseList(nil); err != nil || len(l) != 0 {
		t.Fatalf("ParseList(nil) = %v, %v; want an empty list", l, err)
	}

	l, err = ParseList([]string{"pypi.org", "*", "ok.example", "bad_name", ""})
	if err == nil || l != nil {
		t.Fatalf("ParseList with bad entries = %v, %v; want nil and an error", l, err)
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("ParseList error %T does not carry each bad entry", err)
	}
	var bad []string
	for _, e := range joined.Unwrap() {
		var pe *PatternError
		if !errors.As(e, &pe) {
			t.Fatalf("ParseList error part %v is not a *PatternError", e)
		}
		bad = append(bad, pe.Pattern)
	}
	if want := []string{"*", "bad_name", ""}; !reflect.DeepEqual(bad, want) {
		t.Fatalf("ParseList reported %q; want every bad entry %q", bad, want)
	}
}

func mustList(t testing.TB, patterns ...string) List {
	t.Helper()
	l, err := ParseList(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAllowName(t *testing.T) {
	l := mustList(t, "pypi.org", "*.pythonhosted.org:443", "github.com:22", "k.example.com",
		"10.1.2.3:5432", "[2001:db8::1]:443", "192.168.0.0/16", "fe80::/10", "127.0.0.1")
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"pypi.org", 443, true},
		{"pypi.org", 80, true},
		{"PYPI.ORG.", 80, true},
		{"pypi.org", 22, false},
		{"pypi.org", 8080, false},
		{"www.pypi.org", 443, false},
		{"pypi.org.evil.com", 443, false},
		{"evilpypi.org", 443, false},
		{"pypi.org..", 443, false},
		{"pypi..org", 443, false},
		{".pypi.org", 443, false},
		{"pypi.org\x00", 443, false},
		{"pypi.org ", 443, false},
		{"", 443, false},
		{".", 443, false},
		{"pypi.org", 0, false},
		{"pypi.org", 65536, false},
		{"pypi.org", -443, false},
		{"files.pythonhosted.org", 443, true},
		{"a.b.pythonhosted.org", 443, true},
		{"Files.PythonHosted.Org.", 443, true},
		{"pythonhosted.org", 443, false},
		{".pythonhosted.org", 443, false},
		{"xpythonhosted.org", 443, false},
		{"files.pythonhosted.org", 80, false},
		{"files.pythonhosted.org.evil.com", 443, false},
		{"a_b.pythonhosted.org", 443, false},
		{"-a.pythonhosted.org", 443, false},
		{"github.com", 22, true},
		{"github.com", 443, false},
		{"k.example.com", 443, true},
		// The Kelvin sign lower-cases to "k" under Unicode rules; it must
		// not pass for the ASCII name.
		{"\u212a.example.com", 443, false},
		{"K.EXAMPLE.COM", 443, true},
		// IP literals match only address patterns.
		{"10.1.2.3", 5432, true},
		{"10.1.2.3", 443, false},
		{"::ffff:10.1.2.3", 5432, true},
		{"[::ffff:10.1.2.3]", 5432, true},
		{"2001:db8::1", 443, true},
		{"[2001:db8::1]", 443, true},
		{"[2001:db8::1]", 80, false},
		{"2001:db8::2", 443, false},
		{"192.168.1.1", 443, true},
		{"192.169.1.1", 443, false},
		{"127.0.0.1", 80, true},
		// Forms some resolvers read as 127.0.0.1 are neither an address
		// nor a name here.
		{"127.1", 80, false},
		{"0x7f.0.0.1", 80, false},
		{"127.0.0.1.", 80, false},
		{"[127.0.0.1]", 80, false},
		{"fe80::1%eth0", 443, false},
		{"[fe80::1%eth0]", 443, false},
		{"fe80::1", 443, true},
		{strings.Repeat("a.", 127) + "pythonhosted.org", 443, false},
	}
	for _, tc := range tests {
		if got := l.AllowName(tc.host, tc.port); got != tc.want {
			t.Errorf("AllowName(%q, %d) = %v; want %v", tc.host, tc.port, got, tc.want)
		}
	}
	// An IP pattern says nothing about names, and a name pattern nothing
	// about addresses.
	if mustList(t, "10.1.2.3").AllowName("ten.example", 443) {
		t.Error("an IP pattern allowed a name")
	}
	if mustList(t, "10.1.2.3.nip.io").AllowName("10.1.2.3", 443) {
		t.Error("a name pattern allowed an IP literal")
	}
	if (List{}).AllowName("pypi.org", 443) || (List{Pattern{}}).AllowName("pypi.org", 443) {
		t.Error("an empty list or a zero Pattern allowed a name")
	}
}

func TestAllowAddr(t *testing.T) {
	l := mustList(t, "10.1.2.3:5432", "192.168.0.0/16", "[2001:db8::/32]:443", "8.8.8.8", "[::ffff:172.16.0.0/108]:8443")
	tests := []struct {
		ip   string
		port int
		want bool
	}{
		{"10.1.2.3", 5432, true},
		{"10.1.2.3", 443, false},
		{"10.1.2.4", 5432, false},
		{"::ffff:10.1.2.3", 5432, true},
		{"192.168.0.0", 80, true},
		{"192.168.255.255", 443, true},
		{"192.167.255.255", 443, false},
		{"192.169.0.0", 443, false},
		{"192.168.1.1", 22, false},
		{"2001:db8::", 443, true},
		{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 443, true},
		{"2001:db9::", 443, false},
		{"2001:db8::1", 80, false},
		{"8.8.8.8", 80, true},
		{"8.8.8.8", 443, true},
		{"8.8.4.4", 443, false},
		{"172.16.0.1", 8443, true},
		{"172.31.255.255", 8443, true},
		{"172.32.0.0", 8443, false},
		{"2001:db8::1%eth0", 443, false},
		{"8.8.8.8", 0, false},
	}
	for _, tc := range tests {
		if got := l.AllowAddr(netip.MustParseAddr(tc.ip), tc.port); got != tc.want {
			t.Errorf("AllowAddr(%s, %d) = %v; want %v", tc.ip, tc.port, got, tc.want)
		}
	}
	if l.AllowAddr(netip.Addr{}, 443) {
		t.Error("AllowAddr allowed the zero Addr")
	}
	// An IPv6 range never covers IPv4, even the part that maps it.
	if mustList(t, "::/0").AllowAddr(netip.MustParseAddr("8.8.8.8"), 443) {
		t.Error("::/0 allowed an IPv4 address")
	}
}
