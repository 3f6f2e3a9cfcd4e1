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
