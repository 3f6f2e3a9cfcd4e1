package profiles

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// limitSamples is one value per limitKeys entry: as written in a file, as
// Limits keeps it, as `profile show` prints it and as the jail gets it.
var limitSamples = []struct {
	key, toml, text, shown string
	want                   jail.Limits
}{
	{"memory", "1073741824", "1073741824", "memory = '1073741824'", jail.Limits{Memory: 1 << 30}},
	{"cpus", "0.5", "0.5", "cpus = '0.5'", jail.Limits{CPUs: 0.5}},
	{"pids", "300", "300", "pids = 300", jail.Limits{Pids: 300}},
	{"timeout", `"90s"`, "90s", "timeout = '90s'", jail.Limits{Timeout: 90 * time.Second}},
	{"cpu_time", `"2s"`, "2s", "cpu_time = '2s'", jail.Limits{CPUTime: 2 * time.Second}},
	{"nofile", "4096", "4096", "nofile = 4096", jail.Limits{NoFile: 4096}},
	{"fsize", `"1M"`, "1M", "fsize = '1M'", jail.Limits{FSize: 1 << 20}},
	{"output_limit", `"16M"`, "16M", "output_limit = '16M'", jail.Limits{OutputLimit: 16 << 20}},
	{"max_violations", "7", "7", "max_violations = 7", jail.Limits{MaxViolations: 7}},
	{"net_connections", "16", "16", "net_connections = 16", jail.Limits{NetConns: 16}},
	{"net_bytes", `"4G"`, "4G", "net_bytes = '4G'", jail.Limits{NetBytes: 4 << 30}},
}

// Every key of the table round-trips: decode -> parse -> Marshal -> decode.
func TestLimitKeysRoundTrip(t *testing.T) {
	if len(limitSamples) != len(limitKeys) {
		t.Fatalf("%d samples for %d limit keys: give the new key a sample", len(limitSamples), len(limitKeys))
	}
	for i, c := range limitSamples {
		if limitKeys[i].key != c.key {
			t.Fatalf("sample %d is %s, limitKeys has %s there", i, c.key, limitKeys[i].key)
		}
		p, _, err := decode("p.toml", []byte("[limits]\n"+c.key+" = "+c.toml+"\n"))
		if err != nil {
			t.Fatalf("%s: decode: %v", c.key, err)
		}
		if !reflect.DeepEqual(p.Limits, Limits{c.key: c.text}) {
			t.Errorf("%s: decoded %v, want %q", c.key, p.Limits, c.text)
		}
		got, err := p.Limits.parse()
		if err != nil || got != c.want {
			t.Errorf("%s: parse = %+v, %v; want %+v", c.key, got, err, c.want)
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("%s: Marshal: %v", c.key, err)
		}
		if !strings.Contains(string(out), "\n"+c.shown+"\n") {
			t.Errorf("%s: Marshal lacks %q:\n%s", c.key, c.shown, out)
		}
		back, _, err := decode("shown.toml", out)
		if err != nil {
			t.Fatalf("%s: decode(Marshal): %v\n%s", c.key, err, out)
		}
		if !reflect.DeepEqual(back.Limits, p.Limits) {
			t.Errorf("%s: round trip gave %v, want %v", c.key, back.Limits, p.Limits)
		}
	}
}

// Each key sets one field of jail.Limits, and every field has a key: a
// field added to jail.Limits without its entry in limitKeys fails here.
func TestLimitKeysCoverJailLimits(t *testing.T) {
	lt := reflect.TypeOf(jail.Limits{})
	setBy := map[string]string{}
	for _, c := range limitSamples {
		v := reflect.ValueOf(c.want)
		var fields []string
		for i := 0; i < lt.NumField(); i++ {
			if !v.Field(i).IsZero() {
				fields = append(fields, lt.Field(i).Name)
			}
		}
		if len(fields) != 1 {
			t.Errorf("%s sets %v, want one field", c.key, fields)
			continue
		}
		if other, ok := setBy[fields[0]]; ok {
			t.Errorf("%s and %s both set jail.Limits.%s", other, c.key, fields[0])
		}
		setBy[fields[0]] = c.key
	}
	for i := 0; i < lt.NumField(); i++ {
		if _, ok := setBy[lt.Field(i).Name]; !ok {
			t.Errorf("jail.Limits.%s has no [limits] key", lt.Field(i).Name)
		}
	}
}

// profile show prints [limits] in limitKeys order with the comments it
// always printed: the shipped default, exactly.
func TestMarshalLimitsSection(t *testing.T) {
	out, err := mustLoad(t, "default").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const want = `# sizes: 64K 512M 1G; durations: 500ms 10s 5m; 0 or "unlimited" lifts a limit
[limits]
memory = '1G'
cpus = '1'
pids = 256
# wall clock; the whole process tree is killed
timeout = '10m'
cpu_time = '0'
# open files; 0 keeps the inherited limit
nofile = 1024
# largest file the command may write
fsize = '1G'
# cap on relayed stdout+stderr
output_limit = '16M'
# denied system calls after which the next one kills the whole run (status violation); 0 = no limit
max_violations = 10000
# network allow mode: connections through the proxies at once (1 to 65535; never unlimited)
net_connections = 128
# network allow mode: bytes the proxies forward in a run, both directions; 0 = no limit
net_bytes = '0'

[network]
`
	if !strings.Contains(string(out), want) {
		t.Errorf("profile show default, [limits]:\n%s\nwant:\n%s", out, want)
	}
}

// A count is shown as a TOML integer only when it is a plain whole
// number; sizes and durations are always strings.
func TestLimitsShown(t *testing.T) {
	cases := []struct {
		limits Limits
		want   []string
	}{
		{Limits{"pids": "unlimited", "nofile": "0", "max_violations": "007"}, []string{"pids = 'unlimited'", "nofile = 0", "max_violations = '007'"}},
		{Limits{"memory": "1024", "fsize": "0"}, []string{"memory = '1024'", "fsize = '0'"}},
		{Limits{"pids": "-1"}, []string{"pids = -1"}},
	}
	for _, c := range cases {
		out, err := (&Profile{Limits: c.limits}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), "\n"+w+"\n") {
				t.Errorf("%v: output lacks %q:\n%s", c.limits, w, out)
			}
		}
	}
}

// A key written into the map by hand, not through SetLimit, is refused
// rather than ignored; SetLimit names the known keys.
func TestLimitsUnknownKey(t *testing.T) {
	if _, err := (Limits{"memory": "1G", "memroy": "2G"}).parse(); err == nil ||
		err.Error() != "limits.memroy: unknown limit (known: memory, cpus, pids, timeout, cpu_time, nofile, fsize, output_limit, max_violations, net_connections, net_bytes)" {
		t.Errorf("parse with an unknown key: %v", err)
	}
	p := &Profile{}
	if err := p.SetLimit("memroy", "1G"); err == nil ||
		err.Error() != `unknown limit "memroy" (known: memory, cpus, pids, timeout, cpu_time, nofile, fsize, output_limit, max_violations, net_connections, net_bytes)` {
		t.Errorf("SetLimit of an unknown key: %v", err)
	}
	if err := p.SetLimit("pids", "12"); err != nil || p.Limits["pids"] != "12" {
		t.Errorf("SetLimit on a profile without limits: %v, %v", err, p.Limits)
	}
}

func TestCompareLimit(t *testing.T) {
	for _, c := range []struct {
		key, a, b string
		want      int
	}{
		{"memory", "256M", "512M", -1},
		{"memory", "512MiB", "512M", 0},
		{"memory", "1G", "512M", 1},
		{"memory", "0", "512M", 1},
		{"memory", "unlimited", "512M", 1},
		{"memory", "512M", "unlimited", -1},
		{"memory", "0", "unlimited", 0},
		{"timeout", "10s", "10m", -1},
		{"timeout", "11m", "10m", 1},
		{"cpus", "0.5", "1", -1},
		{"cpus", "2", "1", 1},
		{"pids", "64", "256", -1},
		{"pids", "300", "256", 1},
		{"cpu_time", "5s", "1m", -1},
		{"nofile", "0", "1024", 1},
		{"fsize", "1M", "1G", -1},
		{"output_limit", "32M", "16M", 1},
		{"max_violations", "10", "0", -1},
	} {
		got, err := CompareLimit(c.key, c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("CompareLimit(%s, %s, %s) = %d, %v; want %d", c.key, c.a, c.b, got, err, c.want)
		}
	}
	if _, err := CompareLimit("memory", "lots", "1G"); err == nil || !strings.Contains(err.Error(), "limits.memory") {
		t.Errorf("a bad value: %v", err)
	}
	if _, err := CompareLimit("disk", "1", "1"); err == nil {
		t.Error("an unknown key compared")
	}
}
