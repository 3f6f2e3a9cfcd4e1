package serve

import (
	"strings"
	"testing"
)

const testSetID = "0123456789abcdef0123456789abcdef"

func TestDecodeChanges(t *testing.T) {
	r, err := decodeRequest([]byte(`{"argv":["true"],"changes":"review"}`))
	if err != nil || r.Changes != "review" {
		t.Fatalf("decode: %v, %+v", err, r)
	}
	r, err = decodeRequest([]byte(`{"id":"x","changes_op":{"action":"apply","id":"` + testSetID + `","force":true}}`))
	if err != nil || r.ChangesOp == nil || *r.ChangesOp != (ChangesOp{Action: "apply", ID: testSetID, Force: true}) {
		t.Fatalf("decode: %v, %+v", err, r)
	}
	if _, err := decodeRequest([]byte(`{"changes_op":{"action":"apply","idd":"x"}}`)); err == nil || !strings.Contains(err.Error(), "idd") {
		t.Errorf("an unknown field of changes_op: %v, want a refusal naming it", err)
	}
	if _, err := decodeRequest([]byte(`{"argv":["true"],"changes":true}`)); err == nil || !strings.Contains(err.Error(), `"changes"`) {
		t.Errorf("changes not a string: %v", err)
	}
}

func TestChangesMode(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "", ""},
		{"off", "off", ""},
		{"record", "record", ""},
		{"review", "review", ""},
		{"apply-on-success", "apply-on-success", ""},
		{"Review", "", `changes: "Review" is not a mode: want off, record, review or apply-on-success`},
		{"on", "", "not a mode"},
	} {
		m, e := changesMode(c.in)
		if c.err != "" {
			if e == nil || !strings.Contains(e.Message, c.err) || e.Code != 125 {
				t.Errorf("%q: %v, want an error with %q", c.in, e, c.err)
			}
			continue
		}
		if e != nil || string(m) != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, m, e, c.want)
		}
	}
}

func TestCheckChangesOp(t *testing.T) {
	op := func(o ChangesOp) *Request { return &Request{ChangesOp: &o} }
	for _, c := range []struct {
		name string
		r    *Request
		err  string
	}{
		{"apply", op(ChangesOp{Action: "apply", ID: testSetID}), ""},
		{"apply forced", op(ChangesOp{Action: "apply", ID: testSetID, Force: true}), ""},
		{"discard", op(ChangesOp{Action: "discard", ID: testSetID}), ""},
		{"show", op(ChangesOp{Action: "show", ID: testSetID}), ""},
		{"diff of a path", op(ChangesOp{Action: "diff", ID: testSetID, Path: "/work/a.txt"}), ""},
		{"list", op(ChangesOp{Action: "list"}), ""},
		{"with a request id", &Request{ID: "r1", ChangesOp: &ChangesOp{Action: "list"}}, ""},
		{"unknown action", op(ChangesOp{Action: "merge", ID: testSetID}), `changes_op.action "merge": want one of list, show, diff, apply, discard`},
		{"no action", op(ChangesOp{ID: testSetID}), `changes_op.action ""`},
		{"no id", op(ChangesOp{Action: "apply"}), `changes_op.id "": want a change set's id`},
		{"id upper case", op(ChangesOp{Action: "apply", ID: strings.ToUpper(testSetID)}), "changes_op.id"},
		{"id a path", op(ChangesOp{Action: "apply", ID: "../../etc/passwd0123456789abcdef"}), "changes_op.id"},
		{"list with id", op(ChangesOp{Action: "list", ID: testSetID}), "list takes no id"},
		{"force on discard", op(ChangesOp{Action: "discard", ID: testSetID, Force: true}), "only apply takes it"},
		{"path on apply", op(ChangesOp{Action: "apply", ID: testSetID, Path: "a"}), "only diff takes it"},
		{"with argv", &Request{Argv: []string{"true"}, ChangesOp: &ChangesOp{Action: "list"}}, "argv: not taken with changes_op"},
		{"with workdir", &Request{Workdir: "/tmp", ChangesOp: &ChangesOp{Action: "list"}}, "workdir: not taken with changes_op"},
		{"with changes", &Request{Changes: "review", ChangesOp: &ChangesOp{Action: "list"}}, "changes: not taken with changes_op"},
		{"with tool", &Request{Tool: "t", ChangesOp: &ChangesOp{Action: "list"}}, "tool: not taken with changes_op"},
	} {
		e := checkChangesOp(c.r)
		switch {
		case c.err == "" && e != nil:
			t.Errorf("%s: refused: %v", c.name, e)
		case c.err != "" && (e == nil || !strings.Contains(e.Message, c.err)):
			t.Errorf("%s: %v, want %q", c.name, e, c.err)
		}
	}
}

func TestPeerStore(t *testing.T) {
	for _, c := range []struct {
		name        string
		euid, peer  int
		store, want string
		err         string
	}{
		{"a user's server: its store", 1000, 1000, "", "", ""},
		{"a user's server, root calls", 1000, 0, "/home/u/s", "/home/u/s", ""},
		{"root's server: the peer's own dir", 0, 1000, "", "/var/lib/tooljail/changes/uid-1000", ""},
		{"root's server, a store given", 0, 65534, "/srv/changes", "/srv/changes/uid-65534", ""},
		{"root's server, root calls", 0, 0, "/srv/changes", "/srv/changes/uid-0", ""},
		{"root's server, no peer", 0, -1, "", "", "cannot tell who the client is"},
	} {
		got, e := peerStore(c.euid, c.peer, c.store)
		if c.err != "" {
			if e == nil || !strings.Contains(e.Message, c.err) {
				t.Errorf("%s: %q, %v; want %q", c.name, got, e, c.err)
			}
			continue
		}
		if e != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, e, c.want)
		}
	}
}

func TestMayAct(t *testing.T) {
	for _, c := range []struct {
		peer, owner int
		want        bool
	}{{1000, 1000, true}, {1000, 1001, false}, {0, 1000, true}, {65534, 0, false}, {-1, -1, false}} {
		if got := mayAct(c.peer, c.owner); got != c.want {
			t.Errorf("mayAct(%d, %d) = %v", c.peer, c.owner, got)
		}
	}
}

// A tool call takes no changes field: the tool file decides the mode.
func TestToolRequestRefusesChanges(t *testing.T) {
	e := checkToolRequest(&Request{Tool: "t", Workdir: "/tmp", Changes: "review"})
	if e == nil || !strings.Contains(e.Message, "changes: not taken with tool") {
		t.Errorf("got %v", e)
	}
}
