package jail

import (
	"os"
	"runtime"
)

// Init runs the jail's init (or the host probe's child) when this process is
// one of them and never returns in that case; otherwise it returns at once. Call it first
// thing in main, before flags are parsed or goroutines started.
func Init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case argInit:
		// Every per-thread attribute the init sets (and the Pdeathsig of the
		// stage 2 it starts) must stay on one thread.
		runtime.LockOSThread()
		initMain()
		os.Exit(125)
	case argProbe:
		probeChild()
	}
}
