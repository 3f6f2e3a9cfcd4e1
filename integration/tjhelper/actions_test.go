package main

import "testing"

// Every action the helper refuses outside a user namespace must be one it
// has: a name that drifted apart would turn the refusal into "unknown
// action" and hide a missing guard.
func TestMutatingActionsExist(t *testing.T) {
	for name := range mutating {
		if _, found := actions[name]; !found {
			t.Errorf("mutating action %q is not in the actions table", name)
		}
	}
}
