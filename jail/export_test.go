package jail

import (
	"errors"
	"net"
	"os"

	"github.com/tooljail/tooljail/jail/internal/roottpl"
	"github.com/tooljail/tooljail/network/resolver"
)

// RootTemplatesSupported says whether this supervisor makes root
// templates (real root on Linux 6.15 or later).
func RootTemplatesSupported() bool { return roottpl.Supported() }

// InitPID is the pid of a started run's init, for tests that look at it
// from the host.
func InitPID(c *Cmd) int { return c.proc.PID }

// ForgeWarmCalls makes every warm call's message and descriptors pass
// through f until the returned function restores them. Tests that set it
// must not run warm jails in parallel.
func ForgeWarmCalls(f func(msg []byte, fds []int) ([]byte, []int)) (restore func()) {
	forgeCall = f
	return func() { forgeCall = nil }
}

// CallHeaderSize is the size of a warm call's header (stage2.h).
const CallHeaderSize = 16

// HostsLookup is the test table resolver (testhosts.go).
type HostsLookup = hostsLookup

// SetUpstreamLookup makes the allow mode resolve names with l until the
// returned function restores the host's resolver. Tests that set it must
// not run in parallel with other allow-mode runs.
func SetUpstreamLookup(l resolver.Lookup) (restore func()) {
	upstreamLookup = l
	return func() { upstreamLookup = nil }
}

// FailNetListeners makes the supervisor fail to serve the allow mode's
// listeners until the returned function restores it.
func FailNetListeners() (restore func()) {
	fileListener = func(*os.File) (net.Listener, error) { return nil, errors.New("test: no listener") }
	return func() { fileListener = net.FileListener }
}
