package jail

import (
	"os"

	"github.com/tooljail/tooljail/hostprobe"
)

// Init runs hostprobe.Check's child (which tries the mount API in a fresh user
// namespace) when this process is one, and never returns in that
// case; otherwise it returns at once. Call it first thing in main, before
// flags are parsed or goroutines started. The jail's init is not a
// re-execution: the supervisor forks it (init_fork.c).
func Init() {
	hostprobe.Child()
	if len(os.Args) == 2 && os.Args[0] == argOverlayProbe {
		overlayProbeChild(os.Args[1])
	}
}
