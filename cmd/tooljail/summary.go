package main

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// summary is the one line printed when something was denied or a limit hit.
func summary(r *jail.Result) string {
	var parts []string
	switch r.Status {
	case jail.StatusTimeout, jail.StatusMemoryLimit, jail.StatusViolation:
		parts = append(parts, fmt.Sprintf("%s: %s", r.Status, r.Reason))
	case jail.StatusSignaled:
		if r.Signal == "SIGXCPU" || r.Signal == "SIGXFSZ" || r.Signal == "SIGSYS" {
			parts = append(parts, r.Reason)
		}
	}
	parts = append(parts, violationNotes(r)...)
	if note := upstreamNote(r); note != "" {
		parts = append(parts, note)
	}
	for _, l := range slices.Sorted(maps.Keys(r.NetworkLimitHits)) {
		parts = append(parts, fmt.Sprintf("network %s hit %d time(s)", l, r.NetworkLimitHits[l]))
	}
	if r.PidsLimitHits != nil && *r.PidsLimitHits > 0 {
		parts = append(parts, fmt.Sprintf("process limit hit %d time(s)", *r.PidsLimitHits))
	}
	parts = append(parts, fullMountNotes(r)...)
	if note := leftoverNote(r); note != "" {
		parts = append(parts, note)
	}
	if note := changesNote(r); note != "" {
		parts = append(parts, note)
	}
	if r.Stdout.Truncated || r.Stderr.Truncated {
		parts = append(parts, fmt.Sprintf("output over the limit of %d bytes dropped", r.Limits.OutputLimitBytes))
	}
	// Only credentials: the jail's own names (HOME, PWD, ...) come with
	// every os.environ and are dropped as a matter of course.
	creds := 0
	for _, d := range r.EnvDropped {
		if d.Reason == profiles.DropCredential {
			creds++
		}
	}
	if creds > 0 {
		parts = append(parts, fmt.Sprintf("dropped %d variable(s) that look like credentials (see the report's env_dropped)", creds))
	}
	return strings.Join(parts, "; ")
}

// violationNotes are the summary's parts on denied calls (not when they
// killed the run: its reason says so) and network refusals, each naming
// the first five.
func violationNotes(r *jail.Result) []string {
	denied, refused := 0, 0
	var names, hosts []string
	for _, v := range r.Violations {
		if v.Kind == "network" {
			refused += v.Count
			if len(hosts) < 5 {
				hosts = append(hosts, fmt.Sprintf("%s (%s)", netHost(v.Host, v.Port), v.Reason))
			}
			continue
		}
		denied += v.Count
		name := v.Syscall
		if v.Kind != "syscall" {
			name = v.Kind + ":" + name + v.Path
		}
		if len(names) < 5 {
			names = append(names, name)
		}
	}
	var parts []string
	if denied > 0 && r.Status != jail.StatusViolation {
		parts = append(parts, fmt.Sprintf("%d denied call(s): %s", denied, strings.Join(names, ", ")))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d network refusal(s): %s", refused, strings.Join(hosts, ", ")))
	}
	return parts
}

// netHost is host:port as the summary shows it (IPv6 in brackets; a DNS
// query has no port).
func netHost(host string, port int) string {
	if port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
