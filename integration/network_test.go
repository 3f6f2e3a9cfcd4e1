package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The network allow mode (--net allow, docs/network.md): every upstream is
// a server this test starts on the host's loopback, which the allow mode
// refuses unless an entry names its address and port, so each test allows
// exactly what it reaches and proves the rest refused, from inside the jail
// (tjhelper's httpget, tunnel, dns, connect, udp) and on the host (what the
// servers received), and in the report.

// netReport is the part of the report the allow mode adds.
type netReport struct {
	Network []struct {
		Proto     string `json:"proto"`
		Host      string `json:"host"`
		Port      int    `json:"port"`
		DNSType   string `json:"dns_type"`
		Address   string `json:"address"`
		BytesUp   int64  `json:"bytes_up"`
		BytesDown int64  `json:"bytes_down"`
		Decision  string `json:"decision"`
		Cut       string `json:"cut"`
		Count     int    `json:"count"`
	} `json:"network"`
	Violations []struct {
		Kind   string `json:"kind"`
		Host   string `json:"host"`
		Port   int    `json:"port"`
		Reason string `json:"reason"`
		Count  int    `json:"count"`
	} `json:"violations"`
	NetworkLimitHits map[string]int `json:"network_limit_hits"`
	Limits           struct {
		NetConns int   `json:"net_connections"`
		NetBytes int64 `json:"net_bytes"`
	} `json:"limits"`
	Enforcement struct {
		Namespaces map[string]bool `json:"namespaces"`
		Network    *struct {
			Mode            string `json:"mode"`
			HTTPProxy       string `json:"http_proxy"`
			LandlockConnect string `json:"landlock_connect"`
		} `json:"network"`
	} `json:"enforcement"`
}

func (o *outcome) net(t *testing.T) netReport {
	t.Helper()
	var r netReport
	if err := json.Unmarshal(o.reportRaw, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return r
}

// entry finds the report's entry for proto, host and port (port 0: any),
// or fails.
func (r netReport) entry(t *testing.T, o *outcome, proto, host string, port int, decision string) (up, down int64, address string) {
	t.Helper()
	for _, e := range r.Network {
		if e.Proto == proto && e.Host == host && (port == 0 || e.Port == port) && e.Decision == decision {
			return e.BytesUp, e.BytesDown, e.Address
		}
	}
	t.Errorf("no network entry %s %s:%d %q in the report\n%s", proto, host, port, decision, o)
	return 0, 0, ""
}

func (r netReport) violation(t *testing.T, o *outcome, host string, port int, reason string) {
	t.Helper()
	for _, v := range r.Violations {
		if v.Kind == "network" && v.Host == host && v.Port == port && v.Reason == reason && v.Count >= 1 {
			return
		}
	}
	t.Errorf("no network violation %s:%d %q in the report\n%s", host, port, reason, o)
}

// upstream is a server on the host's loopback that counts its requests
// and answers with a marker.
type upstream struct {
	*httptest.Server
	mark string
	hits atomic.Int64
}

func newUpstream(t *testing.T, tls bool) *upstream {
	u := &upstream{mark: marker("upstream")}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		fmt.Fprintln(w, u.mark)
	})
	if tls {
		u.Server = httptest.NewTLSServer(h) // 127.0.0.1, a certificate the helper does not check
	} else {
		u.Server = httptest.NewServer(h)
	}
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port(t *testing.T) int {
	_, p, err := net.SplitHostPort(u.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// httpValue is the helper's httpget and tunnel result.
type httpValue struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Bytes  int    `json:"bytes"` // with Error: the body was cut after Bytes
	Error  string `json:"error"`
}

// Through the allow mode the command reaches exactly the allowed upstreams:
// plain HTTP through the HTTP proxy and SOCKS5, HTTPS through CONNECT with
// the right SNI; it is refused another port of the same host, a CONNECT
// whose ClientHello names another server, and DNS for a name not on the
// list; a connection that bypasses the proxies, TCP or UDP, fails at once.
// The host's servers see only the allowed requests, and the report lists
// each connection and refusal.
func TestNetAllowReachesOnlyTheList(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		plain, other, secure := newUpstream(t, false), newUpstream(t, false), newUpstream(t, true)
		pp, op, sp := plain.port(t), other.port(t), secure.port(t)
		w := u.workdir(t)
		plainURL := fmt.Sprintf("http://127.0.0.1:%d/", pp)
		o := u.jail(t, w, []string{"--net", "allow",
			"--allow-host", fmt.Sprintf("127.0.0.1:%d", pp),
			"--allow-host", fmt.Sprintf("localhost:%d", sp), "--allow-host", fmt.Sprintf("127.0.0.1:%d", sp)},
			"httpget", "http://127.0.0.1:3128", plainURL, ";",
			"httpget", "socks5://127.0.0.1:1080", plainURL, ";",
			"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://127.0.0.1:%d/", op), ";",
			"tunnel", "127.0.0.1:3128", fmt.Sprintf("localhost:%d", sp), "localhost", ";",
			"tunnel", "127.0.0.1:3128", fmt.Sprintf("localhost:%d", sp), "evil.example", ";",
			"httpget", "-", plainURL, ";",
			"connect", "192.0.2.1:80", ";",
			"udp", "192.0.2.1:53", ";",
			"dns", "evil.example", "TXT", ";",
			"dns", "localhost", "A", ";",
			"env", ";",
			"dns", "evil.example", "A", "tcp", ";",
			"dns", "localhost", "A", "tcp")
		l := o.ok(t, 13)
		var v httpValue
		for i, how := range []string{"HTTP proxy", "SOCKS5"} {
			o.value(t, i, &v)
			if v.Status != 200 || v.Body != plain.mark {
				t.Errorf("allowed upstream through the %s: %+v, want 200 and its marker\n%s", how, v, o)
			}
		}
		o.value(t, 2, &v)
		if v.Status != 403 || !strings.Contains(v.Body, "not in allowlist") {
			t.Errorf("another port of the same host: %+v, want 403 not in allowlist", v)
		}
		o.value(t, 3, &v)
		if v.Status != 200 || v.Body != secure.mark {
			t.Errorf("HTTPS through CONNECT with the right SNI: %+v, want 200 and the marker\n%s", v, o)
		}
		if !strings.HasPrefix(l[4], "error ") {
			t.Errorf("CONNECT with a mismatched SNI: %s, want an error", l[4])
		}
		for i, what := range []string{"direct HTTP to the upstream's address", "direct TCP out", "UDP out"} {
			if !strings.HasPrefix(l[5+i], "error ") && !strings.HasPrefix(l[5+i], "errno ") {
				t.Errorf("%s: %s, want a connection error", what, l[5+i])
			}
		}
		var dns struct{ Rcode, Answers int }
		o.value(t, 8, &dns)
		if dns.Rcode != 5 || dns.Answers != 0 {
			t.Errorf("DNS for a name not on the list: %+v, want REFUSED (5)", dns)
		}
		o.value(t, 9, &dns)
		if dns.Rcode != 0 || dns.Answers != 1 {
			t.Errorf("DNS for an allowed name: %+v, want one answer", dns)
		}
		o.value(t, 11, &dns)
		if dns.Rcode != 5 || dns.Answers != 0 {
			t.Errorf("DNS over TCP for a name not on the list: %+v, want REFUSED (5)", dns)
		}
		o.value(t, 12, &dns)
		if dns.Rcode != 0 || dns.Answers != 1 {
			t.Errorf("DNS over TCP for an allowed name: %+v, want one answer", dns)
		}
		for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:1080", "NO_PROXY=localhost,127.0.0.1"} {
			if !strings.Contains(l[10], want) {
				t.Errorf("environment lacks %s: %s", want, l[10])
			}
		}
		// The host's side: the plain upstream served the two proxied
		// requests only (not the direct one), the other none, the TLS one
		// the request with the right server name only.
		if n := plain.hits.Load(); n != 2 {
			t.Errorf("the allowed upstream served %d requests, want 2 (the proxied ones)", n)
		}
		if n := other.hits.Load(); n != 0 {
			t.Errorf("the upstream not on the list served %d requests", n)
		}
		if n := secure.hits.Load(); n != 1 {
			t.Errorf("the TLS upstream served %d requests, want 1 (the mismatched SNI refused)", n)
		}

		r := o.net(t)
		if up, down, addr := r.entry(t, o, "http", "127.0.0.1", pp, "allowed"); up == 0 || down == 0 || addr != "127.0.0.1" {
			t.Errorf("plain HTTP entry: up %d down %d address %q", up, down, addr)
		}
		r.entry(t, o, "socks5", "127.0.0.1", pp, "allowed")
		if _, down, _ := r.entry(t, o, "connect", "localhost", sp, "allowed"); down == 0 {
			t.Errorf("CONNECT entry: nothing came down")
		}
		r.entry(t, o, "connect", "localhost", sp, "sni mismatch")
		r.entry(t, o, "http", "127.0.0.1", op, "not in allowlist")
		r.entry(t, o, "dns", "evil.example", 0, "dns refused")
		r.entry(t, o, "dns", "localhost", 0, "allowed")
		r.violation(t, o, "127.0.0.1", op, "not in allowlist")
		r.violation(t, o, "localhost", sp, "sni mismatch")
		r.violation(t, o, "evil.example", 0, "dns refused")
		if !strings.Contains(o.stderr, "network refusal(s)") {
			t.Errorf("no summary of the refusals on stderr\n%s", o)
		}
		if e := r.Enforcement.Network; e == nil || e.Mode != "allow" || e.HTTPProxy != "127.0.0.1:3128" || !r.Enforcement.Namespaces["net"] {
			t.Errorf("enforcement: %+v, net namespace %v", e, r.Enforcement.Namespaces["net"])
		} else if landlock := u.check.enforced("landlock tcp"); landlock != strings.HasPrefix(e.LandlockConnect, "tcp connect only to ports 53, 1080, 3128") ||
			!landlock && !strings.HasPrefix(e.LandlockConnect, "not enforced: ") {
			// (6.1's Landlock ABI 2 has no TCP rules: "not enforced".)
			t.Errorf("landlock tcp is enforced here: %v; the report says %q", landlock, e.LandlockConnect)
		}
	})
}

// A name on the list that resolves to a loopback address is refused, for
// a connection and in DNS, unless the address is on the list too; without
// an entry the same upstream is refused by address, as is an IPv6 literal
// asked of SOCKS5; and the upstream sees nothing.
func TestNetAllowRefusesLocalAddresses(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--net", "allow", "--allow-host", fmt.Sprintf("localhost:%d", p)},
			"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://localhost:%d/", p), ";",
			"httpget", "socks5://127.0.0.1:1080", fmt.Sprintf("http://localhost:%d/", p), ";",
			"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://127.0.0.1:%d/", p), ";",
			"dns", "localhost", "A", ";",
			"httpget", "socks5://127.0.0.1:1080", "http://[fd00::1]:80/")
		o.ok(t, 5)
		var v httpValue
		o.value(t, 0, &v)
		if v.Status != 403 || !strings.Contains(v.Body, "loopback address") {
			t.Errorf("a name that resolves to loopback: %+v, want 403 loopback address\n%s", v, o)
		}
		if l := o.lines()[1]; !strings.HasPrefix(l, "error ") {
			t.Errorf("the same through SOCKS5: %s, want an error", l)
		}
		o.value(t, 2, &v)
		if v.Status != 403 || !strings.Contains(v.Body, "not in allowlist") {
			t.Errorf("the upstream's address without an entry: %+v, want 403 not in allowlist", v)
		}
		var dns struct{ Rcode, Answers int }
		o.value(t, 3, &dns)
		if dns.Rcode != 5 {
			t.Errorf("DNS for an allowed name whose only address is refused: %+v, want REFUSED", dns)
		}
		if l := o.lines()[4]; !strings.HasPrefix(l, "error ") {
			t.Errorf("SOCKS5 to an IPv6 literal not on the list: %s, want an error", l)
		}
		if n := up.hits.Load(); n != 0 {
			t.Errorf("the upstream served %d requests, want none", n)
		}
		r := o.net(t)
		r.entry(t, o, "socks5", "fd00::1", 80, "not in allowlist")
		if _, _, addr := r.entry(t, o, "http", "localhost", p, "loopback address"); addr != "127.0.0.1" {
			t.Errorf("the refusal names address %q, want 127.0.0.1", addr)
		}
		r.entry(t, o, "socks5", "localhost", p, "loopback address")
		r.entry(t, o, "http", "127.0.0.1", p, "not in allowlist")
		r.violation(t, o, "localhost", p, "loopback address")
	})
}

// Patterns are checked before anything runs: a bad one is exit 125 naming
// it, and --allow-host needs the allow mode.
func TestNetAllowBadPatterns(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--net", "allow", "--allow-host", "pypi.org", "--allow-host", "https://github.com"}, `allow pattern "https://github.com"`},
			{[]string{"--net", "allow", "--allow-host", "10.0.0.0/33"}, `allow pattern "10.0.0.0/33"`},
			{[]string{"--allow-host", "pypi.org"}, "--allow-host needs the network allow mode"},
		} {
			o := u.exec(t, run{args: append(append([]string{"run", "--no-workdir"}, c.args...), "--", "/bin/true")})
			if o.code != 125 || !strings.Contains(o.stderr, c.want) {
				t.Errorf("%q: exit %d, stderr %q; want 125 and %q", c.args, o.code, o.stderr, c.want)
			}
		}
	})
}

// The connection cap: with net_connections 1, a second connection while
// the first is held open is refused with "connection limit", reported as
// a limit hit; the held one still works.
func TestNetAllowConnectionLimit(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		w := u.workdir(t)
		url := fmt.Sprintf("http://127.0.0.1:%d/", p)
		// The first action holds a SOCKS5 tunnel open (connect only,
		// nothing sent) while the second asks the HTTP proxy.
		o := u.jail(t, w, []string{"--net", "allow", "--allow-host", fmt.Sprintf("127.0.0.1:%d", p), "--net-connections", "1"},
			"holdconn", "127.0.0.1:3128", ";",
			"httpget", "http://127.0.0.1:3128", url)
		o.ok(t, 2)
		var v httpValue
		o.value(t, 1, &v)
		if v.Status != 429 || !strings.Contains(v.Body, "connection limit") {
			t.Errorf("a second connection over the cap: %+v, want 429 connection limit\n%s", v, o)
		}
		r := o.net(t)
		if r.NetworkLimitHits["connection limit"] < 1 || r.Limits.NetConns != 1 {
			t.Errorf("limit hits %v, limits.net_connections %d\n%s", r.NetworkLimitHits, r.Limits.NetConns, o)
		}
		if up.hits.Load() != 0 {
			t.Errorf("the upstream was reached over the cap")
		}
		if !strings.Contains(o.stderr, "network connection limit hit") {
			t.Errorf("the summary does not name the limit\n%s", o)
		}
	})
}

// Without Landlock the namespace alone stops a connection that bypasses
// the proxies (no route: ENETUNREACH) and ICMP, and the report says
// Landlock did not hold; with Landlock TCP rules (ABI 4+) connect reaches only the
// proxies and DNS, even a service the command starts on its own loopback.
func TestNetAllowDirectConnections(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		d := u.dir(t)
		prof := filepath.Join(d, "nolandlock.toml")
		if err := os.WriteFile(prof, []byte("extends = \"default\"\n[landlock]\nenabled = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := u.jail(t, w, []string{"--profile", prof, "--net", "allow"},
			"connect", "192.0.2.1:80", ";", "udp", "192.0.2.1:53", ";", "loopback", ";",
			"icmp", "ping", "192.0.2.1", ";", "icmp", "raw", "192.0.2.1")
		l := o.ok(t, 5)
		if l[0] != "errno ENETUNREACH" || l[1] != "errno ENETUNREACH" || l[2] != "ok" {
			t.Errorf("without Landlock: TCP out %s, UDP out %s, own loopback %s; want ENETUNREACH, ENETUNREACH, ok", l[0], l[1], l[2])
		}
		// ICMP: a ping socket is refused by the namespace's
		// ping_group_range, a raw one for want of CAP_NET_RAW (or by
		// seccomp); were either made, there is no route.
		for i, kind := range []string{"ping", "raw"} {
			if !strings.HasPrefix(l[3+i], "errno ") {
				t.Errorf("ICMP echo over a %s socket: %s, want an errno", kind, l[3+i])
			}
		}
		if e := o.net(t).Enforcement.Network; e == nil || !strings.HasPrefix(e.LandlockConnect, "not enforced") {
			t.Errorf("without Landlock the report says %+v", e)
		}
		if !u.check.enforced("landlock tcp") {
			return
		}
		o = u.jail(t, w, []string{"--net", "allow"}, "connect", "192.0.2.1:80", ";", "loopback", ";", "connect", "127.0.0.1:3128")
		l = o.ok(t, 3)
		if l[0] != "errno EACCES" || l[1] != "errno EACCES" || l[2] != "ok" {
			t.Errorf("with Landlock: TCP out %s, own loopback %s, the proxy %s; want EACCES, EACCES, ok", l[0], l[1], l[2])
		}
	})
}

// A served run with a profile in the allow mode gets the proxies too; after
// many such runs, each with a held connection and refusals, the server holds
// no socket of a jail's namespace (every one of its sockets is in its own
// network namespace's tables) and no TCP socket at all.
func TestNetAllowServed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		dir := u.serverDir(t)
		prof := filepath.Join(dir, "allow.toml")
		q := make([]string, len(u.degraded))
		for i, d := range u.degraded {
			q[i] = strconv.Quote(d)
		}
		body := fmt.Sprintf("extends = \"default\"\nallow_degraded = [%s]\n[network]\nmode = \"allow\"\nallow = [\"127.0.0.1:%d\"]\n", strings.Join(q, ", "), p)
		if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(prof, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		// No warm jails: a parked one of this shape holds its listeners,
		// served by the server, by design; what is checked here is what
		// finished runs leave (TestServeWarmJail covers the pool).
		s := u.startServer(t, dir, "--profile", prof, "--warm", "0")
		w := u.workdir(t)
		helper := filepath.Join(w, "tjhelper")
		const runs = 6
		for i := 0; i < runs; i++ {
			r := s.call(t, req{Profile: prof, Workdir: w, Argv: []string{helper,
				"holdconn", "127.0.0.1:1080", ";",
				"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://127.0.0.1:%d/", p), ";",
				"httpget", "http://127.0.0.1:3128", "http://127.0.0.1:9/"}})
			r.ok(t, 3)
			var v httpValue
			r.value(t, 1, &v)
			if v.Status != 200 || v.Body != up.mark {
				t.Fatalf("served run %d: allowed upstream %+v\n%s", i, v, r)
			}
			r.value(t, 2, &v)
			if v.Status != 403 {
				t.Fatalf("served run %d: refused upstream %+v\n%s", i, v, r)
			}
			var nr netReport
			if err := json.Unmarshal(r.reportRaw, &nr); err != nil {
				t.Fatal(err)
			}
			nr.violation(t, &outcome{reportRaw: r.reportRaw}, "127.0.0.1", 9, "not in allowlist")
		}
		if n := up.hits.Load(); n != runs {
			t.Errorf("the upstream served %d requests, want %d", n, runs)
		}
		pid := s.cmd.Process.Pid
		// Every socket of the server's own network namespace is in one of
		// its tables, with its inode: the seventh field of unix, the last
		// of netlink, the tenth of the IP ones.
		tables := map[string]string{}
		for _, table := range []string{"unix", "netlink", "tcp", "tcp6", "udp", "udp6", "raw", "raw6"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				f := strings.Fields(line)
				switch {
				case len(f) == 0:
				case table == "unix" && len(f) > 6:
					tables[f[6]] = table
				case table == "netlink":
					tables[f[len(f)-1]] = table
				case len(f) > 9:
					tables[f[9]] = table
				}
			}
		}
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
			ino, ok := strings.CutPrefix(target, "socket:[")
			if !ok {
				continue
			}
			switch table := tables[strings.TrimSuffix(ino, "]")]; table {
			case "unix", "netlink":
			case "":
				t.Errorf("the server holds fd %s, %s, a socket of another network namespace (a jail's listener?)", e.Name(), target)
			default:
				t.Errorf("the server holds fd %s, %s, a %s socket, after the runs ended", e.Name(), target, table)
			}
		}
	})
}

// Real clients through the allow mode, where the host has them (they run
// from the host's /usr in the jail): curl over the HTTP proxy and SOCKS5,
// Python's urllib, and git clone over smart HTTP from a `git http-backend`
// the test serves. NO_PROXY names 127.0.0.1, where these upstreams are,
// so the clients are told to use the proxies for it; that they cannot get
// there otherwise is TestNetAllowReachesOnlyTheList's.
func TestNetAllowRealClients(t *testing.T) {
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/python3", "/usr/bin/git"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	root := t.TempDir()
	for _, c := range [][]string{
		{"git", "init", "-q", "-b", "main", root + "/src"},
		{"git", "-C", root + "/src", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "tjmark-commit"},
		{"git", "clone", "-q", "--bare", root + "/src", root + "/repo.git"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	gitSrv := httptest.NewServer(&cgi.Handler{Path: "/usr/bin/git", Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(gitSrv.Close) // the subtests run after this function returns
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p, gp := up.port(t), strings.TrimPrefix(gitSrv.URL, "http://127.0.0.1:")
		w := u.workdir(t)
		script := fmt.Sprintf(`unset no_proxy NO_PROXY
curl -sS -x http://127.0.0.1:3128 http://127.0.0.1:%[1]d/ || echo curl-http failed
curl -sS -x socks5h://127.0.0.1:1080 http://127.0.0.1:%[1]d/ || echo curl-socks failed
python3 -c 'import urllib.request as u; print(u.build_opener(u.ProxyHandler({"http": "http://127.0.0.1:3128"})).open("http://127.0.0.1:%[1]d/").read().decode().strip())'
git -c http.proxy=http://127.0.0.1:3128 clone -q http://127.0.0.1:%[2]s/repo.git /tmp/clone && git -C /tmp/clone log --format=%%s
`, p, gp)
		o := u.jailRun(t, w, run{args: []string{"--net", "allow", "--allow-host", fmt.Sprintf("127.0.0.1:%d", p), "--allow-host", "127.0.0.1:" + gp}}, "/bin/sh", "-c", script)
		l := o.ok(t, 4)
		if l[0] != up.mark || l[1] != up.mark || l[2] != up.mark {
			t.Errorf("curl over the HTTP proxy and SOCKS5, urllib: %q, want the marker\n%s", l[:3], o)
		}
		if l[3] != "tjmark-commit" {
			t.Errorf("git clone through the proxy: %q\n%s", l[3], o)
		}
		r := o.net(t)
		r.entry(t, o, "http", "127.0.0.1", p, "allowed")
		r.entry(t, o, "socks5", "127.0.0.1", p, "allowed")
	})
}

// The byte cap: a download over --net-bytes is cut where the cap falls,
// the next connection is refused, and the report counts both.
func TestNetAllowByteLimit(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat("x", 256<<10)))
		}))
		t.Cleanup(big.Close)
		addr := strings.TrimPrefix(big.URL, "http://")
		w := u.workdir(t)
		o := u.jail(t, w, []string{"--net", "allow", "--allow-host", addr, "--net-bytes", "64K"},
			"httpget", "http://127.0.0.1:3128", big.URL+"/", ";",
			"httpget", "http://127.0.0.1:3128", big.URL+"/")
		o.ok(t, 2)
		var v httpValue
		o.value(t, 0, &v)
		if v.Error == "" || v.Bytes >= 64<<10 {
			t.Errorf("a 256 KiB download under a 64 KiB cap: status %d, %d bytes, error %q; want it cut below 64 KiB", v.Status, v.Bytes, v.Error)
		}
		o.value(t, 1, &v)
		if v.Status != 503 || !strings.Contains(v.Body, "byte limit") {
			t.Errorf("a connection after the cap: %+v, want 503 byte limit", v)
		}
		r := o.net(t)
		var cut bool
		for _, e := range r.Network {
			if e.Cut == "byte limit" && e.BytesDown <= 64<<10 {
				cut = true
			}
		}
		if !cut || r.NetworkLimitHits["byte limit"] < 2 || r.Limits.NetBytes != 64<<10 {
			t.Errorf("the report: cut %v, limit hits %v, limits.net_bytes %d\n%s", cut, r.NetworkLimitHits, r.Limits.NetBytes, o)
		}
	})
}
