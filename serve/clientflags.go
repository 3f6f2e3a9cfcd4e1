package serve

import (
	"fmt"
	"strings"
)

// What a client may ask of a server, flag by flag of `tooljail run`: the
// server builds each jail from its own profile (or one a client sends, with
// --allow-client-profiles), keeps its own audit log and change sets, and a
// session's jail is decided once, at its start. These functions are the
// refusals `tooljail run --server`, `run --session` and `session start`
// give; given says whether a flag (its name without dashes) was given.

// notServed are the flags a served run cannot honour, in the order they
// are checked, with why and, where a client's own profile cannot give it
// either, how to get it.
var notServed = []struct{ flag, why, fix string }{
	{"ro", "binds come from the server's profile", ""},
	{"cache", "caches come from the server's profile", ""},
	{"rw", "binds come from the server's profile", ""},
	{"tmpfs", "mounts come from the server's profile", ""},
	{"mask", "masks come from the server's profile", ""},
	{"allow-host", "the hosts come from the server's profile (network.allow)", ""},
	{"on-violation", "the server's profile sets seccomp.on_violation", ""},
	{"workdir-ro", "the server's profile says whether the workdir is read-only (filesystem.workdir_readonly; the readonly profile)", ""},
	{"host-user", "the server decides the host user", ""},
	{"root", "the server's profile sets filesystem.root, and a client's own profile may not",
		"serve a profile that sets it (tooljail serve --profile FILE), or run without a server"},
	{"allow-degraded", "the server's profile sets allow_degraded", ""},
	{"audit-log", "the server keeps the audit log (tooljail serve --audit-log)", ""},
	{"changes-dir", "the server keeps its clients' change sets (apply them through it, or with its user's 'tooljail changes')", ""},
}

// ServedFlagError is the error for the first flag given that a run sent to
// a server cannot honour, or nil.
func ServedFlagError(given func(flag string) bool) error {
	for _, n := range notServed {
		if !given(n.flag) {
			continue
		}
		fix := n.fix
		if fix == "" {
			fix = "serve a profile that has it (tooljail serve --profile FILE), send one with --profile FILE to a server started with --allow-client-profiles, or run without a server"
		}
		return fmt.Errorf("--%s cannot be used with a server (--server, TOOLJAIL_SERVER): %s; %s", n.flag, n.why, fix)
	}
	return nil
}

// sessionStartFlags are the jail's flags a call in a session cannot give:
// the session's start gave them.
var sessionStartFlags = []string{"profile", "no-workdir", "net", "changes", "toolchain"}

// SessionCallFlagError is the error for the first flag given that a call in
// a session cannot take, or nil. limits are the [limits] keys given
// ("memory", "output_limit"), in flag order: a call sets only its timeout
// and output limit.
func SessionCallFlagError(given func(flag string) bool, limits []string) error {
	for _, f := range sessionStartFlags {
		if given(f) {
			return fmt.Errorf("--%s cannot be used with --session: the session's start decided it ('tooljail session start --%s ...')", f, f)
		}
	}
	for _, l := range limits {
		if l != "timeout" && l != "output_limit" {
			return fmt.Errorf("--%s cannot be used with --session: a session's limits are its start's; a call sets only --timeout and --output-limit", strings.ReplaceAll(l, "_", "-"))
		}
	}
	return nil
}

// callFlags are run's flags that are a call's, not a session's.
var callFlags = []string{"session", "keep-running", "env", "pass-env", "tty", "merge-stderr", "report", "changes"}

// SessionStartFlagError is the error for the first flag given to a
// session's start that only a call in it takes, or nil.
func SessionStartFlagError(given func(flag string) bool) error {
	for _, f := range callFlags {
		if given(f) {
			return fmt.Errorf("--%s is a call's, not a session's: give it to 'tooljail run --session ID'", f)
		}
	}
	return nil
}
