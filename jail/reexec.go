package jail

import "github.com/tooljail/tooljail/hostprobe"

// Init runs the children of hostprobe.Check and ChangesLayer (which try the
// namespaces and the mount API, or an overlay, in a fresh user
// namespace) when this process is one, and never returns in that
// case; otherwise it returns at once. Call it first thing in main, before
// flags are parsed or goroutines started. The jail's init is not a
// re-execution: the supervisor forks it (init_fork.c).
func Init() {
	hostprobe.Child()
}
