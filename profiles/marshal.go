package profiles

import (
	"bytes"
	"fmt"
	"strconv"

	toml "github.com/pelletier/go-toml/v2"
)

// shown is the layout `tooljail profile show` prints: every key, with a
// comment, so that the output is a complete root profile a user can copy.
type shown struct {
	Description   *string       `toml:"description,omitempty"`
	AllowDegraded []string      `toml:"allow_degraded" comment:"layers the run may go without where this host cannot enforce them (default: fail closed)"`
	HostUser      *string       `toml:"host_user,omitempty" comment:"host user a jail started by root runs as: NAME, UID or UID:GID, never root; \"\" lets the jail choose (the workdir's owner unless that is root, else 524287:524287); a caller other than root can only name itself"`
	Filesystem    shownFS       `toml:"filesystem"`
	Limits        shownLimits   `toml:"limits" comment:"sizes: 64K 512M 1G; durations: 500ms 10s 5m; 0 or \"unlimited\" lifts a limit"`
	Network       shownNetwork  `toml:"network"`
	Env           shownEnv      `toml:"env"`
	Seccomp       shownSeccomp  `toml:"seccomp"`
	Landlock      shownLandlock `toml:"landlock"`
}

type shownFS struct {
	System   []string `toml:"system" comment:"host directories shown read-only with execute rights; symlinks kept; missing ones skipped"`
	Etc      []string `toml:"etc" comment:"entries of the host /etc shown read-only; missing ones skipped"`
	Ro       []string `toml:"ro" comment:"PATH[:DEST] host paths shown read-only (relative to the current directory)"`
	Rw       []string `toml:"rw" comment:"PATH[:DEST] host paths shown read-write"`
	Tmpfs    []string `toml:"tmpfs" comment:"DEST[:SIZE] empty tmpfs (default size 64M)"`
	Mask     []string `toml:"mask" comment:"paths hidden inside the jail"`
	Workdir  *bool    `toml:"workdir,omitempty" comment:"bind the working directory read-write and start there"`
	HomeSize *string  `toml:"home_size,omitempty" comment:"size of the private HOME tmpfs (/home/sandbox)"`
}

type shownLimits struct {
	Memory        any `toml:"memory,omitempty"`
	CPUs          any `toml:"cpus,omitempty"`
	Pids          any `toml:"pids,omitempty"`
	Timeout       any `toml:"timeout,omitempty" comment:"wall clock; the whole process tree is killed"`
	CPUTime       any `toml:"cpu_time,omitempty"`
	NoFile        any `toml:"nofile,omitempty" comment:"open files; 0 keeps the inherited limit"`
	FSize         any `toml:"fsize,omitempty" comment:"largest file the command may write"`
	OutputLimit   any `toml:"output_limit,omitempty" comment:"cap on relayed stdout+stderr"`
	MaxViolations any `toml:"max_violations,omitempty" comment:"denied system calls after which the next one kills the whole run (status violation); 0 = no limit"`
}

type shownNetwork struct {
	Mode *string `toml:"mode,omitempty" comment:"none (own namespace, loopback only) or host"`
}

type shownEnv struct {
	Set  map[string]string `toml:"set" comment:"the environment starts empty but for these, the pass names and HOME"`
	Pass []string          `toml:"pass" comment:"names copied from the caller's environment when set there"`
}

type shownSeccomp struct {
	Enabled     *bool    `toml:"enabled,omitempty"`
	OnViolation *string  `toml:"on_violation,omitempty" comment:"deny (EPERM, the run goes on) or kill"`
	Allow       []string `toml:"allow" comment:"syscall names or @groups added to the built-in allowlist"`
	Deny        []string `toml:"deny" comment:"syscall names or @groups removed from it"`
}

type shownLandlock struct {
	Enabled     *bool    `toml:"enabled,omitempty"`
	MinABI      *int     `toml:"min_abi,omitempty" comment:"lowest Landlock ABI accepted; 0 accepts any"`
	RestrictTCP *bool    `toml:"restrict_tcp,omitempty" comment:"limit TCP bind/connect to the ports below (ABI 4+)"`
	BindTCP     []uint16 `toml:"bind_tcp"`
	ConnectTCP  []uint16 `toml:"connect_tcp"`
}

// Marshal renders p as TOML without `extends`: for a resolved profile, a
// complete root profile that Load reads back to an equal value.
func (p *Profile) Marshal() ([]byte, error) {
	s := shown{
		Description:   p.Description,
		AllowDegraded: nonNil(p.AllowDegraded),
		HostUser:      p.HostUser,
		Filesystem: shownFS{
			System: nonNil(p.Filesystem.System), Etc: nonNil(p.Filesystem.Etc),
			Ro: nonNil(p.Filesystem.Ro), Rw: nonNil(p.Filesystem.Rw),
			Tmpfs: nonNil(p.Filesystem.Tmpfs), Mask: nonNil(p.Filesystem.Mask),
			Workdir: p.Filesystem.Workdir, HomeSize: p.Filesystem.HomeSize,
		},
		Limits: shownLimits{
			Memory: text(p.Limits.Memory), CPUs: text(p.Limits.CPUs), Pids: count(p.Limits.Pids),
			Timeout: text(p.Limits.Timeout), CPUTime: text(p.Limits.CPUTime), NoFile: count(p.Limits.NoFile),
			FSize: text(p.Limits.FSize), OutputLimit: text(p.Limits.OutputLimit),
			MaxViolations: count(p.Limits.MaxViolations),
		},
		Network: shownNetwork{Mode: p.Network.Mode},
		Env:     shownEnv{Set: p.Env.Set, Pass: nonNil(p.Env.Pass)},
		Seccomp: shownSeccomp{
			Enabled: p.Seccomp.Enabled, OnViolation: p.Seccomp.OnViolation,
			Allow: nonNil(p.Seccomp.Allow), Deny: nonNil(p.Seccomp.Deny),
		},
		Landlock: shownLandlock{
			Enabled: p.Landlock.Enabled, MinABI: p.Landlock.MinABI, RestrictTCP: p.Landlock.RestrictTCP,
			BindTCP: nonNil(p.Landlock.BindTCP), ConnectTCP: nonNil(p.Landlock.ConnectTCP),
		},
	}
	if s.Env.Set == nil {
		s.Env.Set = map[string]string{}
	}
	var buf bytes.Buffer
	if p.Name != "" {
		fmt.Fprintf(&buf, "# profile %q, resolved (load it with --profile FILE)\n\n", p.Name)
	}
	enc := toml.NewEncoder(&buf).SetIndentTables(false).SetArraysMultiline(true)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("profile %s: encode: %w", p.Name, err)
	}
	return buf.Bytes(), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// text keeps a limit as a TOML string (nil stays unset).
func text(v *string) any {
	if v == nil {
		return nil
	}
	return *v
}

// count writes a whole-number limit as a TOML integer, anything else (such
// as "unlimited") as a string.
func count(v *string) any {
	if v == nil {
		return nil
	}
	if n, err := strconv.ParseInt(*v, 10, 64); err == nil && strconv.FormatInt(n, 10) == *v {
		return n
	}
	return *v
}
