package jail

import (
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/changes"
)

func TestChangeBinds(t *testing.T) {
	mounts := []Mount{
		{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true},
		{Kind: MountTmpfs, Dest: "/tmp", Writable: true},
		{Kind: MountBind, Source: "/home/u/proj", Dest: "/home/u/proj", Writable: true},
		{Kind: MountBind, Source: "/home/u/.cache/tooljail/caches/npm", Dest: "/home/sandbox/.npm", Writable: true, Cache: "npm"},
		{Kind: MountBind, Source: "/srv/data", Dest: "/data", Writable: true},
		{Kind: MountBind, Source: "/usr", Dest: "/usr2", InRoot: true},
		{Kind: MountMask, Dest: "/home/u/proj/.env"},
	}
	if got := changeBinds(mounts); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("changeBinds = %v, want the workdir and the rw bind, not the cache, tmpfs or read-only binds", got)
	}
}

func TestDecideChanges(t *testing.T) {
	for _, c := range []struct {
		mode   changes.Mode
		nons   bool
		why    string
		record bool
		reason string // in the plan's reason
		err    string // in the error
	}{
		{mode: changes.Off},
		{mode: ""},
		{mode: changes.Review, record: true},
		{mode: changes.Record, record: true},
		{mode: changes.ApplyOnSuccess, record: true},
		{mode: changes.Review, why: "too old", err: "too old"},
		{mode: changes.ApplyOnSuccess, why: "too old", err: "--changes apply-on-success: too old"},
		{mode: changes.Record, why: "too old", reason: "changes were not recorded: too old"},
		{mode: changes.Review, nons: true, err: "without namespaces"},
		{mode: changes.Record, nons: true, reason: "without namespaces"},
		{mode: changes.Off, nons: true},
	} {
		p, err := decideChanges(c.mode, c.nons, c.why)
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
		if p.record != c.record || c.reason == "" && p.reason != "" || !strings.Contains(p.reason, c.reason) {
			t.Errorf("%+v: plan %+v", c, p)
		}
	}
}

func TestApplyAtEnd(t *testing.T) {
	for _, c := range []struct {
		mode changes.Mode
		ok   bool
		want bool
	}{
		{changes.Record, true, true}, {changes.Record, false, true},
		{changes.ApplyOnSuccess, true, true}, {changes.ApplyOnSuccess, false, false},
		{changes.Review, true, false}, {changes.Review, false, false},
	} {
		if got := applyAtEnd(c.mode, c.ok); got != c.want {
			t.Errorf("applyAtEnd(%s, %v) = %v", c.mode, c.ok, got)
		}
	}
}
