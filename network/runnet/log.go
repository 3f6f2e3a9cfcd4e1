package runnet

import (
	"sync"

	"github.com/tooljail/tooljail/network/proxy"
	"github.com/tooljail/tooljail/network/resolver"
)

// Entry is one line of the report's "network" list in the allow
// mode: a connection through a proxy or a DNS query, and what became of
// it. Identical ones (same proto, host, port, address and decision) are
// one entry with a count and their bytes summed.
type Entry struct {
	// Proto is "http" (a plain HTTP request), "connect" (an HTTP CONNECT
	// tunnel), "socks5" or "dns".
	Proto string `json:"proto"`
	// Host is the name or IP the command asked for ("" when it never
	// named one); for DNS the question name.
	Host string `json:"host"`
	// Port asked for; absent for DNS.
	Port int `json:"port,omitempty"`
	// DNSType is the question type of a DNS entry ("A", "AAAA", "TXT").
	DNSType string `json:"dns_type,omitempty"`
	// Address is the address connected to, or the one refused (for DNS
	// the first answered or refused); absent when no lookup was made.
	Address   string `json:"address,omitempty"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	// Decision is "allowed", or the reason it was refused or failed
	// (proxy.Reasons, resolver's reasons: "not in allowlist", "private
	// address", "sni mismatch", "dns refused", "connection limit", ...).
	Decision string `json:"decision"`
	// Cut says why an allowed connection was ended by tooljail ("byte
	// limit"); absent when it ended on its own.
	Cut   string `json:"cut,omitempty"`
	Count int    `json:"count"`
}

// maxNetEntries bounds the distinct entries kept; past it, entries are
// counted per proto and decision under host "other", so a command that
// floods the proxies with names costs the report bounded room.
const maxNetEntries = 256

// netLog gathers the proxies' and the resolver's events.
type netLog struct {
	mu    sync.Mutex
	index map[netKey]int
	list  []Entry
}

type netKey struct {
	proto, host, dnsType, addr, decision, cut string
	port                                      int
}

func newNetLog() *netLog { return &netLog{index: map[netKey]int{}} }

func (l *netLog) proxyEvent(ev proxy.Event) { l.add(proxyEntry(ev)) }

func (l *netLog) dnsEvent(ev resolver.Event) { l.add(dnsEntry(ev)) }

func (l *netLog) add(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := netKey{e.Proto, e.Host, e.DNSType, e.Address, e.Decision, e.Cut, e.Port}
	i, ok := l.index[k]
	if !ok && len(l.list) >= maxNetEntries {
		e.Host, e.Port, e.DNSType, e.Address = "other", 0, "", ""
		k = netKey{proto: e.Proto, host: e.Host, decision: e.Decision, cut: e.Cut}
		i, ok = l.index[k]
	}
	if !ok {
		l.index[k] = len(l.list)
		l.list = append(l.list, e)
		return
	}
	p := &l.list[i]
	p.Count += e.Count
	p.BytesUp += e.BytesUp
	p.BytesDown += e.BytesDown
}

func (l *netLog) entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry{}, l.list...)
}

// proxyEntry is a proxy's event as the report shows it.
func proxyEntry(ev proxy.Event) Entry {
	e := Entry{Proto: ev.Proto, Host: ev.Host, Port: ev.Port, BytesUp: ev.BytesUp, BytesDown: ev.BytesDown, Count: 1}
	if ev.Addr.IsValid() {
		e.Address = ev.Addr.String()
	}
	switch {
	case !ev.Allowed:
		e.Decision = ev.Reason
	default:
		e.Decision = "allowed"
		e.Cut = ev.Reason
	}
	return e
}

// dnsEntry is the resolver's event as the report shows it: refused for
// its reason, else allowed (an allowed name whose lookup failed says so).
func dnsEntry(ev resolver.Event) Entry {
	e := Entry{Proto: "dns", Host: ev.Name, Count: max(ev.Count, 1), Decision: "allowed"}
	if ev.Type != 0 {
		e.DNSType = resolver.TypeName(ev.Type)
	}
	switch {
	case !ev.Allowed:
		e.Decision = ev.Reason
		if len(ev.Dropped) > 0 {
			e.Address = ev.Dropped[0].String()
		}
	case ev.Reason == resolver.ReasonLookupFailed || ev.Reason == resolver.ReasonBusy:
		e.Decision = ev.Reason
	case len(ev.Answered) > 0:
		e.Address = ev.Answered[0].String()
	}
	return e
}

// notRefusal are the decisions that are failures, not the policy's
// refusals: no violation.
var notRefusal = map[string]bool{
	"allowed":                   true,
	proxy.ReasonDNS:             true,
	proxy.ReasonConnect:         true,
	resolver.ReasonLookupFailed: true,
	resolver.ReasonBusy:         true,
}

// UpstreamFailed says whether the entry is an upstream failure: the
// command's request was allowed, but its name did not resolve ("dns
// failed", "lookup failed"), no checked address accepted the connection
// ("connect failed") or the resolver was busy. Not a refusal: the policy
// let it through, the outside world did not answer.
func (e Entry) UpstreamFailed() bool {
	return e.Decision != "allowed" && notRefusal[e.Decision]
}

// Refused says whether the entry is one of the policy's refusals (a
// violation of the run), not an allowed request or an upstream failure.
func (e Entry) Refused() bool { return !notRefusal[e.Decision] }
