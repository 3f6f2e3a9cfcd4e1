package resolver

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestCoalesceRepeats(t *testing.T) {
	var log eventLog
	c := newCoalescer(8, log.add)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		c.record(Event{Time: t0.Add(time.Duration(i) * time.Second), Name: "evil.example", Type: dnsmessage.TypeTXT, Reason: ReasonDNSRefused})
	}
	c.record(Event{Time: t0, Name: "evil.example", Type: dnsmessage.TypeA, Reason: ReasonDNSRefused})
	evs := log.all()
	if len(evs) != 2 || evs[0].Count != 1 || !evs[0].Time.Equal(t0) || evs[1].Type != dnsmessage.TypeA {
		t.Fatalf("before flush: %+v; want the first of each kind", evs)
	}
	c.flush()
	evs = log.all()
	if len(evs) != 3 || evs[2].Count != 4 || evs[2].Type != dnsmessage.TypeTXT || !evs[2].Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("after flush: %+v; want one event counting the 4 repeats, at the first repeat's time", evs)
	}
	c.flush()
	if n := len(log.all()); n != 3 {
		t.Fatalf("a second flush sent %d more events; want none", n-3)
	}
}

func TestCoalesceBounded(t *testing.T) {
	const names = 8
	var log eventLog
	c := newCoalescer(names, log.add)
	t0 := time.Now()
	total := 0
	// Distinct names under one domain, then under many domains.
	for i := range 10000 {
		c.record(Event{Time: t0, Name: fmt.Sprintf("x%d.evil.example", i), Type: dnsmessage.TypeA, Reason: ReasonDNSRefused})
		total++
	}
	for i := range 1000 {
		c.record(Event{Time: t0, Name: fmt.Sprintf("x.d%d.example", i), Type: dnsmessage.TypeAAAA, Reason: ReasonDNSRefused})
		total++
	}
	if k := c.kinds(); k > 2*names+1 {
		t.Errorf("%d kinds remembered; want at most %d", k, 2*names+1)
	}
	before := len(log.all())
	c.flush()
	evs := log.all()
	if len(evs) > 2*(2*names+1) {
		t.Errorf("%d events for %d queries; want at most %d", len(evs), total, 2*(2*names+1))
	}
	if n := log.count(func(Event) bool { return true }); n != total {
		t.Errorf("counts add up to %d, want %d", n, total)
	}
	if n := log.count(named("*.evil.example", ReasonDNSRefused, false)); n != 10000-names {
		t.Errorf("%d counted under *.evil.example, want %d; events %v", n, 10000-names, &log)
	}
	if n := log.count(named("*", ReasonDNSRefused, false)); n == 0 {
		t.Errorf("nothing counted under *; events %v", &log)
	}
	for _, ev := range evs[before:] {
		if ev.Count < 1 {
			t.Errorf("flushed event with count %d", ev.Count)
		}
	}
}

func TestEventAddrsCapped(t *testing.T) {
	var log eventLog
	c := newCoalescer(8, log.add)
	var many []netip.Addr
	for i := range 40 {
		many = append(many, netip.AddrFrom4([4]byte{1, 2, 3, byte(i)}))
	}
	c.record(Event{Name: "a.example", Answered: many, Dropped: many[:3], Allowed: true})
	ev := log.all()[0]
	if len(ev.Answered) != MaxEventAddrs || len(ev.Dropped) != 3 || ev.Answered[0] != many[0] {
		t.Errorf("answered %d, dropped %d; want %d and 3", len(ev.Answered), len(ev.Dropped), MaxEventAddrs)
	}
}

func TestNilSink(t *testing.T) {
	c := newCoalescer(1, nil)
	c.record(Event{Name: "a"})
	c.record(Event{Name: "a"})
	c.flush()
}
