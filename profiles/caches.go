package profiles

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tooljail/tooljail/jail"
)

// A cache (filesystem.caches, --cache) is a host directory bound
// read-write where a build tool keeps what makes the next build fast: by
// default tooljail's own directory for it, so that the caller's unjailed
// tools never read what a jail wrote (a go build cache a jail poisoned
// would run on the host), or a host directory the caller names.

// Cache is one cache a profile may name.
type Cache struct {
	Name string
	// Dest is where the tool looks by default, relative to the jail's
	// HOME.
	Dest string
}

// Caches are the names filesystem.caches takes, in the order shown.
var Caches = []Cache{
	{"go-build", ".cache/go-build"},
	{"go-mod", "go/pkg/mod"},
	{"pip", ".cache/pip"},
	{"npm", ".npm"},
	{"cargo-registry", ".cargo/registry"},
}

// CacheSubdir is where, below the caller's cache directory ($XDG_CACHE_HOME
// or ~/.cache), tooljail keeps its own cache directories, one a name.
const CacheSubdir = "tooljail/caches"

func lookupCache(name string) (Cache, bool) {
	i := slices.IndexFunc(Caches, func(c Cache) bool { return c.Name == name })
	if i < 0 {
		return Cache{}, false
	}
	return Caches[i], true
}

func cacheNames() string {
	var names []string
	for _, c := range Caches {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// splitCache reads "NAME" or "NAME=HOSTPATH".
func splitCache(entry string) (c Cache, hostPath string, err error) {
	name, hostPath, named := strings.Cut(entry, "=")
	c, ok := lookupCache(name)
	if !ok {
		return Cache{}, "", fmt.Errorf("%q: unknown cache %q (known: %s; NAME=HOSTPATH binds a directory of your choice)", entry, name, cacheNames())
	}
	if named && hostPath == "" {
		return Cache{}, "", fmt.Errorf("%q: empty HOSTPATH; give NAME alone for tooljail's own directory, or NAME=DIR", entry)
	}
	if strings.ContainsRune(hostPath, 0) {
		return Cache{}, "", fmt.Errorf("%q: HOSTPATH contains a NUL byte", entry)
	}
	return c, hostPath, nil
}

// cacheMounts are the read-write binds of the caches: at the tool's
// default place in the jail's HOME, from tooljail's own directory below
// cacheDir (the caller's cache directory), or from the HOSTPATH an entry
// names (relative to cwd). The jail creates a missing directory (mode
// 0700) and applies the rules of every read-write bind to it.
func cacheMounts(entries []string, cacheDir, cwd string) ([]jail.Mount, error) {
	var out []jail.Mount
	for _, e := range entries {
		c, src, _ := splitCache(e) // checked by Validate
		if src == "" {
			if cacheDir == "" || !filepath.IsAbs(cacheDir) {
				return nil, fmt.Errorf("cache %s: no cache directory for tooljail's own caches (neither $XDG_CACHE_HOME nor $HOME is set to an absolute path); set one, or name a directory: %s=DIR", c.Name, c.Name)
			}
			src = filepath.Join(cacheDir, CacheSubdir, c.Name)
		} else if !filepath.IsAbs(src) {
			src = filepath.Join(cwd, src)
		}
		out = append(out, jail.Mount{Kind: jail.MountBind, Source: filepath.Clean(src), Dest: filepath.Join(JailHome, c.Dest), Writable: true, Cache: c.Name})
	}
	return out, nil
}
