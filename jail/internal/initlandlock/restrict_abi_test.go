package initlandlock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tooljail/tooljail/landlock"
)

// fsRightsPerABI is how many filesystem rights (the first n bits) each
// Landlock ABI handles, from the kernel's documentation.
var fsRightsPerABI = map[int]int{1: 13, 2: 14, 3: 15, 4: 15, 5: 16}

// asABI is lp as Compile makes it on a kernel of an older ABI: the rights
// that ABI does not have are neither handled nor granted, and neither are
// TCP, scopes or the logging flags it lacks.
func asABI(lp landlock.Plan, abi int) landlock.Plan {
	mask := uint64(1)<<fsRightsPerABI[abi] - 1
	lp.HandledFS &= mask
	lp.Paths = slices.Clone(lp.Paths)
	for i := range lp.Paths {
		lp.Paths[i].Dir &= mask
		lp.Paths[i].File &= mask
		lp.Paths[i].Device &= mask
	}
	if abi < 4 {
		lp.HandledNet, lp.Ports = 0, nil
	}
	if abi < 6 {
		lp.Scoped = 0
	}
	if abi < 7 {
		lp.Flags = 0
	}
	return lp
}

// TestOlderABIs builds the plans of older kernels on this one and checks
// what the package documentation (landlock/landlock.go) says changes from
// one ABI to the next: below 2 a ReadWrite rule still cannot move a file
// across directories (refer), below 3 a Read rule does not stop
// truncate(2), below 5 a ReadWrite rule on /dev does not stop device
// ioctls.
func TestOlderABIs(t *testing.T) {
	requireABI(t, 5)
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skipf("no /dev/ptmx: %v", err)
	}
	tr := newTree(t)
	must(t, os.Mkdir(filepath.Join(tr.rw, "d"), 0o777))
	p := tr.policy()
	p.Rules = append(p.Rules, landlock.Rule{Path: "/dev", Access: landlock.ReadWrite})
	lp, _, err := landlock.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	for abi, want := range map[int][]string{
		1: {"EXDEV", "ok", "ok"},
		2: {"ok", "ok", "ok"},
		3: {"ok", "EACCES", "ok"},
		4: {"ok", "EACCES", "ok"},
		5: {"ok", "EACCES", "EACCES"},
	} {
		t.Run(fmt.Sprintf("abi%d", abi), func(t *testing.T) {
			t.Parallel()
			moved := filepath.Join(tr.rw, fmt.Sprintf("f%d", abi))
			must(t, os.WriteFile(moved, nil, 0o666))
			plan := asABI(lp, abi)
			got := restricted(t, scenario{Plan: &plan, Ops: []op{
				{Do: "rename", Path: moved, To: filepath.Join(tr.rw, "d", filepath.Base(moved))},
				{Do: "truncate", Path: filepath.Join(tr.ro, "f")},
				{Do: "ptmx", Path: "/dev/ptmx"},
			}}, nil)
			if !slices.Equal(got.Results, want) {
				t.Errorf("rename across rw dirs, truncate in ro, TIOCGPTN under rw /dev: got %v, want %v", got.Results, want)
			}
		})
	}
}
