package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The init (PID 1) runs as the same host user as the command, so without
// the filter the command could set its limits and scheduling: with
// RLIMIT_CPU the kernel kills the init, and the report would say
// setup_error about a command that ran. The filter denies those calls on
// the init (and prlimit64 on any pid but 0), whatever a profile allows.

// initDenied are the tjsys calls aimed at the init, with the syscall the
// report must name; initAllowed the same calls on the caller, which work.
var (
	initDenied = []struct{ call, syscall string }{
		{"prlimit64-init", "prlimit64"},
		{"prlimit64-init-highbits", "prlimit64"}, // the kernel reads pid 1
		{"prlimit64-self", "prlimit64"},          // any pid but 0
		{"setpriority-init", "setpriority"},
		{"setpriority-init-high", "setpriority"},
		{"setpriority-pgrp-init", "setpriority"},
		{"setpriority-user", "setpriority"}, // every process of the jail has that uid
		{"ioprio_set-init", "ioprio_set"},
		{"ioprio_set-user", "ioprio_set"},
		{"sched_setaffinity-init", "sched_setaffinity"},
		{"sched_setscheduler-init", "sched_setscheduler"},
		{"sched_setparam-init", "sched_setparam"},
		{"sched_setattr-init", "sched_setattr"},
	}
	initAllowed = []string{
		"prlimit64-0", "prlimit64-0-highbits", "prlimit64-0-set", "setpriority-self",
		"setpriority-pgrp-self", "sched_setaffinity-self", "ioprio_set-self",
	}
)

// checkInitCalls runs initDenied and initAllowed with flags: each denied
// call fails with EPERM and is reported by name, with its count; the
// controls work and are not reported.
func checkInitCalls(t *testing.T, u *user, w string, flags []string) {
	t.Helper()
	var calls []string
	for _, d := range initDenied {
		calls = append(calls, d.call)
	}
	calls = append(calls, initAllowed...)
	o, r := u.sys(t, w, flags, calls...)
	lines := o.lines()
	if o.code != 0 || r.Status != "exited" || len(lines) != len(calls) {
		t.Fatalf("want exit 0, status exited and %d result lines\n%s", len(calls), o)
	}
	want := map[string]int{}
	for i, c := range calls {
		exp := "ok"
		if i < len(initDenied) {
			exp = "errno EPERM"
			want[initDenied[i].syscall]++
		}
		if lines[i] != exp {
			t.Errorf("%s: %q, want %s", c, lines[i], exp)
		}
	}
	for name, n := range want {
		v := r.find(name)
		if v == nil || v.Kind != "syscall" || v.Action != "denied" || v.Count != n || v.JailPid <= 1 {
			t.Errorf("violation for %s: %+v, want kind syscall, denied, count %d, from the command", name, v, n)
		}
	}
	if len(r.Violations) != len(want) {
		t.Errorf("violations %+v, want only %d syscalls (the controls are not violations)", r.Violations, len(want))
	}
}

func TestSeccompInitProtected(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		checkInitCalls(t, u, u.sysWorkdir(t), nil)
	})
}

// A profile that allows the calls by name, and their groups, lifts none of
// it.
func TestSeccompInitProtectedNotLifted(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		prof := filepath.Join(u.dir(t), "p.toml")
		text := "extends = \"default\"\n[seccomp]\nallow = [\"prlimit64\", \"setpriority\", \"ioprio_set\", \"sched_setaffinity\", " +
			"\"sched_setscheduler\", \"sched_setparam\", \"sched_setattr\", \"@process\", \"@system-info\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		checkInitCalls(t, u, w, []string{"--profile", prof})
	})
}

// The attack of the issue: RLIMIT_CPU of 1 s on the init, then a stream of
// orphans for it to reap. prlimit64 fails, the init keeps no CPU limit,
// and the run ends with the command's own status, not setup_error. The
// stream is too short to burn a second of the init's CPU (without the
// filter, getting the init killed takes far longer than a test may run:
// see BENCHMARKS.md), so the init's limit itself is what the test checks.
func TestSeccompInitCPULimit(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		if !u.check.enforced("seccomp") {
			t.Skipf("seccomp is not enforced for %s here", u.name)
		}
		w := u.workdir(t)
		o := u.jail(t, w, nil, "prlimit", "1", "CPU", "1", "1", ";", "read", "/proc/1/limits", ";",
			"orphans", (2 * time.Second * slow).String(), ";", "exit", "3")
		r := ptParse(t, o)
		lines := o.lines()
		if o.code != 3 || r.Status != "exited" || r.ExitCode != 3 || len(lines) != 3 {
			t.Fatalf("want the command's own end: exit 3, status exited, 3 result lines\n%s", o)
		}
		if lines[0] != "errno EPERM" {
			t.Errorf("prlimit(1, RLIMIT_CPU): %q, want errno EPERM", lines[0])
		}
		var limits string
		o.value(t, 1, &limits)
		cpu := ""
		for _, l := range strings.Split(limits, "\n") {
			if strings.HasPrefix(l, "Max cpu time") {
				cpu = strings.Join(strings.Fields(l)[3:5], " ")
			}
		}
		if cpu != "unlimited unlimited" {
			t.Errorf("the init's RLIMIT_CPU is %q, want unlimited unlimited\n%s", cpu, limits)
		}
		var n struct{ Orphans int }
		o.value(t, 2, &n)
		if n.Orphans == 0 {
			t.Errorf("no orphans made\n%s", o)
		}
		if u.check.enforced("seccomp-notify") {
			if v := r.find("prlimit64"); v == nil || v.Count != 1 || len(r.Violations) != 1 {
				t.Errorf("violations %+v, want prlimit64 once", r.Violations)
			}
		}
	})
}
