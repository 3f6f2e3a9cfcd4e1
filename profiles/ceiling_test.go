package profiles

import (
	"strings"
	"testing"
)

func TestLimitsMaxLoads(t *testing.T) {
	dir := t.TempDir()
	parent := writeFile(t, dir, "parent.toml", "extends = \"default\"\n[limits.max]\nmemory = \"4G\"\ntimeout = \"1h\"\n")
	child := writeFile(t, dir, "child.toml", "extends = \"parent.toml\"\n[limits]\nmemory = \"1G\"\n[limits.max]\ntimeout = \"30m\"\npids = 1000\n")
	p, err := Load(child)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := LimitsMax{"memory": "4G", "timeout": "30m", "pids": "1000"}
	if len(p.LimitsMax) != len(want) {
		t.Fatalf("limits.max = %v, want %v", p.LimitsMax, want)
	}
	for k, v := range want {
		if p.LimitsMax[k] != v {
			t.Errorf("limits.max.%s = %q, want %q (child overrides key by key)", k, p.LimitsMax[k], v)
		}
	}
	roundTrip(t, p)
	q, err := Load(parent)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, q)
}

func TestLimitsMaxRefused(t *testing.T) {
	for _, c := range []struct {
		name, text, key string
		line            int
		want            []string
	}{
		{"below own limit", "extends = \"default\"\n[limits]\nmemory = \"8G\"\n[limits.max]\nmemory = \"4G\"\n", "limits.max.memory", 5,
			[]string{`"4G" is below the profile's own limits.memory "8G"`, "raise the ceiling or lower the limit"}},
		{"bad value", "extends = \"default\"\n[limits.max]\ntimeout = \"soon\"\n", "limits.max.timeout", 3, []string{"soon"}},
		{"unknown key", "extends = \"default\"\n[limits.max]\nmemroy = \"1G\"\n", "limits.max.memroy", 3, []string{"unknown key", "limits.max.memory"}},
		{"table value", "extends = \"default\"\n[limits.max.memory]\nx = 1\n", "limits.max.memory", 2, []string{"table"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := writeFile(t, t.TempDir(), "p.toml", c.text)
			err := loadErr(t, f)
			wantPos(t, err, f, c.line, c.key, c.want...)
		})
	}
	// A child that raises the limit over its parent's ceiling is refused
	// once resolved: the ceiling binds the profile's own value too.
	dir := t.TempDir()
	writeFile(t, dir, "parent.toml", "extends = \"default\"\n[limits.max]\nmemory = \"1G\"\n")
	child := writeFile(t, dir, "child.toml", "extends = \"parent.toml\"\n[limits]\nmemory = \"2G\"\n")
	if err := loadErr(t, child); !strings.Contains(err.Error(), `limits.max.memory: "1G" is below the profile's own limits.memory "2G"`) {
		t.Errorf("child over its parent's ceiling: %v", err)
	}
}

func TestCheckCeiling(t *testing.T) {
	p := &Profile{Name: "ci", LimitsMax: LimitsMax{"memory": "4G", "timeout": "0", "cpus": "2"}}
	for _, c := range []struct {
		key, value string
		refused    bool
	}{
		{"memory", "4G", false},
		{"memory", "1G", false},
		{"memory", "5G", true},
		{"memory", "unlimited", true}, // no cap is looser than any
		{"memory", "0", true},
		{"timeout", "100h", false}, // a ceiling of 0 is none
		{"cpus", "2.5", true},
		{"pids", "1000000", false}, // no ceiling for pids
		{"memory", "lots", false},  // SetLimit refuses it, with its own message
	} {
		err := p.CheckCeiling(c.key, c.value)
		if (err != nil) != c.refused {
			t.Errorf("CheckCeiling(%s, %s) = %v, want refused %v", c.key, c.value, err, c.refused)
		}
		if err != nil {
			want := "limits." + c.key + ": " + c.value + " is above the ceiling of profile ci (limits.max." + c.key + " = "
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ask for at most") {
				t.Errorf("CheckCeiling(%s, %s) = %q, want it to contain %q and say what to do", c.key, c.value, err, want)
			}
		}
	}
}
