package runnet

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/tooljail/tooljail/network/allow"
	"github.com/tooljail/tooljail/network/proxy"
	"github.com/tooljail/tooljail/network/resolver"
)

// The ports of the allow mode's listeners on 127.0.0.1 in the jail.
const (
	ProxyHTTPPort   = 3128
	ProxySOCKS5Port = 1080
	DNSPort         = 53
)

// Config is what a run's servers serve.
type Config struct {
	Allow allow.List
	// MaxConns and MaxBytes are the run's network limits (0: none).
	MaxConns int
	MaxBytes int64
	// Lookup resolves the allowed names; nil is the host's resolver.
	// Only tests of the jail give another.
	Lookup resolver.Lookup
	// FileListener is net.FileListener when nil; a test makes it fail.
	FileListener func(*os.File) (net.Listener, error)
}

// Server serves the allow mode's listeners for one run.
type Server struct {
	proxy *proxy.Proxy
	dns   *resolver.Server
	log   *netLog
	wg    sync.WaitGroup
}

// Start serves the four sockets the jail's init sent (TJ_REC_NET, in the
// order of tj_net_listeners) for cfg. It takes the files: on return they
// are closed, their descriptors now the listeners'.
func Start(cfg Config, files []*os.File) (*Server, error) {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	ls, pc, closeAll, err := openSockets(cfg, files)
	if err != nil {
		return nil, err
	}
	n := &Server{log: newNetLog()}
	cache := resolver.NewAddrCache(cfg.Lookup, 0, 0)
	n.dns = resolver.New(resolver.Config{Allow: cfg.Allow, Cache: cache, Events: n.log.dnsEvent})
	n.proxy, err = proxy.New(proxy.Config{
		Allow:    cfg.Allow,
		Resolver: cache,
		Limits:   proxy.Limits{MaxConns: cfg.MaxConns, MaxBytes: cfg.MaxBytes},
		Events:   n.log.proxyEvent,
	})
	if err != nil {
		closeAll()
		n.dns.Close()
		return nil, fmt.Errorf("network allow mode: %w", err)
	}
	serve := func(f func() error) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			f()
		}()
	}
	serve(func() error { return n.proxy.ServeHTTP(ls[0]) })
	serve(func() error { return n.proxy.ServeSOCKS5(ls[1]) })
	serve(func() error { return n.dns.ServeTCP(ls[2]) })
	serve(func() error { return n.dns.ServeUDP(pc) })
	return n, nil
}

// openSockets makes the listeners and the DNS packet socket of the four
// files, each checked to be on the loopback port its server expects, and
// returns with them what closes them all; on an error nothing stays open
// but the files, which Start closes.
func openSockets(cfg Config, files []*os.File) (ls [3]net.Listener, pc net.PacketConn, closeAll func(), err error) {
	if len(files) != 4 {
		return ls, nil, nil, fmt.Errorf("network allow mode: the init sent %d sockets, want 4", len(files))
	}
	closeAll = func() {
		for _, l := range ls {
			if l != nil {
				l.Close()
			}
		}
		if pc != nil {
			pc.Close()
		}
	}
	fileListener := cfg.FileListener
	if fileListener == nil {
		fileListener = net.FileListener
	}
	for i, f := range []*os.File{files[0], files[1], files[3]} {
		if ls[i], err = fileListener(f); err != nil {
			closeAll()
			return ls, nil, nil, fmt.Errorf("network allow mode: listener %d: %w", i, err)
		}
	}
	if pc, err = net.FilePacketConn(files[2]); err != nil {
		closeAll()
		return ls, nil, nil, fmt.Errorf("network allow mode: DNS socket: %w", err)
	}
	// Each is what its server expects, or the record is not the init's.
	for i, a := range []net.Addr{ls[0].Addr(), ls[1].Addr(), ls[2].Addr(), pc.LocalAddr()} {
		if !loopbackPort(a, []int{ProxyHTTPPort, ProxySOCKS5Port, DNSPort, DNSPort}[i]) {
			closeAll()
			return ls, nil, nil, fmt.Errorf("network allow mode: socket %d is on %s, not where the init makes it", i, a)
		}
	}
	return ls, pc, closeAll, nil
}

// loopbackPort says whether a is 127.0.0.1:port (TCP or UDP).
func loopbackPort(a net.Addr, port int) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap == netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))
}

// Stop closes every listener and connection, waits for every goroutine
// the servers started, and returns what the run's network did.
func (n *Server) Stop() []Entry {
	// What closing the listeners returns says nothing about the run.
	n.proxy.Close()
	n.dns.Close()
	n.wg.Wait()
	return n.log.entries()
}
