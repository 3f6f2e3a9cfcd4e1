package jail

import (
	"fmt"
	"path"
	"strconv"
	"strings"
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

// stepText is the text of step, or unknown for a step init_steps.h does
// not have.
func stepText(steps []phrase, step int, unknown string) string {
	if step > 0 && step < len(steps) {
		return steps[step].Text
	}
	return unknown
}

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
	text := stepText(initSteps(), r.Step, "the jail's init failed at step {step}: {cause}")
	if ops := initOps(); r.Op > 0 && r.Op < len(ops) && ops[r.Op].Reason {
		text = ops[r.Op].Text
	}
	err := describe(r, text, ip.word)
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

// describe fills text in for record r: with the record's own values, then
// with words, the plan's.
func describe(r record, text string, words func(r record, name string) (string, bool)) error {
	errno := syscall.Errno(r.Err)
	value := func(name string) (string, bool) {
		switch name {
		case "path":
			return r.Path, true
		case "index":
			return strconv.Itoa(r.Index), true
		case "step":
			return strconv.Itoa(r.Step), true
		case "is_dir":
			return cflag(r.IsDir), true
		case "errno":
			return errnoText(errno), true
		case "cause":
			if ops := initOps(); r.Op > 0 && r.Op < len(ops) && !ops[r.Op].Reason {
				return ops[r.Op].Text + ": " + errnoText(errno), true
			}
			return errnoText(errno), true
		}
		return words(r, name)
	}
	return &recordError{text: fill(text, value), errno: errno}
}

// errnoText is the errno as the error says it; 0 is a read that found the
// other end gone.
func errnoText(errno syscall.Errno) string {
	if errno == 0 {
		return "end of file"
	}
	return errno.Error()
}

// cflag is a condition as a choice's number.
func cflag(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// recordError is a failure record in words; it wraps the record's errno.
type recordError struct {
	text  string
	errno syscall.Errno
}

func (e *recordError) Error() string { return e.text }

func (e *recordError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// fill expands the placeholders of a text of init_steps.h: {name} is
// value(name), and {name:a|b|...} the choice that value(name) picks (0:
// a), itself a text. A placeholder value does not know stays as it is.
func fill(text string, value func(name string) (string, bool)) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '{')
		end := closing(text, open)
		if open < 0 || end < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:open])
		name, alts, choice := strings.Cut(text[open+1:end], ":")
		v, ok := value(name)
		switch {
		case !ok:
			v = text[open : end+1]
		case choice:
			cs := choices(alts)
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(cs) {
				v = fill(cs[n], value)
			} else {
				v = "?"
			}
		}
		b.WriteString(v)
		text = text[end+1:]
	}
}

// closing is the index of the brace that closes the one at open, or -1.
func closing(s string, open int) int {
	if open < 0 {
		return -1
	}
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// choices splits "a|b{x}|c" at the bars outside braces.
func choices(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
