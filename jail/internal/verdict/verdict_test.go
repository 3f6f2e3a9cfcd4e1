package verdict

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/initlink"
	"github.com/tooljail/tooljail/jail/spec"
	"github.com/tooljail/tooljail/network/runnet"
	"github.com/tooljail/tooljail/report"
)

func TestDecide(t *testing.T) {
	limits := &spec.Limits{OutputLimit: 100}
	exited := func(code int) *Exit { return &Exit{Code: code} }
	killedBy := func(sig syscall.Signal) *Exit { return &Exit{Code: 128 + int(sig), Signal: sig} }
	setup := &report.SetupError{Code: 127, Err: errors.New("command not found")}
	initFail := &report.SetupError{Code: report.ExitSetup, Err: errors.New("reap: EINTR")}
	for _, c := range []struct {
		name   string
		o      Outcome
		status report.Status
		code   int
		signal string
		reason string // a substring of the reason
	}{
		{"exited", Outcome{Started: true, Exit: exited(3)}, report.StatusExited, 3, "", ""},
		{"exited, output truncated", Outcome{Started: true, Exit: exited(0), Truncated: true}, report.StatusExited, 0, "", "limit of 100 bytes"},
		{"never ran", Outcome{SetupErr: setup}, report.StatusSetupError, 127, "", "not found"},
		{"setup error beats a kill", Outcome{SetupErr: setup, KilledFor: report.StatusTimeout, KillNote: "t"}, report.StatusSetupError, 127, "", "not found"},
		{"timeout before the exit", Outcome{Started: true, KilledFor: report.StatusTimeout, KillNote: "wall-clock limit 1s", Exit: killedBy(syscall.SIGKILL)}, report.StatusTimeout, report.ExitTimeout, "", "wall-clock"},
		// kill() drops a kill that comes after the exit record, so the
		// timer racing a finished command leaves killedFor empty.
		{"timeout after the exit", Outcome{Started: true, Exit: exited(0)}, report.StatusExited, 0, "", ""},
		{"timeout with no exit record", Outcome{Started: true, KilledFor: report.StatusTimeout, KillNote: "wall"}, report.StatusTimeout, report.ExitTimeout, "", "wall"},
		{"violation kill", Outcome{Started: true, KilledFor: report.StatusViolation, FirstSyscall: "keyctl", Exit: killedBy(syscall.SIGKILL)}, report.StatusViolation, 159, "SIGSYS", "keyctl"},
		{"violation kill with a note", Outcome{Started: true, KilledFor: report.StatusViolation, KillNote: "10000 denied calls", Exit: killedBy(syscall.SIGKILL)}, report.StatusViolation, 159, "SIGSYS", "10000 denied"},
		{"arch kill", Outcome{Started: true, Arch: true, ArchCall: "x32:getpid", Exit: killedBy(syscall.SIGKILL)}, report.StatusViolation, 159, "SIGSYS", "x32:getpid"},
		{"arch call by a child, command exited", Outcome{Started: true, Arch: true, Exit: exited(0)}, report.StatusExited, 0, "", ""},
		{"SIGSYS without a recorded arch call", Outcome{Started: true, Exit: killedBy(syscall.SIGSYS), Limits: limits}, report.StatusSignaled, 159, "SIGSYS", "sent to it"},
		{"oom", Outcome{Started: true, OOM: true, OOMReason: "memory limit 1 MiB reached", Exit: killedBy(syscall.SIGKILL)}, report.StatusMemoryLimit, 137, "SIGKILL", "memory limit"},
		{"oom, init killed before any record", Outcome{Started: true, OOM: true, OOMReason: "memory limit"}, report.StatusMemoryLimit, 137, "SIGKILL", "memory limit"},
		{"oom but the command exited", Outcome{Started: true, OOM: true, Exit: exited(1)}, report.StatusExited, 1, "", ""},
		{"signaled", Outcome{Started: true, Exit: killedBy(syscall.SIGTERM), Limits: limits}, report.StatusSignaled, 143, "SIGTERM", "SIGTERM"},
		{"cancelled by the caller", Outcome{Started: true, KilledFor: report.StatusSignaled, KillNote: "cancelled", Exit: killedBy(syscall.SIGKILL)}, report.StatusSignaled, 137, "SIGKILL", "cancelled"},
		{"cancelled, no exit record", Outcome{Started: true, KilledFor: report.StatusSignaled, KillNote: "cancelled"}, report.StatusSignaled, 137, "SIGKILL", "cancelled"},
		// The init killed after the command started (prlimit on PID 1,
		// an administrator's kill): the command ran.
		{"cancelled by the client", Outcome{Started: true, KilledFor: report.StatusCancelled, KillNote: "client went away", Exit: killedBy(syscall.SIGKILL)}, report.StatusCancelled, 137, "SIGKILL", "client went away"},
		{"cancelled, no exit record yet", Outcome{Started: true, KilledFor: report.StatusCancelled, KillNote: "client went away"}, report.StatusCancelled, 137, "SIGKILL", "client went away"},
		{"cancelled before an OOM kill's record", Outcome{Started: true, KilledFor: report.StatusCancelled, KillNote: "client went away", OOM: true, OOMReason: "memory", Exit: killedBy(syscall.SIGKILL)}, report.StatusCancelled, 137, "SIGKILL", "client went away"},
		{"monitor failed", Outcome{Started: true, KilledFor: report.StatusAborted, KillNote: "its seccomp monitor failed", Exit: killedBy(syscall.SIGKILL)}, report.StatusAborted, report.ExitSetup, "", "monitor failed"},
		{"monitor failed, then a timeout", Outcome{Started: true, KilledFor: report.StatusAborted, KillNote: "its seccomp monitor failed"}, report.StatusAborted, report.ExitSetup, "", "monitor failed"},
		{"init killed after start", Outcome{Started: true, Init: initlink.End{Desc: "signal: SIGXCPU", Signal: syscall.SIGXCPU}}, report.StatusAborted, 128 + int(syscall.SIGXCPU), "SIGXCPU", "may have run"},
		{"init failed after start", Outcome{Started: true, InitFail: initFail, Init: initlink.End{Desc: "exit status 125"}}, report.StatusAborted, report.ExitSetup, "", "reap: EINTR"},
		{"init ended before start", Outcome{Init: initlink.End{Desc: "exit status 125"}}, report.StatusSetupError, report.ExitSetup, "", "without a status"},
		{"init failed before start", Outcome{InitFail: initFail}, report.StatusSetupError, report.ExitSetup, "", "reap"},
	} {
		if c.o.Limits == nil {
			c.o.Limits = limits
		}
		v := Decide(c.o)
		if v.Status != c.status || v.ExitCode != c.code || v.Signal != c.signal || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: got %s %d %q %q; want %s %d %q, reason with %q", c.name, v.Status, v.ExitCode, v.Signal, v.Reason, c.status, c.code, c.signal, c.reason)
		}
		if c.o.Started && c.o.SetupErr == nil && v.Status == report.StatusSetupError {
			t.Errorf("%s: a run whose command started is a setup error", c.name)
		}
	}
}

// TestDecideEveryCombination runs Decide on every combination of what can
// happen to a run and checks the rules the report promises, whichever
// branch decides.
func TestDecideEveryCombination(t *testing.T) {
	limits := &spec.Limits{OutputLimit: 100}
	setup := &report.SetupError{Code: 127, Err: errors.New("command not found")}
	initFail := &report.SetupError{Code: report.ExitSetup, Err: errors.New("reap: EINTR")}
	exits := []*Exit{nil, {Code: 0}, {Code: 3}}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSYS, syscall.SIGTERM, syscall.SIGXCPU} {
		exits = append(exits, &Exit{Code: 128 + int(sig), Signal: sig})
	}
	kills := []struct {
		why  report.Status
		note string
	}{{"", ""}, {report.StatusTimeout, "wall-clock limit 1s reached"}, {report.StatusViolation, ""}, {report.StatusViolation, "more than 3 denied system calls"}, {report.StatusSignaled, "cancelled"}, {report.StatusCancelled, "client went away"}, {report.StatusAborted, "its seccomp monitor failed"}}
	n := 0
	for _, se := range []*report.SetupError{nil, setup} {
		for _, inf := range []*report.SetupError{nil, initFail} {
			for _, started := range []bool{false, true} {
				for _, exit := range exits {
					if exit != nil && !started {
						continue // an exit record comes only after stage 2's ready one
					}
					for _, k := range kills {
						for _, bits := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} {
							oom, arch, truncated, initKilled := bits&1 != 0, bits&2 != 0, bits&4 != 0, bits&8 != 0
							o := Outcome{SetupErr: se, InitFail: inf, Started: started, Exit: exit, KilledFor: k.why, KillNote: k.note,
								OOM: oom, OOMReason: "memory limit 1 MiB reached", Arch: arch, ArchCall: "x32:getpid",
								FirstSyscall: "keyctl", Limits: limits, Truncated: truncated, Init: initlink.End{Desc: "exit status 125"}}
							if initKilled {
								o.Init = initlink.End{Desc: "signal: SIGKILL", Signal: syscall.SIGKILL}
							}
							n++
							checkVerdict(t, o, Decide(o))
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

// A memory-limit kill's reason says the limit, the peak, which tmpfs
// mounts held files that counted against it (1 MiB or more), the kills,
// and how to raise the limit when the policy said how.
func TestMemoryReason(t *testing.T) {
	peak := int64(512 << 20)
	raise := "--memory SIZE or limits.memory"
	for _, c := range []struct {
		name  string
		peak  *int64
		kills int64
		held  []TmpfsHeld
		raise string
		want  string
	}{
		{"plain", &peak, 1, nil, "",
			"memory limit 512 MiB reached (peak 512 MiB); 1 process killed by the OOM killer; the whole jail was stopped"},
		{"raise named", &peak, 2, nil, raise,
			"memory limit 512 MiB reached (peak 512 MiB); 2 processes killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"files in tmpfs", &peak, 1, []TmpfsHeld{{"/home/sandbox", 4096}, {"/tmp", 300 << 20}, {"/dev/shm", 2 << 20}}, raise,
			"memory limit 512 MiB reached (peak 512 MiB; files in tmpfs count: /tmp 300 MiB, /dev/shm 2 MiB); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"no samples", &peak, 1, []TmpfsHeld{{"/home/sandbox", -1}, {"/tmp", -1}}, raise,
			"memory limit 512 MiB reached (peak 512 MiB; files in /home/sandbox, /tmp count against it); 1 process killed by the OOM killer; the whole jail was stopped; raise it with --memory SIZE or limits.memory"},
		{"no peak measured", nil, 0, []TmpfsHeld{{"/tmp", 1 << 20}}, "",
			"memory limit 512 MiB reached (files in tmpfs count: /tmp 1 MiB); 0 processes killed by the OOM killer; the whole jail was stopped"},
	} {
		if got := MemoryReason(512<<20, c.peak, c.kills, c.held, c.raise); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// Refusals become violations (one per host, port and reason); failures
// that are not the policy's do not; limit hits are counted per limit.
func TestNetworkViolationsAndLimits(t *testing.T) {
	entries := []runnet.Entry{
		{Proto: "connect", Host: "pypi.org", Port: 443, Decision: "allowed", Count: 4},
		{Proto: "http", Host: "evil.example", Port: 80, Decision: "not in allowlist", Count: 2},
		{Proto: "connect", Host: "evil.example", Port: 80, Decision: "not in allowlist", Count: 1},
		{Proto: "dns", Host: "evil.example", DNSType: "TXT", Decision: "dns refused", Count: 7},
		{Proto: "connect", Host: "down.example", Port: 443, Decision: "connect failed", Count: 1},
		{Proto: "connect", Host: "nx.example", Port: 443, Decision: "dns failed", Count: 1},
		{Proto: "dns", Host: "pypi.org", DNSType: "A", Decision: "lookup failed", Count: 1},
		{Proto: "socks5", Host: "big.example", Port: 443, Decision: "allowed", Cut: "byte limit", Count: 1},
		{Proto: "socks5", Host: "big.example", Port: 443, Decision: "byte limit", Count: 2},
		{Proto: "http", Decision: "connection limit", Count: 5},
	}
	got := NetworkViolations(entries)
	want := []report.Violation{
		{Kind: "network", Host: "evil.example", Port: 80, Reason: "not in allowlist", Count: 3, Action: "denied"},
		{Kind: "network", Host: "evil.example", Reason: "dns refused", Count: 7, Action: "denied"},
		{Kind: "network", Host: "big.example", Port: 443, Reason: "byte limit", Count: 2, Action: "denied"},
		{Kind: "network", Reason: "connection limit", Count: 5, Action: "denied"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("violations\n got %+v\nwant %+v", got, want)
	}
	hits := NetLimitHits(entries)
	if len(hits) != 2 || hits["byte limit"] != 3 || hits["connection limit"] != 5 {
		t.Errorf("limit hits %v", hits)
	}
	if NetLimitHits(entries[:3]) != nil {
		t.Errorf("limit hits without any: %v", NetLimitHits(entries[:3]))
	}
}

func checkVerdict(t *testing.T, o Outcome, v Verdict) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%+v (exit %+v) -> %+v: "+format, append([]any{o, o.Exit, v}, args...)...)
	}
	switch v.Status {
	case report.StatusExited, report.StatusSignaled, report.StatusTimeout, report.StatusMemoryLimit, report.StatusViolation, report.StatusSetupError, report.StatusAborted, report.StatusCancelled:
	default:
		fail("unknown status")
	}
	if v.ExitCode < 0 || v.ExitCode > 255 {
		fail("exit code out of range")
	}
	if v.Signal != "" && v.ExitCode != 128+int(unix.SignalNum(v.Signal)) {
		fail("signal %s does not match exit code %d", v.Signal, v.ExitCode)
	}
	if v.Status != report.StatusExited && v.Reason == "" {
		fail("no reason")
	}
	// A setup error means the command never ran, and is reported as such.
	if o.SetupErr != nil {
		if v.Status != report.StatusSetupError || v.ExitCode != o.SetupErr.Code {
			fail("a setup error is not reported as one")
		}
		return
	}
	if o.Started && v.Status == report.StatusSetupError {
		fail("a run whose command started is a setup error")
	}
	// The supervisor's own kill, made before the exit record, explains it.
	switch o.KilledFor {
	case report.StatusAborted:
		if v.Status != report.StatusAborted || v.ExitCode != report.ExitSetup || v.Reason != o.KillNote {
			fail("tooljail's own failure is not reported as aborted")
		}
		return
	case report.StatusTimeout:
		if v.Status != report.StatusTimeout || v.ExitCode != report.ExitTimeout {
			fail("a timeout kill is not a timeout")
		}
		return
	case report.StatusCancelled:
		if v.Status != report.StatusCancelled || v.ExitCode != 137 || v.Signal != "SIGKILL" || v.Reason != o.KillNote {
			fail("a cancel is not reported as cancelled")
		}
		return
	case report.StatusViolation:
		if v.Status != report.StatusViolation || v.Signal != "SIGSYS" {
			fail("a violation kill is not a violation")
		}
		if o.KillNote != "" && v.Reason != o.KillNote {
			fail("the kill's note is lost")
		}
		return
	}
	if e := o.Exit; e != nil && e.Signal == 0 {
		if v.Status != report.StatusExited || v.ExitCode != e.Code {
			fail("an exit is not reported as it happened")
		}
	}
	if v.Status == report.StatusExited && (o.Exit == nil || o.Exit.Signal != 0) {
		fail("exited without an exit")
	}
	if v.Status == report.StatusMemoryLimit && !o.OOM {
		fail("memory_limit without an OOM kill")
	}
	if v.Status == report.StatusViolation && !(o.Arch && o.Exit != nil) {
		fail("a violation nobody saw")
	}
	if v.Status == report.StatusCancelled {
		fail("cancelled, but nobody cancelled the run")
	}
	if v.Status == report.StatusAborted && (!o.Started || o.Exit != nil) {
		fail("aborted, but the command's end is known or it never started")
	}
	if o.Exit == nil && o.Started && !o.OOM && o.KilledFor == "" && v.Status != report.StatusAborted {
		fail("the command started and its end is unknown, yet the status claims one")
	}
}
