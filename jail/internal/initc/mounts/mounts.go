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
