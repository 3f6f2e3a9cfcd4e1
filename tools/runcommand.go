package tools

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RunCommand is the name of the generic tool a [run_command] table
// enables:
//
//	[run_command]
//	description = "Run a command in the repository."   # optional
//	profile = "default"                                 # the one profile it runs under
//	limits = { timeout = "30s", memory = "256M" }       # as a tool's
//	rate = { per_minute = 10 }                          # as a tool's
//	max_args = 64                                       # the longest argv (default 256)
//
// A call gives the whole argv (an array of strings, passed as it is: no
// shell, no splitting), stdin, and a timeout that may only tighten the
// file's. It picks the program, which a declared tool never lets the
// model do: the profile is what holds it, so a file enables it only for
// a profile it would let any command run under. Without the table there
// is no such tool.
const RunCommand = "run_command"

// Arguments of a run_command call.
const (
	ArgvArg    = "argv"
	TimeoutArg = "timeout"
)

const (
	defaultMaxArgs = 256
	maxMaxArgs     = 4096
	// maxArgvBytes bounds a call's argv as a whole, below the kernel's
	// ARG_MAX (a quarter of the stack limit, 2 MiB by default) with room
	// for the environment.
	maxArgvBytes = 1 << 20
)

// runCommand checks the [run_command] table.
func (c *checker) runCommand(r rawRunCommand) *Tool {
	at := func(k ...string) []string { return append([]string{RunCommand}, k...) }
	t := &Tool{Name: RunCommand, Generic: true, Stdin: true, Output: "text", MaxArgs: defaultMaxArgs,
		Description: "Run a command: argv is the program and its arguments, passed as they are (no shell). stdin is its standard input; timeout (a duration such as \"5s\") may shorten the limit the server sets."}
	if r.Description != nil {
		if strings.TrimSpace(*r.Description) == "" {
			c.add(at("description"), "empty; leave it out for the default, or say what the command is for")
		} else {
			t.Description = *r.Description
		}
	}
	if r.Profile == nil {
		c.add(at("profile"), `missing; name the profile every command runs under ("default", "strict" or a profile file): the model picks the program, the file picks what holds it`)
	}
	c.policy(at, t, r.Profile, r.Limits, r.Rate)
	c.changes(at, t, r.Changes)
	if r.MaxArgs != nil {
		if *r.MaxArgs < 1 || *r.MaxArgs > maxMaxArgs {
			c.add(at("max_args"), "%d: want 1 to %d", *r.MaxArgs, maxMaxArgs)
		} else {
			t.MaxArgs = int(*r.MaxArgs)
		}
	}
	return t
}

// CheckCall is Check for any tool: the argv of a call, and for the
// generic tool the timeout the call asks for (0 when it asks none), which
// the caller must hold to at most the tool's own. A run_command call
// takes "argv" (an array of 1 to MaxArgs strings, the first not empty,
// none with a NUL) and "timeout" (a positive duration such as "5s");
// anything else is undeclared. Its stdin is the caller's to take, as for
// any tool with stdin.
func (t *Tool) CheckCall(args map[string]any) ([]string, time.Duration, error) {
	if !t.Generic {
		argv, err := t.Check(args)
		return argv, 0, err
	}
	for _, name := range sortedKeys(args) {
		if name != ArgvArg && name != TimeoutArg {
			return nil, 0, &ArgError{Tool: t.Name, Param: show(name), Rule: "undeclared", Msg: "no such parameter; declared: argv, timeout"}
		}
	}
	v, ok := args[ArgvArg]
	if !ok {
		return nil, 0, &ArgError{Tool: t.Name, Param: ArgvArg, Rule: "required", Msg: `missing; give the program and its arguments, e.g. ["ls", "-l"]`}
	}
	argv, rule, err := t.checkArgv(v)
	if err != nil {
		return nil, 0, &ArgError{Tool: t.Name, Param: ArgvArg, Value: truncate(v), Rule: rule, Msg: err.Error()}
	}
	var timeout time.Duration
	if v, ok := args[TimeoutArg]; ok {
		s, isString := v.(string)
		d, perr := time.ParseDuration(s)
		switch {
		case !isString:
			err = fmt.Errorf(`want a duration as a string ("5s", "2m"), got %s`, jsonType(v))
		case perr != nil:
			err = fmt.Errorf(`not a duration; want one such as "5s" or "2m"`)
		case d <= 0:
			err = fmt.Errorf("want a positive duration")
		}
		if err != nil {
			return nil, 0, &ArgError{Tool: t.Name, Param: TimeoutArg, Value: truncate(v), Rule: "type duration", Msg: err.Error()}
		}
		timeout = d
	}
	return argv, timeout, nil
}

// checkArgv checks a run_command argv as decoded from JSON.
func (t *Tool) checkArgv(v any) ([]string, string, error) {
	list, ok := v.([]any)
	if !ok {
		if s, isStrings := v.([]string); isStrings {
			list = make([]any, len(s))
			for i := range s {
				list[i] = s[i]
			}
		} else {
			return nil, "type array", fmt.Errorf("want an array of strings, got %s", jsonType(v))
		}
	}
	if len(list) == 0 {
		return nil, "min_items 1", fmt.Errorf("empty; give at least the program")
	}
	if len(list) > t.MaxArgs {
		return nil, "max_args " + strconv.Itoa(t.MaxArgs), fmt.Errorf("%d elements", len(list))
	}
	argv := make([]string, len(list))
	total := 0
	for i, e := range list {
		s, ok := e.(string)
		switch {
		case !ok:
			return nil, "type array", fmt.Errorf("element %d: want a string, got %s", i+1, jsonType(e))
		case hasNUL(s):
			return nil, "no NUL", fmt.Errorf("element %d holds a NUL byte, which no argument can", i+1)
		case len(s) > maxArgBytes:
			return nil, "argument size", fmt.Errorf("element %d: %d bytes; the kernel takes at most %d in one argument", i+1, len(s), maxArgBytes)
		case i == 0 && s == "":
			return nil, "program", fmt.Errorf("element 1, the program, is empty")
		}
		total += len(s) + 1
		argv[i] = s
	}
	if total > maxArgvBytes {
		return nil, "argument size", fmt.Errorf("%d bytes in all; at most %d", total, maxArgvBytes)
	}
	return slices.Clip(argv), "", nil
}
