// Package verdict turns what a run's supervisor learned into the report's
// verdict: its status, exit code, signal and reason (Decide, from an
// Outcome, in the order of evidence), the reason of a memory-limit kill,
// and the violations the report lists (the seccomp monitor's, Landlock's,
// the allow mode's refusals). It is pure: package jail gathers the
// Outcome after the run and copies the Verdict into the Result. It
// imports report, jail/spec and what the evidence comes in (initlink's
// end of the init, seccomp's and landlock's records, runnet's entries),
// never jail.
package verdict

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/spec"
	"github.com/tooljail/tooljail/report"
)

// Exit is the command's end as the init saw it.
type Exit struct {
	Code   int            // as a shell reports it: the status, or 128+signal
	Signal syscall.Signal // 0 when it exited
}

// Outcome is everything that decides a run's status, as Wait learned it.
type Outcome struct {
	SetupErr  *report.SetupError // the command never ran
	InitFail  *report.SetupError // the init failed after the command started
	Started   bool               // stage 2 got as far as its execve
	Exit      *Exit              // nil: no exit record came
	KilledFor report.Status      // why the supervisor killed the run before the exit record, or ""
	KillNote  string
	OOM       bool
	OOMReason string
	// Arch: the monitor saw a non-native (x32, i386) call and killed its
	// caller (archCall names it). Without notification nobody sees such a
	// call: the filter kills the caller with SIGSYS, which the exit record
	// cannot tell from a SIGSYS sent by a process, so it is no violation.
	Arch         bool
	ArchCall     string
	FirstSyscall string // the first denied call recorded, for a kill's reason
	Init         initlink.End
	Limits       *spec.Limits
	Truncated    bool // output over the limit was dropped
}

// Verdict is a run's status, exit code, signal and reason.
type Verdict struct {
	Status   report.Status
	ExitCode int
	Signal   string
	Reason   string
}

// Decide turns what happened into the report's verdict. The order is the
// order of evidence: a setup error means the command never ran; a kill by
// the supervisor that came before the exit record explains that exit; then
// what the kernel did (a non-native call, the OOM killer); then the exit
// record itself. A run whose command started is never a setup error.
func Decide(o Outcome) Verdict {
	sigsys := 128 + int(syscall.SIGSYS)
	commandKilled := o.Exit != nil && (o.Exit.Signal == syscall.SIGKILL || o.Exit.Signal == syscall.SIGSYS)
	var v Verdict
	switch {
	case o.SetupErr != nil:
		v = Verdict{report.StatusSetupError, o.SetupErr.Code, "", o.SetupErr.Error()}
	case o.KilledFor == report.StatusAborted:
		// tooljail itself could not go on (its seccomp monitor failed).
		v = Verdict{report.StatusAborted, report.ExitSetup, "", o.KillNote}
	case o.KilledFor == report.StatusTimeout:
		v = Verdict{report.StatusTimeout, report.ExitTimeout, "", o.KillNote}
	case o.KilledFor == report.StatusCancelled:
		v = Verdict{report.StatusCancelled, 128 + int(syscall.SIGKILL), "SIGKILL", o.KillNote}
	case o.KilledFor == report.StatusViolation:
		v = Verdict{report.StatusViolation, sigsys, "SIGSYS", "killed for a denied system call (--on-violation kill)"}
		if o.KillNote != "" {
			v.Reason = o.KillNote
		} else if o.FirstSyscall != "" {
			v.Reason = fmt.Sprintf("killed for a denied system call: %s (--on-violation kill)", o.FirstSyscall)
		}
	case o.Arch && commandKilled:
		v = Verdict{report.StatusViolation, sigsys, "SIGSYS", "killed for a non-native system call (x32 or i386 entry point)"}
		if o.ArchCall != "" {
			v.Reason = fmt.Sprintf("killed for a non-native system call: %s (x32 or i386 entry point)", o.ArchCall)
		}
	case o.OOM && (o.Exit == nil || o.Exit.Signal == syscall.SIGKILL):
		v = Verdict{report.StatusMemoryLimit, 128 + int(syscall.SIGKILL), "SIGKILL", o.OOMReason}
	case o.Exit != nil && o.Exit.Signal != 0:
		v = Verdict{report.StatusSignaled, o.Exit.Code, unix.SignalName(o.Exit.Signal), signalReason(o.Exit.Signal, o.Limits)}
		if o.KilledFor == report.StatusSignaled {
			v.Reason = o.KillNote
		}
	case o.Exit != nil:
		v = Verdict{report.StatusExited, o.Exit.Code, "", ""}
		if o.Truncated {
			v.Reason = fmt.Sprintf("output over the limit of %d bytes was dropped", o.Limits.OutputLimit)
		}
	case o.KilledFor == report.StatusSignaled:
		v = Verdict{report.StatusSignaled, 128 + int(syscall.SIGKILL), "SIGKILL", o.KillNote}
	case o.Started:
		v = Verdict{report.StatusAborted, report.ExitSetup, "", ""}
		what := "ended (" + o.Init.Desc + ")"
		if o.InitFail != nil {
			what = "failed: " + o.InitFail.Error()
		}
		if o.Init.Signal != 0 {
			v.ExitCode, v.Signal = 128+int(o.Init.Signal), unix.SignalName(o.Init.Signal)
			what = "was killed by " + v.Signal
		}
		v.Reason = "the jail's init " + what + " after the command started; the command may have run and changed files, and its exit status is unknown"
	default:
		v = Verdict{report.StatusSetupError, report.ExitSetup, "", fmt.Sprintf("the jail's init ended without a status (%s)", o.Init.Desc)}
		if o.InitFail != nil {
			v.Reason = o.InitFail.Error()
		}
	}
	return v
}

func signalReason(sig unix.Signal, l *spec.Limits) string {
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
