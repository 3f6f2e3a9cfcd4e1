package jail

import (
	"fmt"
	"path"
	"strconv"
	"syscall"

	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/landlock"
)

// The init and stage 2 report a failure as a record: the step (what it
// was doing), for the init the system call or reason within the step,
// errno, an index into the plan and a path. init_steps.h phrases each
// step; this file fills a phrase in with the record and the plan.

// The kinds of failure records.
const (
	recInitFail   = initc.RecInitFail
	recStage2Fail = initc.RecStage2Fail
)

// record is one packet of the init or stage 2 (struct tj_record); a
// mountFill, one watched tmpfs mount of the jail as the init last sampled
// it; rusage, what the init's children used.
type (
	record    = initc.Record
	mountFill = initc.Fill
	rusage    = initc.Rusage
)

// phrase is one row of init_steps.h.
type phrase = initc.Phrase

// The rows of init_steps.h, by step or op number.
var (
	initSteps   = initc.InitSteps
	initOps     = initc.InitOps
	stage2Steps = initc.Stage2Steps
)

// failure turns a failure record into the run's error.
func (ip *initPlan) failure(r record) *SetupError {
	if r.Type == recStage2Fail {
		e := ip.stage2.failure(r)
		if r.Step == stepExecNotFound {
			if hint := hostside.DanglingHint(ip.stage2.paths, hostMounts(ip.mounts), hostside.OSHost{}); hint != "" {
				e.Err = fmt.Errorf("%w; %s", e.Err, hint)
			}
		}
		return e
	}
	return &SetupError{Code: ExitSetup, Err: ip.initError(r)}
}

// initError says what failed in the init, in the words of the plan.
func (ip *initPlan) initError(r record) error {
	text := initc.StepText(initSteps(), r.Step, "the jail's init failed at step {step}: {cause}")
	if ops := initOps(); r.Op > 0 && r.Op < len(ops) && ops[r.Op].Reason {
		text = ops[r.Op].Text
	}
	err := initc.Describe(r, text, ip.word)
	if hint := failureHint(r); hint != "" {
		err = fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// stepExecNotFound is stage 2's step of a command execve did not find.
const stepExecNotFound = initc.StepExecNotFound

// stepFS is the init's step that mounts the jail's own filesystems.
const stepFS = initc.StepFS

// failureHint is what a user can do about a failure record, when the
// failure has a known cause outside tooljail; "" otherwise.
func failureHint(r record) string {
	// The kernel refuses a fresh procfs in a user namespace while parts of
	// the /proc it can see are hidden: a container's masked /proc paths.
	if r.Type == recInitFail && r.Step == stepFS && r.Path == "/proc" && syscall.Errno(r.Err) == syscall.EPERM {
		return "a container that masks paths in /proc prevents a fresh /proc for the jail: see `tooljail check` and docs/containers.md; or run without namespaces, confined by Landlock and seccomp alone: --allow-degraded namespaces"
	}
	return ""
}

// word is what a placeholder of the init's texts stands for.
func (ip *initPlan) word(r record, name string) (string, bool) {
	switch name {
	case "source", "dest":
		m := Mount{Dest: r.Path}
		if r.Index >= 0 && r.Index < len(ip.mounts) {
			m = ip.mounts[r.Index]
		}
		if name == "source" {
			return m.Source, true
		}
		return m.Dest, true
	case "base_name":
		return path.Base(r.Path), true
	case "hostname":
		return strconv.Quote(r.Path), true
	case "trusted":
		if r.Index >= 0 && r.Index < len(ip.over) && !ip.over[r.Index].ReadOnly {
			return "a directory holding a file tooljail trusts", true
		}
		return "a file tooljail trusts", true
	case "access":
		access := landlock.Access("?")
		if ip.ll != nil && r.Index >= 0 && r.Index < len(ip.ll.Paths) {
			access = ip.ll.Paths[r.Index].Access
		}
		return string(access), true
	case "port":
		port := -1
		if ip.ll != nil && r.Index >= 0 && r.Index < len(ip.ll.Ports) {
			port = int(ip.ll.Ports[r.Index].Port)
		}
		return strconv.Itoa(port), true
	case "abi":
		return strconv.Itoa(ip.stage2.abi), true
	}
	return "", false
}
