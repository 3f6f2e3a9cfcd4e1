// Package nonsreap is the reaper of a run without namespaces
// (--allow-degraded namespaces), forked where the init would be: the
// init's first steps, child subreaper, the Landlock ruleset on the host
// paths, stage 2 without id maps, then reap until the command ends (or
// the supervisor sends TJ_SIG_KILLALL, also its parent-death signal) and
// kill every process left.
//
// It is C alone (nonsreap.c), compiled with initc's headers: the init's
// fork (init_fork.c) calls tj_nons_main, and it takes the init's first
// steps from initc. initc imports it so that it is linked; nothing else
// may. It imports nothing. The mode's rules are package nons.
package nonsreap

// #cgo CFLAGS: -I${SRCDIR}/..
import "C"

// initcHeaders is the SHA-256 of initc's headers (init.h, init_internal.h,
// init_steps.h, stage2.h, in that order), which this package's C is
// compiled with. Go's build cache keys a cgo package on its own files, so
// a change to a header in the parent directory would leave C compiled
// against the old one (struct layouts included) in every cached build;
// changing this line makes the change this package's too. initc's
// TestHeaderSums says when it is out of date.
const initcHeaders = "124fa7b6a0662bdd6dc3e104f7d974700d66bebb1205f643860044ca8dcb4790"
