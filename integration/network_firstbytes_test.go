package integration

import (
	"fmt"
	"strings"
	"testing"
)

// A tunnel to a name whose first bytes are a TLS record of another type
// than handshake (a ChangeCipherSpec, an alert) is refused, whatever
// ClientHello follows it: the proxy never looks past the first record for
// one, so the server name check cannot be stepped around. The refusal is a
// network entry and a violation of kind network; the upstream sees
// nothing. The same tunnel with the ClientHello first goes through.
func TestNetAllowTunnelFirstRecord(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		secure := newUpstream(t, true)
		sp := secure.port(t)
		w := u.workdir(t)
		target := fmt.Sprintf("localhost:%d", sp)
		const (
			ccs   = "140303000101"   // ChangeCipherSpec
			alert = "15030300020100" // warning alert close_notify
		)
		o := u.jail(t, w, []string{"--net", "allow",
			"--allow-host", target, "--allow-host", fmt.Sprintf("127.0.0.1:%d", sp)},
			"tunnel", "127.0.0.1:3128", target, "evil.example", ccs, ";",
			"tunnel", "127.0.0.1:3128", target, "localhost", alert, ";",
			"tunnel", "127.0.0.1:3128", target, "localhost")
		l := o.ok(t, 3)
		for i, what := range []string{"a ChangeCipherSpec, then a ClientHello for another name", "an alert, then a ClientHello for the name"} {
			if !strings.HasPrefix(l[i], "error ") {
				t.Errorf("%s: %s, want an error", what, l[i])
			}
		}
		var v httpValue
		o.value(t, 2, &v)
		if v.Status != 200 || v.Body != secure.mark {
			t.Errorf("the ClientHello first: %+v, want 200 and the marker\n%s", v, o)
		}
		if n := secure.hits.Load(); n != 1 {
			t.Errorf("the upstream served %d requests, want 1 (the tunnel that starts with its ClientHello)", n)
		}
		r := o.net(t)
		r.entry(t, o, "connect", "localhost", sp, "no client hello")
		r.entry(t, o, "connect", "localhost", sp, "allowed")
		r.violation(t, o, "localhost", sp, "no client hello")
		for _, e := range r.Network {
			if e.Decision == "no client hello" && (e.BytesUp != 0 || e.Count != 2) {
				t.Errorf("refused tunnels: %+v, want two and nothing sent upstream", e)
			}
		}
	})
}
