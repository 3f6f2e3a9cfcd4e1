package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/internal/completion"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// runFlags are the parsed `run` flags, applied on top of the profile.
type runFlags struct {
	profile       scalar
	ro, rw        []string
	tmpfs, mask   []string
	caches        []string
	toolchains    []string
	workdir       scalar
	noWorkdir     bool
	workdirRO     bool
	limits        [][2]string // key, value in flag order
	net           scalar
	allowHosts    []string
	onViolation   scalar
	hostUser      scalar
	root          scalar
	changes       scalar // --changes MODE
	changesDir    scalar // --changes-dir DIR
	env, passEnv  []string
	allowDegraded []string
	report        scalar
	json          bool
	mergeStderr   bool
	tty, noTTY    bool
	session       scalar // --session ID: a call in a server's session
	keepRunning   bool
	auditLog      scalar
	quiet         bool
	server        scalar
	execFD        scalar // --exec-fd N
}

// scalar is a flag that takes one value. Given twice it is an error rather
// than a silent override, so that a wrapper's flag and the user's cannot
// both seem to apply.
type scalar struct {
	value string
	set   bool
	check func(string) error // nil: any value
}

func (s *scalar) String() string {
	if s == nil {
		return ""
	}
	return s.value
}

// Set checks v before anything else, so that a bad value is an error of
// its own even where a later flag would have replaced it.
func (s *scalar) Set(v string) error {
	if s.check != nil {
		if err := s.check(v); err != nil {
			return err
		}
	}
	if s.set {
		return fmt.Errorf("given twice (%q, then %q); give it once", s.value, v)
	}
	s.value, s.set = v, true
	return nil
}

// asProfile checks a flag's value as the profile key it overrides is
// checked: set puts it into an empty profile, whose Validate then sees
// only that value. So each value is refused when it is parsed, with the
// profile's message, not after the last flag has won.
func asProfile(set func(p *profiles.Profile, v string) error) func(string) error {
	return func(v string) error {
		var p profiles.Profile
		err := set(&p, v)
		if err == nil {
			err = p.Validate()
		}
		if err == nil {
			return nil
		}
		// The flag package names the flag and quotes the value already.
		var ke *profiles.KeyError
		if errors.As(err, &ke) {
			err = ke.Err
		}
		if msg, ok := strings.CutPrefix(err.Error(), strconv.Quote(v)+": "); ok {
			return errors.New(msg)
		}
		return err
	}
}

// nonEmpty refuses "": an empty path would otherwise mean "not given".
func nonEmpty(what string) func(string) error {
	return func(v string) error {
		if v == "" {
			return fmt.Errorf("empty; give %s", what)
		}
		return nil
	}
}

func newRunFlagSet(f *runFlags) *flag.FlagSet { return flagSetOf("run", runFlagTable(f)) }

// defaultProfile is the profile a run starts from without --profile.
const defaultProfile = "default"

// runFlagTable is run's flags, bound to f, in the order docs/cli.md
// lists them.
func runFlagTable(f *runFlags) []flagDef {
	return slices.Concat(runFilesystemFlags(f), runLimitFlags(f), runNetworkFlags(f), runOutputFlags(f))
}

// listKey checks a value of a repeatable flag as the list key that set
// puts it in is checked (asProfile).
func listKey(set func(p *profiles.Profile, v []string)) func(string) error {
	return asProfile(func(p *profiles.Profile, v string) error { set(p, []string{v}); return nil })
}

func runFilesystemFlags(f *runFlags) []flagDef {
	return []flagDef{
		{name: "profile", value: "NAME|FILE", def: defaultProfile, complete: profileCompletion,
			help: "start from a shipped profile NAME or a TOML FILE",
			set:  once(&f.profile, nonEmpty("a shipped profile name or a file path"))},
		{name: "ro", value: "PATH[:DEST]", repeat: true, key: "filesystem.ro",
			help: "bind a host PATH[:DEST] read-only (repeatable)",
			set:  appendTo(&f.ro, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Ro = v }))},
		{name: "rw", value: "PATH[:DEST]", repeat: true, key: "filesystem.rw",
			help: "bind a host PATH[:DEST] read-write (repeatable; not a system, top-level or home directory)",
			set:  appendTo(&f.rw, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Rw = v }))},
		{name: "tmpfs", value: "DEST[:SIZE]", repeat: true, key: "filesystem.tmpfs",
			help: "an empty tmpfs at DEST[:SIZE] (repeatable; without SIZE as large as the memory limit)",
			set:  appendTo(&f.tmpfs, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Tmpfs = v }))},
		{name: "cache", value: "NAME[=DIR]", repeat: true, key: "filesystem.caches",
			help: "bind the build cache NAME[=DIR] read-write in HOME: go-build, go-mod, pip, npm or cargo-registry, from tooljail's own directory (~/.cache/tooljail/caches/NAME) or DIR (repeatable)",
			set:  appendTo(&f.caches, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Caches = v }))},
		{name: "mask", value: "PATH", repeat: true, key: "filesystem.mask",
			help: "hide PATH inside the jail behind an empty file or directory (repeatable)",
			set:  appendTo(&f.mask, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Mask = v }))},
		{name: "root", value: "DIR", key: "filesystem.root",
			help: "take the jail's system directories and /etc entries from DIR, a root file system of your own (an unpacked container image), instead of the host; owned by you or root, not writable by group or others",
			set:  once(&f.root, asProfile((*profiles.Profile).SetRoot))},
		{name: "toolchain", value: "auto|PATH", repeat: true, key: "filesystem.toolchains",
			complete: func() completion.Value { return completion.Value{Words: []string{"auto"}, Dirs: true} },
			help:     "show the caller's toolchain read-only with execute rights, its bin first in PATH: auto finds the command's own (a virtualenv, pyenv, uv, conda, nvm, fnm, volta, rustup, a Go root, a Java home) from this PATH, HOME and directory; an absolute PATH names a prefix (repeatable; never a home directory or one that holds credentials)",
			set:      appendTo(&f.toolchains, listKey(func(p *profiles.Profile, v []string) { p.Filesystem.Toolchains = v }))},
		{name: "workdir", value: "DIR", key: "filesystem.workdir",
			help: "bind DIR read-write and start there (default: the current directory; /, system and top-level directories and home directories are refused)",
			set:  once(&f.workdir, nonEmpty("a directory, or --no-workdir for none"))},
		{name: "no-workdir", key: "filesystem.workdir",
			help: "no workdir bind; start in /tmp, or in HOME when the profile has no /tmp",
			set:  boolFlag{&f.noWorkdir}},
		{name: "workdir-ro", key: "filesystem.workdir_readonly",
			help: "bind the workdir read-only (readable, not executable): for commands that search and read it; as filesystem.workdir_readonly = true (the readonly profile)",
			set:  boolFlag{&f.workdirRO}},
		{name: "changes", value: "MODE", key: "filesystem.changes",
			complete: func() completion.Value { return completion.Value{Words: stringsOf(changes.Modes)} },
			help:     "MODE: off; record (the command's writes to the workdir and --rw binds reach the host when it ends, listed in the report); review (kept as a change set, the host untouched until 'tooljail changes apply'); apply-on-success (review, applied when it exits 0)",
			set:      once(&f.changes, func(v string) error { _, err := changes.ParseMode(v); return err })},
		{name: "changes-dir", value: "DIR",
			help: "the change store DIR (also TOOLJAIL_CHANGES_DIR; default /var/lib/tooljail/changes for root, else $XDG_STATE_HOME/tooljail/changes or ~/.local/state/tooljail/changes)",
			set:  once(&f.changesDir, absolutePath)},
	}
}

// absolutePath refuses a relative path.
func absolutePath(v string) error {
	if !strings.HasPrefix(v, "/") {
		return errors.New("want an absolute path")
	}
	return nil
}

// limitFlag is the row of the flag of limits.KEY: --KEY with "_" as "-".
func limitFlag(f *runFlags, key, value, help string) flagDef {
	return flagDef{name: strings.ReplaceAll(key, "_", "-"), value: value, key: "limits." + key, help: help, set: f.limit(key)}
}

// limit binds the flag of limits.key: checked as the key is, given once,
// kept in flag order.
func (f *runFlags) limit(key string) flag.Value {
	check := asProfile(func(p *profiles.Profile, v string) error { return p.SetLimit(key, v) })
	return funcFlag(func(v string) error {
		if err := check(v); err != nil {
			return err
		}
		for _, l := range f.limits {
			if l[0] == key {
				return fmt.Errorf("given twice (%q, then %q); give it once", l[1], v)
			}
		}
		f.limits = append(f.limits, [2]string{key, v})
		return nil
	})
}

func runLimitFlags(f *runFlags) []flagDef {
	return []flagDef{
		limitFlag(f, "memory", "SIZE", "memory cap SIZE (cgroup; swap 0)"),
		limitFlag(f, "cpus", "N", "CPU cap in N CPUs (cgroup), e.g. 0.5"),
		limitFlag(f, "pids", "N", "cap on processes and threads N (cgroup)"),
		limitFlag(f, "timeout", "DUR", "wall-clock limit DUR; the whole tree is killed, exit 124"),
		limitFlag(f, "cpu_time", "DUR", "CPU-time limit DUR (RLIMIT_CPU)"),
		limitFlag(f, "nofile", "N", "open file limit N (RLIMIT_NOFILE)"),
		limitFlag(f, "fsize", "SIZE", "largest file the command may write, SIZE (RLIMIT_FSIZE)"),
		limitFlag(f, "output_limit", "SIZE", "cap SIZE on relayed stdout+stderr; the rest is counted and dropped"),
	}
}

func runNetworkFlags(f *runFlags) []flagDef {
	return []flagDef{
		{name: "net", value: "none|host|allow", key: "network.mode",
			complete: func() completion.Value { return completion.Value{Words: stringsOf(jail.NetModes)} },
			help:     "none (own namespace, loopback only), host (trusted tools only) or allow (only the --allow-host hosts, through tooljail's proxies and DNS)",
			set:      once(&f.net, asProfile(func(p *profiles.Profile, v string) error { p.Network.Mode = &v; return nil }))},
		{name: "allow-host", value: "PATTERN", repeat: true, key: "network.allow",
			help: "with --net allow (or a profile in mode allow): let the command reach PATTERN, a host name, *.DOMAIN, IP or CIDR with an optional :PORT (default 80 and 443) (repeatable)",
			set:  appendTo(&f.allowHosts, asProfile((*profiles.Profile).AddAllowHost))},
		limitFlag(f, "net_connections", "N", "network allow mode: at most N connections through the proxies at once"),
		limitFlag(f, "net_bytes", "SIZE", "network allow mode: at most SIZE forwarded by the proxies in the run, both directions; 0 for no limit"),
		{name: "on-violation", value: "deny|kill", key: "seccomp.on_violation",
			complete: func() completion.Value { return completion.Value{Words: stringsOf(jail.OnViolations)} },
			help:     "deny (EPERM, the run goes on) or kill (the run is killed)",
			set:      once(&f.onViolation, asProfile(func(p *profiles.Profile, v string) error { p.Seccomp.OnViolation = &v; return nil }))},
		limitFlag(f, "max_violations", "N", "after N denied system calls the next one kills the whole run (status violation); 0 for no limit"),
		{name: "env", value: "K[=V]", repeat: true, key: "env.set",
			help: "give the command K=V, or K with its value in this environment (repeatable); HOME, TMPDIR, USER, LOGNAME, SHELL, PWD, OLDPWD are the jail's and names that look like credentials (env.deny) are dropped, named in the report; a PATH adds its entries the jail shows after the jail's own",
			set:  appendTo(&f.env, profiles.CheckVarFlag)},
		{name: "pass-env", value: "K", repeat: true, key: "env.pass",
			help: "copy variable K from this environment when set (repeatable)",
			set:  appendTo(&f.passEnv, listKey(func(p *profiles.Profile, v []string) { p.Env.Pass = v }))},
		{name: "allow-degraded", value: "LAYERS", repeat: true, key: "allow_degraded", complete: layerCompletion,
			help: "run even if these LAYERS cannot be enforced: landlock, seccomp, seccomp-notify, cgroup, memory, cpu, pids, namespaces (no namespaces, confined by Landlock and seccomp, where none can be made), protect (without namespaces, the protected paths of the read-write binds stay writable)",
			set:  appendTo(&f.allowDegraded, asProfile((*profiles.Profile).AddAllowDegraded))},
	}
}

func runOutputFlags(f *runFlags) []flagDef {
	return []flagDef{
		{name: "report", value: "FILE",
			help: "write the JSON report to FILE (- for stderr); opened before the run: a regular file, no symlink, outside the run's read-write binds",
			set:  once(&f.report, nonEmpty("a file path, or - for stderr"))},
		{name: "json", help: "capture stdout/stderr into the report and print only the report on stdout", set: boolFlag{&f.json}},
		{name: "merge-stderr", set: boolFlag{&f.mergeStderr},
			help: "make the command's stderr its stdout (one pipe, as 2>&1): what it writes to either goes to stdout in the order written, and is the report's stdout"},
		{name: "tty", set: boolFlag{&f.tty},
			help: "give the command a terminal of the jail's own (its stdin, stdout and stderr; this terminal goes raw and is restored after): the default when stdin and stdout are terminals and --json is not given; its output, stderr included, is the report's stdout"},
		{name: "no-tty", help: "pipes, not a terminal, even when stdin and stdout are terminals", set: boolFlag{&f.noTTY}},
		{name: "session", value: "ID",
			help: "run the command in the server's session ID ('tooljail session start'): the session's jail, with this command, env, stdin and --timeout/--output-limit; --workdir is then its working directory in the jail (default the session's workdir). Uses the server of --server, TOOLJAIL_SERVER, else the default socket (docs/sessions.md)",
			set:  once(&f.session, sessionID)},
		{name: "keep-running", set: boolFlag{&f.keepRunning},
			help: "with --session: what the command leaves running (a server started with &) stays in the session after it ends, until the session stops; without it, it is killed when the command ends"},
		{name: "audit-log", value: "FILE",
			help: "append one JSON line per run to FILE (also TOOLJAIL_AUDIT_LOG); opened as --report is",
			set:  once(&f.auditLog, nonEmpty("a file path"))},
		{name: "host-user", value: "USER", key: "host_user",
			help: fmt.Sprintf("when tooljail runs as root, the host USER the jail runs as: a name, UID or UID:GID, never root (default: the profile's host_user, else the workdir's owner unless that is root, else %d:%d); other callers can only name themselves",
				jail.DefaultHostUser.UID, jail.DefaultHostUser.GID),
			set: once(&f.hostUser, func(v string) error { _, err := profiles.ParseHostUser(v); return err })},
		{name: "quiet", short: "q", help: "no summary line on stderr", set: boolFlag{&f.quiet}},
		{name: "exec-fd", value: "N",
			help: "write \"exec\\n\" to descriptor N (3 or more, open for writing) once the command has been exec'd in the jail, then close it; closed without it when the command never ran, and a command not found or not executable (126, 127) is then not printed on stderr: the reader reports it, as subprocess's Popen raises what execve said",
			set:  once(&f.execFD, checkExecFD)},
		{name: "server", value: "SOCKET",
			help: "send the run to the SOCKET of a tooljail serve (also TOOLJAIL_SERVER) instead of jailing it here; the server's profile decides what --ro, --rw, --tmpfs, --mask, --workdir-ro, --on-violation, --host-user, --root, --allow-degraded and --audit-log would, so they are refused",
			set:  once(&f.server, nonEmpty("the socket of a tooljail serve"))},
	}
}

// sessionID refuses what is not a session id.
func sessionID(v string) error {
	if !jail.ValidSessionID(v) {
		return errors.New("not a session id (32 hex digits, as 'tooljail session start' printed)")
	}
	return nil
}
