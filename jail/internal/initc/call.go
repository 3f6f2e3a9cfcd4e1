package initc

/*
#include "init.h"
*/
import "C"

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bounds of a warm or session call's message, one packet on the jail's
// socket (stage2.c's tj_call_buf).
const (
	MaxCallBytes   = C.TJ_CALL_MAX_BYTES
	MaxCallStrings = C.TJ_CALL_MAX_STRINGS
)

// CallHeaderSize is the size of a call message's fixed part.
const CallHeaderSize = int(unsafe.Sizeof(C.struct_tj_call_header{}))

// KillMagic starts a session's message to its init that kills the running
// call (init_session.c).
const KillMagic = C.TJ_KILL_MAGIC

// SigKillAll asks the reaper of a run without namespaces (nonsreap.c) to kill
// every process the run left and end; it is also its parent death signal.
const SigKillAll = unix.Signal(C.TJ_SIG_KILLALL)

// FDsPerMsg is how many descriptors the supervisor sends the init in one
// message, and MaxSources the most binds (descriptors) of one plan.
const (
	FDsPerMsg  = C.TJ_FDS_PER_MSG
	MaxSources = C.TJ_MAX_SOURCES
)

// Call is what a call's message (stage2.c's tj_call_parse) carries.
type Call struct {
	Args, Env, Paths []string
	Dir              string // "": the plan's
	TTY              bool   // a terminal of Rows by Cols
	Rows, Cols       uint16
	Keep             bool // a session's call that keeps what it leaves running
}

// EncodeCall is the call message stage2.c reads.
func EncodeCall(m Call) []byte {
	var b bytes.Buffer
	var dirs []string
	if m.Dir != "" {
		dirs = []string{m.Dir}
	}
	h := C.struct_tj_call_header{magic: C.TJ_CALL_MAGIC, argc: C.uint32_t(len(m.Args)), envc: C.uint32_t(len(m.Env)),
		npaths: C.uint32_t(len(m.Paths)), ndir: C.uint32_t(len(dirs))}
	if m.TTY {
		h.flags |= C.TJ_CALL_TTY
		h.tty_rows, h.tty_cols = C.uint16_t(m.Rows), C.uint16_t(m.Cols)
	}
	if m.Keep {
		h.flags |= C.TJ_CALL_KEEP
	}
	b.Write(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unsafe.Sizeof(h)))
	for _, l := range [][]string{m.Args, m.Env, m.Paths, dirs} {
		for _, s := range l {
			b.WriteString(s)
			b.WriteByte(0)
		}
	}
	return b.Bytes()
}
