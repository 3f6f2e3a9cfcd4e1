// Package timerslack gives the program that imports it a timer slack of
// 1 ms for every thread, before the Go runtime starts one (timerslack.c,
// a C constructor): Go's sysmon thread then sleeps about a millisecond
// where it would poll every 20 µs. cmd/tooljail imports it; the jail
// package does not, so a program that embeds jail keeps its own slack.
package timerslack

import "C"
