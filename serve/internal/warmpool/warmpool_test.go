package warmpool

import (
	"os"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

func TestMain(m *testing.M) {
	jail.Init() // the host probe re-executes the test binary
	os.Exit(m.Run())
}

// poolSpec is the default profile's Spec for args in dir (cgroup
// degraded for a user on a v1 host).
func poolSpec(t *testing.T, dir string, args ...string) *jail.Spec {
	t.Helper()
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		p.AddAllowDegraded("cgroup")
	}
	s, err := p.Spec(profiles.Request{Args: args, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The pool: a new shape runs cold and is built in the background; the
// next call of it takes a warm jail; a call whose Spec does not fit the
// key's jails runs cold and the key rests (no build per call); close
// leaves nothing parked.
func TestPool(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	p := New(2)
	defer p.Close()
	spec := poolSpec(t, dir, "true")
	if cmd := p.Take("k", spec); cmd != nil {
		t.Fatal("a new shape took a warm jail")
	}
	ready := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.keys["k"].ready)
	}
	for deadline := time.Now().Add(30 * time.Second); ready() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := ready(); n != 2 {
		t.Fatalf("%d warm jails built, want 2", n)
	}
	cmd := p.Take("k", spec)
	if cmd == nil {
		t.Fatal("no warm jail taken")
	}
	if res, err := cmd.Run(); err != nil || res.ExitCode != 0 {
		t.Errorf("the warm call: %v %+v", err, res)
	}
	other := poolSpec(t, dir, "true")
	other.Hostname = "elsewhere"
	if cmd := p.Take("k", other); cmd != nil {
		t.Error("an unfit Spec took a warm jail")
	}
	// A build still under way when the key cooled is closed when done.
	state := func() (parked, building int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		k := p.keys["k"]
		return len(k.ready), k.building
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, b := state(); b == 0 {
			break
		}
	}
	if parked, building := state(); parked != 0 || building != 0 {
		t.Errorf("after an unfit call: %d parked, %d building; want the key resting", parked, building)
	}
	if cmd := p.Take("k", spec); cmd != nil {
		t.Error("a resting key took a warm jail")
	}
	if parked, building := state(); parked != 0 || building != 0 {
		t.Errorf("a call on a resting key: %d parked, %d building; want none", parked, building)
	}
	p.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.keys) != 0 {
		t.Errorf("keys left after close: %d", len(p.keys))
	}
}
