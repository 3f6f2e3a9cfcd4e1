// Package runnet serves one run's network allow mode: the HTTP and SOCKS5
// proxies and the DNS server (packages proxy and resolver) on the four
// sockets the jail's init made in the jail's network namespace and sent
// to the supervisor, and the log of what they did, as the report's
// "network" entries (Entry: identical ones counted together, bounded).
//
// It owns the listeners' ports, the check that each socket is where the
// init makes it, and the log. It may import network/allow, network/proxy,
// network/resolver and the standard library; jail starts a Server when
// the init's sockets arrive and stops it when the run ends, and turns the
// entries into violations.
package runnet
