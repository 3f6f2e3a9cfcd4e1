package jail

import "github.com/tooljail/tooljail/network/resolver"

// InitPID is the pid of a started run's init, for tests that look at it
// from the host.
func InitPID(c *Cmd) int { return c.proc.pid }

// SetUpstreamLookup makes the allow mode resolve names with l until the
// returned function restores the host's resolver. Tests that set it must
// not run in parallel with other allow-mode runs.
func SetUpstreamLookup(l resolver.Lookup) (restore func()) {
	upstreamLookup = l
	return func() { upstreamLookup = nil }
}
