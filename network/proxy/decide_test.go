package proxy

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/hello"
)

func TestSplitHostPort(t *testing.T) {
	tests := []struct {
		in   string
		def  int
		host string
		port int
		ok   bool
	}{
		{"example.com:443", 0, "example.com", 443, true},
		{"example.com", 80, "example.com", 80, true},
		{"example.com:", 80, "example.com", 80, true},
		{"example.com", 0, "", 0, false}, // CONNECT needs a port
		{"example.com:", 0, "", 0, false},
		{"[2001:db8::1]:8443", 0, "[2001:db8::1]", 8443, true},
		{"[2001:db8::1]", 80, "[2001:db8::1]", 80, true},
		{"[::1]x", 80, "", 0, false},
		{"[::1", 80, "", 0, false},
		{"2001:db8::1", 80, "", 0, false}, // IPv6 needs brackets in an authority
		{"10.1.2.3:5432", 0, "10.1.2.3", 5432, true},
		{"example.com:0", 0, "", 0, false},
		{"example.com:65536", 0, "", 0, false},
		{"example.com:65535", 0, "example.com", 65535, true},
		{"example.com:0443", 0, "example.com", 443, true},
		{"example.com:+443", 0, "", 0, false},
		{"example.com:4 3", 0, "", 0, false},
		{"example.com:1000000000000000000000443", 0, "", 0, false},
		{":443", 0, "", 0, false},
		{"[]:443", 0, "", 0, false},
		{"", 80, "", 0, false},
	}
	for _, tt := range tests {
		host, port, ok := splitHostPort(tt.in, tt.def)
		if host != tt.host || port != tt.port || ok != tt.ok {
			t.Errorf("splitHostPort(%q, %d) = %q, %d, %v; want %q, %d, %v", tt.in, tt.def, host, port, ok, tt.host, tt.port, tt.ok)
		}
	}
}

func TestNewTarget(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		in   string
		host string
		ip   string
	}{
		{"Example.COM.", "example.com", ""},
		{"[2001:DB8::1]", "2001:db8::1", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1", "2001:db8::1"},
		{"::ffff:10.1.2.3", "10.1.2.3", "10.1.2.3"},
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"fe80::1%eth0", "fe80::1%eth0", "fe80::1%eth0"},
		// The Kelvin sign is not folded onto k.
		{"\u212aexample.com", "\u212aexample.com", ""},
		{"bad\xffname", "bad?name", ""},
		{long, long[:maxHostLen], ""},
	}
	for _, tt := range tests {
		got := newTarget(tt.in, 443)
		var ip netip.Addr
		if tt.ip != "" {
			ip = netip.MustParseAddr(tt.ip)
		}
		if got.host != tt.host || got.ip != ip || got.port != 443 {
			t.Errorf("newTarget(%q) = %+v; want host %q ip %v", tt.in, got, tt.host, ip)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	l := mustList(t, "pypi.org", "*.pythonhosted.org:443", "10.1.2.3:5432", "[2001:db8::/32]:443")
	tests := []struct {
		host string
		port int
		want string
	}{
		{"pypi.org", 443, ""},
		{"PyPI.org.", 80, ""},
		{"pypi.org", 8080, ReasonNotAllowed},
		{"files.pythonhosted.org", 443, ""},
		{"files.pythonhosted.org", 80, ReasonNotAllowed},
		{"pythonhosted.org", 443, ReasonNotAllowed},
		{"evil.com", 443, ReasonNotAllowed},
		{"10.1.2.3", 5432, ""},
		{"10.1.2.3", 443, ReasonNotAllowed},
		{"[2001:db8::5]", 443, ""},
		{"2001:db8::5", 443, ""},
		// A name is never allowed by an IP pattern, nor an IP by a name.
		{"93.184.216.34", 443, ReasonNotAllowed},
		{"fe80::1%eth0", 443, ReasonNotAllowed},
		{"\u212aypi.org", 443, ReasonNotAllowed},
		{"pypi.org", 0, ReasonBadRequest},
		{"", 443, ReasonBadRequest},
	}
	for _, tt := range tests {
		if got := checkTarget(newTarget(tt.host, tt.port), l); got != tt.want {
			t.Errorf("checkTarget(%q, %d) = %q, want %q", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestSelectAddrs(t *testing.T) {
	addrs := func(s ...string) []netip.Addr {
		var a []netip.Addr
		for _, x := range s {
			a = append(a, netip.MustParseAddr(x))
		}
		return a
	}
	open := mustList(t, "10.1.2.3:443", "169.254.0.0/16:443")
	tests := []struct {
		name    string
		in      []netip.Addr
		l       allow.List
		pass    []netip.Addr
		refused string
		reason  string
	}{
		{"public", addrs("93.184.216.34", "2606:2800:220:1::1"), nil, addrs("93.184.216.34", "2606:2800:220:1::1"), "", ""},
		{"only the public one of a mixed answer", addrs("10.0.0.1", "93.184.216.34", "127.0.0.1"), nil, addrs("93.184.216.34"), "", ""},
		{"mapped is unmapped", addrs("::ffff:93.184.216.34"), nil, addrs("93.184.216.34"), "", ""},
		{"all refused: the first decides", addrs("169.254.169.254", "10.0.0.1"), nil, nil, "169.254.169.254", allow.ReasonMetadata},
		{"loopback", addrs("127.0.0.1"), nil, nil, "127.0.0.1", allow.ReasonLoopback},
		{"ULA", addrs("fd00::1"), nil, nil, "fd00::1", allow.ReasonPrivate},
		{"mapped private", addrs("::ffff:10.0.0.1"), nil, nil, "::ffff:10.0.0.1", allow.ReasonPrivate},
		{"NAT64 of metadata", addrs("64:ff9b::a9fe:a9fe"), nil, nil, "64:ff9b::a9fe:a9fe", allow.ReasonMetadata},
		{"named private passes", addrs("10.1.2.3"), open, addrs("10.1.2.3"), "", ""},
		{"a link-local range does not open metadata", addrs("169.254.169.254", "169.254.1.1"), open, addrs("169.254.1.1"), "", ""},
		{"no answer", nil, nil, nil, "", ReasonDNS},
	}
	for _, tt := range tests {
		pass, refused, reason := selectAddrs(tt.in, 443, tt.l)
		var wantRefused netip.Addr
		if tt.refused != "" {
			wantRefused = netip.MustParseAddr(tt.refused)
		}
		if !reflect.DeepEqual(pass, tt.pass) || refused != wantRefused || reason != tt.reason {
			t.Errorf("%s: selectAddrs = %v, %v, %q; want %v, %v, %q", tt.name, pass, refused, reason, tt.pass, wantRefused, tt.reason)
		}
	}
}

func TestCheckHello(t *testing.T) {
	name := newTarget("pypi.org", 443)
	ip := newTarget("93.184.216.34", 443)
	tests := []struct {
		name string
		t    target
		h    hello.Hello
		want string
	}{
		{"matching name", name, hello.Hello{SNI: true, ServerName: "pypi.org"}, ""},
		{"other name", name, hello.Hello{SNI: true, ServerName: "evil.com"}, ReasonSNIMismatch},
		{"subdomain is another name", name, hello.Hello{SNI: true, ServerName: "a.pypi.org"}, ReasonSNIMismatch},
		{"no name", name, hello.Hello{}, ReasonNoSNI},
		{"ECH with the outer name", name, hello.Hello{SNI: true, ServerName: "pypi.org", ECH: true}, ReasonECH},
		{"IP literal without SNI", ip, hello.Hello{}, ""},
		{"IP literal with a name", ip, hello.Hello{SNI: true, ServerName: "any.example"}, ""},
		{"IP literal with ECH", ip, hello.Hello{ECH: true}, ReasonECH},
	}
	for _, tt := range tests {
		if got := checkHello(tt.t, tt.h); got != tt.want {
			t.Errorf("%s: checkHello = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := notTLS(name); got != ReasonNoSNI {
		t.Errorf("notTLS(name:443) = %q, want %q", got, ReasonNoSNI)
	}
	for _, tt := range []target{newTarget("pypi.org", 22), ip} {
		if got := notTLS(tt); got != "" {
			t.Errorf("notTLS(%+v) = %q, want none", tt, got)
		}
	}
}

func TestSameHost(t *testing.T) {
	tests := []struct {
		url, header string
		want        bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "EXAMPLE.com.", true},
		{"example.com", "example.com:80", true},
		{"example.com:80", "example.com", true},
		{"example.com:8080", "example.com:8080", true},
		{"example.com:8080", "example.com", false},
		{"example.com", "example.com:8080", false},
		{"example.com", "evil.com", false},
		{"[2001:db8::1]", "[2001:DB8:0::1]:80", true},
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"example.com", "", false},
		{"example.com", "example.com:x", false},
		{"example.com", "example.com evil.com", false},
	}
	for _, tt := range tests {
		h, p, ok := splitHostPort(tt.url, 80)
		if !ok {
			t.Fatalf("bad test URL host %q", tt.url)
		}
		if got := sameHost(newTarget(h, p), tt.header); got != tt.want {
			t.Errorf("sameHost(%q, %q) = %v, want %v", tt.url, tt.header, got, tt.want)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	for reason, want := range map[string]int{
		ReasonNotAllowed: 403, allow.ReasonMetadata: 403, ReasonHostMismatch: 403,
		ReasonDNS: 502, ReasonConnect: 502, ReasonConnLimit: 429, ReasonByteLimit: 503, ReasonBadRequest: 400,
	} {
		if got := httpStatus(reason); got != want {
			t.Errorf("httpStatus(%q) = %d, want %d", reason, got, want)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(refusal(403, ReasonNotAllowed, "a\r\nb", 443)))), nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := bodyOf(t, resp); resp.StatusCode != 403 || body != "tooljail proxy: a??b:443: not in allowlist\n" {
		t.Errorf("refusal: %d %q", resp.StatusCode, body)
	}
}

func TestSOCKSCode(t *testing.T) {
	opErr := func(e error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", e)}
	}
	tests := []struct {
		reason string
		err    error
		want   byte
	}{
		{"", nil, socksOK},
		{ReasonNotAllowed, nil, socksNotAllowed},
		{allow.ReasonMetadata, nil, socksNotAllowed},
		{ReasonByteLimit, nil, socksNotAllowed},
		{ReasonDNS, nil, socksHostUnreachable},
		{ReasonConnect, opErr(syscall.ECONNREFUSED), socksRefused},
		{ReasonConnect, opErr(syscall.ENETUNREACH), socksNetUnreachable},
		{ReasonConnect, opErr(syscall.EHOSTUNREACH), socksHostUnreachable},
		{ReasonConnect, os.ErrDeadlineExceeded, socksHostUnreachable},
		{ReasonConnect, errors.New("other"), socksGeneralFailure},
		{ReasonConnLimit, nil, socksGeneralFailure},
		{ReasonBadRequest, nil, socksGeneralFailure},
	}
	for _, tt := range tests {
		if got := socksCode(tt.reason, tt.err); got != tt.want {
			t.Errorf("socksCode(%q, %v) = %#x, want %#x", tt.reason, tt.err, got, tt.want)
		}
	}
}

func TestReadHead(t *testing.T) {
	tests := []struct {
		in, head string
		max      int
		err      error
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 100, nil},
		{"GET / HTTP/1.1\n\nBODY", "GET / HTTP/1.1\n\n", 100, nil},
		{"GET / HTTP/1.1\r\nHost: a\r\n", "GET / HTTP/1.1\r\nHost: a\r\n", 100, nil}, // cut: EOF
		{"GET / HTTP/1.1\r\nX: " + strings.Repeat("y", 200) + "\r\n\r\n", "", 100, errHeadTooLarge},
		// Exactly max is accepted.
		{"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", 18, nil},
		{"GET / HTTP/1.1\r\n\r\n", "", 17, errHeadTooLarge},
	}
	for _, tt := range tests {
		// A small buffer makes long lines come in pieces.
		head, err := readHead(bufio.NewReaderSize(strings.NewReader(tt.in), 16), tt.max)
		switch {
		case tt.err != nil:
			if !errors.Is(err, tt.err) || len(head) > tt.max+16 {
				t.Errorf("readHead(%.30q): %d bytes, %v; want %v within max and one buffer", tt.in, len(head), err, tt.err)
			}
		case strings.HasSuffix(tt.head, "\n\n") || strings.HasSuffix(tt.head, "\r\n\r\n"):
			if err != nil || string(head) != tt.head {
				t.Errorf("readHead(%.30q) = %q, %v; want %q", tt.in, head, err, tt.head)
			}
		default:
			if err == nil || string(head) != tt.head {
				t.Errorf("readHead(%.30q) = %q, %v; want %q and EOF", tt.in, head, err, tt.head)
			}
		}
	}
}

func TestRemoveHopByHop(t *testing.T) {
	h := http.Header{
		"Connection":          {"keep-alive, X-Secret", "Upgrade"},
		"X-Secret":            {"1"},
		"Proxy-Authorization": {"Basic eDp5"},
		"Proxy-Connection":    {"keep-alive"},
		"Keep-Alive":          {"timeout=5"},
		"Upgrade":             {"websocket"},
		"Te":                  {"trailers"},
		"Accept":              {"*/*"},
	}
	removeHopByHop(h)
	if want := (http.Header{"Accept": {"*/*"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("after removeHopByHop: %v, want %v", h, want)
	}
}

func TestRefresh(t *testing.T) {
	now := time.Unix(1000, 0)
	idle := 80 * time.Second
	tests := []struct {
		name      string
		set, want time.Time
		move      bool
	}{
		{"never set", time.Time{}, now.Add(idle), true},
		{"passed", now.Add(-time.Second), now.Add(idle), true},
		{"a small step forward", now.Add(idle - 5*time.Second), now.Add(idle), false},
		{"a step of an eighth", now.Add(idle - 10*time.Second), now.Add(idle), true},
		{"earlier", now.Add(idle), now.Add(time.Second), true},
	}
	for _, tt := range tests {
		if got := refresh(tt.set, tt.want, now, idle); got != tt.move {
			t.Errorf("%s: refresh = %v, want %v", tt.name, got, tt.move)
		}
	}
}

func TestReserve(t *testing.T) {
	p, err := New(Config{Limits: Limits{MaxBytes: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, n := range []int{60, 30, 20, 5} {
		got = append(got, p.reserve(n))
	}
	if want := []int{60, 30, 10, 0}; !reflect.DeepEqual(got, want) || !p.exhausted() {
		t.Errorf("reserve: %v, exhausted %v; want %v and exhausted", got, p.exhausted(), want)
	}
	unlimited, _ := New(Config{})
	if unlimited.reserve(1<<40) != 1<<40 || unlimited.exhausted() {
		t.Error("no MaxBytes must mean no cap")
	}
}

func TestLimitsValidated(t *testing.T) {
	for _, lim := range []Limits{{MaxConns: -1}, {MaxBytes: -1}, {IdleTimeout: -1}, {HeaderTimeout: -1}, {MaxHeaderBytes: -1}, {ConnectTimeout: -1}} {
		if _, err := New(Config{Limits: lim}); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("New(%+v): %v, want an error naming the negative field", lim, err)
		}
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{MaxConns: DefaultMaxConns, IdleTimeout: DefaultIdleTimeout, HeaderTimeout: DefaultHeaderTimeout,
		MaxHeaderBytes: DefaultMaxHeaderBytes, ConnectTimeout: DefaultConnectTimeout}
	if p.lim != want {
		t.Errorf("defaults %+v, want %+v", p.lim, want)
	}
}

func TestReasonsDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		if r == "" || seen[r] || r != strings.ToLower(r) || strings.ContainsAny(r, "\n:") {
			t.Errorf("reason %q: empty, repeated, or not one short lower-case phrase", r)
		}
		seen[r] = true
	}
}

func TestMoveReadDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	const idle = 160 * time.Second // idle/8 = 20s, idle/16 = 10s
	for _, c := range []struct {
		left time.Duration // set - now
		want bool
	}{
		{-time.Second, true}, // passed
		{0, true},
		{9 * time.Second, true}, // under idle/16
		{10 * time.Second, false},
		{20 * time.Second, false}, // just set
		{21 * time.Second, true},  // r.Read set a longer one
	} {
		if got := moveReadDeadline(now.Add(c.left), now, idle); got != c.want {
			t.Errorf("%v left: moveReadDeadline = %v, want %v", c.left, got, c.want)
		}
	}
}
