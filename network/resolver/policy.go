package resolver

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/network/allow"
)

// policy decides which names the resolver answers for. It does no I/O.
type policy struct {
	list allow.List
	// ports are the distinct ports of the list's name and wildcard
	// patterns, in ascending order: the only ports on which a name can be
	// allowed at all.
	ports []int
}

func newPolicy(l allow.List) policy {
	var ports []int
	for _, p := range l {
		if p.Kind() != allow.KindName && p.Kind() != allow.KindWildcard {
			continue
		}
		ports = append(ports, p.Ports()...)
	}
	slices.Sort(ports)
	return policy{list: l, ports: slices.Compact(ports)}
}

// namePorts returns the ports on which the list allows name, or nil when
// the resolver must refuse it. Any port counts: the DNS query does not
// say which port the command will use, and the proxy checks the port on
// every connection. An IPv4 literal written as a query name is refused:
// no resolver sends one, and the list's IP patterns allow addresses, not
// names.
func (p policy) namePorts(name string) []int {
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	var out []int
	for _, port := range p.ports {
		if p.list.AllowName(name, port) {
			out = append(out, port)
		}
	}
	return out
}

// screen splits the addresses an allowed name resolved to into those
// allow.Check passes on at least one of ports (the name's ports, from
// namePorts) and those it refuses on all of them; reason is why the first
// refused one was refused. An address that passes only on a port the
// name is not allowed on is refused: 10.0.0.0/8:5432 on the list opens
// db.example:5432's private address, not web.example's.
func screen(addrs []netip.Addr, ports []int, l allow.List) (pass, dropped []netip.Addr, reason string) {
	for _, a := range addrs {
		passed, why := false, ""
		for _, port := range ports {
			ok, r := allow.Check(a, port, l)
			if ok {
				passed = true
				break
			}
			if why == "" {
				why = r
			}
		}
		if passed {
			pass = append(pass, a)
			continue
		}
		if why == "" { // no port at all: the name is allowed nowhere
			why = allow.ReasonBadPort
		}
		dropped = append(dropped, a)
		if reason == "" {
			reason = why
		}
	}
	return pass, dropped, reason
}

// foldName is the name an event is counted under once the events table
// has no room for names one by one: "*." and the name's last two labels,
// so that a flood of distinct names under one domain (the way data is
// sent out over DNS) still shows which domain it went to. A label never
// holds a dot (dnsmessage refuses one), so every '.' here separates
// labels.
func foldName(name string) string {
	if name == "" {
		return "*"
	}
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "*." + name
	}
	j := strings.LastIndexByte(name[:i], '.')
	return "*." + name[j+1:]
}
