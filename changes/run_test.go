package changes

import (
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostside"
)

func TestBinds(t *testing.T) {
	mounts := []hostside.Mount{
		{Kind: hostside.Bind, Source: "/usr", Dest: "/usr"},
		{Kind: hostside.Tmpfs, Dest: "/tmp", Writable: true},
		{Kind: hostside.Bind, Source: "/home/u/proj", Dest: "/home/u/proj", Writable: true},
		{Kind: hostside.Bind, Source: "/home/u/.cache/tooljail/caches/npm", Dest: "/home/sandbox/.npm", Writable: true, Cache: "npm"},
		{Kind: hostside.Bind, Source: "/srv/data", Dest: "/data", Writable: true},
		{Kind: hostside.Bind, Source: "/usr", Dest: "/usr2", InRoot: true},
		{Kind: hostside.Mask, Dest: "/home/u/proj/.env"},
	}
	if got := Binds(mounts); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("Binds = %v, want the workdir and the rw bind, not the cache, tmpfs or read-only binds", got)
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		mode   Mode
		nons   bool
		why    string
		record bool
		reason string // in the plan's reason
		err    string // in the error
	}{
		{mode: Off},
		{mode: ""},
		{mode: Review, record: true},
		{mode: Record, record: true},
		{mode: ApplyOnSuccess, record: true},
		{mode: Review, why: "too old", err: "too old"},
		{mode: ApplyOnSuccess, why: "too old", err: "--changes apply-on-success: too old"},
		{mode: Record, why: "too old", reason: "changes were not recorded: too old"},
		{mode: Review, nons: true, err: "without namespaces"},
		{mode: Record, nons: true, reason: "without namespaces"},
		{mode: Off, nons: true},
	} {
		p, err := Decide(c.mode, c.nons, c.why)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--changes off") {
				t.Errorf("%+v: error %v, want one with %q that names --changes off", c, err, c.err)
			}
			continue
		case err != nil:
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if p.Record != c.record || c.reason == "" && p.Reason != "" || !strings.Contains(p.Reason, c.reason) {
			t.Errorf("%+v: plan %+v", c, p)
		}
	}
}

func TestApplyAtEnd(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		ok   bool
		want bool
	}{
		{Record, true, true}, {Record, false, true},
		{ApplyOnSuccess, true, true}, {ApplyOnSuccess, false, false},
		{Review, true, false}, {Review, false, false},
	} {
		if got := applyAtEnd(c.mode, c.ok); got != c.want {
			t.Errorf("applyAtEnd(%s, %v) = %v", c.mode, c.ok, got)
		}
	}
}
