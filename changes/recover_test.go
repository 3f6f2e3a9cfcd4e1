package changes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestApplyCrashChild is the process an apply dies in: re-executed by
// TestApplyKilled, it applies a set and exits hard at a chosen step.
func TestApplyCrashChild(t *testing.T) {
	dir, id, at := os.Getenv("TJ_CRASH_STORE"), os.Getenv("TJ_CRASH_ID"), os.Getenv("TJ_CRASH_AT")
	if dir == "" {
		t.Skip("run by TestApplyKilled")
	}
	k, err := strconv.Atoi(at) // -1: after the commit
	must(t, err)
	if os.Getenv("TJ_CRASH_MADE") != "" { // inside step k
		testHookMade = func(made int) {
			if made >= k { // the first step from k that makes something
				os.Exit(7)
			}
		}
	} else {
		testHookStep = func(done int, committed bool) {
			if (k < 0 && committed) || (!committed && done == k) {
				os.Exit(7)
			}
		}
	}
	s, err := Open(dir, Options{})
	must(t, err)
	_, err = s.Apply(id, ApplyOptions{})
	t.Fatalf("the apply ran to its end: %v", err)
}

// An apply killed half way is rolled back by the next Open (every step
// done so far undone: the project is as before, the same objects), or,
// killed after its commit, finished; either way nothing of it is left.
func TestApplyKilled(t *testing.T) {
	f, _ := richFixture(t)
	steps := len(f.changes)
	type point struct {
		k      int
		inside bool
	}
	var points []point
	for k := 0; k <= steps; k++ {
		points = append(points, point{k, false})
	}
	points = append(points, point{-1, false})
	// Inside the steps that make something (the deletes and chmods are
	// one system call).
	for _, k := range []int{0, 2, 4, 6, 8, 10, 12, 14} {
		points = append(points, point{k, true})
	}
	for _, pt := range points {
		k := pt.k
		name := fmt.Sprint("after step ", k)
		if pt.inside {
			name = fmt.Sprint("inside step ", k)
		}
		t.Run(name, func(t *testing.T) {
			f, id := richFixture(t)
			before := snapshot(t, f.host)
			cmd := exec.Command(os.Args[0], "-test.run=^TestApplyCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TJ_CRASH_STORE="+f.s.Dir(), "TJ_CRASH_ID="+id, fmt.Sprint("TJ_CRASH_AT=", k))
			if pt.inside {
				cmd.Env = append(cmd.Env, "TJ_CRASH_MADE=1")
			}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 {
				t.Fatalf("the child did not die at step %d: %v\n%s", k, err, out)
			}
			if _, err := os.Stat(filepath.Join(f.s.Dir(), id, journalFile)); err != nil {
				t.Fatalf("no journal left by the dead apply: %v", err)
			}
			if k != 0 && k != -1 && !pt.inside && reflect.DeepEqual(before, snapshot(t, f.host)) {
				t.Fatalf("the child died before changing anything")
			}
			s, err := Open(f.s.Dir(), Options{})
			must(t, err)
			defer s.Close()
			set, err := s.Get(id)
			must(t, err)
			if k == -1 {
				if set.State != StateApplied {
					t.Errorf("committed apply not finished: state %q", set.State)
				}
				checkRichApplied(t, f.host)
			} else {
				if set.State != StateKept {
					t.Errorf("rolled back set: state %q", set.State)
				}
				after := snapshot(t, f.host)
				if !reflect.DeepEqual(before, after) {
					for p := range mergeKeys(before, after) {
						if before[p] != after[p] {
							t.Errorf("%s: %s -> %s", p, before[p], after[p])
						}
					}
				}
			}
			if l := leftovers(t, f.host); len(l) > 0 {
				t.Errorf("left in the project: %v", l)
			}
			if _, err := os.Stat(filepath.Join(s.Dir(), id, journalFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("journal kept: %v", err)
			}
			if k != -1 { // rolled back: it applies as if nothing happened
				_, err := s.Apply(id, ApplyOptions{})
				must(t, err)
				checkRichApplied(t, f.host)
			}
		})
	}
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// An apply that fails part way (a step's file cannot be read) rolls
// back in the same process.
func TestApplyErrorRollsBack(t *testing.T) {
	f, id := richFixture(t)
	before := snapshot(t, f.host)
	// Break the last step's source: the set's copy of src/main.go.
	must(t, os.Remove(filepath.Join(f.s.Dir(), id, upperDir, "0", "src", "main.go")))
	_, err := f.s.Apply(id, ApplyOptions{})
	if err == nil {
		t.Fatal("Apply worked without its copy")
	}
	if after := snapshot(t, f.host); !reflect.DeepEqual(before, after) {
		t.Errorf("not rolled back:\n%v\n%v", before, after)
	}
	if l := leftovers(t, f.host); len(l) > 0 {
		t.Errorf("left in the project: %v", l)
	}
	if _, err := os.Stat(filepath.Join(f.s.Dir(), id, journalFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal kept: %v", err)
	}
	set, err := f.s.Get(id)
	must(t, err)
	if set.State != StateFailed {
		t.Errorf("state %q, want %q", set.State, StateFailed)
	}
}
