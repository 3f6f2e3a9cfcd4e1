package initc

/*
#include "init.h"

// The rows of init_steps.h, by number, for the supervisor.
struct tj_phrase {
	const char *name, *text;
	int reason;
};
#define TJ_ROW_I(name, text) [TJ_I_##name] = {#name, text, 0},
#define TJ_ROW_STEP(name, text) [TJ_STEP_##name] = {#name, text, 0},
#define TJ_ROW_CALL(name, text) [TJ_OP_##name] = {#name, text, 0},
#define TJ_ROW_REASON(name, text) [TJ_OP_##name] = {#name, text, 1},
static const struct tj_phrase tj_init_phrases[TJ_I_COUNT] = {TJ_INIT_STEPS(TJ_ROW_I)};
static const struct tj_phrase tj_op_phrases[TJ_OP_COUNT] = {TJ_CALLS(TJ_ROW_CALL) TJ_REASONS(TJ_ROW_REASON)};
static const struct tj_phrase tj_stage2_phrases[TJ_STEP_COUNT] = {TJ_STAGE2_STEPS(TJ_ROW_STEP)};
static const struct tj_phrase *tj_init_rows(void) { return tj_init_phrases; }
static const struct tj_phrase *tj_op_rows(void) { return tj_op_phrases; }
static const struct tj_phrase *tj_stage2_rows(void) { return tj_stage2_phrases; }
*/
import "C"

import (
	"strings"
	"sync"
	"unsafe"
)

// The kinds of records (struct tj_record's type).
const (
	RecInitFail   = C.TJ_REC_INIT_FAIL   // the init failed at a step (InitSteps) before the command ran
	RecStage2Fail = C.TJ_REC_STAGE2_FAIL // stage 2 failed at a step (Stage2Steps)
	RecReady      = C.TJ_REC_READY       // stage 2 is about to execve (its seccomp listener attached)
	RecExit       = C.TJ_REC_EXIT        // the command ended
	RecNet        = C.TJ_REC_NET         // the allow mode's listeners (init_net.c)
	RecTTY        = C.TJ_REC_TTY         // stage 2's terminal master
	RecSession    = C.TJ_REC_SESSION     // a session's init is ready for calls
	RecExeced     = C.TJ_REC_EXECED      // the command was exec'd (its execve closed stage 2's status pipe)
)

// StepExecNotFound is stage 2's step of a command execve did not find,
// and StepFS the init's step that mounts the jail's own filesystems.
const (
	StepExecNotFound = C.TJ_STEP_EXEC_NOT_FOUND
	StepFS           = C.TJ_I_FS
)

// The flags of a watched tmpfs mount (Fill.Full): a sample saw no free
// block, or no free inode.
const (
	FullSpace  = C.TJ_FULL_SPACE
	FullInodes = C.TJ_FULL_INODES
)

// Record is one packet of the init or stage 2 (struct tj_record).
type Record struct {
	Type, Step, Op, Err, Index, Code int
	IsDir                            bool
	ExitCode, Signal                 int
	Rusage                           Rusage
	// The exit record's: processes killed because they were still running
	// when the command ended (-1: not counted), and the watched tmpfs
	// mounts (init_reap.c).
	Leftover int
	Fills    []Fill
	Path     string
}

// Rusage is what the init's children (the command and every orphan the
// init reaped) used, from getrusage(RUSAGE_CHILDREN).
type Rusage struct {
	UserUsec   int64
	SystemUsec int64
	MaxRSSKiB  int64
}

// Fill is one watched tmpfs mount of the jail as the init last sampled it.
type Fill struct {
	Mount         int // the index in the plan's mounts; -1: /dev/shm
	Full          int // FullSpace, FullInodes
	Size, PeakUse int64
}

// recordHeader is a record's size without its path.
const recordHeader = C.sizeof_struct_tj_record - C.sizeof_char*4096

// ParseRecord reads one record; false when b is too short to be one.
func ParseRecord(b []byte) (Record, bool) {
	if len(b) < int(recordHeader) {
		return Record{}, false
	}
	var c C.struct_tj_record
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&c)), unsafe.Sizeof(c)), b)
	r := Record{
		Type: int(c._type), Step: int(c.step), Op: int(c.op), Err: int(c.err), Index: int(c.index), Code: int(c.code),
		IsDir:    c.is_dir != 0,
		ExitCode: int(c.exit_code), Signal: int(c.signal),
		Rusage:   Rusage{UserUsec: int64(c.utime_us), SystemUsec: int64(c.stime_us), MaxRSSKiB: int64(c.maxrss_kib)},
		Leftover: int(c.leftover),
	}
	for _, f := range c.fills[:max(0, min(int(c.nfills), len(c.fills)))] {
		r.Fills = append(r.Fills, Fill{Mount: int(f.mount), Full: int(f.full), Size: int64(f.size_bytes), PeakUse: int64(f.peak_used_bytes)})
	}
	p := b[recordHeader:]
	if i := strings.IndexByte(string(p), 0); i >= 0 {
		p = p[:i]
	}
	r.Path = string(p)
	return r, true
}

// Phrase is one row of init_steps.h.
type Phrase struct {
	Name, Text string
	Reason     bool // an op that is no system call: its text replaces the step's
}

func phrases(rows *C.struct_tj_phrase, n int) []Phrase {
	out := make([]Phrase, n)
	for i, r := range unsafe.Slice(rows, n) {
		if r.name != nil {
			out[i] = Phrase{C.GoString(r.name), C.GoString(r.text), r.reason != 0}
		}
	}
	return out
}

// The rows of init_steps.h, by step or op number, read when a failure is
// first explained rather than in init (three cgo calls and every string).
var (
	InitSteps   = sync.OnceValue(func() []Phrase { return phrases(C.tj_init_rows(), C.TJ_I_COUNT) })
	InitOps     = sync.OnceValue(func() []Phrase { return phrases(C.tj_op_rows(), C.TJ_OP_COUNT) })
	Stage2Steps = sync.OnceValue(func() []Phrase { return phrases(C.tj_stage2_rows(), C.TJ_STEP_COUNT) })
)
