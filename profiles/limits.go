package profiles

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
)

// Limits is the [limits] table: the text of each key that is set, keyed by
// its TOML key (see limitKeys). A TOML integer or float is kept as its
// decimal text; the text is parsed with internal/units when the Spec is
// built: sizes "512M", durations "10m", CPUs "0.5", counts "256"; "0" or
// "unlimited" lifts a limit. A key that is absent is unset, as a nil
// scalar is elsewhere in Profile; a child sets only the keys it names.
type Limits map[string]string

// limitKey is one [limits] key: how it reads into jail.Limits and how
// `profile show` prints it.
type limitKey struct {
	key string
	// integer: `profile show` writes a whole-number value as a TOML
	// integer (a count), anything else as a string.
	integer bool
	// comment is printed above the key by `profile show` ("" for none).
	comment string
	// set parses the text into its field of jail.Limits. Its error quotes
	// the text; parse adds the key.
	set func(l *jail.Limits, text string) error
}

// limitKeys is the one list of the [limits] keys, in the order `profile
// show` prints them. Decoding (the keys a file may set), SetLimit (the
// keys a flag may set, and the list its error names), Validate and Spec
// (parse), Marshal (the shown keys and their comments) and the check that
// a root profile sets every key all read it; merge overrides key by key,
// as for any map. A new limit is one entry here and its field in
// jail.Limits.
var limitKeys = []limitKey{
	{key: "memory", set: func(l *jail.Limits, s string) (err error) { l.Memory, err = units.ParseSize(s); return }},
	{key: "cpus", set: func(l *jail.Limits, s string) (err error) { l.CPUs, err = units.ParseCPUs(s); return }},
	{key: "pids", integer: true, set: func(l *jail.Limits, s string) (err error) { l.Pids, err = units.ParseCount(s); return }},
	{key: "timeout", comment: "wall clock; the whole process tree is killed",
		set: func(l *jail.Limits, s string) (err error) { l.Timeout, err = units.ParseDuration(s); return }},
	{key: "cpu_time", set: setCPUTime},
	{key: "nofile", integer: true, comment: "open files; 0 keeps the inherited limit",
		set: func(l *jail.Limits, s string) error { n, err := units.ParseCount(s); l.NoFile = uint64(n); return err }},
	{key: "fsize", comment: "largest file the command may write",
		set: func(l *jail.Limits, s string) (err error) { l.FSize, err = units.ParseSize(s); return }},
	{key: "output_limit", comment: "cap on relayed stdout+stderr",
		set: func(l *jail.Limits, s string) (err error) { l.OutputLimit, err = units.ParseSize(s); return }},
	{key: "max_violations", integer: true, set: setMaxViolations,
		comment: "denied system calls after which the next one kills the whole run (status violation); 0 = no limit"},
	{key: "net_connections", integer: true, set: setNetConns,
		comment: "network allow mode: connections through the proxies at once (1 to 65535; never unlimited)"},
	{key: "net_bytes", comment: "network allow mode: bytes the proxies forward in a run, both directions; 0 = no limit",
		set: func(l *jail.Limits, s string) (err error) { l.NetBytes, err = units.ParseSize(s); return }},
}

// setNetConns reads net_connections: a count from 1 to 65535. Every
// connection costs the supervisor a goroutine and buffers, so there is
// no "unlimited".
func setNetConns(l *jail.Limits, s string) error {
	n, err := units.ParseCount(s)
	if err != nil {
		return err
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("%q: want a count of connections from 1 to 65535 (the proxies always have a cap)", s)
	}
	l.NetConns = int(n)
	return nil
}

// setCPUTime reads cpu_time. RLIMIT_CPU counts whole seconds: a shorter
// limit cannot be honoured, so it is refused rather than rounded.
func setCPUTime(l *jail.Limits, s string) error {
	d, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	if d > 0 && d.Seconds() < 1 {
		return fmt.Errorf("%q: below 1s; the CPU-time limit counts whole seconds", s)
	}
	l.CPUTime = d
	return nil
}

// setMaxViolations reads max_violations: a count of at most
// math.MaxInt32.
func setMaxViolations(l *jail.Limits, s string) error {
	n, err := units.ParseCount(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("invalid count %q: too large (at most %d), or 0/unlimited for no limit", s, math.MaxInt32)
	}
	l.MaxViolations = int(n)
	return nil
}

// lookupLimit returns the entry of key, nil for an unknown key.
func lookupLimit(key string) *limitKey {
	for i := range limitKeys {
		if limitKeys[i].key == key {
			return &limitKeys[i]
		}
	}
	return nil
}

// limitNames lists the keys, for messages.
func limitNames() string {
	names := make([]string, len(limitKeys))
	for i, k := range limitKeys {
		names[i] = k.key
	}
	return strings.Join(names, ", ")
}

// check parses one value of k, as parse would.
func (k *limitKey) check(text string) error {
	var scratch jail.Limits
	if err := k.set(&scratch, text); err != nil {
		return &KeyError{Key: "limits." + k.key, Err: err}
	}
	return nil
}

// parse converts the limits that are set; unset ones stay zero. The error
// is a *KeyError for the first bad key in limitKeys order.
func (l Limits) parse() (jail.Limits, error) {
	var out jail.Limits
	for _, k := range limitKeys {
		text, ok := l[k.key]
		if !ok {
			continue
		}
		if err := k.set(&out, text); err != nil {
			return jail.Limits{}, &KeyError{Key: "limits." + k.key, Err: err}
		}
	}
	// decode and SetLimit set known keys only; a caller writing the map
	// directly might not, and a typo must not leave a limit unset.
	var unknown []string
	for key := range l {
		if lookupLimit(key) == nil {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return jail.Limits{}, keyErr("limits."+unknown[0], "unknown limit (known: %s)", limitNames())
	}
	return out, nil
}

// unset lists the dotted keys (prefix + key) that l does not set, in
// limitKeys order.
func (l Limits) unset(prefix string) []string {
	var out []string
	for _, k := range limitKeys {
		if _, ok := l[k.key]; !ok {
			out = append(out, prefix+k.key)
		}
	}
	return out
}

// limitsStruct builds a struct type with one `any` field per limitKeys
// entry, tagged by tag: go-toml reads a table's keys, their order and
// their comments from struct tags, so decode and Marshal give it [limits]
// in that form. extra fields (the [limits.max] sub-table) follow them.
func limitsStruct(tag func(limitKey) string, extra ...reflect.StructField) reflect.Type {
	fields := make([]reflect.StructField, len(limitKeys), len(limitKeys)+len(extra))
	for i, k := range limitKeys {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("L%d", i),
			Type: reflect.TypeOf((*any)(nil)).Elem(),
			Tag:  reflect.StructTag(tag(k)),
		}
	}
	return reflect.StructOf(append(fields, extra...))
}

// CompareLimit compares two values of the limit key, parsed as the profile
// parses them: -1 when a is tighter than b, 0 when they are the same limit,
// 1 when a is looser. 0 ("unlimited") is looser than any cap. A server
// uses it to let a request only tighten its profile's limits.
func CompareLimit(key, a, b string) (int, error) {
	k := lookupLimit(key)
	if k == nil {
		return 0, fmt.Errorf("unknown limit %q (known: %s)", key, limitNames())
	}
	var la, lb jail.Limits
	if err := k.set(&la, a); err != nil {
		return 0, &KeyError{Key: "limits." + key, Err: err}
	}
	if err := k.set(&lb, b); err != nil {
		return 0, &KeyError{Key: "limits." + key, Err: err}
	}
	// A key sets one field: the only one that can differ from zero.
	va, vb := reflect.ValueOf(la), reflect.ValueOf(lb)
	for i := 0; i < va.NumField(); i++ {
		x, y := limitNumber(va.Field(i)), limitNumber(vb.Field(i))
		if x == y {
			continue
		}
		switch {
		case x == 0: // unlimited
			return 1, nil
		case y == 0, x < y:
			return -1, nil
		}
		return 1, nil
	}
	return 0, nil
}

// limitNumber is a jail.Limits field as a number (durations in
// nanoseconds).
func limitNumber(v reflect.Value) float64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float64:
		return v.Float()
	}
	panic(fmt.Sprintf("profiles: limit field of kind %s", v.Kind()))
}
