package resolver

import (
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// The reasons an Event gives besides allow.Check's (private address,
// metadata address...). They are stable: the report carries them.
const (
	// ReasonDNSRefused: the name is not on the list (or is not a host
	// name at all); the reply was REFUSED.
	ReasonDNSRefused = "dns refused"
	// ReasonMalformed: the message was not a query the resolver reads;
	// the reply was FORMERR, BADVERS or nothing.
	ReasonMalformed = "malformed query"
	// ReasonLookupFailed: the upstream lookup of an allowed name failed
	// or timed out; the reply was SERVFAIL.
	ReasonLookupFailed = "lookup failed"
	// ReasonBusy: the limit on queries waiting for upstream (SERVFAIL) or
	// on TCP connections (closed at once) was reached.
	ReasonBusy = "resolver busy"
)

// Event is one query outcome, or several identical ones counted together.
type Event struct {
	// Time is when the first query the event counts arrived.
	Time time.Time
	// Name is the question name written out: lower case, no trailing
	// dot, "" for the root, a byte other than a letter, digit, '-' or '_'
	// as \DDD (such a name is refused). An event that
	// counts many names has "*." and their last two labels
	// ("*.example.com", the names under example.com and example.com
	// itself), or "*" for any name; its Type is then 0. A TCP connection
	// closed for Limits.TCPConns is an event with no Name.
	Name string
	// Type is the question type; TypeName writes it as the report does.
	Type dnsmessage.Type
	// Answered are the addresses the reply carried; Dropped those the
	// upstream gave that allow.Check refused. Each holds at most
	// MaxEventAddrs.
	Answered, Dropped []netip.Addr
	// Allowed: the name is on the list and the policy refused nothing
	// wholesale: the reply answered (addresses, or none of the type
	// asked), or was SERVFAIL for ReasonLookupFailed or ReasonBusy.
	// False: the query was refused, for Reason.
	Allowed bool
	// Reason is why the query was refused, why an allowed name got no
	// answer (ReasonLookupFailed, ReasonBusy), or for an answer why the
	// Dropped addresses were left out; "" otherwise.
	Reason string
	// Count is how many queries the event stands for (1 for the first
	// of its kind).
	Count int
}

// MaxEventAddrs bounds each address list an Event carries.
const MaxEventAddrs = 16

// DefaultEventNames is Limits.EventNames by default.
const DefaultEventNames = 256

// eventKey is what makes two events "the same": repeats are counted,
// not sent again.
type eventKey struct {
	name    string
	typ     dnsmessage.Type
	allowed bool
	reason  string
}

type tally struct {
	n    int   // counted since the last event sent for this key
	last Event // the latest of them, with the first one's Time
}

// coalescer turns a stream of query outcomes into a bounded stream of
// Events. The first outcome of a kind goes to the sink at once; repeats
// are counted and sent, one event per kind with its count, when the
// server closes. Kinds are remembered individually up to names; past
// that, an outcome is counted under foldName of its name (with type 0),
// up to twice names kinds in all, and then under "*". The "*" kinds are
// bounded by the reasons there are, so memory and events stay bounded
// however many distinct names a command sends, and the Counts still add
// up to the number of queries.
type coalescer struct {
	names int

	mu sync.Mutex
	m  map[eventKey]*tally

	sinkMu sync.Mutex // one sink call at a time, so a sink needs no lock
	sink   func(Event)
}

func newCoalescer(names int, sink func(Event)) *coalescer {
	return &coalescer{names: names, m: make(map[eventKey]*tally), sink: sink}
}

func keyOf(ev Event) eventKey {
	return eventKey{name: ev.Name, typ: ev.Type, allowed: ev.Allowed, reason: ev.Reason}
}

// record counts ev and sends it if it is the first of its kind.
func (c *coalescer) record(ev Event) {
	ev.Answered = capAddrs(ev.Answered)
	ev.Dropped = capAddrs(ev.Dropped)
	ev.Count = 1
	c.mu.Lock()
	k := keyOf(ev)
	t := c.m[k]
	if t == nil && len(c.m) >= c.names {
		ev.Name, ev.Type = foldName(ev.Name), 0
		k = keyOf(ev)
		t = c.m[k]
		if t == nil && len(c.m) >= 2*c.names {
			ev.Name = "*"
			k = keyOf(ev)
			t = c.m[k]
		}
	}
	if t != nil {
		if t.n == 0 {
			t.last.Time = ev.Time
		}
		t.n++
		t.last.Answered, t.last.Dropped = ev.Answered, ev.Dropped
		c.mu.Unlock()
		return
	}
	c.m[k] = &tally{last: ev}
	c.mu.Unlock()
	c.send(ev)
}

// flush sends one event per kind with repeats not yet sent.
func (c *coalescer) flush() {
	c.mu.Lock()
	var out []Event
	for _, t := range c.m {
		if t.n == 0 {
			continue
		}
		ev := t.last
		ev.Count = t.n
		t.n = 0
		out = append(out, ev)
	}
	c.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	for _, ev := range out {
		c.send(ev)
	}
}

func (c *coalescer) send(ev Event) {
	if c.sink == nil {
		return
	}
	c.sinkMu.Lock()
	defer c.sinkMu.Unlock()
	c.sink(ev)
}

// kinds is how many kinds are remembered, for tests of the bound.
func (c *coalescer) kinds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func capAddrs(a []netip.Addr) []netip.Addr {
	if len(a) == 0 {
		return nil
	}
	// A copy: an event must not hold on to a longer upstream slice.
	return slices.Clone(a[:min(len(a), MaxEventAddrs)])
}

// typeNames are the mnemonics the report writes. dnsmessage's String
// gives "TypeA" and knows fewer types, so the report keeps its own.
var typeNames = map[dnsmessage.Type]string{
	1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT",
	28: "AAAA", 33: "SRV", 35: "NAPTR", 41: "OPT", 43: "DS", 46: "RRSIG",
	48: "DNSKEY", 64: "SVCB", 65: "HTTPS", 99: "SPF", 251: "IXFR",
	252: "AXFR", 255: "ANY", 257: "CAA",
}

// TypeName is t's mnemonic ("A", "AAAA", "HTTPS"), or TYPEn for others
// (RFC 3597).
func TypeName(t dnsmessage.Type) string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}
