package jail

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail/internal/initlink"
)

// exitFacts is the command's end as the init saw it.
type exitFacts struct {
	code   int            // as a shell reports it: the status, or 128+signal
	signal syscall.Signal // 0 when it exited
}

// outcome is everything that decides a run's status, as Wait learned it.
type outcome struct {
	setupErr  *SetupError // the command never ran
	initFail  *SetupError // the init failed after the command started
	started   bool        // stage 2 got as far as its execve
	exit      *exitFacts  // nil: no exit record came
	killedFor Status      // why the supervisor killed the run before the exit record, or ""
	killNote  string
	oom       bool
	oomReason string
	// arch: the monitor saw a non-native (x32, i386) call and killed its
	// caller (archCall names it). Without notification nobody sees such a
	// call: the filter kills the caller with SIGSYS, which the exit record
	// cannot tell from a SIGSYS sent by a process, so it is no violation.
	arch         bool
	archCall     string
	firstSyscall string // the first denied call recorded, for a kill's reason
	init         initlink.End
	limits       *Limits
	truncated    bool // output over the limit was dropped
}

// verdict is a run's status, exit code, signal and reason.
type verdict struct {
	status   Status
	exitCode int
	signal   string
	reason   string
}

// decide turns what happened into the report's verdict. The order is the
// order of evidence: a setup error means the command never ran; a kill by
// the supervisor that came before the exit record explains that exit; then
// what the kernel did (a non-native call, the OOM killer); then the exit
// record itself. A run whose command started is never a setup error.
func decide(o outcome) verdict {
	sigsys := 128 + int(syscall.SIGSYS)
	commandKilled := o.exit != nil && (o.exit.signal == syscall.SIGKILL || o.exit.signal == syscall.SIGSYS)
	var v verdict
	switch {
	case o.setupErr != nil:
		v = verdict{StatusSetupError, o.setupErr.Code, "", o.setupErr.Error()}
	case o.killedFor == StatusAborted:
		// tooljail itself could not go on (its seccomp monitor failed).
		v = verdict{StatusAborted, ExitSetup, "", o.killNote}
	case o.killedFor == StatusTimeout:
		v = verdict{StatusTimeout, ExitTimeout, "", o.killNote}
	case o.killedFor == StatusCancelled:
		v = verdict{StatusCancelled, 128 + int(syscall.SIGKILL), "SIGKILL", o.killNote}
	case o.killedFor == StatusViolation:
		v = verdict{StatusViolation, sigsys, "SIGSYS", "killed for a denied system call (--on-violation kill)"}
		if o.killNote != "" {
			v.reason = o.killNote
		} else if o.firstSyscall != "" {
			v.reason = fmt.Sprintf("killed for a denied system call: %s (--on-violation kill)", o.firstSyscall)
		}
	case o.arch && commandKilled:
		v = verdict{StatusViolation, sigsys, "SIGSYS", "killed for a non-native system call (x32 or i386 entry point)"}
		if o.archCall != "" {
			v.reason = fmt.Sprintf("killed for a non-native system call: %s (x32 or i386 entry point)", o.archCall)
		}
	case o.oom && (o.exit == nil || o.exit.signal == syscall.SIGKILL):
		v = verdict{StatusMemoryLimit, 128 + int(syscall.SIGKILL), "SIGKILL", o.oomReason}
	case o.exit != nil && o.exit.signal != 0:
		v = verdict{StatusSignaled, o.exit.code, unix.SignalName(o.exit.signal), signalReason(o.exit.signal, o.limits)}
		if o.killedFor == StatusSignaled {
			v.reason = o.killNote
		}
	case o.exit != nil:
		v = verdict{StatusExited, o.exit.code, "", ""}
		if o.truncated {
			v.reason = fmt.Sprintf("output over the limit of %d bytes was dropped", o.limits.OutputLimit)
		}
	case o.killedFor == StatusSignaled:
		v = verdict{StatusSignaled, 128 + int(syscall.SIGKILL), "SIGKILL", o.killNote}
	case o.started:
		v = verdict{StatusAborted, ExitSetup, "", ""}
		what := "ended (" + o.init.Desc + ")"
		if o.initFail != nil {
			what = "failed: " + o.initFail.Error()
		}
		if o.init.Signal != 0 {
			v.exitCode, v.signal = 128+int(o.init.Signal), unix.SignalName(o.init.Signal)
			what = "was killed by " + v.signal
		}
		v.reason = "the jail's init " + what + " after the command started; the command may have run and changed files, and its exit status is unknown"
	default:
		v = verdict{StatusSetupError, ExitSetup, "", fmt.Sprintf("the jail's init ended without a status (%s)", o.init.Desc)}
		if o.initFail != nil {
			v.reason = o.initFail.Error()
		}
	}
	return v
}

func signalReason(sig unix.Signal, l *Limits) string {
	switch sig {
	case unix.SIGXCPU:
		return fmt.Sprintf("CPU time limit %s reached (SIGXCPU)", l.CPUTime)
	case unix.SIGXFSZ:
		return fmt.Sprintf("file size limit %s reached (SIGXFSZ)", units.FormatSize(l.FSize))
	case unix.SIGSYS:
		// Only the monitor sees a non-native call (an "arch" violation);
		// without it the filter's kill and a sent SIGSYS look the same.
		return "killed by SIGSYS: a system call the filter kills (a non-native x32 or i386 entry), or a SIGSYS sent to it"
	}
	return "the command was killed by " + unix.SignalName(sig)
}
