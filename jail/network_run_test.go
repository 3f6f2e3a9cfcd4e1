package jail_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// attack is what the command does to the allow mode's listeners, in
// Python (/usr/bin/python3 of the host, shown in the jail through /usr):
// garbage and an oversized head to the HTTP proxy, a flood of CONNECTs
// over the connection cap, half-sent SOCKS5 requests left open, 10,000
// DNS queries for made-up names, and an allowed download from an upstream
// that never ends and one from an upstream that never answers, both left
// running when the command exits.
const attack = `
import socket, os, random, string, time
HTTP, SOCKS, UP = ("127.0.0.1", 3128), ("127.0.0.1", 1080), os.environ["UP"]
def conn(a):
    s = socket.create_connection(a, timeout=5); return s
held = []
s = conn(HTTP); s.sendall(b"\x00\xff garbage \r\n\r\n"); print("garbage", s.recv(64)[:12]); s.close()
s = conn(HTTP); s.sendall(b"GET http://x/ HTTP/1.1\r\nX: " + b"a" * 200000 + b"\r\n\r\n")
try: print("huge", s.recv(64)[:12])
except OSError as e: print("huge", e)
for i in range(300):
    try:
        s = conn(HTTP); s.sendall(b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"); held.append(s)
    except OSError: pass
for i in range(50):
    try:
        s = conn(SOCKS); s.sendall(b"\x05\x01"); held.append(s)
    except OSError: pass
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.setblocking(False)
for i in range(10000):
    name = "".join(random.choice(string.ascii_lowercase) for _ in range(12)).encode()
    q = os.urandom(2) + b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + bytes([len(name)]) + name + b"\x07example\x00\x00\x10\x00\x01"
    try: d.sendto(q, ("127.0.0.1", 53))
    except OSError: pass
for c in held: c.close()
held = []
def get(path):
    s = conn(HTTP); s.sendall(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (UP, path, UP)).encode()); return s
# The proxies count a closed connection once they see it close: until
# then the connection limit answers 429, or, past twice the limit, closes
# the connection at once (a reset). Wait for them, boundedly.
for i in range(100):
    try:
        s = get("/stream"); head = s.recv(15)
    except OSError as e:
        head = repr(e).encode()
        time.sleep(0.05); continue
    if not head.startswith(b"HTTP/1.1 429"): break
    s.close(); time.sleep(0.05)
held = [s, get("/hang")]
print("first", head)
print("done", flush=True)
os._exit(0)
`

// The supervisor stays bounded against a command that attacks the
// listeners, and a run leaves nothing: after Wait, this process has the
// goroutines and descriptors it had before (the proxies, the resolver and
// every connection through them are closed, none waits for an upstream),
// and the report's network list is bounded.
func TestAllowModeAttackLeavesNothing(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 here to attack from")
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			chunk := []byte(strings.Repeat("x", 32<<10))
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				select {
				case <-release:
					return
				default:
				}
			}
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer up.Close()
	defer unblock()
	upAddr := up.Listener.Addr().String()

	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	mode := "allow"
	p.Network.Mode = &mode
	p.Network.Allow = []string{upAddr}
	no := false
	p.Filesystem.Workdir = &no
	p.AllowDegraded = append(p.AllowDegraded, jail.LayerCgroup)
	spec, err := p.Spec(profiles.Request{Args: []string{"/usr/bin/python3", "-c", attack}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Env = append(spec.Env, "UP="+upAddr)

	// A first run warms what a process sets up once (the host probe,
	// the resolver's configuration); the second is measured.
	runOnce := func() (*jail.Result, string) {
		var out strings.Builder
		cmd := jail.Command(spec)
		cmd.Stdout, cmd.Stderr = &out, &out
		res, err := cmd.Run()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		return res, out.String()
	}
	runOnce()
	// Two more runs of its shape give the process the root template it
	// keeps for it (a shape's second run builds it; the process's very
	// first run does not count).
	for i := 0; i < 2; i++ {
		quick := *spec
		quick.Args = []string{"/bin/true"}
		if _, err := jail.Command(&quick).Run(); err != nil {
			t.Fatal(err)
		}
	}
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	res, out := runOnce()
	if res.ExitCode != 0 || !strings.Contains(out, "done") {
		t.Fatalf("the attack did not run through: %+v\n%s", res, out)
	}
	for _, want := range []string{"garbage b'HTTP/1.1 400", "huge b'HTTP/1.1 431", "first b'HTTP/1.1 200 OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := len(res.Network); n == 0 || n > 300 {
		t.Errorf("%d network entries, want some and at most a bounded number", n)
	}
	if res.NetworkLimitHits["connection limit"] == 0 {
		t.Errorf("300 CONNECTs over a cap of 128 hit no limit: %v", res.NetworkLimitHits)
	}
	dns := 0
	for _, e := range res.Network {
		if e.Proto == "dns" {
			dns += e.Count
		}
	}
	if dns == 0 || dns > 10000 {
		t.Errorf("%d DNS queries reported, want some, at most the 10,000 sent", dns)
	}
	// Wait returned with the upstream connections closed by the
	// supervisor: the stream's and the hang's handlers end on their own.
	// Then nothing of the run may be left.
	if g, f := settle(goroutines, fds, t); g > goroutines || f > fds {
		buf := make([]byte, 1<<20)
		t.Errorf("after the run: %d goroutines (before %d), %d descriptors (before %d)\n%s", g, goroutines, f, fds, buf[:runtime.Stack(buf, true)])
	}
}

// settle gives the upstream's handlers, which end when the supervisor
// closes their connections, a moment to return; it reports the counts
// once they are no higher than before, or after a bound.
func settle(goroutines, fds int, t *testing.T) (int, int) {
	var g, f int
	for i := 0; i < 200; i++ {
		if i == 100 {
			// The proxy's tunnels splice (network/proxy/relay.go), and
			// the runtime keeps the pipes of its splices in a pool whose
			// pipes a finalizer closes at a garbage collection (two: the
			// pool's victim cache). On a busy host none may have run yet.
			runtime.GC()
			runtime.GC()
		}
		g, f = runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	return g, f
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// names asks the HTTP proxy for http://NAME:PORT/ and the resolver for
// NAME's A and AAAA records, for each name in NAMES, and prints
// "NAME STATUS-LINE | BODY" and "NAME dns RCODE ANSWERS".
const names = `
import socket, os, struct
port = os.environ["PORT"]
for name in os.environ["NAMES"].split():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(("GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (name, port, name, port)).encode())
    data = b""
    while True:
        b = s.recv(4096)
        if not b: break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    print(name, head.split(b"\r\n")[0].decode(), "|", body.decode().strip())
    for qtype in (1, 28):
        q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00" + struct.pack(">HH", qtype, 1)
        d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.settimeout(10)
        d.sendto(q, ("127.0.0.1", 53)); r = d.recv(1500)
        print(name, "dns", qtype, r[3] & 15, struct.unpack(">H", r[6:8])[0])
`

// Names on the list that resolve to local or special addresses are
// refused by address, however the address is written (IPv4-mapped,
// NAT64), both by the proxy and by the resolver, and only a name whose
// address is named by an IP entry too reaches the upstream. The names
// come from a test-only resolver (SetUpstreamLookup).
func TestAllowModeRefusesNamesOfLocalAddresses(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 here")
	}
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "upstream", r.Host)
	}))
	defer up.Close()
	upAddr := netip.MustParseAddrPort(up.Listener.Addr().String())
	port := strconv.Itoa(int(upAddr.Port()))
	restore := jail.SetUpstreamLookup(jail.HostsLookup{
		"good.test":     {netip.MustParseAddr("127.0.0.1")},
		"meta.test":     {netip.MustParseAddr("169.254.169.254")},
		"internal.test": {netip.MustParseAddr("10.1.2.3")},
		"ula.test":      {netip.MustParseAddr("fd00::1")},
		"mapped.test":   {netip.MustParseAddr("::ffff:10.1.2.3")},
		"nat64.test":    {netip.MustParseAddr("64:ff9b::a01:203")},
		"aws6.test":     {netip.MustParseAddr("fd00:ec2::254")},
	})
	defer restore()
	all := "good.test meta.test internal.test ula.test mapped.test nat64.test aws6.test"
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	mode := "allow"
	p.Network.Mode = &mode
	for _, n := range strings.Fields(all) {
		p.Network.Allow = append(p.Network.Allow, n+":"+port)
	}
	p.Network.Allow = append(p.Network.Allow, "127.0.0.1:"+port)
	no := false
	p.Filesystem.Workdir = &no
	p.AllowDegraded = append(p.AllowDegraded, jail.LayerCgroup)
	spec, err := p.Spec(profiles.Request{Args: []string{"/usr/bin/python3", "-c", names}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Env = append(spec.Env, "PORT="+port, "NAMES="+all)
	var out strings.Builder
	cmd := jail.Command(spec)
	cmd.Stdout, cmd.Stderr = &out, &out
	res, err := cmd.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, res, out.String())
	}
	want := map[string]struct{ status, reason, dnsA, dnsAAAA string }{
		"good.test":     {"200 OK", "allowed", "0 1", "0 0"},
		"meta.test":     {"403 Forbidden", "metadata address", "5 0", "0 0"},
		"internal.test": {"403 Forbidden", "private address", "5 0", "0 0"},
		"ula.test":      {"403 Forbidden", "private address", "0 0", "5 0"},
		"mapped.test":   {"403 Forbidden", "private address", "5 0", "0 0"},
		"nat64.test":    {"403 Forbidden", "private address", "0 0", "5 0"},
		"aws6.test":     {"403 Forbidden", "metadata address", "0 0", "5 0"},
	}
	text := out.String()
	for name, w := range want {
		if !strings.Contains(text, name+" HTTP/1.1 "+w.status) {
			t.Errorf("%s: want %s\n%s", name, w.status, text)
		}
		if w.reason != "allowed" && !strings.Contains(text, w.reason) {
			t.Errorf("%s: the refusal does not say %q\n%s", name, w.reason, text)
		}
		if !strings.Contains(text, name+" dns 1 "+w.dnsA+"\n") || !strings.Contains(text, name+" dns 28 "+w.dnsAAAA+"\n") {
			t.Errorf("%s: DNS A %s, AAAA %s wanted (rcode, answers)\n%s", name, w.dnsA, w.dnsAAAA, text)
		}
		found := false
		for _, e := range res.Network {
			if e.Proto == "http" && e.Host == name && e.Decision == w.reason {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no http entry %q in the report: %+v", name, w.reason, res.Network)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the upstream served %d requests, want 1 (good.test)", n)
	}
}

// The command starts only once the supervisor serves the listeners: when
// it cannot, the run is a setup error and the command never ran.
func TestAllowModeNoServiceNoCommand(t *testing.T) {
	restore := jail.FailNetListeners()
	defer restore()
	dir := t.TempDir()
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	mode := "allow"
	p.Network.Mode = &mode
	p.AllowDegraded = append(p.AllowDegraded, jail.LayerCgroup)
	spec, err := p.Spec(profiles.Request{Args: []string{"/bin/sh", "-c", "echo ran > ran"}, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := jail.Command(spec).Run()
	if err == nil || res.Status != jail.StatusSetupError || !strings.Contains(res.Reason, "test: no listener") {
		t.Fatalf("run without the listeners served: %v, %+v", err, res)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Errorf("the command ran although the supervisor did not serve the listeners")
	}
}
