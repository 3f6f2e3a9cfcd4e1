package jail

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// hostsLookup resolves names from a fixed table, as the host's resolver
// would answer them, and nothing else. The allow mode resolves with one
// only in tests: the jail package's own (SetUpstreamLookup) and the test
// build of the binary (testhooks.go).
type hostsLookup map[string][]netip.Addr

func (h hostsLookup) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range h[strings.ToLower(host)] {
		is4 := a.Unmap().Is4()
		if network == "ip" || network == "ip4" && is4 || network == "ip6" && !is4 {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// parseHosts reads a table "NAME=ADDR[,ADDR...];NAME=..." (an IPv4-mapped
// address stays IPv6, as a resolver would answer it in AAAA).
func parseHosts(s string) (hostsLookup, error) {
	h := hostsLookup{}
	for _, entry := range strings.Split(s, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		name, addrs, ok := strings.Cut(entry, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" || addrs == "" {
			return nil, fmt.Errorf("hosts entry %q: want NAME=ADDR[,ADDR...]", entry)
		}
		for _, a := range strings.Split(addrs, ",") {
			ip, err := netip.ParseAddr(strings.TrimSpace(a))
			if err != nil {
				return nil, fmt.Errorf("hosts entry %q: %v", entry, err)
			}
			h[name] = append(h[name], ip)
		}
	}
	return h, nil
}
