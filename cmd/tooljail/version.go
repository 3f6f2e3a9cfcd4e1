package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/seccomp"
)

// commit is the full git commit the binary was built from, set by the
// Makefile with -X main.commit=...; "-dirty" follows it when the tree had
// uncommitted changes. A plain `go build` leaves it empty and buildInfo
// falls back to what the Go toolchain recorded.
var commit string

// buildInfo is what `tooljail version` prints.
type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Go         string `json:"go"`
	Libseccomp string `json:"libseccomp"`
	Target     string `json:"target"`
}

func currentBuildInfo() buildInfo {
	return buildInfo{
		Version:    jail.Version,
		Commit:     commitOf(commit, debug.ReadBuildInfo),
		Go:         runtime.Version(),
		Libseccomp: seccomp.LibraryVersion(),
		Target:     runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// commitOf is the -X commit when set, else the VCS revision `go build`
// stamps into the binary (with -buildvcs, the default in a git checkout),
// else "unknown".
func commitOf(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := read()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func (b buildInfo) String() string {
	return fmt.Sprintf("tooljail %s (commit %s, %s, libseccomp %s, %s)", b.Version, b.Commit, b.Go, b.Libseccomp, b.Target)
}

const versionUsage = `Usage: tooljail version [--json]

Prints the version, the git commit it was built from, the Go version, the
libseccomp version linked in and the target (GOOS/GOARCH).

Flags:
`

func newVersionFlagSet(asJSON *bool) *flag.FlagSet {
	return flagSetOf("version", newVersionFlagTable(asJSON))
}

func newVersionFlagTable(asJSON *bool) []flagDef {
	return []flagDef{{name: "json", set: boolFlag{asJSON}, help: "print the build information as one JSON object"}}
}

func versionCommand(args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	fs := newVersionFlagSet(&asJSON)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, versionUsage)
			printFlags(stdout, fs)
			return 0
		}
		return fail(stderr, "%v; see 'tooljail version --help'", err)
	}
	if fs.NArg() > 0 {
		return fail(stderr, "version takes no arguments")
	}
	bi := currentBuildInfo()
	if asJSON {
		b, err := json.Marshal(bi)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	fmt.Fprintln(stdout, bi)
	return 0
}
