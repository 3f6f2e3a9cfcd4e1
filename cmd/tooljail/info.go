package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

const checkUsage = `Usage: tooljail check [--json]

Prints, for this host and user, each layer tooljail enforces, with the reason
and the fix when it cannot. Inside a container it also says what the container
refuses and how to change that in Docker, Podman and Kubernetes
(docs/containers.md). Exits 1 when the default profile cannot be enforced here.

Flags:
`

// checkReport is what `tooljail check --json` prints.
type checkReport struct {
	Layers         []hostprobe.Layer   `json:"layers"`
	Container      hostprobe.Container `json:"container"`
	DefaultProfile struct {
		Enforceable bool   `json:"enforceable"`
		Reason      string `json:"reason,omitempty"`
	} `json:"default_profile"`
}

func newCheckFlagSet(asJSON *bool) *flag.FlagSet {
	return flagSetOf("check", newCheckFlagTable(asJSON))
}

func newCheckFlagTable(asJSON *bool) []flagDef {
	return []flagDef{{name: "json", set: boolFlag{asJSON}, help: "print the result as JSON"}}
}

// defaultProfileError is why the default profile cannot be enforced on
// this host, "" when it can: the user namespace a run needs (the real try,
// layers[0], where the cheap probes of Preflight saw nothing: a
// container's /proc masks, its AppArmor profile), the profile, its Spec,
// and what Preflight says of it.
func defaultProfileError(layers []hostprobe.Layer) string {
	if userns := layers[0]; !userns.Enforced {
		return "user namespaces: " + userns.Reason + noNamespacesHint(layers)
	}
	p, err := profiles.Load("default")
	if err != nil {
		return err.Error()
	}
	spec, err := noWorkdir(p).Spec(profiles.Request{Args: []string{"/bin/true"}, Cwd: "/"})
	if err == nil {
		_, err = jail.Preflight(spec)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// printLayers writes one line per layer: enforced, or why not and the fix.
func printLayers(w io.Writer, layers []hostprobe.Layer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range layers {
		state := "enforced"
		detail := l.Detail
		if !l.Enforced {
			state = "NOT ENFORCED"
			detail = l.Reason
			if l.Fix != "" {
				detail += "; fix: " + l.Fix
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, state, oneLine(detail))
	}
	tw.Flush()
}

func checkCommand(args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	fs := newCheckFlagSet(&asJSON)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			printFlags(stdout, fs)
			return 0
		}
		return fail(stderr, "%v; see 'tooljail check --help'", err)
	}
	if fs.NArg() > 0 {
		return fail(stderr, "check takes no arguments")
	}
	check := hostprobe.Check()
	layers := check.Layers
	if dir, err := changesDirOf(os.Environ()); err != nil {
		layers = append(layers, hostprobe.Layer{Name: hostprobe.ChangesLayerName, Reason: err.Error(), Fix: "set HOME or XDG_STATE_HOME, or TOOLJAIL_CHANGES_DIR"})
	} else {
		layers = append(layers, hostprobe.ChangesLayer(dir, layers[0]))
	}
	defaultErr := defaultProfileError(layers)
	defaultOK := defaultErr == ""
	if asJSON {
		out := checkReport{Layers: layers, Container: check.Container}
		out.DefaultProfile.Enforceable, out.DefaultProfile.Reason = defaultOK, defaultErr
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printLayers(stdout, layers)
		printContainer(stdout, check.Container)
		if defaultOK {
			fmt.Fprintln(stdout, "default profile: enforceable on this host")
		} else {
			fmt.Fprintf(stdout, "default profile: cannot be enforced here: %s\n", oneLine(defaultErr))
		}
	}
	if !defaultOK {
		return 1
	}
	return 0
}

// noNamespacesHint names the mode without namespaces where it could run:
// Landlock is there to confine the files.
func noNamespacesHint(layers []hostprobe.Layer) string {
	for _, l := range layers {
		if l.Name == hostprobe.LayerLandlock && l.Enforced {
			return "; or run without namespaces, confined by Landlock and seccomp alone: tooljail run --allow-degraded namespaces (docs/containers.md)"
		}
	}
	return ""
}

// printContainer prints what check found of a container: nothing on a
// host without one, a note when markers are all there is.
func printContainer(w io.Writer, c hostprobe.Container) {
	if !c.Detected {
		for _, s := range c.Signs {
			fmt.Fprintf(w, "container: none (%s)\n", s)
		}
		return
	}
	engine := ""
	if c.Engine != "" {
		engine = " (" + c.Engine + ")"
	}
	signs := append([]string{}, c.Signs...)
	if c.SeccompFilter {
		signs = append(signs, "a seccomp filter")
	}
	if c.NoNewPrivs {
		signs = append(signs, "no_new_privs")
	}
	if c.AppArmor != "" {
		signs = append(signs, "AppArmor profile "+c.AppArmor)
	}
	fmt.Fprintf(w, "container%s: %s\n", engine, strings.Join(signs, "; "))
	if len(c.ProcMasked) > 0 {
		fmt.Fprintf(w, "  /proc masked or read-only: %s\n", strings.Join(c.ProcMasked, " "))
	}
	for _, r := range c.Refusals {
		fmt.Fprintf(w, "  %s: %s\n", r.Layer, oneLine(r.Cause))
		fmt.Fprintf(w, "    Docker:     %s\n", r.Docker)
		fmt.Fprintf(w, "    Podman:     %s\n", r.Podman)
		fmt.Fprintf(w, "    Kubernetes: %s\n", r.Kubernetes)
	}
	if len(c.Refusals) > 0 {
		fmt.Fprintln(w, "  recipes and the seccomp profile: docs/containers.md")
	}
}

const profileUsage = `Usage:
  tooljail profile list              the shipped profiles
  tooljail profile show NAME|FILE    a profile resolved along its extends chain, as TOML
`

func profileCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return fail(stderr, "profile needs a subcommand: list or show NAME; see 'tooljail profile --help'")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, profileUsage)
		return 0
	case "list":
		if len(args) != 1 {
			return fail(stderr, "profile list takes no arguments")
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, p := range profiles.List() {
			fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Description)
		}
		tw.Flush()
		return 0
	case "show":
		if len(args) != 2 {
			return fail(stderr, "usage: tooljail profile show NAME|FILE")
		}
		p, err := profiles.Load(args[1])
		if err != nil {
			return fail(stderr, "%v", err)
		}
		b, err := p.Marshal()
		if err != nil {
			return fail(stderr, "%v", err)
		}
		stdout.Write(b)
		return 0
	}
	return fail(stderr, "unknown profile subcommand %q: want list or show", args[0])
}

// noWorkdir drops the workdir bind: check asks about the host, not about the
// directory it happens to run in.
func noWorkdir(p *profiles.Profile) *profiles.Profile {
	no := false
	p.Filesystem.Workdir = &no
	return p
}
