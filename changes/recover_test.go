package changes

import (
	"fmt"
	"reflect"
	"testing"
)

// stopApply is what the hook panics with to stop an apply as a kill would
// (the journal stays; the deferred closes release the set's lock).
type stopApply struct{}

// An apply stopped after each number of steps, before its commit, is
// rolled back by the next open of the store: the project is as it was,
// objects included, and the set, still kept, then applies without a
// conflict (the rollback's renames gave the old objects new ctimes; they
// are still what the run saw). Stopped after the commit, it is finished.
func TestApplyStoppedThenRecovered(t *testing.T) {
	f0, _ := richFixture(t)
	steps := len(f0.changes)
	for stop := 1; stop <= steps; stop++ {
		t.Run(fmt.Sprint(stop), func(t *testing.T) {
			f, id := richFixture(t)
			before := snapshot(t, f.host)
			committed := stop == steps
			testHookStep = func(done int, c bool) {
				if done == stop && c == committed {
					panic(stopApply{})
				}
			}
			func() {
				defer func() {
					if r := recover(); r != nil && r != (stopApply{}) {
						panic(r)
					}
				}()
				f.s.Apply(id, ApplyOptions{})
				t.Fatalf("the hook did not stop the apply at step %d", stop)
			}()
			testHookStep = nil
			s, err := Open(f.s.Dir(), Options{})
			must(t, err)
			defer s.Close()
			if committed {
				checkRichApplied(t, f.host)
				return
			}
			if after := snapshot(t, f.host); !reflect.DeepEqual(before, after) {
				t.Fatalf("rolled back, the project differs:\n%v\nwas\n%v", after, before)
			}
			if _, err := s.Apply(id, ApplyOptions{}); err != nil {
				t.Fatalf("Apply after a rollback: %v", err)
			}
			checkRichApplied(t, f.host)
		})
	}
}
