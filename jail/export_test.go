package jail

// InitPID is the pid of a started run's init, for tests that look at it
// from the host.
func InitPID(c *Cmd) int { return c.proc.pid }
