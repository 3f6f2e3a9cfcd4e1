package jail

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/landlock"
	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/resolver"
	"github.com/tooljail/tooljail/network/runnet"
)

// The allow mode (NetAllow, DESIGN.md section 11). The jail keeps a
// network namespace of its own with only lo, as with NetNone; the init
// makes four sockets on 127.0.0.1 there (init_net.c) and sends them to the
// supervisor before the command starts. The supervisor serves them from
// its own network namespace with package network: an HTTP proxy, a SOCKS5
// proxy and a DNS resolver that let through only what Spec.Allow names,
// connecting itself to the addresses it checked. Nothing else leaves the
// jail: its namespace has no route but lo. An unprivileged supervisor
// cannot enter the jail's namespace to make the sockets itself; no helper
// process and no host socket is involved.

// The ports of the allow mode's listeners on 127.0.0.1 in the jail.
const (
	ProxyHTTPPort   = runnet.ProxyHTTPPort
	ProxySOCKS5Port = runnet.ProxySOCKS5Port
	DNSPort         = runnet.DNSPort
)

// NetworkEntry is one line of the report's "network" list in the allow
// mode (package runnet keeps the log).
type NetworkEntry = runnet.Entry

// upstreamLookup resolves the allowed names; nil is the host's resolver.
// Only this package's tests set it (SetUpstreamLookup in export_test.go),
// to map made-up names to the addresses a test needs: no flag, profile key
// or environment variable reaches it.
var upstreamLookup resolver.Lookup

// fileListener is net.FileListener; a test makes it fail
// (FailNetListeners in export_test.go).
var fileListener = net.FileListener

// startNetwork serves the four sockets the init sent for list, within
// the run's limits (runnet.Start).
func startNetwork(list allow.List, limits Limits, files []*os.File) (*runnet.Server, error) {
	return runnet.Start(runnet.Config{Allow: list, MaxConns: limits.NetConns, MaxBytes: limits.NetBytes,
		Lookup: upstreamLookup, FileListener: fileListener}, files)
}

// allowResolvConf is the jail's /etc/resolv.conf in the allow mode.
const allowResolvConf = "# tooljail allow mode: the supervisor answers for the allowed names only\nnameserver 127.0.0.1\n"

// proxyEnv is what the command's environment says in the allow mode, over
// whatever the Spec set under the same names: these are the only routes
// out. curl reads only the lower-case http_proxy, most other tools either.
// ALL_PROXY is SOCKS5 with the name resolved by the proxy (socks5h), so
// that the allowlist sees the name the command asked for.
var proxyEnv = func() []string {
	httpProxy := "http://127.0.0.1:" + strconv.Itoa(ProxyHTTPPort)
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(ProxySOCKS5Port)
	var env []string
	for _, kv := range [][2]string{
		{"HTTP_PROXY", httpProxy}, {"HTTPS_PROXY", httpProxy}, {"ALL_PROXY", socks}, {"NO_PROXY", "localhost,127.0.0.1"},
	} {
		env = append(env, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return env
}()

// commandEnv is the command's environment: the Spec's, and in the allow
// mode the proxy variables in place of any the Spec had.
func commandEnv(s *Spec) []string {
	if s.Net != NetAllow {
		return s.Env
	}
	out := make([]string, 0, len(s.Env)+len(proxyEnv))
	for _, kv := range s.Env {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return append(out, proxyEnv...)
}

// allowPorts are the TCP ports the command connects to in the allow mode.
var allowPorts = []uint16{DNSPort, ProxySOCKS5Port, ProxyHTTPPort}

// allowEnforcement is how the allow mode holds with Landlock policy ll
// (nil: none) on ABI abi. On ABI 4 and later ll also limits TCP connect to
// the listeners' ports, a second wall behind the namespace that has no
// route: a connect to anything else fails with EACCES even to a service
// the command starts on lo. ll gets the port rules here.
func allowEnforcement(ll *landlock.Policy, abi int) *NetworkEnforcement {
	e := &NetworkEnforcement{
		Mode:        string(NetAllow),
		HTTPProxy:   "127.0.0.1:" + strconv.Itoa(ProxyHTTPPort),
		SOCKS5Proxy: "127.0.0.1:" + strconv.Itoa(ProxySOCKS5Port),
		DNS:         "127.0.0.1:" + strconv.Itoa(DNSPort),
		Route:       "none: the jail's network namespace has only lo",
	}
	switch {
	case ll == nil:
		e.LandlockConnect = "not enforced: Landlock is off or unavailable"
	case abi < 4:
		e.LandlockConnect = fmt.Sprintf("not enforced: Landlock ABI %d has no TCP rules (needs ABI 4, Linux 6.7)", abi)
	default:
		ll.RestrictConnect = true
		ll.ConnectTCP = append(slices.Clone(ll.ConnectTCP), allowPorts...)
		ports := make([]string, 0, len(ll.ConnectTCP))
		for _, p := range slices.Compact(slices.Sorted(slices.Values(ll.ConnectTCP))) {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		e.LandlockConnect = "tcp connect only to ports " + strings.Join(ports, ", ")
	}
	return e
}
