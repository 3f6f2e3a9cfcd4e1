package jail

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initlink"
)

func TestDecide(t *testing.T) {
	limits := &Limits{OutputLimit: 100}
	exited := func(code int) *exitFacts { return &exitFacts{code: code} }
	killedBy := func(sig syscall.Signal) *exitFacts { return &exitFacts{code: 128 + int(sig), signal: sig} }
	setup := &SetupError{Code: 127, Err: errors.New("command not found")}
	initFail := &SetupError{Code: ExitSetup, Err: errors.New("reap: EINTR")}
	for _, c := range []struct {
		name   string
		o      outcome
		status Status
		code   int
		signal string
		reason string // a substring of the reason
	}{
		{"exited", outcome{started: true, exit: exited(3)}, StatusExited, 3, "", ""},
		{"exited, output truncated", outcome{started: true, exit: exited(0), truncated: true}, StatusExited, 0, "", "limit of 100 bytes"},
		{"never ran", outcome{setupErr: setup}, StatusSetupError, 127, "", "not found"},
		{"setup error beats a kill", outcome{setupErr: setup, killedFor: StatusTimeout, killNote: "t"}, StatusSetupError, 127, "", "not found"},
		{"timeout before the exit", outcome{started: true, killedFor: StatusTimeout, killNote: "wall-clock limit 1s", exit: killedBy(syscall.SIGKILL)}, StatusTimeout, ExitTimeout, "", "wall-clock"},
		// kill() drops a kill that comes after the exit record, so the
		// timer racing a finished command leaves killedFor empty.
		{"timeout after the exit", outcome{started: true, exit: exited(0)}, StatusExited, 0, "", ""},
		{"timeout with no exit record", outcome{started: true, killedFor: StatusTimeout, killNote: "wall"}, StatusTimeout, ExitTimeout, "", "wall"},
		{"violation kill", outcome{started: true, killedFor: StatusViolation, firstSyscall: "keyctl", exit: killedBy(syscall.SIGKILL)}, StatusViolation, 159, "SIGSYS", "keyctl"},
		{"violation kill with a note", outcome{started: true, killedFor: StatusViolation, killNote: "10000 denied calls", exit: killedBy(syscall.SIGKILL)}, StatusViolation, 159, "SIGSYS", "10000 denied"},
		{"arch kill", outcome{started: true, arch: true, archCall: "x32:getpid", exit: killedBy(syscall.SIGKILL)}, StatusViolation, 159, "SIGSYS", "x32:getpid"},
		{"arch call by a child, command exited", outcome{started: true, arch: true, exit: exited(0)}, StatusExited, 0, "", ""},
		{"SIGSYS without a recorded arch call", outcome{started: true, exit: killedBy(syscall.SIGSYS), limits: limits}, StatusSignaled, 159, "SIGSYS", "sent to it"},
		{"oom", outcome{started: true, oom: true, oomReason: "memory limit 1 MiB reached", exit: killedBy(syscall.SIGKILL)}, StatusMemoryLimit, 137, "SIGKILL", "memory limit"},
		{"oom, init killed before any record", outcome{started: true, oom: true, oomReason: "memory limit"}, StatusMemoryLimit, 137, "SIGKILL", "memory limit"},
		{"oom but the command exited", outcome{started: true, oom: true, exit: exited(1)}, StatusExited, 1, "", ""},
		{"signaled", outcome{started: true, exit: killedBy(syscall.SIGTERM), limits: limits}, StatusSignaled, 143, "SIGTERM", "SIGTERM"},
		{"cancelled by the caller", outcome{started: true, killedFor: StatusSignaled, killNote: "cancelled", exit: killedBy(syscall.SIGKILL)}, StatusSignaled, 137, "SIGKILL", "cancelled"},
		{"cancelled, no exit record", outcome{started: true, killedFor: StatusSignaled, killNote: "cancelled"}, StatusSignaled, 137, "SIGKILL", "cancelled"},
		// The init killed after the command started (prlimit on PID 1,
		// an administrator's kill): the command ran.
		{"cancelled by the client", outcome{started: true, killedFor: StatusCancelled, killNote: "client went away", exit: killedBy(syscall.SIGKILL)}, StatusCancelled, 137, "SIGKILL", "client went away"},
		{"cancelled, no exit record yet", outcome{started: true, killedFor: StatusCancelled, killNote: "client went away"}, StatusCancelled, 137, "SIGKILL", "client went away"},
		{"cancelled before an OOM kill's record", outcome{started: true, killedFor: StatusCancelled, killNote: "client went away", oom: true, oomReason: "memory", exit: killedBy(syscall.SIGKILL)}, StatusCancelled, 137, "SIGKILL", "client went away"},
		{"monitor failed", outcome{started: true, killedFor: StatusAborted, killNote: "its seccomp monitor failed", exit: killedBy(syscall.SIGKILL)}, StatusAborted, ExitSetup, "", "monitor failed"},
		{"monitor failed, then a timeout", outcome{started: true, killedFor: StatusAborted, killNote: "its seccomp monitor failed"}, StatusAborted, ExitSetup, "", "monitor failed"},
		{"init killed after start", outcome{started: true, init: initlink.End{Desc: "signal: SIGXCPU", Signal: syscall.SIGXCPU}}, StatusAborted, 128 + int(syscall.SIGXCPU), "SIGXCPU", "may have run"},
		{"init failed after start", outcome{started: true, initFail: initFail, init: initlink.End{Desc: "exit status 125"}}, StatusAborted, ExitSetup, "", "reap: EINTR"},
		{"init ended before start", outcome{init: initlink.End{Desc: "exit status 125"}}, StatusSetupError, ExitSetup, "", "without a status"},
		{"init failed before start", outcome{initFail: initFail}, StatusSetupError, ExitSetup, "", "reap"},
	} {
		if c.o.limits == nil {
			c.o.limits = limits
		}
		v := decide(c.o)
		if v.status != c.status || v.exitCode != c.code || v.signal != c.signal || !strings.Contains(v.reason, c.reason) {
			t.Errorf("%s: got %s %d %q %q; want %s %d %q, reason with %q", c.name, v.status, v.exitCode, v.signal, v.reason, c.status, c.code, c.signal, c.reason)
		}
		if c.o.started && c.o.setupErr == nil && v.status == StatusSetupError {
			t.Errorf("%s: a run whose command started is a setup error", c.name)
		}
	}
}

// A kill that comes after the command's exit record is not why the run
// ended; one that comes before is.
func TestKillAfterExitRecord(t *testing.T) {
	c := &Cmd{}
	c.kill(StatusTimeout, "wall-clock limit")
	if c.killedFor != StatusTimeout {
		t.Fatalf("kill before the exit record: killedFor %q", c.killedFor)
	}
	c = &Cmd{exitRec: &record{ExitCode: 0}}
	c.kill(StatusTimeout, "wall-clock limit")
	c.kill(StatusSignaled, "cancelled")
	if c.killedFor != "" {
		t.Fatalf("kill after the exit record: killedFor %q, want none", c.killedFor)
	}
	// The monitor kills the caller of a denied call before the run: the
	// caller's death may come first, and the violation still counts.
	c = &Cmd{exitRec: &record{Signal: 9, ExitCode: 137}}
	c.kill(StatusViolation, "")
	if c.killedFor != StatusViolation {
		t.Fatalf("violation kill after the exit record: killedFor %q", c.killedFor)
	}
}

// TestDecideEveryCombination runs decide on every combination of what can
// happen to a run and checks the rules the report promises, whichever
// branch decides.
func TestDecideEveryCombination(t *testing.T) {
	limits := &Limits{OutputLimit: 100}
	setup := &SetupError{Code: 127, Err: errors.New("command not found")}
	initFail := &SetupError{Code: ExitSetup, Err: errors.New("reap: EINTR")}
	exits := []*exitFacts{nil, {code: 0}, {code: 3}}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSYS, syscall.SIGTERM, syscall.SIGXCPU} {
		exits = append(exits, &exitFacts{code: 128 + int(sig), signal: sig})
	}
	kills := []struct {
		why  Status
		note string
	}{{"", ""}, {StatusTimeout, "wall-clock limit 1s reached"}, {StatusViolation, ""}, {StatusViolation, "more than 3 denied system calls"}, {StatusSignaled, "cancelled"}, {StatusCancelled, "client went away"}, {StatusAborted, "its seccomp monitor failed"}}
	n := 0
	for _, se := range []*SetupError{nil, setup} {
		for _, inf := range []*SetupError{nil, initFail} {
			for _, started := range []bool{false, true} {
				for _, exit := range exits {
					if exit != nil && !started {
						continue // an exit record comes only after stage 2's ready one
					}
					for _, k := range kills {
						for _, bits := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} {
							oom, arch, truncated, initKilled := bits&1 != 0, bits&2 != 0, bits&4 != 0, bits&8 != 0
							o := outcome{setupErr: se, initFail: inf, started: started, exit: exit, killedFor: k.why, killNote: k.note,
								oom: oom, oomReason: "memory limit 1 MiB reached", arch: arch, archCall: "x32:getpid",
								firstSyscall: "keyctl", limits: limits, truncated: truncated, init: initlink.End{Desc: "exit status 125"}}
							if initKilled {
								o.init = initlink.End{Desc: "signal: SIGKILL", Signal: syscall.SIGKILL}
							}
							n++
							checkVerdict(t, o, decide(o))
						}
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d combinations", n)
	}
}

func checkVerdict(t *testing.T, o outcome, v verdict) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%+v (exit %+v) -> %+v: "+format, append([]any{o, o.exit, v}, args...)...)
	}
	switch v.status {
	case StatusExited, StatusSignaled, StatusTimeout, StatusMemoryLimit, StatusViolation, StatusSetupError, StatusAborted, StatusCancelled:
	default:
		fail("unknown status")
	}
	if v.exitCode < 0 || v.exitCode > 255 {
		fail("exit code out of range")
	}
	if v.signal != "" && v.exitCode != 128+int(unix.SignalNum(v.signal)) {
		fail("signal %s does not match exit code %d", v.signal, v.exitCode)
	}
	if v.status != StatusExited && v.reason == "" {
		fail("no reason")
	}
	// A setup error means the command never ran, and is reported as such.
	if o.setupErr != nil {
		if v.status != StatusSetupError || v.exitCode != o.setupErr.Code {
			fail("a setup error is not reported as one")
		}
		return
	}
	if o.started && v.status == StatusSetupError {
		fail("a run whose command started is a setup error")
	}
	// The supervisor's own kill, made before the exit record, explains it.
	switch o.killedFor {
	case StatusAborted:
		if v.status != StatusAborted || v.exitCode != ExitSetup || v.reason != o.killNote {
			fail("tooljail's own failure is not reported as aborted")
		}
		return
	case StatusTimeout:
		if v.status != StatusTimeout || v.exitCode != ExitTimeout {
			fail("a timeout kill is not a timeout")
		}
		return
	case StatusCancelled:
		if v.status != StatusCancelled || v.exitCode != 137 || v.signal != "SIGKILL" || v.reason != o.killNote {
			fail("a cancel is not reported as cancelled")
		}
		return
	case StatusViolation:
		if v.status != StatusViolation || v.signal != "SIGSYS" {
			fail("a violation kill is not a violation")
		}
		if o.killNote != "" && v.reason != o.killNote {
			fail("the kill's note is lost")
		}
		return
	}
	if e := o.exit; e != nil && e.signal == 0 {
		if v.status != StatusExited || v.exitCode != e.code {
			fail("an exit is not reported as it happened")
		}
	}
	if v.status == StatusExited && (o.exit == nil || o.exit.signal != 0) {
		fail("exited without an exit")
	}
	if v.status == StatusMemoryLimit && !o.oom {
		fail("memory_limit without an OOM kill")
	}
	if v.status == StatusViolation && !(o.arch && o.exit != nil) {
		fail("a violation nobody saw")
	}
	if v.status == StatusCancelled {
		fail("cancelled, but nobody cancelled the run")
	}
	if v.status == StatusAborted && (!o.started || o.exit != nil) {
		fail("aborted, but the command's end is known or it never started")
	}
	if o.exit == nil && o.started && !o.oom && o.killedFor == "" && v.status != StatusAborted {
		fail("the command started and its end is unknown, yet the status claims one")
	}
}
