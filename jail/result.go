package jail

import (
	"time"

	"github.com/tooljail/tooljail/jail/internal/relay"
	"github.com/tooljail/tooljail/report"
)

// A run's report is package report's: these names keep jail's API as it
// was (a Result is a report.Result).
type (
	Result             = report.Result
	Status             = report.Status
	Stream             = report.Stream
	Violation          = report.Violation
	ReportLimits       = report.ReportLimits
	Enforcement        = report.Enforcement
	NetworkEnforcement = report.NetworkEnforcement
	Namespaces         = report.Namespaces
	CacheBind          = report.CacheBind
	Toolchain          = report.Toolchain
	EnvDrop            = report.EnvDrop
	FullMount          = report.FullMount
	SessionCall        = report.SessionCall
	SessionResult      = report.SessionResult
	SetupError         = report.SetupError
)

// Schema names the report format (report.Schema).
const Schema = report.Schema

// How a run ended (report's Status values).
const (
	StatusExited      = report.StatusExited
	StatusSignaled    = report.StatusSignaled
	StatusTimeout     = report.StatusTimeout
	StatusMemoryLimit = report.StatusMemoryLimit
	StatusViolation   = report.StatusViolation
	StatusSetupError  = report.StatusSetupError
	StatusAborted     = report.StatusAborted
	StatusCancelled   = report.StatusCancelled
	StatusRefused     = report.StatusRefused
	StatusSession     = report.StatusSession
)

// Exit codes of tooljail itself (report's).
const (
	ExitTimeout       = report.ExitTimeout
	ExitSetup         = report.ExitSetup
	ExitNotExecutable = report.ExitNotExecutable
	ExitNotFound      = report.ExitNotFound
)

// Modes of Enforcement.Mode (report's).
const (
	ModeNamespaces      = report.ModeNamespaces
	ModeLandlockSeccomp = report.ModeLandlockSeccomp
)

// Session stop reasons (SessionResult.StoppedFor).
const (
	StopAsked   = report.StopAsked
	StopIdle    = report.StopIdle
	StopMaxLife = report.StopMaxLife
	StopEnded   = report.StopEnded
)

// Version is the tooljail version, set at build time.
var Version = "dev"

// streamOf is the report's entry of what a relay saw of a stream.
func streamOf(r relay.Result) Stream {
	return report.NewStream(r.Bytes, r.Truncated, r.Text)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func int64p(v int64) *int64 { return &v }
