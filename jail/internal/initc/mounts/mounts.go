// Package mounts is the jail's filesystem view, built by the init (package
// initc) in its mount namespace: a temporary root with the host's root
// below it, the jail's root tmpfs, /proc and its knobs, /dev, the
// generated /etc files, the binds from the supervisor's descriptors, the
// tmpfs mounts, the over-binds of trusted files, the masks and the pivot.
//
// It is C alone (mounts.c), compiled with initc's headers: the init calls
// its steps (init_internal.h declares them) and it reports through the
// init's failure records. initc imports it so that it is linked; nothing
// else may. It imports nothing.
package mounts

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
