package hostpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestOpenerAsOpenIn holds the Opener to OpenIn as the oracle: the same
// paths, through one Opener in two orders (so each finds the directories
// of the others already open), give the same objects, resolved paths,
// chains and errors; the Objects outlive the Opener, and nothing is left
// open once they and it are closed.
func TestOpenerAsOpenIn(t *testing.T) {
	d, r := tree(t)
	// A link whose target ends in a directory the walk keeps: the Object
	// must get a descriptor of its own.
	if err := os.Symlink("../real/sub/..", filepath.Join(d, "prot/updir")); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		d + "/real/sub/f", d + "/real/sub/../sub/./f", d + "/real/sub", d + "/real",
		d + "/planted", d + "/planted/sub", d + "/prot/ok/f", d + "/prot/abs/sub",
		d + "/prot/loop", d + "/real/sub/chain", d + "/real/sub/f/x", d + "/missing",
		d + "/prot/updir", d + "/prot/updir/sub/f", d + "/prot/inner", "/",
	}
	root, err := os.OpenFile("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	before := fdCount(t)
	reversed := slices.Clone(paths)
	slices.Reverse(reversed)
	for _, order := range [][]string{paths, reversed} {
		o, err := newOpener(r, root)
		if err != nil {
			t.Fatal(err)
		}
		var objs []*Object
		for _, p := range order {
			want, werr := openIn(r, root, p, Options{})
			got, gerr := o.Open(p, Options{})
			switch {
			case werr != nil || gerr != nil:
				if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
					t.Errorf("%s: Opener: %v; OpenIn: %v", p, gerr, werr)
				}
			case got.Path != want.Path || got.ID() != want.ID() || !slices.Equal(got.Chain, want.Chain):
				t.Errorf("%s: Opener: %s %v %v; OpenIn: %s %v %v", p, got.Path, got.ID(), got.Chain, want.Path, want.ID(), want.Chain)
			}
			if want != nil {
				want.Close()
			}
			if got != nil {
				objs = append(objs, got)
			}
		}
		o.Close()
		for _, obj := range objs {
			var st unix.Stat_t
			if err := unix.Fstat(int(obj.File.Fd()), &st); err != nil || idOf(&st) != obj.ID() {
				t.Errorf("%s after the Opener's Close: %v, %v; want %v", obj.Path, err, idOf(&st), obj.ID())
			}
			obj.Close()
		}
	}
	if after := fdCount(t); after != before {
		t.Errorf("%d descriptors open after, %d before", after, before)
	}
}

// TestOpenerShares: the directories on the way are opened once per Opener,
// so a directory renamed away between two paths is still the one the
// second path goes through; a new Opener sees the new one. A closed Opener
// opens nothing.
func TestOpenerShares(t *testing.T) {
	d, r := tree(t)
	root, err := os.OpenFile("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	o, err := newOpener(r, root)
	if err != nil {
		t.Fatal(err)
	}
	first, err := o.Open(d+"/real/sub/f", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := os.Rename(filepath.Join(d, "real/sub"), filepath.Join(d, "real/moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(d, "real/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "real/sub/f"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := o.Open(d+"/real/sub/f", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.ID() != first.ID() {
		t.Errorf("the second open went through a directory opened again: %v, want %v", again.ID(), first.ID())
	}
	o.Close()
	fresh, err := openIn(r, root, d+"/real/sub/f", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if fresh.ID() == first.ID() {
		t.Errorf("a new walk found the renamed directory's file")
	}
	if _, err := o.Open(d+"/real/sub/f", Options{}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a closed Opener: %v, want an error", err)
	}
}
