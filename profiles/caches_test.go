package profiles

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func TestSplitCache(t *testing.T) {
	for _, c := range []struct {
		in, name, dest, host, err string
	}{
		{in: "go-build", name: "go-build", dest: ".cache/go-build"},
		{in: "go-mod", name: "go-mod", dest: "go/pkg/mod"},
		{in: "pip", name: "pip", dest: ".cache/pip"},
		{in: "npm", name: "npm", dest: ".npm"},
		{in: "cargo-registry", name: "cargo-registry", dest: ".cargo/registry"},
		{in: "npm=/srv/npm", name: "npm", dest: ".npm", host: "/srv/npm"},
		{in: "pip=rel/dir", name: "pip", dest: ".cache/pip", host: "rel/dir"},
		{in: "maven", err: "unknown cache \"maven\" (known: go-build, go-mod, pip, npm, cargo-registry"},
		{in: "", err: "unknown cache"},
		{in: "Go-Build", err: "unknown cache"},
		{in: "npm=", err: "empty HOSTPATH"},
	} {
		cache, host, err := splitCache(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || cache.Name != c.name || cache.Dest != c.dest || host != c.host {
			t.Errorf("%q: %+v %q %v", c.in, cache, host, err)
		}
	}
}

// A named cache is tooljail's own directory below the caller's cache
// directory, bound read-write at the tool's place in HOME; NAME=PATH binds
// PATH (relative to the current directory); with no cache directory a
// named cache is refused, saying how to fix it.
func TestCacheMounts(t *testing.T) {
	got, err := cacheMounts([]string{"go-build", "npm=/srv/npm", "pip=rel"}, "/home/u/.cache", "/proj")
	if err != nil {
		t.Fatal(err)
	}
	want := []jail.Mount{
		{Kind: jail.MountBind, Source: "/home/u/.cache/tooljail/caches/go-build", Dest: "/home/sandbox/.cache/go-build", Writable: true, Cache: "go-build"},
		{Kind: jail.MountBind, Source: "/srv/npm", Dest: "/home/sandbox/.npm", Writable: true, Cache: "npm"},
		{Kind: jail.MountBind, Source: "/proj/rel", Dest: "/home/sandbox/.cache/pip", Writable: true, Cache: "pip"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mounts\n%+v\nwant\n%+v", got, want)
	}
	for _, dir := range []string{"", "relative/.cache"} {
		if _, err := cacheMounts([]string{"go-mod"}, dir, "/proj"); err == nil || !strings.Contains(err.Error(), "XDG_CACHE_HOME") || !strings.Contains(err.Error(), "go-mod=DIR") {
			t.Errorf("cache dir %q: err %v", dir, err)
		}
	}
	if m, err := cacheMounts([]string{"go-mod=/x"}, "", "/proj"); err != nil || len(m) != 1 {
		t.Errorf("NAME=PATH needs no cache directory: %v %v", m, err)
	}
}

// The key is checked by Validate (an unknown name names the known ones),
// off in the shipped profiles, and a Spec carries the binds.
func TestCachesKey(t *testing.T) {
	p := mustLoad(t, "default")
	if len(p.Filesystem.Caches) != 0 {
		t.Errorf("default caches %v, want none", p.Filesystem.Caches)
	}
	p.Filesystem.Caches = append(p.Filesystem.Caches, "go-buld")
	var ke *KeyError
	if err := p.Validate(); !errors.As(err, &ke) || ke.Key != "filesystem.caches" || !strings.Contains(err.Error(), "known: go-build") {
		t.Errorf("unknown cache: %v", err)
	}
	p.Filesystem.Caches = []string{"go-build", "go-mod"}
	s, err := p.Spec(Request{Args: []string{"go", "build"}, Cwd: t.TempDir(), CacheDir: "/c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dest, src, name string }{
		{"/home/sandbox/.cache/go-build", "/c/tooljail/caches/go-build", "go-build"},
		{"/home/sandbox/go/pkg/mod", "/c/tooljail/caches/go-mod", "go-mod"},
	} {
		if m := findMount(s, c.dest); m == nil || m.Source != c.src || !m.Writable || m.Cache != c.name {
			t.Errorf("%s: %+v", c.dest, m)
		}
	}
}
