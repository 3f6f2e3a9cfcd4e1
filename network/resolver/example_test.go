package resolver_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/resolver"
)

// table is an upstream for the example; the supervisor passes nil, for
// net.DefaultResolver.
type table map[string][]netip.Addr

func (t table) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range t[host] {
		if (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// The supervisor serves the sockets the jail's init bound to
// 127.0.0.1:53, and gives the proxy the same cache.
func Example() {
	list, err := allow.ParseList([]string{"pypi.org", "*.pythonhosted.org:443"})
	if err != nil {
		panic(err)
	}
	cache := resolver.NewAddrCache(table{
		"pypi.org":       {netip.MustParseAddr("151.101.0.223"), netip.MustParseAddr("10.0.0.1")},
		"files.evil.org": {netip.MustParseAddr("151.101.0.225")},
	}, 0, 0)
	// Into the report; here, each kind once (a stub resolver may ask
	// again after a refusal, and repeats are counted, not repeated).
	var events []string
	s := resolver.New(resolver.Config{
		Allow: list,
		Cache: cache,
		Events: func(ev resolver.Event) {
			line := fmt.Sprintln("event:", ev.Name, resolver.TypeName(ev.Type), ev.Allowed, ev.Reason, ev.Answered, ev.Dropped)
			if !slices.Contains(events, line) {
				events = append(events, line)
			}
		},
	})
	// In the supervisor: the descriptors the init handed over.
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	go s.ServeUDP(pc)

	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	addrs, err := r.LookupNetIP(context.Background(), "ip4", "pypi.org.")
	fmt.Println("command:", addrs, err)
	_, err = r.LookupNetIP(context.Background(), "ip4", "files.evil.org.")
	fmt.Println("command:", err != nil)

	// The proxy, later, finds the same addresses (and checks them again).
	addrs, _ = cache.LookupNetIP(context.Background(), "ip4", "pypi.org")
	fmt.Println("proxy:", addrs)
	s.Close()
	fmt.Print(strings.Join(events, ""))
	// Output:
	// command: [151.101.0.223] <nil>
	// command: true
	// proxy: [151.101.0.223 10.0.0.1]
	// event: pypi.org A true private address [151.101.0.223] [10.0.0.1]
	// event: files.evil.org A false dns refused [] []
}
