// Package initc is the jail's init and stage 2, written in C, and the Go
// that speaks to them: it compiles a Plan into the C structs the init
// reads (in memory of its own, which the init's fork keeps), forks the
// init, fills in the plan's late part, encodes a warm or session call's
// message, and parses the records the init and stage 2 send back.
//
// It decides nothing about a run: package jail decides what a Plan holds
// (which mounts, which /etc files, which rules) and what a failure record
// means in the words of its run. initc imports only the landlock package
// (for a compiled Landlock plan) and the standard library; nothing here
// may import jail.
//
// The C files: init.c (the init's steps), init_net.c, init_landlock.c,
// init_reap.c, init_session.c, init_fork.c (the fork), init_fail.c and
// stage2.c (the child that becomes the command). init_steps.h is the
// failure vocabulary both sides read. Two jobs of the init's C are
// packages of their own, C alone, compiled with these headers and linked
// through the imports below: the filesystem view (mounts) and the reaper
// of a run without namespaces (nonsreap).
package initc

import (
	_ "github.com/tooljail/tooljail/jail/internal/initc/mounts"
	_ "github.com/tooljail/tooljail/jail/internal/initc/nonsreap"
)
