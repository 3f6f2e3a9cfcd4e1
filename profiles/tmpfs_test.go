package profiles

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func TestSplitTmpfs(t *testing.T) {
	for _, c := range []struct {
		in       string
		dest     string
		bytes    int64
		byMemory bool
		err      string
	}{
		{in: "/tmp", dest: "/tmp", byMemory: true},
		{in: "/tmp:memory", dest: "/tmp", byMemory: true},
		{in: "/tmp:64M", dest: "/tmp", bytes: 64 << 20},
		{in: "/a:b:1G", dest: "/a:b", bytes: 1 << 30},
		{in: "/tmp:0", dest: "/tmp", bytes: 0},
		{in: "tmp:1G", err: "absolute DEST"},
		{in: "/tmp:lots", err: `or "memory"`},
		{in: "/tmp:Memory", err: `or "memory"`},
	} {
		dest, size, err := splitTmpfs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || dest != c.dest || size.bytes != c.bytes || size.byMemory != c.byMemory {
			t.Errorf("%q: %q %+v %v, want %q %d %v", c.in, dest, size, err, c.dest, c.bytes, c.byMemory)
		}
	}
}

func TestTmpfsMount(t *testing.T) {
	raise := "--tmpfs /tmp:SIZE"
	for _, c := range []struct {
		name   string
		size   tmpfsSize
		memory int64
		want   jail.Mount
	}{
		{"sized by a memory limit", tmpfsSize{byMemory: true}, 3 << 30,
			jail.Mount{Kind: jail.MountTmpfs, Dest: "/tmp", Writable: true, Size: 3 << 30, Raise: "--memory SIZE or limits.memory (/tmp is as large as the memory limit), or --tmpfs /tmp:SIZE"}},
		// no memory limit: no size, so the kernel's default (half of
		// RAM); --memory would not raise it, so the raise names only raise
		{"sized by no memory limit", tmpfsSize{byMemory: true}, 0,
			jail.Mount{Kind: jail.MountTmpfs, Dest: "/tmp", Writable: true, Size: 0, Raise: raise}},
		{"a size of its own", tmpfsSize{bytes: 8 << 20}, 3 << 30,
			jail.Mount{Kind: jail.MountTmpfs, Dest: "/tmp", Writable: true, Size: 8 << 20, Raise: raise}},
	} {
		if got := tmpfsMount("/tmp", c.size, c.memory, raise); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The shipped profiles size /tmp and HOME by the memory limit, strict
// too (its HOME follows its smaller limit), and name the memory flag for
// a memory-limit kill.
func TestShippedTmpfsFollowMemory(t *testing.T) {
	for _, name := range []string{"default", "strict", "network"} {
		p := mustLoad(t, name)
		s, err := p.Spec(Request{Args: []string{"true"}, Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if s.RaiseMemory != RaiseMemory {
			t.Errorf("%s: RaiseMemory %q", name, s.RaiseMemory)
		}
		for _, dest := range []string{"/tmp", JailHome} {
			m := findMount(s, dest)
			if m == nil || m.Size != s.Limits.Memory || s.Limits.Memory == 0 || !strings.HasPrefix(m.Raise, RaiseMemory) {
				t.Errorf("%s: %s mount %+v, memory %d", name, dest, m, s.Limits.Memory)
			}
		}
	}
	// --memory unlimited: the kernel's default size
	p := mustLoad(t, "default")
	if err := p.SetLimit("memory", "0"); err != nil {
		t.Fatal(err)
	}
	s, err := p.Spec(Request{Args: []string{"true"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if m := findMount(s, "/tmp"); m == nil || m.Size != 0 {
		t.Errorf("unlimited memory: /tmp %+v", m)
	}
}

func TestHomeSizeValues(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{{"memory", true}, {"16M", true}, {"", false}, {"mem", false}} {
		p := mustLoad(t, "default")
		p.Filesystem.HomeSize = &c.v
		err := p.Validate()
		if (err == nil) != c.ok {
			t.Errorf("home_size %q: %v", c.v, err)
		}
		if err != nil && !strings.Contains(err.Error(), "filesystem.home_size") {
			t.Errorf("home_size %q: error %v does not name the key", c.v, err)
		}
	}
}
