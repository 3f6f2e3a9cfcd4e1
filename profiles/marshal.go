package profiles

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
)

// shown is the layout `tooljail profile show` prints: every key, with a
// comment, so that the output is a complete root profile a user can copy.
type shown struct {
	Description   *string       `toml:"description,omitempty"`
	AllowDegraded []string      `toml:"allow_degraded" comment:"layers the run may go without where this host cannot enforce them (default: fail closed)"`
	HostUser      *string       `toml:"host_user,omitempty" comment:"host user a jail started by root runs as: NAME, UID or UID:GID, never root; \"\" lets the jail choose (the workdir's owner unless that is root, else 524287:524287); a caller other than root can only name itself"`
	Filesystem    shownFS       `toml:"filesystem"`
	Limits        any           `toml:"limits" comment:"sizes: 64K 512M 1G; durations: 500ms 10s 5m; 0 or \"unlimited\" lifts a limit"`
	Network       shownNetwork  `toml:"network"`
	Env           shownEnv      `toml:"env"`
	Seccomp       shownSeccomp  `toml:"seccomp"`
	Landlock      shownLandlock `toml:"landlock"`
}

type shownFS struct {
	Root            *string   `toml:"root,omitempty" comment:"a directory holding a root file system (an unpacked image) to take system and etc from instead of the host; \"\" = the host's"`
	System          []string  `toml:"system" comment:"host directories shown read-only with execute rights; symlinks kept; missing ones skipped"`
	Etc             []string  `toml:"etc" comment:"entries of the host /etc shown read-only; missing ones skipped"`
	Ro              []string  `toml:"ro" comment:"PATH[:DEST] host paths shown read-only (relative to the current directory)"`
	Rw              []string  `toml:"rw" comment:"PATH[:DEST] host paths shown read-write"`
	Tmpfs           []string  `toml:"tmpfs" comment:"DEST[:SIZE] empty tmpfs (no SIZE, or \"memory\": as large as limits.memory)"`
	Caches          []string  `toml:"caches" comment:"build caches bound read-write in HOME: NAME (tooljail's own directory) or NAME=HOSTPATH; go-build, go-mod, pip, npm, cargo-registry"`
	Mask            []string  `toml:"mask" comment:"paths hidden inside the jail"`
	Toolchains      []string  `toml:"toolchains" comment:"the caller's toolchains shown read-only with execute rights, their bin first in PATH: \"auto\" (the command's own: a virtualenv, pyenv, uv, conda, nvm, fnm, volta, rustup, a Go root, a Java home) or an absolute prefix"`
	Workdir         *bool     `toml:"workdir,omitempty" comment:"bind the working directory read-write and start there"`
	WorkdirReadOnly *bool     `toml:"workdir_readonly,omitempty" comment:"bind it read-only instead (readable, not executable): for search and read tools"`
	Changes         *string   `toml:"changes,omitempty" comment:"what the command changes in the workdir and rw binds: off, record (applied at the end, listed), review (kept for review; the host is untouched), apply-on-success"`
	HomeSize        *string   `toml:"home_size,omitempty" comment:"size of the private HOME tmpfs (/home/sandbox): a size, or \"memory\" (as large as limits.memory)"`
	Protect         *[]string `toml:"protect,omitempty" comment:"paths in each read-write bind bound read-only over themselves when they exist (.git/ entries: every repository found); a child's list replaces its parent's"`
}

type shownNetwork struct {
	Mode  *string  `toml:"mode,omitempty" comment:"none (own namespace, loopback only), host, or allow (only the hosts below, through tooljail's proxies and DNS)"`
	Allow []string `toml:"allow" comment:"mode allow: HOST, *.DOMAIN, IP or CIDR, each with an optional :PORT (default 80 and 443)"`
}

type shownEnv struct {
	Set  map[string]string `toml:"set" comment:"the environment starts empty but for these, the pass names and HOME"`
	Pass []string          `toml:"pass" comment:"names copied from the caller's environment when set there"`
	Deny *[]string         `toml:"deny,omitempty" comment:"a caller's variables matching these (case-insensitive, * any characters) are dropped unless pass names them; a child's list replaces its parent's"`
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
			Root:   p.Filesystem.Root,
			System: nonNil(p.Filesystem.System), Etc: nonNil(p.Filesystem.Etc),
			Ro: nonNil(p.Filesystem.Ro), Rw: nonNil(p.Filesystem.Rw),
			Tmpfs: nonNil(p.Filesystem.Tmpfs), Caches: nonNil(p.Filesystem.Caches), Mask: nonNil(p.Filesystem.Mask),
			Toolchains: nonNil(p.Filesystem.Toolchains),
			Workdir:    p.Filesystem.Workdir, WorkdirReadOnly: p.Filesystem.WorkdirReadOnly, Changes: p.Filesystem.Changes, HomeSize: p.Filesystem.HomeSize,
			Protect: nonNilPtr(p.Filesystem.Protect),
		},
		Limits:  p.Limits.shown(p.LimitsMax),
		Network: shownNetwork{Mode: p.Network.Mode, Allow: nonNil(p.Network.Allow)},
		Env:     shownEnv{Set: p.Env.Set, Pass: nonNil(p.Env.Pass), Deny: nonNilPtr(p.Env.Deny)},
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

// nonNilPtr keeps a list that replaces its parent's: nil stays unset, and
// a set list prints even when empty (`protect = []` lifts the parent's).
func nonNilPtr[T any](s *[]T) *[]T {
	if s == nil || *s != nil {
		return s
	}
	empty := []T{}
	return &empty
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// shown is the value Marshal prints as [limits]: a struct of one
// field per limitKeys entry, in that order, each with its comment, and
// [limits.max] when max sets a key. A count that is a plain whole number
// is a TOML integer, every other value a string.
func (l Limits) shown(max LimitsMax) any {
	v := reflect.New(shownLimitsType()).Elem()
	fillShown(v, l)
	if len(max) > 0 {
		m := reflect.New(shownMaxType()).Elem()
		fillShown(m, max)
		v.Field(len(limitKeys)).Set(m)
	}
	return v.Interface()
}

func fillShown(v reflect.Value, l map[string]string) {
	for i, k := range limitKeys {
		text, ok := l[k.key]
		if !ok {
			continue
		}
		var value any = text
		if n, err := strconv.ParseInt(text, 10, 64); k.integer && err == nil && strconv.FormatInt(n, 10) == text {
			value = n
		}
		v.Field(i).Set(reflect.ValueOf(value))
	}
}

var shownMaxType = sync.OnceValue(func() reflect.Type {
	return limitsStruct(func(k limitKey) string { return `toml:"` + k.key + `,omitempty"` })
})

var shownLimitsType = sync.OnceValue(func() reflect.Type {
	return limitsStruct(func(k limitKey) string {
		tag := `toml:"` + k.key + `,omitempty"`
		if k.comment != "" {
			tag += ` comment:` + strconv.Quote(k.comment)
		}
		return tag
	}, reflect.StructField{
		Name: "Max", Type: reflect.TypeOf((*any)(nil)).Elem(),
		Tag: `toml:"max,omitempty" comment:"ceilings: the loosest value of each limit a flag of tooljail run or a served request may ask for"`,
	})
})
