package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The test build of the binary (make bin/tooljail-testhooks, passed as
// TOOLJAIL_TESTHOOKS) resolves the allow mode's names from
// TOOLJAIL_TEST_HOSTS alone; the shipped binary has no such setting.

var (
	hooksOnce sync.Once
	hooksBin  string
	hooksErr  error
)

// testhooksBinary is a copy of the test build in base (every user reaches
// it), or a skip where there is none.
func testhooksBinary(t *testing.T) string {
	t.Helper()
	src := os.Getenv("TOOLJAIL_TESTHOOKS")
	if src == "" {
		if os.Getenv("TJ_VM") == "1" {
			t.Fatal("TOOLJAIL_TESTHOOKS is not set in the guest")
		}
		t.Skip("TOOLJAIL_TESTHOOKS is not set: `make integration` builds bin/tooljail-testhooks")
	}
	hooksOnce.Do(func() {
		hooksBin = filepath.Join(base, "tooljail-testhooks")
		hooksErr = copyFile(src, hooksBin)
	})
	if hooksErr != nil {
		t.Fatalf("TOOLJAIL_TESTHOOKS: %v", hooksErr)
	}
	return hooksBin
}

// testNames are the made-up names, what they resolve to in the test
// build, and why the allow mode refuses them ("" for allowed: its address
// is on the list by IP).
var testNames = []struct{ name, addr, refusal string }{
	{"good.tooljail.test", "127.0.0.1", ""},
	{"meta.tooljail.test", "169.254.169.254", "metadata address"},
	{"lan.tooljail.test", "10.1.2.3", "private address"},
	{"mapped.tooljail.test", "::ffff:10.1.2.3", "private address"},
	{"ula.tooljail.test", "fd00::1", "private address"},
}

// testNamesFlags allows every test name, and the upstream's address by
// IP, on port.
func testNamesFlags(port int) []string {
	flags := []string{"--net", "allow", "--allow-host", fmt.Sprintf("127.0.0.1:%d", port)}
	for _, n := range testNames {
		flags = append(flags, "--allow-host", fmt.Sprintf("%s:%d", n.name, port))
	}
	return flags
}

func testHosts() string {
	var l []string
	for _, n := range testNames {
		l = append(l, n.name+"="+n.addr)
	}
	return "TOOLJAIL_TEST_HOSTS=" + strings.Join(l, ";")
}

// Names on the list that resolve to a metadata, private, IPv4-mapped
// private or ULA address are refused to a Go program (tjhelper, over the
// HTTP proxy and SOCKS5), and in DNS, with the reason in the report; the
// name whose address an IP entry names reaches the upstream, which sees
// nothing else. The real clients' turn is TestNetAllowTestNamesClients.
func TestNetAllowTestNames(t *testing.T) {
	hooks := testhooksBinary(t)
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		w := u.workdir(t)
		flags := testNamesFlags(p)
		var actions []string
		for _, n := range testNames {
			url := fmt.Sprintf("http://%s:%d/", n.name, p)
			qtype := "A"
			if strings.Contains(n.addr, ":") && !strings.HasPrefix(n.addr, "::ffff:") {
				qtype = "AAAA"
			}
			actions = append(actions, "httpget", "http://127.0.0.1:3128", url, ";",
				"httpget", "socks5://127.0.0.1:1080", url, ";", "dns", n.name, qtype, ";")
		}
		o := u.jailRun(t, w, run{args: flags, bin: hooks, env: []string{testHosts()}},
			append([]string{filepath.Join(w, "tjhelper")}, actions[:len(actions)-1]...)...)
		l := o.ok(t, 3*len(testNames))
		r := o.net(t)
		for i, n := range testNames {
			var v httpValue
			var dns struct{ Rcode, Answers int }
			o.value(t, 3*i, &v)
			o.value(t, 3*i+2, &dns)
			socks := l[3*i+1]
			if n.refusal == "" {
				if v.Status != 200 || v.Body != up.mark || !strings.HasPrefix(socks, "value ") || dns.Rcode != 0 || dns.Answers != 1 {
					t.Errorf("%s: HTTP proxy %+v, SOCKS5 %s, DNS %+v; want the marker twice and one answer\n%s", n.name, v, socks, dns, o)
				}
				r.entry(t, o, "http", n.name, p, "allowed")
				continue
			}
			if v.Status != 403 || !strings.Contains(v.Body, n.refusal) {
				t.Errorf("%s (%s) through the HTTP proxy: %+v, want 403 %s", n.name, n.addr, v, n.refusal)
			}
			if !strings.HasPrefix(socks, "error ") {
				t.Errorf("%s (%s) through SOCKS5: %s, want an error", n.name, n.addr, socks)
			}
			if dns.Rcode != 5 {
				t.Errorf("%s (%s) in DNS: %+v, want REFUSED", n.name, n.addr, dns)
			}
			r.entry(t, o, "http", n.name, p, n.refusal)
			r.entry(t, o, "socks5", n.name, p, n.refusal)
			r.violation(t, o, n.name, p, n.refusal)
		}
		if n := up.hits.Load(); n != 2 {
			t.Errorf("the upstream served %d requests, want 2 (good.tooljail.test's)", n)
		}
	})
}

// curl (HTTP proxy and SOCKS5 with remote names) and Python's urllib,
// where the host has them, through the same names.
func TestNetAllowTestNamesClients(t *testing.T) {
	hooks := testhooksBinary(t)
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/python3"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		w := u.workdir(t)
		flags := testNamesFlags(p)
		var names []string
		for _, n := range testNames {
			names = append(names, n.name)
		}
		script := fmt.Sprintf(`unset no_proxy NO_PROXY
for n in %s; do
  echo "$n curl-http $(curl -s -o /dev/null -w '%%{http_code}' -x http://127.0.0.1:3128 http://$n:%[2]d/)"
  echo "$n curl-socks $(curl -s -o /dev/null -w '%%{http_code}' -x socks5h://127.0.0.1:1080 http://$n:%[2]d/)"
  python3 -c '
import sys, urllib.request as u, urllib.error as e
try:
    r = u.build_opener(u.ProxyHandler({"http": "http://127.0.0.1:3128"})).open("http://%%s:%[2]d/" %% sys.argv[1])
    print(sys.argv[1], "urllib", r.status)
except e.HTTPError as x:
    print(sys.argv[1], "urllib", x.code)
' "$n"
done
`, strings.Join(names, " "), p)
		o := u.jailRun(t, w, run{args: flags, bin: hooks, env: []string{testHosts()}}, "/bin/sh", "-c", script)
		l := o.ok(t, 3*len(testNames))
		for i, n := range testNames {
			want := []string{"403", "000", "403"}
			if n.refusal == "" {
				want = []string{"200", "200", "200"}
			}
			for j, client := range []string{"curl-http", "curl-socks", "urllib"} {
				if w := n.name + " " + client + " " + want[j]; l[3*i+j] != w {
					t.Errorf("%q, want %q\n%s", l[3*i+j], w, o)
				}
			}
		}
		if n := up.hits.Load(); n != 3 {
			t.Errorf("the upstream served %d requests, want 3 (good.tooljail.test's)", n)
		}
	})
}

// The shipped binary neither reads TOOLJAIL_TEST_HOSTS nor holds its name:
// given it, a made-up name does not resolve; the test build, the check's
// positive control, holds the name.
func TestShippedBinaryHasNoTestHooks(t *testing.T) {
	hooks := testhooksBinary(t)
	for bin, want := range map[string]bool{tooljailBin: false, hooks: true} {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte("TOOLJAIL_TEST_HOSTS")); got != want {
			t.Errorf("%s holds TOOLJAIL_TEST_HOSTS: %v, want %v", bin, got, want)
		}
	}
	eachUser(t, func(t *testing.T, u *user) {
		up := newUpstream(t, false)
		p := up.port(t)
		w := u.workdir(t)
		o := u.jailRun(t, w, run{args: []string{"--net", "allow", "--allow-host", fmt.Sprintf("good.tooljail.test:%d", p), "--allow-host", fmt.Sprintf("127.0.0.1:%d", p)},
			env: []string{testHosts()}},
			filepath.Join(w, "tjhelper"), "httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://good.tooljail.test:%d/", p))
		o.ok(t, 1)
		var v httpValue
		o.value(t, 0, &v)
		if v.Status == 200 || up.hits.Load() != 0 {
			t.Errorf("the shipped binary resolved a name of TOOLJAIL_TEST_HOSTS: %+v\n%s", v, o)
		}
	})
}
